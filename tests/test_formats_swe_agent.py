"""The `swe-agent` adapter (read only): `.traj` histories converted to openai."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxpack import formats, toolpairs
from ctxpack import messages as m
from ctxpack.errors import UsageError
from ctxpack.tokens.counter import TokenCounter
from tests.conftest import COUNTER, FIXTURES
from tests.test_formats_support import expected

TRAJS = sorted((FIXTURES / "swe-agent").glob("*.traj"))


@pytest.mark.parametrize("path", TRAJS, ids=lambda p: p.name)
def test_converts_to_openai_with_consistent_tool_pairs(path: Path) -> None:
    history = json.loads(path.read_bytes())["history"]
    transcript = formats.read(path.read_bytes(), path=str(path))
    assert transcript.format == "swe-agent"
    out = formats.write(transcript, fmt="openai", counter=COUNTER)
    converted = formats.read(out, path="out.jsonl")
    assert converted.format == "openai"
    msgs = converted.sessions[0].messages
    assert toolpairs.orphans(msgs) == ([], [])
    assert [m.role(x) for x in msgs] == [h["role"] for h in history]
    calls = [c["id"] for h in history for c in h.get("tool_calls") or []]
    assert [m.call_id(c) for x in msgs for c in m.tool_calls(x)] == calls and calls
    answered = [i for h in history for i in h.get("tool_call_ids") or []]
    assert [x["tool_call_id"] for x in msgs if m.role(x) == "tool"] == answered
    assert all("tool_call_ids" not in x for x in msgs)


@pytest.mark.parametrize("path", TRAJS, ids=lambda p: p.name)
def test_token_count_matches_a_direct_count(path: Path, counter: TokenCounter) -> None:
    history = json.loads(path.read_bytes())["history"]
    texts = [h["content"] for h in history]
    texts += [
        t
        for h in history
        for c in h.get("tool_calls") or []
        for t in (c["function"]["name"], c["function"]["arguments"])
    ]
    msgs = formats.read(path.read_bytes(), path=str(path)).sessions[0].messages
    assert counter.messages(msgs) == expected(texts, len(history))


def test_results_without_ids_answer_the_oldest_open_call() -> None:
    call = {"id": "call_a", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    doc = {
        "trajectory": [],
        "history": [
            {"role": "system", "content": "You fix bugs.", "agent": "main"},
            {"role": "assistant", "content": "Look.", "tool_calls": [call], "agent": "main"},
            {"role": "tool", "content": "README.md", "agent": "main"},
        ],
    }
    msgs = formats.read(json.dumps(doc).encode(), path="x.traj").sessions[0].messages
    assert msgs[2]["tool_call_id"] == "call_a"


def test_writing_a_read_only_format_is_a_usage_error() -> None:
    transcript = formats.read(TRAJS[0].read_bytes(), path=str(TRAJS[0]))
    with pytest.raises(UsageError, match="read but not written"):
        formats.write(transcript, counter=COUNTER)
