"""A compacted transcript reads in the order the conversation happened, round
after round: the head verbatim, one record of the compacted middle, then the
tail, with the calls the agent is still waiting on left where they were.

Claude Code files are read the way the client loads them: the parentUuid
chain from the leaf back, cut at the last compact_boundary. Codex files are
read the way Codex rebuilds history: the last `compacted` line's
replacement_history, then the response items after it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from ctxpack import markers
from ctxpack.cli import app
from tests.test_evaluate import CODEX, HAIKU, STREAM

runner = CliRunner()
Obj = dict[str, Any]


def _objs(data: bytes) -> list[Obj]:
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def _compress(source: Path, out: Path, *options: str) -> Obj:
    report = out.with_suffix(".report.json")
    args = ["compress", "--offline", "--force", str(source), "-o", str(out), "--report"]
    result = runner.invoke(app, [*args, str(report), *options])
    assert result.exit_code == 0, result.output
    (session,) = json.loads(report.read_bytes())["sessions"]
    assert session["status"] == "compacted"
    return dict(session)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))


def _source_lines(record: str) -> list[str]:
    return [line for line in record.splitlines() if line.startswith(markers.SOURCE_TURNS)]


# -- Claude Code ------------------------------------------------------------


def _loaded(data: bytes) -> list[Obj]:
    """What Claude Code shows the model: the chain from the last turn back to
    its root, from the last compact_boundary on (the boundary itself dropped)."""
    objs = _objs(data)
    by_uuid = {o["uuid"]: o for o in objs if "uuid" in o}
    node: Obj | None = [o for o in objs if o.get("type") in ("user", "assistant")][-1]
    chain: list[Obj] = []
    while node is not None:
        chain.append(node)
        node = by_uuid.get(node.get("parentUuid"))
    chain.reverse()
    cuts = [k for k, o in enumerate(chain) if o.get("subtype") == "compact_boundary"]
    return chain[cuts[-1] + 1 :] if cuts else chain


def _turn(kind: str, content: Any, n: int, parent: str, env: Obj) -> Obj:
    message: Obj = {"role": kind, "content": content}
    if kind == "assistant":
        message = {"id": f"msg_more_{n}", "type": "message", "model": "m", **message}
    return {
        "parentUuid": parent,
        **env,
        "type": kind,
        "message": message,
        "uuid": f"00000000-0000-4000-8000-{n:012d}",
        "timestamp": "2025-12-11T12:00:00.000Z",
    }


def _more_claude_turns(data: bytes) -> bytes:
    """Six more checked cases, then a request whose tool call has no result yet."""
    objs = _objs(data)
    last = [o for o in objs if o.get("type") in ("user", "assistant")][-1]
    env = {k: last[k] for k in ("isSidechain", "userType", "cwd", "sessionId", "version")}
    turns: list[Obj] = []

    def add(kind: str, content: Any) -> None:
        parent = turns[-1]["uuid"] if turns else last["uuid"]
        turns.append(_turn(kind, content, len(turns) + 1, parent, env))

    for k in range(6):
        add("user", f"Next, check the log parser on case {k}.")
        add("assistant", [{"type": "text", "text": f"Checking case {k}."}])
        call = {"type": "tool_use", "id": f"toolu_case{k}", "name": "Bash"}
        add("assistant", [{**call, "input": {"command": f"python3 check.py --case {k}"}}])
        output = "line ok\n" * 400
        add("user", [{"type": "tool_result", "tool_use_id": f"toolu_case{k}", "content": output}])
        add("assistant", [{"type": "text", "text": f"Case {k} passes."}])
    add("user", "Finally run the whole test suite.")
    pending = {"type": "tool_use", "id": "toolu_pending", "name": "Bash"}
    add("assistant", [{**pending, "input": {"command": "pytest -q tests/ --pending-only"}}])
    return data + b"".join(json.dumps(o).encode() + b"\n" for o in turns)


def _claude_record(loaded: list[Obj]) -> int:
    records = [k for k, o in enumerate(loaded) if o.get("isCompactSummary")]
    assert len(records) == 1
    assert markers.SUMMARY_PREFIX in _text(loaded[records[0]]["message"]["content"])
    return records[0]


def test_claude_code_loads_head_record_tail_round_after_round(tmp_path: Path) -> None:
    source = HAIKU.read_bytes()
    first = tmp_path / "once.jsonl"
    _compress(HAIKU, first)
    loaded = _loaded(first.read_bytes())
    at = _claude_record(loaded)
    # The head is the session's first turns, byte for byte apart from uuids.
    original = [o for o in _objs(source) if o.get("type") in ("user", "assistant")]
    head = loaded[:at]
    assert head[0]["message"] == original[0]["message"]
    assert _text(head[0]["message"]["content"]) == "$(cat /tmp/testgen_instruction.txt)"
    assert [o["message"] for o in head] == [o["message"] for o in original[: len(head)]]
    # The tail ends where the session ended.
    assert loaded[-1] == original[-1]
    (refs,) = _source_lines(_text(loaded[at]["message"]["content"]))

    grown = tmp_path / "grown.jsonl"
    grown.write_bytes(_more_claude_turns(first.read_bytes()))
    second = tmp_path / "twice.jsonl"
    report = _compress(grown, second, "--context-length", "30000")
    again = _loaded(second.read_bytes())
    at2 = _claude_record(again)
    assert [o["message"] for o in again[:at2]] == [o["message"] for o in head]
    record2 = _text(again[at2]["message"]["content"])
    lines = _source_lines(record2)
    assert len(lines) == 1
    # One line lists the earlier record's turns, then the newly compacted ones.
    assert lines[0].startswith(refs) and len(lines[0].split()) == len(refs.split()) + 1
    # The latest request is in the tail: the record does not claim it.
    assert markers.ACTIVE_REQUEST not in record2
    assert _text(again[-2]["message"]["content"]) == "Finally run the whole test suite."
    # The call still waiting for its result stays, and the report says so.
    (block,) = again[-1]["message"]["content"]
    assert block["id"] == "toolu_pending" and block["type"] == "tool_use"
    assert any("kept call toolu_pending (Bash): no result yet" in n for n in report["sanitized"])
    # Only turns that ran give facts.
    assert "--pending-only" not in record2


# -- Codex ------------------------------------------------------------------


def _history(data: bytes) -> list[Obj]:
    """The model history Codex rebuilds: the last compacted line's replacement
    history, then the response items after it."""
    objs = _objs(data)
    at = max(k for k, o in enumerate(objs) if o["type"] == "compacted")
    items = list(objs[at]["payload"]["replacement_history"])
    return items + [o["payload"] for o in objs[at + 1 :] if o["type"] == "response_item"]


def _is_record(item: Obj) -> bool:
    return item.get("type") == "message" and markers.SUMMARY_PREFIX in _text(item["content"])


def _codex_record(history: list[Obj]) -> int:
    records = [k for k, item in enumerate(history) if _is_record(item)]
    assert len(records) == 1
    return records[0]


def _more_codex_turns(data: bytes, pending: list[str]) -> bytes:
    stamp = "2026-04-20T11:00:00.000Z"

    def item(payload: Obj) -> bytes:
        return json.dumps(
            {"timestamp": stamp, "type": "response_item", "payload": payload}
        ).encode()

    def message(role: str, text: str) -> Obj:
        kind = "input_text" if role == "user" else "output_text"
        return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}

    lines = [item({"type": "function_call_output", "call_id": c, "output": "ok"}) for c in pending]
    for k in range(6):
        lines.append(item(message("user", f"Now draft section {k} of the grant.")))
        call = {"type": "function_call", "name": "exec_command", "call_id": f"call_more_{k}"}
        args = json.dumps({"cmd": f"cat section{k}.md"})
        lines.append(item({**call, "arguments": args}))
        output = {"type": "function_call_output", "call_id": f"call_more_{k}"}
        lines.append(item({**output, "output": "draft text\n" * 300}))
        lines.append(item(message("assistant", f"Section {k} drafted.")))
    lines.append(item(message("user", "Submit it.")))
    args = json.dumps({"cmd": "submit --pending-only"})
    call = {"type": "function_call", "name": "exec_command", "call_id": "call_pending"}
    lines.append(item({**call, "arguments": args}))
    return data + b"\n".join(lines) + b"\n"


def test_codex_replacement_history_is_head_record_tail_round_after_round(
    tmp_path: Path,
) -> None:
    source = [o["payload"] for o in _objs(CODEX.read_bytes()) if o["type"] == "response_item"]
    unanswered = ["call_Jd4f07dTGEPRyTlBNkkwKKdk", "call_35amExJq9k0vCbMfR6vw86GN"]
    first = tmp_path / "once.jsonl"
    report = _compress(CODEX, first, "--context-length", "60000")
    history = _history(first.read_bytes())
    at = _codex_record(history)
    (refs,) = _source_lines(_text(history[at]["content"]))
    head = history[:at]
    # The session's first items in order; only old tool outputs were pruned.
    assert len(head) == 13 and "help me apply for" in _text(head[2]["content"])
    outputs = [k for k, item in enumerate(head) if item["type"] == "function_call_output"]
    assert [i for k, i in enumerate(head) if k not in outputs] == [
        i for k, i in enumerate(source[:at]) if k not in outputs
    ]
    assert [head[k]["call_id"] for k in outputs] == [source[k]["call_id"] for k in outputs]
    # The calls the session ended on, still without output, are kept in order.
    assert [i.get("call_id") for i in history[-2:]] == unanswered
    assert sum("no result yet" in note for note in report["sanitized"]) == 4

    grown = tmp_path / "grown.jsonl"
    grown.write_bytes(_more_codex_turns(first.read_bytes(), _open(history)))
    second = tmp_path / "twice.jsonl"
    _compress(grown, second, "--context-length", "60000")
    again = _history(second.read_bytes())
    at2 = _codex_record(again)
    assert again[:at2] == head
    record = _text(again[at2]["content"])
    lines = _source_lines(record)
    assert len(lines) == 1
    assert lines[0].startswith(refs) and len(lines[0].split()) == len(refs.split()) + 1
    assert markers.ACTIVE_REQUEST not in record
    assert again[-1]["call_id"] == "call_pending"
    assert "--pending-only" not in record


def _open(history: list[Obj]) -> list[str]:
    """Call ids in `history` that no output answers."""
    answered = {i.get("call_id") for i in history if i.get("type") == "function_call_output"}
    calls = [str(i["call_id"]) for i in history if i.get("type") == "function_call"]
    return [c for c in calls if c not in answered]


# -- another agent's summary ------------------------------------------------


def test_claude_codes_own_summary_is_merged_into_the_record(tmp_path: Path) -> None:
    original = next(
        _text(o["message"]["content"])
        for o in _objs(STREAM.read_bytes())
        if "Primary Request and Intent" in json.dumps(o)
    )
    out = tmp_path / "out.jsonl"
    archive = tmp_path / "archive.db"
    report = _compress(STREAM, out, "--archive", str(archive))
    assert report["updated_previous_summary"] is True
    texts = [_text(o["message"].get("content", "")) for o in _objs(out.read_bytes())]
    (record,) = [text for text in texts if markers.SUMMARY_PREFIX in text]
    # Its sections land in ours: no pasted block with its own headings.
    assert "Primary Request and Intent" not in record and "Pending Tasks" not in record
    assert record.count("## Goal") == 1
    goal = record.split("## Goal\n", 1)[1].split("\n## ", 1)[0]
    assert "- Start autonomous loop mode by calling issue_ready" in goal
    remaining = record.split("## Historical Remaining Work\n", 1)[1].split("\n## ", 1)[0]
    assert "- Push issue #716 completion" in remaining
    resolved = record.split("## Resolved Questions\n", 1)[1].split("\n## ", 1)[0]
    assert "- Earlier state: **Compilation Error - Missing SessionMetrics fields**:" in resolved
    assert "merges Claude Code's own summary (11,739 characters, 9 section(s))" in record
    # What is cut is counted, and the full text is archived with the source turns.
    (line,) = [x for x in record.splitlines() if x.startswith(markers.SOURCE_TURNS)]
    (ref,) = line.split()[2:]
    shown = runner.invoke(app, ["show", "--archive", str(archive), ref])
    assert shown.exit_code == 0, shown.output
    first = json.loads(shown.stdout_bytes.splitlines()[0])
    assert original in _text(first["content"])
