"""Assembly: head + summary + tail, roles alternate at the summary,
the system note appears once, tool pairs stay whole, and a second compaction
updates the summary instead of nesting one."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack import formats
from ctxpack import messages as m
from ctxpack.align.boundaries import plan_boundaries
from ctxpack.align.budget import Budget
from ctxpack.formats.base import ReadOptions
from ctxpack.markers import (
    SUMMARY_END,
    SUMMARY_PREFIX,
    SYSTEM_NOTE,
    has_system_note,
    is_summary,
    summary_body,
)
from ctxpack.summarize.assemble import (
    Assembly,
    assemble,
    summary_block,
    summary_role,
    without_merged_summary,
)
from ctxpack.toolpairs import orphans
from ctxpack.transcript import Message
from tests.conftest import TAU_BENCH
from tests.test_boundaries import (
    EST,
    assistant,
    budgets,
    calls,
    latest_real_user,
    result,
    system,
    transcripts,
    user,
)

BODY = "## Goal\nMake the parser accept trailing commas."


def _roles(messages: list[Message]) -> list[str]:
    return [m.role(msg) for msg in messages]


@pytest.mark.parametrize(
    ("head", "tail", "expected"),
    [
        ([system()], [user()], "assistant"),
        ([system()], [assistant()], "user"),
        ([], [user()], "assistant"),
        ([], [], "user"),
        ([system(), user(), assistant()], [assistant()], "user"),
        ([system(), user(), assistant()], [user()], None),
        ([system(), user()], [user()], "assistant"),
        ([system(), user()], [assistant()], None),
        ([system(), user(), calls("c1"), result("c1")], [user()], "assistant"),
        ([system(), user(), calls("c1"), result("c1")], [assistant()], "user"),
        ([user(), assistant()], [calls("c2")], "user"),
    ],
)
def test_summary_role(head: list[Message], tail: list[Message], expected: str | None) -> None:
    assert summary_role(head, tail) == expected
    out = assemble(head=head, summary=BODY, tail=tail, first_compaction=False).messages
    # Never two user or two assistant messages in a row at the summary.
    for a, b in itertools.pairwise(out):
        if is_summary(a) or is_summary(b):
            assert not (m.role(a) == m.role(b) and m.role(a) in ("user", "assistant"))


def test_summary_message_text() -> None:
    head, tail = [system(), user(), assistant()], [assistant("done")]
    out = assemble(head=head, summary=f"  {BODY}\n", tail=tail, first_compaction=False).messages
    assert out[3] == {"role": "user", "content": f"{SUMMARY_PREFIX}\n\n{BODY}\n\n{SUMMARY_END}"}
    assert summary_body(out[3]) == BODY
    assert out[:3] == head and all(a is b for a, b in zip(out, head, strict=False))
    assert out[4] is tail[0]


def test_both_roles_collide_merges_into_first_tail_message() -> None:
    latest = user("please also add tests")
    detail = assemble(
        head=[system(), user(), assistant()],
        summary=BODY,
        tail=[latest, assistant()],
        first_compaction=False,
    )
    out = detail.messages
    assert detail.merged and detail.summary_index == 3 and detail.role == "user"
    assert _roles(out) == ["system", "user", "assistant", "user", "assistant"]
    # The record tells of turns before this one: it comes first, and the
    # user's words are the last thing the model reads.
    assert out[3]["content"] == f"{summary_block(BODY)}\n\nplease also add tests"
    assert latest["content"] == "please also add tests"
    assert is_summary(out[3]) and summary_body(out[3]) == BODY
    assert without_merged_summary(out[3]) == latest
    assert without_merged_summary({"role": "user", "content": summary_block(BODY)}) is None


def test_a_record_merged_after_the_text_by_an_earlier_version_reads_back() -> None:
    earlier = {"role": "user", "content": f"please also add tests\n\n{summary_block(BODY)}"}
    assert is_summary(earlier) and summary_body(earlier) == BODY
    assert without_merged_summary(earlier) == user("please also add tests")


def test_the_turns_text_may_quote_the_end_marker() -> None:
    own = f"why does the file say {SUMMARY_END}?"
    merged = {"role": "user", "content": f"{summary_block(BODY)}\n\n{own}"}
    assert summary_body(merged) == BODY
    assert without_merged_summary(merged) == user(own)


_TURN_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200).filter(
    lambda text: text.strip() != "" and "[ctxpack" not in text
)


@settings(max_examples=200, deadline=None)
@given(
    own=_TURN_TEXT,
    body=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=200).filter(
        lambda text: text.strip() != ""
    ),
    role=st.sampled_from(["user", "assistant"]),
)
def test_a_record_that_rides_in_a_turn_gives_back_that_turn_exactly(
    own: str, body: str, role: str
) -> None:
    """Whatever the turn and the record say (the marker quoted included), the
    turn comes back as it was, and the record's body as it was written."""
    turn = {"role": role, "content": own}
    head = [system(), user(), assistant()] if role == "user" else [system(), user()]
    detail = assemble(head=head, summary=body, tail=[turn], first_compaction=False)
    merged = detail.messages[detail.summary_index]
    assert detail.merged and is_summary(merged)
    assert without_merged_summary(merged) == turn
    assert summary_body(merged) == body.strip()
    assert m.text(merged).endswith(own)


def test_merge_into_list_content_prepends_a_text_part() -> None:
    parts: list[dict[str, Any]] = [{"type": "text", "text": "see screenshot"}]
    parts.append({"type": "image_url", "image_url": {"url": "data:,"}})
    latest = {"role": "user", "content": parts}
    out = assemble(
        head=[system(), user(), assistant()], summary=BODY, tail=[latest], first_compaction=False
    ).messages
    assert out[3]["content"] == [{"type": "text", "text": summary_block(BODY)}, *parts]
    assert without_merged_summary(out[3]) == latest


@pytest.mark.parametrize("summary", ["", "  \n\t"])
def test_empty_summary_is_refused(summary: str) -> None:
    with pytest.raises(ValueError, match="empty summary"):
        assemble(head=[system()], summary=summary, tail=[user()], first_compaction=True)


def test_system_note_once_and_only_on_first_compaction() -> None:
    head = [system("Be brief."), user(), assistant()]
    tail = [assistant("ok"), user(), assistant()]
    first = assemble(head=head, summary=BODY, tail=tail, first_compaction=True).messages
    assert first[0] == {"role": "system", "content": f"Be brief.\n\n{SYSTEM_NOTE}"}
    assert head[0]["content"] == "Be brief."
    again = assemble(head=first[:1], summary=BODY, tail=tail, first_compaction=True).messages
    assert again[0] is first[0]
    later = assemble(head=head, summary=BODY, tail=tail, first_compaction=False).messages
    assert later[0] is head[0]
    bare = assemble(
        head=[user(), assistant()], summary=BODY, tail=tail, first_compaction=True
    ).messages
    assert not any(has_system_note(msg) for msg in bare)
    listed = {"role": "system", "content": [{"type": "text", "text": "Be brief."}]}
    noted = assemble(head=[listed], summary=BODY, tail=tail, first_compaction=True).messages[0]
    assert noted["content"][-1] == {"type": "text", "text": SYSTEM_NOTE}


def test_pairs_broken_by_the_cut_are_sanitized() -> None:
    # The head keeps a call whose result was summarized; the tail keeps a result
    # whose call was.
    head = [system(), user(), calls("c1", text="looking")]
    tail = [result("c2"), assistant("found it"), user(), assistant()]
    detail = assemble(head=head, summary=BODY, tail=tail, first_compaction=False)
    out = detail.messages
    assert orphans(out) == ([], [])
    assert out[2] == {"role": "assistant", "content": "looking"}
    assert _roles(out) == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert detail.summary_index == 3 and is_summary(out[3])
    assert len(detail.sanitizer_notes) == 2
    assert detail.sanitizer_notes == [
        "#2: removed call c1 (run): no result",
        "#4: dropped a tool result whose call is gone",
    ]


def _same_chat_role(a: Message, b: Message) -> bool:
    return m.role(a) == m.role(b) and m.role(a) in ("user", "assistant")


def _check_assembled(before: list[Message], tail: list[Message], detail: Assembly) -> None:
    out = detail.messages
    assert orphans(out) == ([], [])
    summaries = [i for i, msg in enumerate(out) if is_summary(msg)]
    assert summaries == [detail.summary_index]
    at = detail.summary_index
    # The pairs the summary created: with the head, and (unless it was merged
    # into the first tail message) with the tail.
    if at > 0:
        assert not _same_chat_role(out[at - 1], out[at])
    if not detail.merged and at + 1 < len(out):
        assert not _same_chat_role(out[at], out[at + 1])
    latest = latest_real_user(before)
    if latest is not None and any(before[latest] is msg for msg in tail):
        # Blank user turns after it ask nothing; the last one that does must be it
        # (with the record before its words, when the record rides in it).
        asking = [m.role(msg) == "user" and m.has_visible_text(msg) for msg in out]
        last_user = [msg for msg, ask in zip(out, asking, strict=True) if ask][-1]
        text = m.text(before[latest])
        assert last_user is before[latest] or m.text(last_user).endswith(text)
    has_system = any(m.role(msg) == "system" for msg in before)
    assert sum(has_system_note(msg) for msg in out) == int(has_system)


def _compact(messages: list[Message], budget: Budget, body: str) -> list[Message] | None:
    plan = plan_boundaries(messages, counter=EST, budget=budget)
    if not plan.compressible:
        return None
    head, tail = plan.head(messages), plan.tail(messages)
    first = not any(has_system_note(msg) for msg in head)
    detail = assemble(head=head, summary=body, tail=tail, first_compaction=first)
    _check_assembled(messages, tail, detail)
    return detail.messages


def _check_second_compaction(out: list[Message], budget: Budget) -> None:
    plan = plan_boundaries(out, counter=EST, budget=budget)
    index = next(i for i, msg in enumerate(out) if is_summary(msg))
    assert plan.previous_summary_index == index
    # The first compaction's head stays the head.
    assert plan.head_end == index
    again = _compact(out, budget, "## Goal\nsecond pass")
    if again is not None:
        assert [summary_body(msg) for msg in again if is_summary(msg)] == ["## Goal\nsecond pass"]


@settings(max_examples=100, deadline=None)
@given(transcripts(), budgets)
def test_assembly_properties_over_two_compactions(messages: list[Message], budget: Budget) -> None:
    out = _compact(messages, budget, BODY)
    if out is not None:
        _check_second_compaction(out, budget)


def test_tau_bench_sessions_compact_twice() -> None:
    transcript = formats.read(TAU_BENCH.read_bytes(), path=str(TAU_BENCH), options=ReadOptions())
    budget = Budget(tail_tokens=600, protect_last=6)
    merged = compacted = 0
    for session in transcript.sessions[:60]:
        out = _compact(session.messages, budget, BODY)
        assert out is not None
        compacted += 1
        merged += any(is_summary(msg) and without_merged_summary(msg) for msg in out)
        assert out[0]["content"].endswith(f"\n\n{SYSTEM_NOTE}")
        _check_second_compaction(out, budget)
    assert compacted == 60 and merged > 0
