"""A record keeps what it kept, round after round: an update's budget is no
less than the record it updates (within the cap every record has), so the
user's constraints and the work done do not fall out of it one compaction
at a time, and what the user asked since the previous record reads as such.
The facts the previous record preserved stay preserved in the next while its
summary does not name them, outside the summary's room. Where the room runs
short, the user's newer rules are kept before the earlier record's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxpack import formats, markers
from ctxpack.align.budget import Budget
from ctxpack.facts.preserved import (
    PreservedFacts,
    fact_line,
    fact_of,
    preserved_facts_section,
)
from ctxpack.pipeline import summarizing
from ctxpack.pipeline.compaction import CompressSettings, compress_messages
from ctxpack.summarize.ledger import LEDGER_HEADING, user_words
from ctxpack.summarize.protocol import PRESERVED_FACTS_HEADING
from ctxpack.summarize.template import left_out, parse
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message
from tests.conftest import SHARED
from tests.test_tool_rules import cli_record

PI_LARGE = SHARED / "pi-agent" / "pi-mono__test__fixtures__large-session.jsonl"


@pytest.mark.parametrize(
    ("budget", "middle", "previous", "tokens"),
    [
        (Budget(), 1_000, 0, 2_000),
        (Budget(), 30_000, 0, 6_000),
        (Budget(), 10_000, 7_000, 7_000),
        (Budget(), 50_000, 3_000, 10_000),
        (Budget(), 10_000, 50_000, 10_000),
        # 40% of a 16,000-token threshold.
        (Budget(context_length=32_000), 1_000, 9_000, 6_400),
    ],
)
def test_an_update_s_budget_is_no_less_than_the_record_it_updates(
    budget: Budget, middle: int, previous: int, tokens: int
) -> None:
    assert budget.summary_budget(middle, previous_tokens=previous) == tokens


@pytest.fixture(scope="module")
def pi_rounds(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[dict[str, list[str]], dict[str, list[str]], Path]:
    """The large pi session's records of two rounds by the CLI, and where
    the second round is written."""
    tmp_path = tmp_path_factory.mktemp("rounds")
    first = cli_record(PI_LARGE, tmp_path, name="first.jsonl")
    # The second round compacts the record and 10,000 tokens of the turns after it.
    second = cli_record(
        tmp_path / "first.jsonl", tmp_path, "--tail-tokens", "10000", name="second.jsonl"
    )
    return first, second, tmp_path / "second.jsonl"


def test_the_large_pi_session_keeps_its_constraints_and_facts_in_a_second_round(
    pi_rounds: tuple[dict[str, list[str]], dict[str, list[str]], Path],
) -> None:
    first, second, written = pi_rounds
    constraints = first["Constraints & Preferences"]
    assert len(constraints) == 10 and not any("more)" in c for c in constraints)
    kept = second["Constraints & Preferences"]
    assert set(constraints) <= set(kept) and len(kept) == 14
    # How things will likely stand is no rule.
    assert not [line for line in kept if "should be good to go" in line]
    # The ask the second round's turns hold follows the goal the first record holds.
    assert second["Goal"][: len(first["Goal"])] == first["Goal"]
    assert second["Goal"][-1].startswith(
        '- In the turns since the previous record, the user asked: "+314 - Tips for creating'
    )
    # The updated record keeps most of the first one's room for actions: with
    # the new turns' it names 69, where 20% of the new turns would name a handful.
    assert len(first["Completed Actions"]) == 89
    assert len(second["Completed Actions"]) == 69
    # Every fact the first record preserved is named in the second, or preserved again.
    text = written.read_text()
    earlier = [line for line in first["Preserved Facts"] if fact_of(line)]
    assert len(earlier) == 35
    # A type check cut to npm's report of it (`npm run check 2>&1 | tail`) is no
    # error of its own: the package npm names is no fact to keep.
    assert not [line for line in earlier if "npm error" in line]
    again = set(second["Preserved Facts"])
    for line in earlier:
        fact = fact_of(line)
        assert fact is not None
        assert line in again or json.dumps(fact)[1:-1] in text


AWK = (
    "awk '/new Markdown\\($/,/)$/{print NR\": \"$0}' packages/tui/test/markdown.test.ts | head -40"
)
GREP = 'grep -n "new Markdown" packages/tui/test/markdown.test.ts'
LOADER = 'grep "constructor" packages/tui/src/components/loader.ts | head -5'


def test_a_command_the_first_record_shows_only_as_an_action_is_a_fact_of_the_second(
    pi_rounds: tuple[dict[str, list[str]], dict[str, list[str]], Path],
) -> None:
    """The second record no longer shows the first one's action 66: the
    command it ran is preserved instead, after every fact of the round's own
    and the first record's, and the facts with no room are counted."""
    first, second, written = pi_rounds
    assert (
        f'66. Ran `{LOADER}` — ok, printed "constructor(" [tool: bash]'
        in (first["Completed Actions"])
    )
    assert f"- Command: `{LOADER}`" not in first["Preserved Facts"]
    assert not [line for line in second["Completed Actions"] if f"Ran `{LOADER}`" in line]
    facts = second["Preserved Facts"]
    # The round's own fact, then the 35 the first record preserved (action
    # 60's awk and action 58's grep among them), then what its actions named,
    # in their order: 66, 67 (two greps).
    assert facts[1].startswith("- Command: `mkdir -p ~/.pi/agent/themes && cp $(npm root -g)")
    assert facts[2:37] == [line for line in first["Preserved Facts"] if fact_of(line)]
    assert {f"- Command: `{AWK}`", f"- Command: `{GREP}`"} <= set(facts[2:37])
    assert facts[37:39] == [
        f"- Command: `{LOADER}`",
        '- Command: `grep -A 10 "constructor" packages/tui/src/components/loader.ts`',
    ]
    record = markers.summary_body(
        next(
            msg
            for msg in formats.read(written.read_bytes(), path=str(written)).sessions[0].messages
            if markers.is_summary(msg)
        )
    )
    assert left_out(record)[PRESERVED_FACTS_HEADING] == 21


@pytest.mark.parametrize(
    ("category", "item"),
    [
        ("commands", "npm run check"),
        ("commands", "echo `date`"),
        ("commands", "cat <<EOF\nline\nEOF"),
        ("errors", "grep: packages/tui/src/wrap-ansi.ts: No such file or directory"),
        ("paths", "/tmp/fix_markdown.py"),
        ("identifiers", "8ABeB7"),
        ("urls", "https://example.com/a"),
        ("directives", "never use tabs"),
    ],
)
def test_a_preserved_fact_is_read_back_from_its_line(category: str, item: str) -> None:
    assert fact_of(fact_line(category, item)) == item


def test_an_update_preserves_again_the_facts_its_summary_does_not_name(
    counter: TokenCounter,
) -> None:
    earlier = [
        "Facts from the compacted turns that the record above does not mention:",
        "- Command: `npm run check`",
        "- Error: TS2322: Type 'string' is not assignable",
        "- Path: /tmp/fix_markdown.py",
        "- (+3 more facts not shown)",
    ]
    section = preserved_facts_section(
        [],
        "## Completed Actions\n1. Ran `npm run check` — ok",
        counter=counter,
        cap_tokens=500,
        earlier=earlier,
    )
    assert section.text.splitlines() == [
        "## Preserved Facts",
        "Facts from the compacted turns that the record above does not mention:",
        "- Error: TS2322: Type 'string' is not assignable",
        "- Path: /tmp/fix_markdown.py",
    ]
    assert section.unshown == 0


def test_facts_an_earlier_record_left_out_are_counted_not_missed_again(
    counter: TokenCounter,
) -> None:
    """The earlier record's count is carried; with room for every fact there
    is, the section shows them all, and no fact of this round is unshown
    (the run then lets the record grow into the room that is left)."""
    earlier = [
        "- Error: TS2322: Type 'string' is not assignable",
        "- (+3 more facts not shown)",
    ]
    section = preserved_facts_section(
        [], "", counter=counter, cap_tokens=500, earlier=earlier, earlier_left=3
    )
    assert section.text.splitlines()[2:] == [
        "- Error: TS2322: Type 'string' is not assignable",
        "- (+3 more facts not shown)",
    ]
    assert section.unshown == 0
    tight = preserved_facts_section(
        [], "", counter=counter, cap_tokens=30, earlier=earlier, earlier_left=3
    )
    assert tight == PreservedFacts("", 1)


def _record(messages: list[Message]) -> str:
    return next(markers.summary_body(msg) for msg in messages if markers.is_summary(msg))


def _rules_of(messages: list[Message]) -> list[str]:
    """The lines of the record's Constraints & Preferences, its "(+N more)" too."""
    rules = _record(messages).split("## Constraints & Preferences\n", 1)[1]
    return rules.split("\n\n", 1)[0].splitlines()


# The last six rules the user gave in the large pi session. The tail of a
# changelog line the user pasted off a terminal ("newline and only displays
# the first line.") is not one of them.
LATEST_RULES = [
    "- The user said: \"and also, the context suage in the footer should be 'warning' if"
    " it's > 70% and 'error' if its > 90% so the user sees shit is about to get fucked\"",
    '- The user said: "in the system prompt make sure you know to read the README.md also'
    ' when the user asks you to create a new theme"',
    '- The user said: "hm, i selected the theme while you were working and got a crash,'
    ' that should never happen."',
    '- The user said: "invalid themes must NEVER explode"',
    '- The user said: "setTheme should return an error that the caller can display however'
    ' they want"',
    '- The user said: "make sure toolText is also used."',
]


def test_one_round_at_a_small_window_keeps_the_user_s_latest_rules() -> None:
    # A record with no room for all the user's rules keeps their latest word,
    # as an update does; the user ledger holds the earlier ones word for word.
    messages = formats.read(PI_LARGE.read_bytes(), path=str(PI_LARGE)).sessions[0].messages
    settings = CompressSettings(budget=Budget(context_length=16_000), force=True)
    out, _ = compress_messages(messages, counter=TokenCounter(), settings=settings)
    assert _rules_of(out) == [
        '- The user said: "bullet in markdown should be same as in line code in markdown."',
        '- The user said: "link text should be same as accent"',
        *LATEST_RULES,
        "- (+7 more)",
    ]


@pytest.fixture(scope="module")
def two_rounds() -> tuple[list[Message], list[Message]]:
    """The large pi session compacted at its middle user message, then again
    with the turns after it, in a 16,000-token window: both outputs."""
    messages = formats.read(PI_LARGE.read_bytes(), path=str(PI_LARGE)).sessions[0].messages
    said = [i for i, msg in enumerate(messages) if user_words(msg) is not None]
    half = said[len(said) // 2]
    settings = CompressSettings(budget=Budget(context_length=16_000), force=True)
    first, _ = compress_messages(messages[:half], counter=TokenCounter(), settings=settings)
    second, _ = compress_messages(
        [*first, *messages[half:]], counter=TokenCounter(), settings=settings
    )
    return first, second


def test_a_second_round_at_a_small_window_keeps_the_user_s_newer_rules_first(
    two_rounds: tuple[list[Message], list[Message]],
) -> None:
    first, second = two_rounds
    assert _rules_of(first)[-1] == '- The user said: "no, the block should stay as is"'
    # The room goes to what the user said since: their latest word, shown in
    # the order it was said.
    assert _rules_of(second) == [
        '- The user said: "bullet in markdown should be same as in line code in markdown."',
        '- The user said: "link text should be same as accent"',
        *LATEST_RULES,
        "- (+7 more)",
    ]
    # The earlier rules it has no room for the user ledger holds word for word.
    ledger = "\n".join(parse(_record(second))[LEDGER_HEADING])
    for rule in _rules_of(first):
        assert rule.removeprefix("- The user said: ").strip('"').rstrip("…") in ledger


def test_a_second_round_counts_on_what_the_first_had_no_room_for(
    two_rounds: tuple[list[Message], list[Message]],
) -> None:
    # Those items are in the archived turns only, which an update does not
    # read: the next record cannot name them, but it counts them.
    first, second = (left_out(_record(output)) for output in two_rounds)
    assert first == {
        "Completed Actions": 164,
        "Key Decisions": 10,
        "Resolved Questions": 5,
        "Relevant Files": 22,
        "Critical Context": 3,
        LEDGER_HEADING: 10,
        PRESERVED_FACTS_HEADING: 76,
    }
    assert second == {
        "Constraints & Preferences": 7,
        # What this round had no room for, and what the first left out.
        "Completed Actions": 134 + 164,
        "Key Decisions": 4 + 10,
        "Resolved Questions": 9 + 5,
        "Relevant Files": 23 + 22,
        "Critical Context": 3 + 3,
        LEDGER_HEADING: 53 + 10,
        # And 15 the first record's action and file lines named: this one
        # shows those lines no more, nor has room for them.
        PRESERVED_FACTS_HEADING: 61 + 76 + 15,
    }


def _update(first_window: int, second_window: int, new: int) -> tuple[list[Message], list[Message]]:
    """The large pi session compacted at its middle user message in one
    window, then with the `new` messages after it in another."""
    messages = formats.read(PI_LARGE.read_bytes(), path=str(PI_LARGE)).sessions[0].messages
    said = [i for i, msg in enumerate(messages) if user_words(msg) is not None]
    half = said[len(said) // 2]

    def settings(window: int) -> CompressSettings:
        return CompressSettings(budget=Budget(context_length=window), force=True)

    first, _ = compress_messages(
        messages[:half], counter=TokenCounter(), settings=settings(first_window)
    )
    more = messages[half : half + new]
    second, _ = compress_messages(
        [*first, *more], counter=TokenCounter(), settings=settings(second_window)
    )
    return second, more


def test_an_update_grows_into_the_room_its_facts_leave(monkeypatch: pytest.MonkeyPatch) -> None:
    # The first record had no room for all its facts and carries their count;
    # every fact of the new turns fits, so the record grows into the rest of
    # its room as a first record does: it names the rule of the user's it
    # would have cut, and its rules are whole.
    grown = _record(_update(16_000, 32_000, 145)[0]).splitlines()
    monkeypatch.setattr(summarizing, "_GROWTH_MARGIN", 10**9)
    fitted = _record(_update(16_000, 32_000, 145)[0]).splitlines()
    added = [line for line in grown if line not in fitted]
    # The facts the first record's actions named take only the room left
    # last: beside the grown record none of them fits, where two do beside
    # the fitted one; the 7 are counted (76 + 7).
    assert added == [
        '- The user said: "should be 8ABeB7"',
        "- (+1 more)",
        "- (+195 other actions not shown)",
        '167. Ran `sleep 5 && echo "Done sleeping"` — aborted [tool: bash]',
        "- (+83 more facts not shown)",
    ]
    assert [line for line in fitted if line not in grown] == [
        "- (+2 more)",
        "- (+196 other actions not shown)",
        '- Command: `grep "cyan" packages/coding-agent/src/theme/dark.json`',
        '- Command: `grep -A 15 "function fgAnsi" packages/coding-agent/src/theme/theme.ts`',
        "- (+82 more facts not shown)",
    ]
    assert left_out("\n".join(grown))[PRESERVED_FACTS_HEADING] == 76 + 7


def test_the_facts_beside_a_grown_record_are_read_against_the_kept_turns() -> None:
    # A fact the turns kept verbatim name is not missing, for the grown
    # record as for the first fitting.
    second, more = _update(16_000, 32_000, 60)
    facts = [fact_of(line) for line in parse(_record(second))[PRESERVED_FACTS_HEADING]]
    kept = "\n".join(json.dumps(msg) for msg in more)
    assert "cd packages/coding-agent && npm run check" in kept
    assert "cd packages/coding-agent && npm run check" not in facts
