"""The `claude-code` adapter: Claude Code session logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ctxpack import formats, markers, toolpairs
from ctxpack import messages as m
from ctxpack.cli import app
from ctxpack.errors import InputError
from ctxpack.formats.base import ReadOptions
from ctxpack.tokens.counter import TokenCounter
from tests.conftest import COUNTER, FIXTURES
from tests.test_formats_support import (
    chain_of,
    compact,
    compacted,
    expected,
    mutated,
    normal,
    round_trip,
    summaries,
    summary_message,
    updated,
)

DIR = FIXTURES / "claude-code"
FILES = sorted(DIR.glob("*.jsonl"))
HAIKU = DIR / "openagents__regex-log__haiku-testgen-v2.jsonl"
runner = CliRunner()
OPUS = DIR / "openagents__regex-log__opus-raw.jsonl"
SUBAGENT = DIR / "openagents__regex-log__subagents__agent-a028728.jsonl"


def _read(data: bytes, **options: Any) -> formats.Transcript:  # type: ignore[name-defined]
    return formats.read(data, path="session.jsonl", options=ReadOptions(**options))


def _lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.split(b"\n") if line.strip()]


def _expected_tokens(chain: list[dict[str, Any]]) -> tuple[int, int]:
    texts: list[str] = []
    messages = images = 0
    thinking: dict[str, list[str]] = {}
    for obj in chain:
        message: Any = obj.get("message")
        if obj["type"] == "assistant":
            if message["id"] not in thinking:
                thinking[message["id"]] = []
                messages += 1
            for block in message["content"]:
                if block["type"] == "text":
                    texts.append(block["text"])
                elif block["type"] == "tool_use":
                    texts += [block["name"], compact(block["input"])]
                elif block["type"] == "thinking" and block["thinking"]:
                    thinking[message["id"]].append(block["thinking"])
        elif obj["type"] == "user":
            content = message["content"]
            if isinstance(content, str):
                texts.append(content)
                messages += 1
                continue
            in_run = False
            for block in content:
                if block["type"] == "tool_result":
                    messages += 1
                    in_run = False
                    inner = block.get("content", "")
                    if isinstance(inner, str):
                        texts.append(inner)
                    else:
                        texts += [b["text"] for b in inner if b["type"] == "text"]
                        images += sum(1 for b in inner if b["type"] == "image")
                    continue
                if not in_run:
                    messages += 1
                    in_run = True
                if block["type"] == "text":
                    texts.append(block["text"])
                elif block["type"] == "image":
                    images += 1
    texts += ["\n".join(t) for t in thinking.values() if t]
    return expected(texts, messages, images), messages


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_unchanged_write_is_byte_identical(path: Path) -> None:
    round_trip(path, "claude-code")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_token_count_matches_a_direct_count_of_the_chain(path: Path, counter: TokenCounter) -> None:
    data = path.read_bytes()
    tokens, messages = _expected_tokens(chain_of(_lines(data)))
    session = formats.read(data, path=str(path)).sessions[0]
    assert len(session.messages) == messages
    assert counter.messages(session.messages) == tokens


def test_split_assistant_lines_merge_into_one_message() -> None:
    msgs = formats.read(OPUS.read_bytes(), path=str(OPUS)).sessions[0].messages
    assert [m.role(x) for x in msgs] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    first = msgs[1]
    assert first["content"] is None
    assert first["reasoning_content"].startswith("The user wants me to read")
    assert [m.call_name(c) for c in m.tool_calls(first)] == ["Read"]
    assert json.loads(m.call_arguments(m.tool_calls(first)[0])) == {
        "file_path": "/tmp/raw_instruction.txt"
    }
    assert msgs[2]["tool_call_id"] == m.call_id(m.tool_calls(first)[0])
    assert toolpairs.orphans(msgs) == ([], [])


def test_last_timestamp_is_the_last_message_line() -> None:
    transcript = formats.read(OPUS.read_bytes(), path=str(OPUS))
    assert transcript.last_timestamp == _lines(OPUS.read_bytes())[-1]["timestamp"]


@pytest.mark.parametrize("path", [HAIKU, SUBAGENT], ids=lambda p: p.name)
def test_compaction_writes_claude_code_markers(path: Path, counter: TokenCounter) -> None:
    data = path.read_bytes()
    transcript = formats.read(data, path=str(path))
    small, new = compacted(transcript, head=2, tail=4)
    out = formats.write(small, counter=counter)
    objs = _lines(out)
    chain = chain_of(objs)
    assert chain[0]["type"] == "system" and chain[0]["subtype"] == "compact_boundary"
    assert chain[0]["parentUuid"] is None and chain[0]["logicalParentUuid"] is None
    assert chain[0]["compactMetadata"] == {"trigger": "manual", "postTokens": counter.messages(new)}
    # After the boundary, in the order they happened: the head, the record, the tail.
    record = next(k for k, o in enumerate(chain) if o.get("isCompactSummary"))
    assert record > 1 and chain[1]["parentUuid"] == chain[0]["uuid"]
    assert chain[record]["parentUuid"] == chain[record - 1]["uuid"]
    assert [o.get("isCompactSummary") for o in chain].count(True) == 1
    uses = {
        b["id"]
        for o in chain
        if o["type"] == "assistant"
        for b in o["message"]["content"]
        if b["type"] == "tool_use"
    }
    results = {
        b["tool_use_id"]
        for o in chain
        if o["type"] == "user" and isinstance(o["message"]["content"], list)
        for b in o["message"]["content"]
        if b["type"] == "tool_result"
    }
    assert uses == results and uses
    pruned = [o for o in chain if "[output pruned]" in json.dumps(o.get("message"))]
    assert len(pruned) == 1 and pruned[0]["toolUseResult"] == "[output pruned]"
    # The replaced history leaves the file: every entry is on the new chain,
    # and the lines outside any chain stay, byte for byte and in order.
    assert [o["uuid"] for o in objs if "uuid" in o] == [o["uuid"] for o in chain]
    assert [x for x in out.split(b"\n") if b'"uuid"' not in x] == [
        x for x in data.split(b"\n") if b'"uuid"' not in x
    ]
    assert out.splitlines()[-1] == data.splitlines()[-1]  # the tail stays in place
    assert len(out) < len(data) / 2
    back = formats.read(out, path="out.jsonl").sessions[0].messages
    assert markers.is_summary(back[2]) and len(summaries(back)) == 1
    assert markers.summary_body(back[2]) == markers.summary_body(new[2])
    assert normal(back) == normal(new)


@pytest.mark.parametrize(
    "counter",
    [TokenCounter(estimate=True), TokenCounter(encoding="cl100k_base")],
    ids=["estimate", "cl100k_base"],
)
def test_post_tokens_are_counted_by_the_callers_counter(counter: TokenCounter) -> None:
    transcript = formats.read(HAIKU.read_bytes(), path=str(HAIKU))
    small, new = compacted(transcript, head=2, tail=4)
    chain = chain_of(_lines(formats.write(small, counter=counter)))
    post = chain[0]["compactMetadata"]["postTokens"]
    assert post == counter.messages(new) != COUNTER.messages(new)


def test_compress_records_post_tokens_with_the_runs_counter(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    out = tmp_path / "o.jsonl"
    for options in (["--estimate"], ["--encoding", "cl100k_base"]):
        args = ["compress", "--force", "--offline", "--no-archive", str(HAIKU), "-o", str(out)]
        result = runner.invoke(app, [*args, "--report", str(report), *options])
        assert result.exit_code == 0, result.output
        (session,) = json.loads(report.read_bytes())["sessions"]
        chain = chain_of(_lines(out.read_bytes()))
        assert chain[0]["compactMetadata"]["postTokens"] == session["tokens_after"]


def test_compacting_again_updates_the_summary_instead_of_nesting() -> None:
    transcript = formats.read(HAIKU.read_bytes(), path=str(HAIKU))
    first = formats.write(compacted(transcript)[0], counter=COUNTER)
    again, _ = updated(formats.read(first, path="once.jsonl"), "3. Tests pass.")
    out = formats.write(again, counter=COUNTER)
    back = formats.read(out, path="twice.jsonl").sessions[0].messages
    assert [markers.summary_body(x) for x in summaries(back)] == ["3. Tests pass."]
    chain = chain_of(_lines(out))
    assert [o.get("subtype") for o in chain].count("compact_boundary") == 1
    assert [o.get("isCompactSummary") for o in chain].count(True) == 1
    assert chain[0]["subtype"] == "compact_boundary" and not chain[1].get("isCompactSummary")


def test_a_new_compaction_drops_the_history_an_earlier_one_replaced() -> None:
    """A file Claude Code compacted itself: the old chain hangs off the old
    boundary's logicalParentUuid; our update of the summary replaces it too."""
    raw = HAIKU.read_bytes().split(b"\n")
    objs = [json.loads(x) for x in raw if x]
    env = {k: objs[12][k] for k in ("isSidechain", "userType", "cwd", "sessionId", "version")}
    stamp = objs[12]["timestamp"]
    boundary = {
        "parentUuid": None,
        "logicalParentUuid": objs[12]["uuid"],
        **env,
        "type": "system",
        "subtype": "compact_boundary",
        "content": "Conversation compacted",
        "uuid": "9b1d5f7e-0000-4000-8000-00000000000b",
        "timestamp": stamp,
        "compactMetadata": {"trigger": "auto", "preTokens": 9000},
    }
    note = {
        "parentUuid": boundary["uuid"],
        **env,
        "type": "user",
        "message": {
            "role": "user",
            "content": "This session is being continued from a previous conversation that "
            "ran out of context. Summary: 1. Read the task.",
        },
        "isCompactSummary": True,
        "uuid": "9b1d5f7e-0000-4000-8000-00000000000c",
        "timestamp": stamp,
    }
    resumed = {**objs[13], "parentUuid": note["uuid"]}
    extra = [json.dumps(x).encode() for x in (boundary, note, resumed)]
    data = b"\n".join([*raw[:13], *extra, *raw[14:]])
    transcript = _read(data)
    assert markers.is_summary(transcript.sessions[0].messages[0])
    out = formats.write(compacted(transcript, head=0, tail=6)[0], counter=COUNTER)
    lines = out.split(b"\n")
    assert not [x for x in [*raw[1:13], *extra[:2]] if x in lines]
    objs_out = _lines(out)
    assert [o["type"] for o in objs_out if "uuid" not in o] == ["queue-operation"]
    chain = chain_of(objs_out)
    assert [o["uuid"] for o in objs_out if "uuid" in o] == [o["uuid"] for o in chain]
    assert [o.get("subtype") for o in objs_out].count("compact_boundary") == 1
    back = formats.read(out, path="out.jsonl").sessions[0].messages
    assert [markers.summary_body(x) for x in summaries(back)] == [
        markers.summary_body(summary_message())
    ]


def test_pruning_rewrites_only_that_line_and_its_tool_use_result() -> None:
    data = HAIKU.read_bytes()
    transcript = formats.read(data, path=str(HAIKU))
    session = transcript.sessions[0]
    index = next(i for i, x in enumerate(session.messages) if m.role(x) == "tool")
    msgs = list(session.messages)
    msgs[index] = {**msgs[index], "content": "[pruned: 2 KB]"}
    out = formats.write(transcript.with_sessions([session.with_messages(msgs)]), counter=COUNTER)
    before, after = data.split(b"\n"), out.split(b"\n")
    assert len(before) == len(after)
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert len(changed) == 1
    line = json.loads(after[changed[0]])
    assert line["message"]["content"][0]["content"] == "[pruned: 2 KB]"
    assert line["toolUseResult"] == "[pruned: 2 KB]"
    assert {k for k in line if k not in ("message", "toolUseResult")} == {
        k for k in json.loads(before[changed[0]]) if k not in ("message", "toolUseResult")
    }


def test_changed_arguments_rewrite_the_tool_use_input() -> None:
    transcript = formats.read(OPUS.read_bytes(), path=str(OPUS))
    session = transcript.sessions[0]
    msgs = list(session.messages)
    call = m.tool_calls(msgs[3])[0]
    shrunk = {
        **call,
        "function": {**call["function"], "arguments": '{"file_path":"x","content":"…"}'},
    }
    msgs[3] = {**msgs[3], "tool_calls": [shrunk]}
    out = formats.write(transcript.with_sessions([session.with_messages(msgs)]), counter=COUNTER)
    uses = [
        b
        for o in _lines(out)
        if o["type"] == "assistant"
        for b in o["message"]["content"]
        if b["type"] == "tool_use"
    ]
    assert uses[1]["input"] == {"file_path": "x", "content": "…"}
    assert uses[1]["id"] == m.call_id(call)


def test_sidechains_are_left_out_unless_asked_for() -> None:
    data = HAIKU.read_bytes() + SUBAGENT.read_bytes()
    main = formats.read(HAIKU.read_bytes(), path="a").sessions[0].messages
    agent = formats.read(SUBAGENT.read_bytes(), path="b").sessions[0].messages
    plain = _read(data)
    assert len(plain.sessions) == 1 and plain.sessions[0].messages == main
    both = _read(data, include_sidechains=True)
    assert [s.messages for s in both.sessions] == [main, agent]
    assert both.sessions[1].label.startswith("sidechain ")
    assert formats.write(both, counter=COUNTER) == data


def test_the_latest_leaf_wins_over_a_rewound_branch() -> None:
    objs = _lines(OPUS.read_bytes())
    rewind = {
        **objs[1],
        "uuid": "9b1d5f7e-0000-4000-8000-000000000001",
        "timestamp": "2025-12-11T22:00:00.000Z",
    }
    rewind["parentUuid"] = objs[3]["uuid"]  # back to the first tool call
    rewind["message"] = {"role": "user", "content": "Actually, stop here."}
    data = OPUS.read_bytes() + json.dumps(rewind).encode() + b"\n"
    msgs = _read(data).sessions[0].messages
    assert [m.role(x) for x in msgs] == ["user", "assistant", "user"]
    assert msgs[-1]["content"] == "Actually, stop here."


def test_base64_images_are_image_parts(counter: TokenCounter) -> None:
    objs = _lines(OPUS.read_bytes())
    image = {
        **objs[1],
        "uuid": "9b1d5f7e-0000-4000-8000-000000000002",
        "parentUuid": objs[-1]["uuid"],
        "message": {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this screenshot?"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                },
            ],
        },
    }
    data = OPUS.read_bytes() + json.dumps(image).encode() + b"\n"
    transcript = _read(data)
    last = transcript.sessions[0].messages[-1]
    assert m.image_count(last) == 1
    assert last["content"][1]["image_url"]["url"] == "data:image/png;base64,iVBORw0KGgo="
    assert counter.breakdown(last)["images"] == 1600
    assert formats.write(transcript, counter=COUNTER) == data
    edited = {
        **last,
        "content": [last["content"][0], last["content"][1], {"type": "text", "text": "Be brief."}],
    }
    session = transcript.sessions[0]
    out = formats.write(
        transcript.with_sessions([session.with_messages([*session.messages[:-1], edited])]),
        counter=COUNTER,
    )
    block = _lines(out)[-1]["message"]["content"][1]
    assert block == image["message"]["content"][1]


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10**6), which=st.sampled_from(FILES))
def test_any_stage_edit_reads_back_as_written(seed: int, which: Path) -> None:
    transcript = formats.read(which.read_bytes(), path=str(which))
    session = transcript.sessions[0]
    new = mutated(session.messages, seed)
    out = formats.write(transcript.with_sessions([session.with_messages(new)]), counter=COUNTER)
    back = formats.read(out, path="out.jsonl").sessions[0].messages
    assert normal(back) == normal(new)
    assert toolpairs.orphans(back) == ([], [])


def test_a_summary_merged_into_a_tail_message_gets_its_own_line() -> None:
    transcript = formats.read(HAIKU.read_bytes(), path=str(HAIKU))
    session = transcript.sessions[0]
    msgs = session.messages
    k = next(
        i for i in range(len(msgs) - 12, len(msgs)) if m.tool_calls(msgs[i]) and msgs[i]["content"]
    )
    summary = summary_message()["content"]
    call = m.tool_calls(msgs[k])[0]
    shrunk = {**call, "function": {**call["function"], "arguments": '{"command":"pytest"}'}}
    merged = {**msgs[k], "content": f"{msgs[k]['content']}\n\n{summary}", "tool_calls": [shrunk]}
    out = formats.write(
        transcript.with_sessions([session.with_messages([msgs[0], merged, *msgs[k + 1 :]])]),
        counter=COUNTER,
    )
    chain = chain_of(_lines(out))
    # Boundary, the head message, then the record on a line of its own.
    assert chain[2]["isCompactSummary"] and chain[2]["message"]["content"] == summary
    back = formats.read(out, path="out.jsonl").sessions[0].messages
    assert back[2]["content"] == msgs[k]["content"]
    assert m.tool_calls(back[2]) == [shrunk]


def test_malformed_lines_name_the_line_or_are_skipped_untouched() -> None:
    lines = OPUS.read_bytes().split(b"\n")
    data = b"\n".join([*lines[:3], b'{"type": "user", oops', *lines[3:]])
    with pytest.raises(InputError) as info:
        _read(data)
    assert info.value.line == 4
    transcript = _read(data, skip_invalid=True)
    assert transcript.skipped_lines == 1
    assert len(transcript.sessions[0].messages) == 6
    assert formats.write(transcript, counter=COUNTER) == data
