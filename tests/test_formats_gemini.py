"""The `gemini` adapter (read only): Gemini CLI model histories and chat recordings."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ctxpack import formats, toolpairs
from ctxpack import messages as m
from ctxpack.cli import app
from ctxpack.errors import InputError
from ctxpack.tokens.counter import KINDS, TokenCounter
from tests.conftest import SHARED
from tests.test_formats_support import assert_counted, compact, compress_read_only, tok

GEMINI = SHARED / "gemini" / "gemini-cli__ntm-agentteamscli__trajectory.json"
needs_shared = pytest.mark.skipif(not GEMINI.is_file(), reason=f"{SHARED} is absent")
runner = CliRunner()


def _parts(raw: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    return [p[key] for content in raw for p in content["parts"] if key in p]


def _said(response: dict[str, Any]) -> str:
    return str(response.get("output", response.get("error")))


@needs_shared
def test_a_gemini_history_is_detected_without_from() -> None:
    data = GEMINI.read_bytes()
    assert formats.detect(data, path="no-extension").name == "gemini"
    result = runner.invoke(app, ["count", str(GEMINI), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["format"] == "gemini"


@needs_shared
def test_the_history_becomes_paired_openai_messages() -> None:
    raw = json.loads(GEMINI.read_bytes())
    msgs = formats.read(GEMINI.read_bytes(), path=str(GEMINI)).sessions[0].messages
    assert len(raw) == 105
    assert len(msgs) == 106
    assert Counter(m.role(x) for x in msgs) == {"assistant": 52, "tool": 45, "user": 9}
    assert toolpairs.orphans(msgs) == ([], [])
    calls = _parts(raw, "functionCall")
    made = [c for x in msgs for c in m.tool_calls(x)]
    assert [m.call_id(c) for c in made] == [c["id"] for c in calls] and len(calls) == 45
    assert [json.loads(m.call_arguments(c)) for c in made] == [c["args"] for c in calls]
    # Content 99 answers a call the history does not hold: the model saw it as input.
    responses = _parts(raw, "functionResponse")
    orphan = raw[99]["parts"][0]["functionResponse"]
    assert orphan["id"] not in {c["id"] for c in calls}
    answered = [r["id"] for r in responses if r is not orphan]
    assert [x["tool_call_id"] for x in msgs if m.role(x) == "tool"] == answered
    assert {"role": "user", "content": orphan["response"]["output"]} in msgs
    # Thought parts are the reasoning; the call made after them is on the same message.
    thoughts = [p["text"] for p in raw[4]["parts"] if p.get("thought")]
    first = next(x for x in msgs if m.tool_calls(x))
    assert first["reasoning_content"] == "\n".join(thoughts) and first["content"] is None


def _expected_kinds(raw: list[dict[str, Any]]) -> dict[str, int]:
    """Tokens by kind straight from the raw Contents, by the counter's rules."""
    kinds = dict.fromkeys(KINDS, 0)
    called: set[str] = set()
    messages = 0
    for content in raw:
        parts = content["parts"]
        texts = [p["text"] for p in parts if "text" in p and not p.get("thought")]
        if content["role"] == "model":
            messages += 1
            kinds["assistant_text"] += sum(tok(t) for t in texts)
            kinds["reasoning"] += tok("\n".join(p["text"] for p in parts if p.get("thought")))
            for call in (p["functionCall"] for p in parts if "functionCall" in p):
                called.add(call["id"])
                kinds["tool_calls"] += tok(call["name"]) + tok(compact(call["args"]))
            continue
        for response in (p["functionResponse"] for p in parts if "functionResponse" in p):
            messages += 1
            kind = "tool_results" if response["id"] in called else "user_text"
            kinds[kind] += tok(_said(response["response"]))
        if texts:
            messages += 1
            kinds["user_text"] += sum(tok(t) for t in texts)
    kinds["overhead"] = 4 * messages
    return kinds


@needs_shared
def test_count_matches_a_direct_tiktoken_count(counter: TokenCounter) -> None:
    expected = _expected_kinds(json.loads(GEMINI.read_bytes()))
    assert expected["tool_calls"] and expected["tool_results"] and expected["reasoning"]
    assert_counted(GEMINI, expected, counter)


@needs_shared
def test_compress_writes_openai_with_the_read_only_warning(tmp_path: Path) -> None:
    report, msgs = compress_read_only(GEMINI, tmp_path / "out.jsonl")
    session = report["sessions"][0]
    assert report["format"] == "gemini" and session["status"] == "compacted"
    assert session["messages_before"] == 106 and len(msgs) == session["messages_after"] < 106


CALL_ID = "list_directory-1759223400000-0"
RECORDING: dict[str, Any] = {
    "sessionId": "0b6f3c1e-5d2a-4f7b-9a61-2f8e4c9d7a10",
    "projectHash": "9c1d4e7a2b5f8c3e6a9d0b4f7e2c5a8d1b6e9f3c7a0d4e8b2f5c9a3d6e0b7f1c",
    "startTime": "2025-09-30T10:00:00.000Z",
    "lastUpdated": "2025-09-30T10:02:00.000Z",
    "messages": [
        {"id": "m1", "timestamp": "2025-09-30T10:00:00.000Z", "type": "user", "content": "Tests?"},
        {"id": "m2", "timestamp": "2025-09-30T10:00:01.000Z", "type": "info", "content": "Hi."},
        {
            "id": "m3",
            "timestamp": "2025-09-30T10:00:05.000Z",
            "type": "gemini",
            "content": "Listing them.",
            "model": "gemini-2.5-pro",
            "thoughts": [{"subject": "Planning", "description": "List tests/.", "timestamp": "x"}],
            "toolCalls": [
                {
                    "id": CALL_ID,
                    "name": "list_directory",
                    "args": {"path": "tests"},
                    "result": [
                        {
                            "functionResponse": {
                                "id": CALL_ID,
                                "name": "list_directory",
                                "response": {"output": "test_a.py\ntest_b.py"},
                            }
                        }
                    ],
                    "status": "success",
                    "timestamp": "2025-09-30T10:00:06.000Z",
                },
                {
                    "id": "run_shell_command-1759223400000-1",
                    "name": "run_shell_command",
                    "args": {"command": "pytest"},
                    "result": None,
                    "status": "cancelled",
                    "timestamp": "2025-09-30T10:00:07.000Z",
                },
            ],
        },
        {"id": "m4", "timestamp": "2025-09-30T10:02:00.000Z", "type": "gemini", "content": "Two."},
    ],
}


def test_a_session_recording_reads_calls_results_and_thoughts() -> None:
    data = json.dumps(RECORDING, indent=2).encode()
    assert formats.detect(data, path="session-2025-09-30T10-00-0b6f3c1e.json").name == "gemini"
    transcript = formats.read(data, path="session.json")
    assert transcript.sessions[0].label == RECORDING["sessionId"]
    assert transcript.layout == {"last_timestamp": "2025-09-30T10:02:00.000Z"}
    msgs = transcript.sessions[0].messages
    assert [m.role(x) for x in msgs] == ["user", "assistant", "tool", "tool", "assistant"]
    assert msgs[1]["content"] == "Listing them."
    assert msgs[1]["reasoning_content"] == "Planning\nList tests/."
    assert [(m.call_name(c), m.call_arguments(c)) for c in m.tool_calls(msgs[1])] == [
        ("list_directory", '{"path":"tests"}'),
        ("run_shell_command", '{"command":"pytest"}'),
    ]
    assert [(x["tool_call_id"], x["content"]) for x in msgs[2:4]] == [
        (CALL_ID, "test_a.py\ntest_b.py"),
        ("run_shell_command-1759223400000-1", "cancelled"),
    ]
    assert toolpairs.orphans(msgs) == ([], [])


def test_a_jsonl_recording_replays_replacements_rewinds_and_metadata() -> None:
    meta = {k: RECORDING[k] for k in ("sessionId", "projectHash", "startTime", "lastUpdated")}
    first, _, answer, _ = RECORDING["messages"]
    lines = [
        meta,
        first,
        {**answer, "toolCalls": [], "content": "Thinking."},
        {"id": "m5", "timestamp": "t", "type": "user", "content": [{"text": "Stop."}]},
        answer,  # the same id again: replaces the record where it stood
        {"$rewindTo": "m5"},
        {"id": "m6", "timestamp": "t", "type": "user", "content": [{"text": "Once more."}]},
        {"$set": {"lastUpdated": "2025-09-30T11:00:00.000Z"}},
    ]
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    assert formats.detect(data, path="session.jsonl").name == "gemini"
    transcript = formats.read(data, path="session.jsonl")
    assert transcript.layout == {"last_timestamp": "2025-09-30T11:00:00.000Z"}
    msgs = transcript.sessions[0].messages
    assert [m.role(x) for x in msgs] == ["user", "assistant", "tool", "tool", "user"]
    assert msgs[1]["content"] == "Listing them." and msgs[-1]["content"] == "Once more."


def test_responses_without_ids_answer_the_oldest_open_call_of_their_name() -> None:
    history = [
        {"role": "user", "parts": [{"text": "Read a.py and list src."}]},
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "read_file", "args": {"path": "a.py"}}},
                {"functionCall": {"name": "list_directory", "args": {"path": "src"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "list_directory", "response": {"output": "b.py"}}},
                {"functionResponse": {"name": "read_file", "response": {"output": "x = 1"}}},
            ],
        },
    ]
    msgs = formats.read(json.dumps(history).encode(), path="h.json").sessions[0].messages
    ids = [m.call_id(c) for c in m.tool_calls(msgs[1])]
    assert len(set(ids)) == 2
    assert [(x["tool_call_id"], x["content"]) for x in msgs[2:]] == [
        (ids[1], "b.py"),
        (ids[0], "x = 1"),
    ]


def _error(data: bytes, path: str = "h.json") -> str:
    with pytest.raises(InputError) as caught:
        formats.read(data, path=path, fmt="gemini")
    return caught.value.describe()


def test_malformed_histories_name_the_file_and_line() -> None:
    good = {"role": "user", "parts": [{"text": "hi"}]}
    pretty = json.dumps([good, {"role": "model"}], indent=2).encode()
    second = pretty.count(b"\n", 0, pretty.index(b'{\n    "role": "model"')) + 1
    assert _error(pretty) == f"h.json:{second}: content 2: no parts list"
    wrong_role = json.dumps([good, {"role": "assistant", "parts": []}], indent=2).encode()
    assert "content 2: role must be user or model, not 'assistant'" in _error(wrong_role)
    assert _error(pretty[:-5]).startswith("h.json:")
    assert _error(b'{"role": "user", "content": "x"}\n') == (
        "h.json: not a Gemini history (no list of contents or messages)"
    )
    meta = json.dumps({"sessionId": "s", "projectHash": "p"}).encode()
    bogus = json.dumps({"id": "m1", "type": "bogus", "content": "x"}).encode()
    assert _error(b"\n".join([meta, b"{oops", bogus]), "s.jsonl").startswith("s.jsonl:2: invalid")
    assert _error(b"\n".join([meta, bogus]), "s.jsonl") == (
        "s.jsonl:2: message 1: type must be user, gemini, info, error or warning, not 'bogus'"
    )


def test_a_malformed_recording_fails_the_cli_with_exit_1(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_text('{"sessionId": "s", "projectHash": "p"}\n{"id": "m1", "type": "user"\n')
    result = runner.invoke(app, ["count", str(path)])
    assert result.exit_code == 1
    assert f"{path}:2: invalid JSON" in " ".join(result.stderr.split())
