"""Tool-pair sanitizer: after any cut, every call is answered and every result
called for; nothing is invented; untouched messages stay the same objects."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack import formats
from ctxpack import messages as m
from ctxpack.formats.base import ReadOptions
from ctxpack.summarize.sanitize import EMPTIED_NOTE, sanitize_tool_pairs
from ctxpack.toolpairs import link_results, orphans
from ctxpack.transcript import Message
from tests.conftest import TAU_BENCH, TOOLBENCH
from tests.test_boundaries import (
    assistant,
    calls,
    legacy_call,
    legacy_result,
    result,
    system,
    transcripts,
    user,
)


def _same_objects(a: list[Message], b: list[Message]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def test_result_whose_call_is_gone_is_dropped() -> None:
    messages = [system(), result("c1", "stale output"), user(), assistant()]
    out, notes = sanitize_tool_pairs(messages)
    assert out == [messages[0], messages[2], messages[3]]
    assert _same_objects(out, [messages[0], messages[2], messages[3]])
    assert notes == ["#1: dropped a tool result whose call is gone"]


def test_unanswered_call_is_stripped_and_answered_one_kept() -> None:
    call_msg = calls("c1", "c2", text="checking both")
    messages = [user(), call_msg, result("c2"), assistant()]
    out, notes = sanitize_tool_pairs(messages)
    assert [c["id"] for c in out[1]["tool_calls"]] == ["c2"]
    assert out[1]["content"] == "checking both"
    assert call_msg["tool_calls"][0]["id"] == "c1"  # the input is not mutated
    assert out[0] is messages[0] and out[2] is messages[2] and out[3] is messages[3]
    assert notes == ["#1: removed call c1 (run): no result"]


def test_a_call_still_waiting_for_its_result_stays_and_is_noted() -> None:
    """Only what the cut broke is repaired: a call the transcript itself has no
    result for yet (the agent's last message) stays as it was."""
    waiting = calls("c9", text="running the suite")
    cut_off = calls("c1", "c2")
    messages = [user(), cut_off, result("c2"), user("now the suite"), waiting]
    out, notes = sanitize_tool_pairs(messages, pending=frozenset({"c9"}))
    assert out[4] is waiting
    assert [c["id"] for c in out[1]["tool_calls"]] == ["c2"]
    assert notes == [
        "#1: removed call c1 (run): no result",
        "#4: kept call c9 (run): no result yet",
    ]


def test_assistant_left_empty_gets_a_note() -> None:
    messages = [user(), calls("c1"), user("never mind")]
    out, notes = sanitize_tool_pairs(messages)
    assert out[1] == {"role": "assistant", "content": EMPTIED_NOTE}
    assert "tool_calls" not in out[1]
    assert notes[-1] == "#1: assistant message left empty; added a note"
    parts = {**calls("c1"), "content": [{"type": "image_url", "image_url": {"url": "x"}}]}
    out, _ = sanitize_tool_pairs([user(), parts, user()])
    assert out[1]["content"][-1] == {"type": "text", "text": EMPTIED_NOTE}
    assert out[1]["content"][0] == parts["content"][0]


def test_legacy_function_calls_pair_by_position() -> None:
    messages = [
        user(),
        legacy_result("orphan"),  # no function_call before it
        legacy_call("a"),
        legacy_result("a"),
        user(),
        legacy_call("b", text="trying b"),  # its result was cut away
        user(),
    ]
    out, notes = sanitize_tool_pairs(messages)
    assert [m.role(x) for x in out] == [
        "user",
        "assistant",
        "function",
        "user",
        "assistant",
        "user",
    ]
    assert out[1] is messages[2] and out[2] is messages[3]
    assert out[4] == {"role": "assistant", "content": "trying b"}
    assert notes == [
        "#1: dropped a function result whose call is gone",
        "#5: removed function_call b: no result",
    ]


def test_reused_call_ids_pair_with_the_latest_call() -> None:
    # tau-bench reuses ids: the second call with id c1 never got its result.
    messages = [user(), calls("c1"), result("c1"), assistant(), calls("c1"), user()]
    out, notes = sanitize_tool_pairs(messages)
    assert _same_objects(out[:4], messages[:4])
    assert out[4] == {"role": "assistant", "content": EMPTIED_NOTE}
    assert notes[0] == "#4: removed call c1 (run): no result"


def test_real_transcripts() -> None:
    tau = formats.read(TAU_BENCH.read_bytes(), path=str(TAU_BENCH), options=ReadOptions())
    for session in tau.sessions:
        out, notes = sanitize_tool_pairs(session.messages)
        assert notes == [] and _same_objects(out, session.messages)
    # ToolBench ends on a `Finish` function_call that no result answers.
    tool = formats.read(TOOLBENCH.read_bytes(), path=str(TOOLBENCH), options=ReadOptions())
    messages = tool.sessions[0].messages
    out, notes = sanitize_tool_pairs(messages)
    assert _same_objects(out[:-1], messages[:-1])
    assert "function_call" not in out[-1]
    assert out[-1]["content"] == messages[-1]["content"]
    assert notes == ["#7: removed function_call Finish: no result"]


@st.composite
def cut_transcripts(draw: st.DrawFn) -> list[Message]:
    """A valid transcript with arbitrary messages cut out: one contiguous run
    (what summarizing does) and a few scattered ones."""
    messages = draw(transcripts())
    start = draw(st.integers(0, len(messages)))
    stop = draw(st.integers(start, len(messages)))
    kept = messages[:start] + messages[stop:]
    drop = draw(st.sets(st.integers(0, max(len(kept) - 1, 0)), max_size=3))
    return [msg for i, msg in enumerate(kept) if i not in drop]


@settings(max_examples=120, deadline=None)
@given(cut_transcripts())
def test_no_orphans_after_any_cut(messages: list[Message]) -> None:
    out, notes = sanitize_tool_pairs(messages)
    assert orphans(out) == ([], [])
    # Positional pairs too: every result answers a call, every call has a result.
    links = link_results(out)
    for i, msg in enumerate(out):
        if m.is_tool_result(msg):
            assert i in links
        if m.legacy_function_call(msg) is not None:
            assert i + 1 < len(out) and m.role(out[i + 1]) == "function"
    # Nothing invented, nothing but results removed, untouched objects kept.
    inputs = {id(msg) for msg in messages}
    assert all(id(msg) in inputs for msg in out if m.is_tool_result(msg))
    assert [m.role(x) for x in out if not m.is_tool_result(x)] == [
        m.role(x) for x in messages if not m.is_tool_result(x)
    ]
    changed = [msg for msg in out if id(msg) not in inputs]
    assert all(m.role(msg) == "assistant" for msg in changed)
    assert (notes == []) == (_same_objects(out, messages))
    again, more = sanitize_tool_pairs(out)
    assert more == [] and _same_objects(again, out)
