"""One index per session per run: every lookup it hands a stage is exactly
what that stage would have found by itself, and the stages of one run share
it (one pairing of the input, one description per call, one read of each
message's facts)."""

from __future__ import annotations

import weakref
from array import array
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack import formats
from ctxpack import messages as m
from ctxpack.align.boundaries import plan_boundaries
from ctxpack.align.budget import Budget
from ctxpack.calls import describe
from ctxpack.evaluate.retention import evaluate
from ctxpack.markers import summary_indexes
from ctxpack.pipeline.archiving import replaced_texts
from ctxpack.pipeline.compaction import CompressSettings, compress_messages
from ctxpack.pipeline.stages import Compress
from ctxpack.prune.stage import PruneSettings, prune_messages
from ctxpack.sessionindex import SessionIndex, _Version
from ctxpack.tokens.counter import TokenCounter
from ctxpack.toolpairs import pair
from ctxpack.transcript import Message
from tests.conftest import FIXTURES

REAL = [
    FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl",
    FIXTURES / "codex" / "Trezo-Ai__codex-session.jsonl",
    FIXTURES
    / "swe-agent"
    / "SWE-agent__function_calling__install-1__marshmallow-code__marshmallow-1867.traj",
]
# Few ids, so that ids are reused and results name calls long gone.
IDS = st.sampled_from(["", "a", "b", "c"])


@st.composite
def tool_traffic(draw: st.DrawFn) -> list[Message]:
    """Messages in every shape the pairing rule knows: calls with and without
    ids (and reused ones), legacy function calls, results with an id, without
    one, and as `role: function`, in any order."""
    out: list[Message] = []
    for _ in range(draw(st.integers(0, 30))):
        kind = draw(st.sampled_from(["user", "assistant", "calls", "legacy", "tool", "function"]))
        if kind == "user":
            out.append({"role": "user", "content": "go on"})
        elif kind == "assistant":
            out.append({"role": "assistant", "content": "done"})
        elif kind == "calls":
            calls = [
                {"id": call_id, "type": "function", "function": {"name": "sh", "arguments": "{}"}}
                for call_id in draw(st.lists(IDS, min_size=1, max_size=3))
            ]
            out.append({"role": "assistant", "content": None, "tool_calls": calls})
        elif kind == "legacy":
            call = {"name": "read", "arguments": '{"path": "a.py"}'}
            out.append({"role": "assistant", "content": None, "function_call": call})
        elif kind == "tool":
            result: Message = {"role": "tool", "content": "ok"}
            call_id = draw(IDS)
            if call_id:
                result["tool_call_id"] = call_id
            out.append(result)
        else:
            out.append({"role": "function", "name": "read", "content": "text"})
    return out


def _pruned_version(messages: list[Message], changed: set[int]) -> list[Message]:
    """What pruning makes of `messages`: some outputs' text replaced, some
    calls' arguments shrunk; everything else the very same objects."""
    out = list(messages)
    for index in changed:
        copy = dict(messages[index])
        if m.is_tool_result(copy):
            copy["content"] = "[output pruned]"
        elif "tool_calls" in copy:
            copy["tool_calls"] = [
                {**call, "function": {"name": "sh", "arguments": '{"cut": 1}'}}
                for call in copy["tool_calls"]
            ]
        out[index] = copy
    return out


@settings(max_examples=300, deadline=None)
@given(tool_traffic(), st.data())
def test_a_stretch_pairs_as_the_whole_says(messages: list[Message], data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(messages)))
    end = data.draw(st.integers(start, len(messages)))
    assert pair(messages).within(start, end) == pair(messages[start:end])


@settings(max_examples=300, deadline=None)
@given(tool_traffic(), st.data())
def test_a_pruned_version_and_its_stretches_pair_as_if_paired_anew(
    messages: list[Message], data: st.DataObject
) -> None:
    changed = data.draw(st.sets(st.integers(0, max(len(messages) - 1, 0)), max_size=6))
    version = _pruned_version(messages, changed if messages else set())
    index = SessionIndex(messages)
    assert index.pairing_of(version) == pair(version)
    start = data.draw(st.integers(0, len(version)))
    end = data.draw(st.integers(start, len(version)))
    assert index.pairing_of(version[start:end]) == pair(version[start:end])
    assert index.pairing_of(messages[start:end]) == pair(messages[start:end])


def _replaced(msg: Message, how: str) -> Message:
    """A copy of `msg` that pairs as it does ("alike": another text, or its
    calls' arguments shrunk) or that may not ("unlike": another result id,
    another role)."""
    copy = dict(msg)
    if how == "alike":
        if "tool_calls" in copy:
            copy["tool_calls"] = [
                {**call, "function": {"name": "sh", "arguments": '{"cut": 1}'}}
                for call in copy["tool_calls"]
            ]
        else:
            copy["content"] = "the turn without the record merged into it"
    elif m.is_tool_result(copy):
        copy["tool_call_id"] = "z"
    else:
        copy["role"] = "tool"
    return copy


@settings(max_examples=400, deadline=None)
@given(tool_traffic(), st.data())
def test_a_stretch_with_messages_replaced_pairs_as_if_paired_anew(
    messages: list[Message], data: st.DataObject
) -> None:
    """A stretch of the session in which some messages stand in for the ones
    they replace (a turn a record was merged into, read back without it): the
    index reads it off the session's pairing when they pair alike, and pairs
    anew otherwise; either way the answer is pair()'s."""
    start = data.draw(st.integers(0, len(messages)))
    end = data.draw(st.integers(start, len(messages)))
    stretch = messages[start:end]
    places = st.integers(0, max(len(stretch) - 1, 0))
    changes = data.draw(st.dictionaries(places, st.sampled_from(["alike", "unlike"]), max_size=3))
    for at, how in changes.items():
        if stretch:
            stretch[at] = _replaced(stretch[at], how)
    index = SessionIndex(messages)
    index.pairing_of(messages)
    assert index.pairing_of(stretch) == pair(stretch)


def test_a_turn_read_back_without_its_record_is_read_off_the_pairing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The middle of a later round holds the turn the earlier record was
    merged into, read back without it: a new message, which pairs as the
    turn did. Its pairing is read off the session's, not paired anew, and
    not kept (a long middle's pairing is tens of megabytes)."""
    read = formats.read(REAL[0].read_bytes(), path=str(REAL[0])).sessions[0].messages
    # An assistant turn that calls a tool: its calls are read again, alike.
    turn = next(i for i, msg in enumerate(read) if i > 10 and m.tool_calls(msg))
    merged: Message = {**read[turn], "content": "On it.\n\n[an earlier record]"}
    messages = [*read[:turn], merged, *read[turn + 1 :]]
    middle = [*messages[3:turn], {**merged, "content": "On it."}, *messages[turn + 1 : -3]]
    assert pair(middle).links and pair(middle) == pair(messages).within(3, len(messages) - 3)
    expected = pair(middle)
    index = SessionIndex(messages)
    index.pairing_of(messages)
    monkeypatch.setattr("ctxpack.sessionindex.pair", lambda _: pytest.fail("paired anew"))
    assert index.pairing_of(middle) == expected
    assert [version.messages for version in index._versions] == [messages]


@settings(max_examples=400, deadline=None)
@given(tool_traffic(), st.data())
def test_a_selection_pairs_as_if_paired_anew(messages: list[Message], data: st.DataObject) -> None:
    """Messages left out of a version (a record taken out of the middle): the
    index derives the pairing when nothing left out could change it, and
    pairs anew otherwise; either way the answer is pair()'s."""
    # Mostly plain turns (what a record is), sometimes anything.
    plain = [i for i, msg in enumerate(messages) if msg.get("content") in ("go on", "done")]
    anywhere = st.integers(0, max(len(messages) - 1, 0))
    pick = st.sampled_from(plain) | anywhere if plain else anywhere
    dropped = data.draw(st.sets(pick, max_size=5))
    selection = [msg for i, msg in enumerate(messages) if i not in dropped]
    index = SessionIndex(messages)
    index.pairing_of(messages)  # the version the selection is read off
    assert index.pairing_of(selection) == pair(selection)


def test_the_index_keeps_no_pairing_of_a_selection() -> None:
    """The middle without its records is paired once, for the scan: the index
    lets its pairing go with it (a long middle's is tens of megabytes)."""
    read = formats.read(REAL[0].read_bytes(), path=str(REAL[0])).sessions[0].messages
    record: Message = {"role": "user", "content": "an earlier record"}
    messages = [*read[:31], record, *read[31:]]
    selection = [msg for msg in messages[2:-2] if msg is not record]
    index = SessionIndex(messages)
    index.pairing_of(messages)

    def paired() -> weakref.ref[Any]:
        found = index.pairing_of(selection)
        if found != pair(selection) or not found.calls:
            raise AssertionError("not the selection's own pairing")
        return weakref.ref(found)

    assert paired()() is None
    assert index.pairing_of(messages) is index.pairing_of(messages)


@settings(max_examples=400, deadline=None)
@given(tool_traffic(), st.data())
def test_a_selection_of_a_stretch_pairs_as_if_paired_anew(
    messages: list[Message], data: st.DataObject
) -> None:
    """The middle of a session with the records in it taken out: a stretch
    whose edges may cut calls from their results, less some messages inside."""
    start = data.draw(st.integers(0, len(messages)))
    end = data.draw(st.integers(start, len(messages)))
    plain = [i for i in range(start, end) if messages[i].get("content") in ("go on", "done")]
    inside = st.integers(start, max(end - 1, start))
    pick = st.sampled_from(plain) | inside if plain else inside
    dropped = data.draw(st.sets(pick, max_size=4))
    selection = [messages[i] for i in range(start, end) if i not in dropped]
    index = SessionIndex(messages)
    index.pairing_of(messages)
    assert index.pairing_of(selection) == pair(selection)


def test_a_record_left_out_is_read_off_the_pairing(monkeypatch: pytest.MonkeyPatch) -> None:
    call = {"id": "", "type": "function", "function": {"name": "sh", "arguments": "{}"}}
    record: Message = {"role": "user", "content": "[ctxpack summary]"}
    messages: list[Message] = [
        {"role": "user", "content": "go"},
        record,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "content": "ok"},
    ]
    index = SessionIndex(messages)
    index.pairing_of(messages)
    monkeypatch.setattr("ctxpack.sessionindex.pair", lambda _: pytest.fail("paired anew"))
    without = [msg for msg in messages if msg is not record]
    assert index.pairing_of(without).links == {2: pair(without).links[2]}
    # So is a record inside a stretch (the middle, between the head and the tail).
    stretch = [messages[0], messages[2]]
    assert index.pairing_of(stretch) == pair(stretch)
    # Left out right before an id-less result, a message could change what it answers.
    before_result = [messages[0], messages[2], record]
    mixed = [*before_result, {"role": "tool", "content": "late"}]
    monkeypatch.undo()
    index = SessionIndex(mixed)
    index.pairing_of(mixed)
    assert index.pairing_of([mixed[0], mixed[1], mixed[3]]) == pair([mixed[0], mixed[1], mixed[3]])


def test_a_list_that_pairs_otherwise_is_paired_anew() -> None:
    call = {"id": "a", "type": "function", "function": {"name": "sh", "arguments": "{}"}}
    messages: list[Message] = [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "a", "content": "ok"},
    ]
    index = SessionIndex(messages)
    renamed = [messages[0], {"role": "tool", "tool_call_id": "b", "content": "ok"}]
    assert index.pairing_of(renamed) == pair(renamed)
    assert index.pairing_of(renamed).orphan_results == [1]
    assert index.pairing.orphan_results == []


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.parent.name)
def test_each_result_is_described_by_the_call_it_answers(path: Path) -> None:
    messages = formats.read(path.read_bytes(), path=str(path)).sessions[0].messages
    index = SessionIndex(messages)
    links = pair(messages).links
    results = [i for i, msg in enumerate(messages) if m.is_tool_result(msg)]
    assert results
    for i in results:
        use = links.get(i)
        name = use.name if use else messages[i].get("name", "")
        assert index.call_info(i) == describe(name, use.arguments if use else "")
    # A re-run call is described once: the same object comes back.
    assert index.call_info(results[0]) is index.call_info(results[0])


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.parent.name)
def test_every_stage_reads_the_index_as_it_would_find_alone(
    path: Path, counter: TokenCounter
) -> None:
    """Prune, the boundaries of the pruned session, its middle and tail, the
    retention check and the archive record: each the same through the run's
    index as on its own."""
    transcript = formats.read(path.read_bytes(), path=str(path))
    messages = transcript.sessions[0].messages
    index = SessionIndex(messages)
    budget = Budget(tail_tokens=2_000, protect_last=4)
    prune = PruneSettings(budget=budget)
    pruned = prune_messages(messages, counter=counter, settings=prune, index=index)
    assert pruned == prune_messages(messages, counter=counter, settings=prune)
    assert pruned.rows, "the fixture is meant to prune"
    after = pruned.messages
    assert index.pairing_of(after) == pair(after)
    plan = plan_boundaries(after, counter=counter, budget=budget, index=index)
    assert plan == plan_boundaries(after, counter=counter, budget=budget)
    assert index.summaries(after) == summary_indexes(after)
    middle, tail = plan.middle(after), plan.tail(after)
    assert index.pairing_of(middle) == pair(middle)
    assert index.pairing_of(tail) == pair(tail)

    settings = CompressSettings(budget=budget, force=True)
    out, report = compress_messages(messages, counter=counter, settings=settings, index=index)
    assert (out, report) == compress_messages(messages, counter=counter, settings=settings)
    shared = evaluate(messages, out, counter=counter, index=index)
    assert shared.to_dict() == evaluate(messages, out, counter=counter).to_dict()
    result = transcript.with_sessions([transcript.sessions[0].with_messages(out)])
    one = transcript.with_sessions(transcript.sessions[:1])
    assert replaced_texts(one, result, indexes=[index]) == replaced_texts(one, result)


def test_equal_texts_replaced_are_held_as_one_copy_of_their_bytes() -> None:
    lines = [
        {"role": "user", "content": "read the log"},
        *[
            msg
            for n, output in enumerate(["ERROR: disk full", "ok", "ERROR: disk full", "héllo"])
            for msg in (
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"c{n}",
                            "type": "function",
                            "function": {"name": "sh", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": f"c{n}", "content": output},
            )
        ],
    ]
    data = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    transcript = formats.read(data, path="s.jsonl")
    messages = transcript.sessions[0].messages
    kept = [msg for msg in messages if not m.is_tool_result(msg)]
    result = transcript.with_sessions([transcript.sessions[0].with_messages(kept)])
    blobs = [blob for blob, _ in replaced_texts(transcript, result)]
    assert blobs == [b"ERROR: disk full", b"ok", b"ERROR: disk full", "héllo".encode()]
    assert blobs[0] is blobs[2]


def test_a_message_is_placed_in_a_version_only_at_a_whole_word() -> None:
    messages: list[Message] = [{"role": "user", "content": str(n)} for n in range(3)]
    version = _Version(messages, pair(messages))
    assert [version.place(msg) for msg in messages] == [0, 1, 2]
    assert version.place({"role": "user", "content": "0"}) == -1
    # The ids are searched as bytes: a match that straddles two ids is none.
    word = array("Q", [id(messages[2])]).tobytes()
    half = b"\0" * (len(word) // 2)
    version._ids = half + word + half + word
    assert version.place(messages[2]) == 2


def test_the_summarizer_fills_the_facts_the_retention_check_reads(counter: TokenCounter) -> None:
    """The facts of the summarized turns are read once, by the summarizer, and
    the retention check of the same run finds them on the index."""
    path = REAL[0]
    transcript = formats.read(path.read_bytes(), path=str(path))
    messages = transcript.sessions[0].messages
    index = SessionIndex(messages)
    budget = Budget(tail_tokens=2_000, protect_last=4)
    settings = CompressSettings(budget=budget, force=True)
    _, report = compress_messages(messages, counter=counter, settings=settings, index=index)
    start, end = report.summarized or (0, 0)
    assert end > start
    pruned = prune_messages(messages, counter=counter, settings=PruneSettings(budget=budget))
    # The middle as the summarizer read it: the input's own objects where
    # pruning left them, new ones where it replaced them.
    read = pruned.messages[start:end]
    untouched = [msg for msg in read if any(msg is original for original in messages)]
    assert untouched and len(untouched) < len(read)
    assert all(index.facts.known(msg) is not None for msg in untouched)
    # A replaced output is not the input's: its original's facts are the
    # retention check's own to find.
    replaced = [
        msg for i, msg in enumerate(messages[start:end], start) if msg is not read[i - start]
    ]
    assert replaced and all(index.facts.known(msg) is None for msg in replaced)


def test_the_compress_stage_hands_one_index_per_session_to_the_archive_record(
    counter: TokenCounter,
) -> None:
    path = REAL[1]
    transcript = formats.read(path.read_bytes(), path=str(path))
    staged = Compress(CompressSettings(force=True))(transcript, counter=counter)
    assert staged.indexes is not None
    assert [index.messages for index in staged.indexes] == [s.messages for s in transcript.sessions]
    assert all(
        a.messages is b.messages for a, b in zip(staged.indexes, transcript.sessions, strict=True)
    )
