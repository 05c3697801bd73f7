"""The `claude-stream-json` adapter: `claude -p --output-format stream-json` logs."""

from __future__ import annotations

import json
from typing import Any

from ctxpack import formats, markers, toolpairs
from ctxpack import messages as m
from ctxpack.formats.base import ReadOptions
from ctxpack.tokens.counter import TokenCounter
from tests.conftest import COUNTER, FIXTURES
from tests.test_formats_claude_code import _expected_tokens
from tests.test_formats_support import (
    block_values,
    compacted,
    normal,
    round_trip,
    summaries,
    updated,
)

LOG = (
    FIXTURES
    / "claude-stream-json"
    / "openagents__logs__20251222_175115-call-issue-ready-now-to.jsonl"
)


def _lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.split(b"\n") if line.strip()]


def _after_last_boundary(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    start = max(
        i
        for i, o in enumerate(objs)
        if o["type"] == "system" and o["message"].get("subtype") == "compact_boundary"
    )
    return objs[start:]


def test_unchanged_write_is_byte_identical() -> None:
    round_trip(LOG, "claude-stream-json")


def test_context_starts_at_the_last_compaction(counter: TokenCounter) -> None:
    data = LOG.read_bytes()
    view = _after_last_boundary(_lines(data))
    tokens, messages = _expected_tokens(view)
    msgs = formats.read(data, path=str(LOG)).sessions[0].messages
    assert len(msgs) == messages
    assert counter.messages(msgs) == tokens
    assert markers.is_summary(msgs[0])
    assert m.text(msgs[0]).startswith("This session is being continued")


def test_compaction_writes_a_boundary_and_summary_line(counter: TokenCounter) -> None:
    data = LOG.read_bytes()
    transcript = formats.read(data, path=str(LOG))
    # The old summary heads the context; a new compaction replaces it.
    small, new = compacted(transcript, head=0, tail=8)
    out = formats.write(small, counter=counter)
    objs = _lines(out)
    view = _after_last_boundary(objs)
    meta = view[0]["message"]["compact_metadata"]
    assert meta == {"trigger": "manual", "post_tokens": counter.messages(new)}
    assert view[1]["type"] == "user"
    assert markers.is_summary({"role": "user", "content": view[1]["message"]["content"]})
    uses = block_values(_contents(view, "assistant"), "tool_use", "id")
    answers = block_values(_contents(view, "user"), "tool_result", "tool_use_id")
    assert uses == answers and uses
    # Before the new boundary only the init line is left: the old turns and
    # the old compaction's markers are gone; the tail stays byte for byte.
    assert objs[: len(objs) - len(view)] == [_lines(data)[0]]
    assert out.startswith(data.split(b"\n")[0] + b"\n")
    assert out.splitlines()[-2] == data.splitlines()[-2]
    assert len(out) < len(data) / 10
    back = formats.read(out, path="out.jsonl").sessions[0].messages
    assert normal(back) == normal(new)
    again, _ = updated(formats.read(out, path="out.jsonl"), "Issue closed.")
    twice = (
        formats.read(formats.write(again, counter=COUNTER), path="twice.jsonl").sessions[0].messages
    )
    assert [markers.summary_body(x) for x in summaries(twice)] == ["Issue closed."]
    assert toolpairs.orphans(twice) == ([], [])


def test_subagent_lines_stay_out_unless_asked_for() -> None:
    objs = _lines(LOG.read_bytes())
    extra = {
        "type": "assistant",
        "message": {
            "id": "msg_sub",
            "role": "assistant",
            "content": [{"type": "text", "text": "subagent says hi"}],
            "parent_tool_use_id": "toolu_parent",
        },
        "timestamp": "2025-12-23T00:09:00+00:00",
    }
    data = LOG.read_bytes() + json.dumps(extra).encode() + b"\n"
    plain = formats.read(data, path="log.jsonl")
    assert (
        plain.sessions[0].messages == formats.read(LOG.read_bytes(), path="x").sessions[0].messages
    )
    both = formats.read(data, path="log.jsonl", options=ReadOptions(include_sidechains=True))
    assert [m.text(x) for x in both.sessions[1].messages] == ["subagent says hi"]
    assert len(objs) + 1 == len(_lines(formats.write(both, counter=COUNTER)))


def _contents(lines: list[dict[str, Any]], kind: str) -> list[Any]:
    return [o["message"]["content"] for o in lines if o["type"] == kind]
