"""Stage 2 (align): where head, middle and tail fall, and why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack import messages as m
from ctxpack.align.boundaries import plan_boundaries
from ctxpack.align.budget import Budget
from ctxpack.align.plan import AlignPlan, plans_from_json
from ctxpack.errors import UsageError
from ctxpack.markers import SUMMARY_END, SUMMARY_PREFIX, is_summary
from ctxpack.tokens.counter import TokenCounter
from ctxpack.toolpairs import link_results
from ctxpack.transcript import Message

# 4 characters per token: every 40-character text is 10 tokens + 4 overhead.
EST = TokenCounter(estimate=True)
TEXT = "x" * 40


# Message builders shared by the align, sanitize and assemble tests.
def system(text: str = "You are a careful coding agent.") -> Message:
    return {"role": "system", "content": text}


def user(text: str = TEXT) -> Message:
    return {"role": "user", "content": text}


def assistant(text: str | None = TEXT) -> Message:
    return {"role": "assistant", "content": text}


def calls(*ids: str, text: str | None = None, name: str = "run") -> Message:
    return {
        "role": "assistant",
        "content": text,
        "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}
            for cid in ids
        ],
    }


def result(cid: str, text: str = "ok") -> Message:
    return {"role": "tool", "tool_call_id": cid, "content": text}


def legacy_call(name: str = "lookup", text: str | None = None) -> Message:
    return {
        "role": "assistant",
        "content": text,
        "function_call": {"name": name, "arguments": "{}"},
    }


def legacy_result(name: str = "lookup", text: str = "ok") -> Message:
    return {"role": "function", "name": name, "content": text}


def our_summary(body: str = "## Goal\nship it", role: str = "user") -> Message:
    return {"role": role, "content": f"{SUMMARY_PREFIX}\n\n{body}\n\n{SUMMARY_END}"}


def chat(pairs: int) -> list[Message]:
    """A system message and `pairs` user/assistant exchanges, 14 tokens each."""
    out = [system()]
    for _ in range(pairs):
        out += [user(), assistant()]
    return out


@dataclass
class Case:
    messages: list[Message]
    head_end: int
    tail_start: int
    kinds: list[str]
    budget: dict[str, Any] = field(default_factory=dict)
    compressible: bool = True


def group(*ids: str, order: str | None = None) -> list[Message]:
    """An assistant message with parallel calls, then its results (in `order`)."""
    return [calls(*ids), *(result(cid) for cid in (order.split() if order else ids))]


def _agent_loop(start: int, count: int, *, last_text: bool = True) -> list[Message]:
    out: list[Message] = []
    for n in range(start, start + count):
        out += [calls(f"c{n}"), result(f"c{n}")]
    return [*out, assistant()] if last_text else out


CASES = {
    "too-short": Case([*chat(2), user()], 4, 4, [], compressible=False),
    # 13 messages after the head fit in 1.5 x 130 tokens; the plain 130 keeps 9.
    "all-fits": Case(chat(8), 4, 8, ["all-fits"], {"tail_tokens": 130}),
    # 1.5 x 60 = 90 tokens hold 6 messages of 14 (the plain budget would hold 4).
    "soft-ceiling": Case(chat(12), 4, 19, [], {"tail_tokens": 60, "protect_last": 4}),
    "floor": Case(chat(12), 4, 17, ["floor"], {"tail_tokens": 60, "protect_last": 20}),
    "floor-yields-to-min-middle": Case(
        [*chat(4), user()], 4, 6, ["floor", "min-middle"], {"tail_tokens": 10}
    ),
    "heavy-last-message": Case(
        [*chat(5), user(), assistant("y" * 4000)],
        4,
        10,
        ["floor"],
        {"tail_tokens": 100, "protect_last": 3},
    ),
    "heavy-result-stops-the-walk": Case(
        [*chat(1), user(), calls("c1"), result("c1", "z" * 4000), *chat(3)[2:]],
        4,
        6,
        [],
        {"tail_tokens": 100, "protect_last": 3},
    ),
    "parallel-calls": Case(
        [*chat(2), user(), *group("p1", "p2", "p3"), *chat(1)[2:], user(), assistant()],
        4,
        6,
        ["floor", "aligned-back"],
        {"tail_tokens": 0, "protect_last": 5},
    ),
    "parallel-results-out-of-order": Case(
        [*chat(2), user(), *group("p1", "p2", "p3", order="p3 p1 p2"), *chat(2)[2:]],
        4,
        6,
        ["floor", "aligned-back"],
        {"tail_tokens": 0, "protect_last": 5},
    ),
    "tail-on-tool-result": Case(
        [*chat(2), user(), calls("c1"), result("c1"), assistant(), user(), assistant()],
        4,
        6,
        ["floor", "aligned-back"],
        {"tail_tokens": 0, "protect_last": 4},
    ),
    "tail-on-legacy-function-result": Case(
        [*chat(2), user(), legacy_call(), legacy_result(), assistant(), user(), assistant()],
        4,
        6,
        ["floor", "aligned-back"],
        {"tail_tokens": 0, "protect_last": 4},
    ),
    "head-ends-inside-tool-group": Case(
        [system(), user(), *group("c1", "c2"), *chat(3)[1:]],
        5,
        7,
        ["aligned-forward", "floor"],
        {"tail_tokens": 0, "protect_last": 4, "protect_first": 2},
    ),
    # The latest user message is the first one after the head: it cannot stay in
    # the tail without emptying the middle, so its turn (#3 user, #4 call, #5
    # result) is summarized and the tail starts after that turn.
    "latest-user-at-head-edge": Case(
        [*chat(1), user(), *_agent_loop(1, 2)],
        3,
        6,
        ["all-fits", "min-middle", "aligned-forward", "turn-to-middle"],
        {"protect_first": 2},
    ),
    "latest-user-right-after-summary": Case(
        [system(), our_summary(), user(), *_agent_loop(1, 3)],
        1,
        5,
        ["all-fits", "min-middle", "turn-to-middle"],
    ),
    "assistant-text-before-latest-user": Case(
        [*chat(2), user(), assistant("which one?"), user("the first"), *_agent_loop(1, 3)][:14],
        4,
        6,
        ["floor", "aligned-back", "anchor-user", "anchor-assistant"],
        {"tail_tokens": 0, "protect_last": 3},
    ),
    "only-assistant-text-in-head": Case(
        [*chat(1), user(), *_agent_loop(1, 4, last_text=False)],
        4,
        8,
        ["floor"],
        {"tail_tokens": 0, "protect_last": 4},
    ),
    "only-assistant-text-right-after-head": Case(
        [
            system(),
            user(),
            *group("c0"),
            calls("c1", text="plan: fix it"),
            result("c1"),
            *_agent_loop(2, 3, last_text=False),
        ],
        4,
        8,
        ["floor", "turn-to-middle"],
        {"tail_tokens": 0, "protect_last": 4},
    ),
    "existing-summary-ours": Case(
        [system(), our_summary(), *chat(4)[1:]], 1, 3, ["all-fits", "min-middle"]
    ),
    # The turns before a summary were the earlier compaction's head: they stay.
    "existing-summary-hermes-head-kept": Case(
        [*chat(1), user("[CONTEXT SUMMARY]: we fixed the parser"), *chat(3)[2:]],
        3,
        5,
        ["all-fits", "min-middle"],
    ),
    "latest-user-in-head-before-summary": Case(
        [*chat(1), user("[CONTEXT COMPACTION] earlier work"), *_agent_loop(1, 3)],
        3,
        8,
        ["floor"],
        {"tail_tokens": 0, "protect_last": 3},
    ),
    "no-system-message": Case(chat(5)[1:], 3, 6, ["floor"], {"tail_tokens": 0, "protect_last": 4}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_boundary_rules(name: str) -> None:
    case = CASES[name]
    plan = plan_boundaries(case.messages, counter=EST, budget=Budget(**case.budget))
    assert (plan.head_end, plan.tail_start) == (case.head_end, case.tail_start)
    assert [a.kind for a in plan.adjustments] == case.kinds
    assert plan.compressible is case.compressible
    assert plan.note.startswith("nothing to compress") is not case.compressible
    assert plan.tokens_total == EST.messages(case.messages)
    _assert_invariants(case.messages, plan)


def test_too_short_keeps_everything_verbatim() -> None:
    messages = [*chat(2), user()]
    plan = plan_boundaries(messages, counter=EST, budget=Budget())
    assert plan.middle(messages) == []
    assert plan.head(messages) + plan.tail(messages) == messages
    assert "2 message(s) after the head" in plan.note


def test_soft_ceiling_and_budget_are_reported() -> None:
    plan = plan_boundaries(chat(12), counter=EST, budget=Budget(tail_tokens=60, protect_last=4))
    assert (plan.tail_budget, plan.soft_ceiling) == (60, 90)
    assert plan.tokens_tail == 6 * 14
    forced = plan_boundaries(chat(8), counter=EST, budget=Budget(tail_tokens=130))
    assert (forced.tail_budget, forced.soft_ceiling) == (130, 130)
    assert forced.tokens_tail == 9 * 14


def test_turn_to_middle_is_recorded_with_the_turn() -> None:
    messages = CASES["latest-user-at-head-edge"].messages
    plan = plan_boundaries(messages, counter=EST, budget=Budget(protect_first=2))
    move = plan.adjustments[-1]
    assert (move.kind, move.from_index, move.to_index) == ("turn-to-middle", 6, 6)
    assert "#3" in move.reason and "#3-#5" in move.reason
    assert plan.latest_user_index == 3
    assert plan.middle(messages) == messages[3:6]


def test_existing_summary_is_the_previous_summary() -> None:
    messages = [system(), our_summary(), *chat(4)[1:]]
    plan = plan_boundaries(messages, counter=EST, budget=Budget())
    assert plan.previous_summary_index == 1
    assert plan.previous_summary(messages) is messages[1]
    assert plan.middle_turns(messages) == [messages[2]]
    hermes = CASES["existing-summary-hermes-head-kept"].messages
    assert plan_boundaries(hermes, counter=EST, budget=Budget()).previous_summary_index == 3


def test_plan_json_round_trip() -> None:
    messages = CASES["latest-user-at-head-edge"].messages
    plan = plan_boundaries(messages, counter=EST, budget=Budget(protect_first=2))
    again = AlignPlan.from_dict(plan.to_dict(), messages=messages)
    assert again == plan
    assert again.to_dict() == plan.to_dict()


def test_plan_for_another_transcript_is_a_usage_error() -> None:
    messages = chat(6)
    data = plan_boundaries(messages, counter=EST, budget=Budget()).to_dict()
    with pytest.raises(UsageError, match="plan is for 13 messages but the transcript has 12"):
        AlignPlan.from_dict(data, messages=messages[:-1])
    summarized = [system(), our_summary(), *chat(4)[1:]]
    data = plan_boundaries(summarized, counter=EST, budget=Budget()).to_dict()
    assert AlignPlan.from_dict(data, messages=summarized).previous_summary_index == 1
    with pytest.raises(UsageError, match="#1 as the existing summary, but it is not one"):
        AlignPlan.from_dict(data, messages=[*chat(4), user()])


@pytest.mark.parametrize(
    "change",
    [
        {"head_end": -1},
        {"tail_start": 99},
        {"head_end": 9, "tail_start": 4},
        {"compressible": "yes"},
        {"tokens_middle": None},
        {"head_end": True},
        {"latest_user_index": 13},
        {"tail_start": 4},
        {"previous_summary_index": 12},
        {"adjustments": [{"kind": "sideways", "reason": "", "from_index": 0, "to_index": 0}]},
    ],
)
def test_malformed_plan_is_a_usage_error(change: dict[str, Any]) -> None:
    data = plan_boundaries(chat(6), counter=EST, budget=Budget()).to_dict() | change
    with pytest.raises(UsageError, match="plan"):
        AlignPlan.from_dict(data)
    with pytest.raises(UsageError):
        AlignPlan.from_dict([data])


def test_plans_from_json_checks_every_session() -> None:
    sessions = [chat(6), chat(8)]
    plans = [plan_boundaries(s, counter=EST, budget=Budget()) for s in sessions]
    doc = {"sessions": [{"session": f"#{i}", **p.to_dict()} for i, p in enumerate(plans)]}
    assert plans_from_json(doc, sessions=sessions) == plans
    assert plans_from_json(plans[0].to_dict(), sessions=sessions[:1]) == plans[:1]
    with pytest.raises(UsageError, match="2 session"):
        plans_from_json(doc, sessions=sessions[:1])
    with pytest.raises(UsageError, match="plan is for"):
        plans_from_json(doc, sessions=sessions[::-1])


# --- property: the rules hold on any valid transcript -------------------------

WORDS = "lorem ipsum dolor sit amet "


def _text(size: int) -> str:
    return (WORDS * (size // len(WORDS) + 1))[:size]


@st.composite
def transcripts(draw: st.DrawFn) -> list[Message]:
    """Valid transcripts: system prompt(s), user/assistant turns, tool groups with
    parallel calls (results in any order), legacy function calls, and sometimes
    an earlier compaction summary."""
    sizes = st.integers(0, 600)
    out = [system(_text(draw(sizes))) for _ in range(draw(st.integers(0, 2)))]
    kinds = ["user"] * 3 + ["assistant"] * 2 + ["tools"] * 4 + ["legacy", "summary"]
    for serial, kind in enumerate(draw(st.lists(st.sampled_from(kinds), min_size=2, max_size=30))):
        if kind == "user":
            out.append(user(_text(draw(sizes))))
        elif kind == "assistant":
            out.append(assistant(_text(draw(sizes))))
        elif kind == "tools":
            # Ids may repeat across groups, as they do in real exports.
            ids = draw(st.lists(st.integers(0, 40), min_size=1, max_size=3, unique=True))
            names = [f"call_{i}" for i in ids]
            text = draw(st.one_of(st.none(), st.just(""), sizes.map(_text)))
            out.append(calls(*names, text=text))
            out += [result(n, _text(draw(sizes))) for n in draw(st.permutations(names))]
        elif kind == "legacy":
            out += [legacy_call(f"fn{serial}"), legacy_result(f"fn{serial}", _text(draw(sizes)))]
        else:
            out.append(our_summary(_text(draw(sizes)) or "body"))
    return out


budgets = st.builds(
    Budget,
    tail_tokens=st.integers(0, 1500),
    protect_first=st.integers(0, 4),
    protect_last=st.integers(0, 25),
)


def latest_real_user(messages: list[Message]) -> int | None:
    """A user turn that asks something: blank turns are no request."""
    found = [
        i
        for i, msg in enumerate(messages)
        if m.role(msg) == "user"
        and not is_summary(msg)
        and (m.has_visible_text(msg) or m.image_count(msg))
    ]
    return found[-1] if found else None


def latest_assistant_text(messages: list[Message]) -> int | None:
    found = [
        i
        for i, msg in enumerate(messages)
        if m.role(msg) == "assistant" and m.has_visible_text(msg) and not is_summary(msg)
    ]
    return found[-1] if found else None


def _region(plan: AlignPlan, index: int) -> int:
    return 0 if index < plan.head_end else 1 if index < plan.tail_start else 2


def _summarized_with_turn(plan: AlignPlan, index: int) -> bool:
    """The documented exception: an anchor whose turn went into the middle."""
    return any(a.kind == "turn-to-middle" and f"#{index}" in a.reason for a in plan.adjustments)


def _assert_invariants(messages: list[Message], plan: AlignPlan) -> None:
    n = len(messages)
    assert plan.total == n
    assert 0 <= plan.head_end <= plan.tail_start <= n
    assert plan.tokens_total == EST.messages(messages)
    assert plan.head(messages) + plan.middle(messages) + plan.tail(messages) == messages
    for res, use in link_results(messages).items():
        assert _region(plan, res) == _region(plan, use.index), (res, use.index)
    if not plan.compressible:
        assert plan.messages_middle == 0
        return
    assert plan.messages_middle >= 2 and plan.messages_tail >= 3
    assert not m.is_tool_result(messages[plan.head_end])
    assert not m.is_tool_result(messages[plan.tail_start])
    prev = plan.previous_summary_index
    if prev is not None:
        assert plan.head_end <= prev < plan.tail_start
        # The head ends at the first summary: no summary is ever kept in it.
        assert not any(is_summary(msg) for msg in plan.head(messages))
        assert is_summary(messages[plan.head_end])
    for anchor in (latest_real_user(messages), latest_assistant_text(messages)):
        if anchor is not None and plan.head_end <= anchor < plan.tail_start:
            assert _summarized_with_turn(plan, anchor), (anchor, plan.adjustments)
    user_index = latest_real_user(messages)
    if user_index is not None and plan.head_end <= user_index < plan.tail_start:
        assert user_index < plan.head_end + 2 or (prev is not None and user_index < prev)


@settings(max_examples=120, deadline=None)
@given(transcripts(), budgets)
def test_plan_invariants_hold_on_generated_transcripts(
    messages: list[Message], budget: Budget
) -> None:
    plan = plan_boundaries(messages, counter=EST, budget=budget)
    _assert_invariants(messages, plan)
    assert AlignPlan.from_dict(plan.to_dict(), messages=messages) == plan
