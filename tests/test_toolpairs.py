"""The one pairing rule (which result answers which call) and the stages that
follow it: prune, align, sanitize and the eval orphan check agree on it."""

from __future__ import annotations

from ctxpack import formats
from ctxpack.align.boundaries import plan_boundaries
from ctxpack.align.budget import Budget
from ctxpack.evaluate.checks import orphan_check
from ctxpack.facts.extract import ran_only
from ctxpack.prune.stage import PruneSettings, prune_messages
from ctxpack.sessionindex import SessionIndex
from ctxpack.summarize.sanitize import sanitize_tool_pairs
from ctxpack.tokens.counter import TokenCounter
from ctxpack.toolpairs import LEGACY_SLOT, ToolUse, pair
from ctxpack.transcript import Message
from tests import test_boundaries as build
from tests.conftest import FIXTURES

LOOKUP_ARGS = '{"path": "src/app.py"}'


def lookup() -> Message:
    """A legacy `function_call`, as OpenAI's pre-tools API wrote it."""
    return {
        "role": "assistant",
        "content": None,
        "function_call": {"name": "read_file", "arguments": LOOKUP_ARGS},
    }


def idless(text: str) -> Message:
    """A tool result that lost its tool_call_id."""
    return {"role": "tool", "content": text}


def test_the_pairing_rule() -> None:
    messages = [
        build.user(),
        build.calls("c1"),  # 1
        build.result("c1"),  # 2: by id
        build.legacy_call("a"),  # 3
        build.legacy_result("a"),  # 4: by position, the function_call just before
        idless("more of a"),  # 5: same run of results, same call
        build.user(),  # 6
        build.legacy_result("b"),  # 7: follows a user message: answers nothing
        build.calls("c1"),  # 8: the id is reused
        build.user(),  # 9
        build.result("c1"),  # 10: the latest earlier call with the id, #8
        build.legacy_call("c"),  # 11: no result
    ]
    pairing = pair(messages)
    first = ToolUse(1, "c1", "run", "{}", 0)
    legacy_a = ToolUse(3, "", "a", "{}", LEGACY_SLOT)
    reused = ToolUse(8, "c1", "run", "{}", 0)
    assert pairing.links == {2: first, 4: legacy_a, 5: legacy_a, 10: reused}
    assert pairing.orphan_results == [7]
    assert pairing.unanswered() == [ToolUse(11, "", "c", "{}", LEGACY_SLOT)]
    assert pairing.answered_slots(3) == {LEGACY_SLOT}


def test_idless_result_answers_every_idless_call_of_its_message() -> None:
    both = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"type": "function", "function": {"name": "ls", "arguments": "{}"}}],
        "function_call": {"name": "pwd", "arguments": "{}"},
    }
    pairing = pair([build.user(), both, idless("a.py")])
    assert pairing.links == {2: ToolUse(1, "", "ls", "{}", 0)}
    assert pairing.answered_slots(1) == {0, LEGACY_SLOT}
    assert pairing.unanswered() == []


def _legacy_transcript() -> list[Message]:
    """Old exchanges, then a legacy function_call answered by an id-less tool
    result, then a short recent exchange."""
    old = [m for _ in range(6) for m in (build.user(), build.assistant())]
    listing = "\n".join(f"src/module_{i}.py: def handler_{i}(request): ..." for i in range(30))
    return [build.system(), *old, lookup(), idless(listing), *[build.user(), build.assistant()] * 2]


def test_legacy_call_and_idless_result_pair_the_same_everywhere() -> None:
    messages = _legacy_transcript()
    call_at = 13
    assert "function_call" in messages[call_at]
    # Prune names the output by the call that made it.
    pruned = prune_messages(
        messages,
        counter=build.EST,
        settings=PruneSettings(budget=Budget(protect_first=0, protect_last=2, tail_tokens=0)),
    )
    (row,) = pruned.rows
    assert (row.index, row.tool) == (call_at + 1, "read_file")
    assert "src/app.py" in pruned.messages[call_at + 1]["content"]
    # Align: a tail budget that holds the result but not the call moves the
    # tail back to the call.
    plan = plan_boundaries(
        messages, counter=build.EST, budget=Budget(tail_tokens=272, protect_last=3)
    )
    assert plan.tail_start == call_at
    assert [(a.kind, a.from_index, a.to_index) for a in plan.adjustments] == [
        ("aligned-back", call_at + 1, call_at)
    ]
    # Sanitize keeps both; eval finds no orphan.
    out, notes = sanitize_tool_pairs(messages)
    assert notes == [] and all(a is b for a, b in zip(out, messages, strict=True))
    assert orphan_check(messages, messages).passed
    # Cut the call away and every one of them sees the lonely result.
    cut = [*messages[:call_at], *messages[call_at + 1 :]]
    assert pair(cut).orphan_results == [call_at]
    out, notes = sanitize_tool_pairs(cut)
    assert notes == [f"#{call_at}: dropped a tool result whose call is gone"]
    check = orphan_check(messages, cut)
    assert (
        not check.passed
        and check.detail == "1 result(s) without a call, 0 call(s) without a result"
    )
    # Cut the result away instead: the call is the orphan.
    pending = [*messages[: call_at + 1], *messages[call_at + 2 :]]
    assert pair(pending).unanswered() == [ToolUse(call_at, "", "read_file", LOOKUP_ARGS)]
    out, notes = sanitize_tool_pairs(pending)
    assert notes[0] == f"#{call_at}: removed function_call read_file: no result"
    assert orphan_check(messages, pending).detail.startswith("0 result(s) without a call, 1 call")


def test_a_pairing_handed_over_is_the_one_each_stage_would_make(counter: TokenCounter) -> None:
    """Stages that share one pairing of a session (boundaries, the facts that
    ran, the orphan check) decide exactly as when each pairs it itself."""
    for path in (
        FIXTURES / "claude-code" / "openagents__regex-log__opus-raw.jsonl",
        FIXTURES / "codex" / "Trezo-Ai__codex-session.jsonl",
    ):
        transcript = formats.read(path.read_bytes(), path=str(path), fmt=None)
        for session in transcript.sessions:
            messages = session.messages
            shared = pair(messages)
            assert shared.calls, path
            budget = Budget(tail_tokens=2_000, protect_last=4)
            assert plan_boundaries(
                messages, counter=counter, budget=budget, index=SessionIndex(messages)
            ) == plan_boundaries(messages, counter=counter, budget=budget)
            assert ran_only(messages, pairing=shared) == ran_only(messages)
            cut = messages[: len(messages) // 2]
            assert orphan_check(cut, messages, original_pairing=pair(cut)) == orphan_check(
                cut, messages
            )
