"""What the assistant concluded, as the record quotes it. What it found wrong
("The issue is that ...", "... can lead to incorrect rounding") and what it
would change for it ("The fix is to ...", "To fix this issue, we should
...") is a decision; where it looks next, what it did, and a guess are none.
Its last words go on past their first two sentences with those right after
them that qualify them or state a decision, as many as the quote holds, and
leave out what Key Decisions or Remaining Work quotes already. Its
answer to a question goes on with the sentence right after it when that one
qualifies it (However, But, Note that, Although, Unfortunately) and both fit
in the quote."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxpack.facts.match import collapse
from ctxpack.summarize.offline.lastwords import last_note, last_note_at
from ctxpack.summarize.offline.said import spoken
from ctxpack.tokens.counter import TokenCounter
from tests.conftest import TAU_BENCH
from tests.test_offline import section, summarize
from tests.test_said import QUESTION, said
from tests.test_tool_rules import SWE_AGENT, cli_record

# The swe-agent session's diagnosis and planned fix, and its narration.
LOOKING = (
    "We are now looking at the relevant section of the `fields.py` file where the `TimeDelta`"
    " serialization occurs."
)
SUGGESTS = "The issue suggests that there is a rounding problem near line 1474."
DIAGNOSIS = (
    "The current implementation uses integer division, which truncates the decimal part and can"
    " lead to incorrect rounding on line 1475."
)
FIX = (
    "To fix this issue, we should ensure that the division results in a float, and then round"
    " the result to the nearest integer before converting it to an int."
)
EDIT = (
    f"{LOOKING} {SUGGESTS} {DIAGNOSIS} {FIX} This should preserve the milliseconds precision as"
    " expected. Let's make the necessary edit to the code."
)


@pytest.mark.parametrize(
    ("body", "decisions"),
    [
        (EDIT, [DIAGNOSIS, FIX]),
        (
            "The issue is that Ghostty has `TERM=xterm-ghostty` but VS Code has"
            " `TERM=xterm-256color`.",
            [
                "The issue is that Ghostty has `TERM=xterm-ghostty` but VS Code has"
                " `TERM=xterm-256color`."
            ],
        ),
        (
            "The fix is to make `Text.invalidate()` actually invalidate when called, or to"
            " improve the cache key.",
            [
                "The fix is to make `Text.invalidate()` actually invalidate when called, or to"
                " improve the cache key."
            ],
        ),
        ("We should use round() instead.", ["We should use round() instead."]),
        # Where it looks next.
        (
            "The issue suggests that we should look at line 1474 of the `fields.py` file to see"
            " if there is a rounding issue. First we should find the `fields.py` file in the"
            " repository.",
            [],
        ),
        (
            "We should navigate to that line in fields.py to see the relevant code for the"
            " `TimeDelta` serialization.",
            [],
        ),
        # What it did.
        (
            "The code has been updated to use the `round` function, which should fix the rounding"
            " issue. Now that the fix is verified, let's submit our changes.",
            [],
        ),
        # A guess.
        ("Maybe the issue is that the cache isn't being cleared?", []),
    ],
)
def test_a_diagnosis_or_a_fix_is_a_decision(body: str, decisions: list[str]) -> None:
    found = spoken(body)
    assert found is not None and found[0] == decisions


@pytest.mark.parametrize(
    ("bodies", "note"),
    [
        # The two decisions fit; the sentence after them states none.
        ([EDIT], f"{LOOKING} {SUGGESTS} {DIAGNOSIS} {FIX}"),
        # The fix does not fit after a longer narration.
        ([f"{LOOKING} {LOOKING} {DIAGNOSIS} {FIX}"], f"{LOOKING} {LOOKING} {DIAGNOSIS}"),
        (
            ["Done. All 83 tests pass. However, the docs still say 82."],
            "Done. All 83 tests pass. However, the docs still say 82.",
        ),
        (["Done. All 83 tests pass. Next, the docs."], "Done. All 83 tests pass."),
    ],
)
def test_the_last_note_goes_on_with_what_was_concluded(bodies: list[str], note: str) -> None:
    assert last_note(bodies) == note


# The airline session's last words in its 22nd conversation: a plan, then its ask.
CANCEL = "To proceed with the cancellation, I'll need to look up your reservation details."
USER_ID = "Could you please provide your user ID so I can find the relevant reservation?"


@pytest.mark.parametrize(
    ("body", "quoted", "note"),
    [
        # The decisions Key Decisions quotes are no part of the last words.
        (EDIT, [DIAGNOSIS, FIX], f"{LOOKING} {SUGGESTS}"),
        # Nor the plan Remaining Work quotes: the ask after it is what it waited on.
        (f"{CANCEL} {USER_ID}", [CANCEL], USER_ID),
        # Nor what qualifies a sentence left out.
        (
            "Done. All 83 tests pass. However, the docs still say 82.",
            ["All 83 tests pass."],
            "Done.",
        ),
        # Last words all quoted elsewhere are still the last words.
        (FIX, [FIX], FIX),
    ],
)
def test_the_last_note_leaves_out_what_the_record_quotes_elsewhere(
    body: str, quoted: list[str], note: str
) -> None:
    assert last_note_at([body], quoted={collapse(q) for q in quoted}) == (0, note)


def test_the_cli_record_of_the_swe_agent_session_states_the_diagnosis_and_the_fix_once(
    tmp_path: Path,
) -> None:
    """Key Decisions quotes them; the last words say where the assistant was."""
    record = cli_record(SWE_AGENT, tmp_path)
    assert record["Key Decisions"] == [
        f'- The assistant stated: "{FIX}"',
        f'- The assistant stated: "{DIAGNOSIS}"',
    ]
    assert record["Historical In-Progress State"] == [
        "- The assistant's last message in these turns said:"
        f' "{LOOKING} {SUGGESTS}" (action 6 followed)'
    ]


DEPARTS = (
    "Your original flight from Atlanta (ATL) to Dallas/Fort Worth (DFW) was scheduled to depart"
    " on May 21, 2024."
)
HOWEVER = "However, the exact departure time is not provided in the reservation details."
PREFERENCE = (
    "If you have a preference for the new flight based on the original schedule, please let me"
    " know, and I can assist you further."
)


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        (f"{DEPARTS} {HOWEVER} {PREFERENCE}", f"{DEPARTS} {HOWEVER}"),
        # Only the sentence right after it, and only one that qualifies it.
        (f"{DEPARTS} {PREFERENCE} {HOWEVER}", DEPARTS),
        # Both do not fit in the quote: the answer alone.
        (f"{DEPARTS} {HOWEVER[:-1]}, {PREFERENCE}", DEPARTS),
    ],
)
def test_an_answer_is_quoted_with_the_sentence_that_qualifies_it(
    reply: str, answer: str, counter: TokenCounter
) -> None:
    middle = [QUESTION, said(reply), {"role": "user", "content": "ok"}, said("Done.")]
    replies = section(summarize(middle, counter).text, "Resolved Questions")
    assert replies == [f'- Q: "what color are the code blocks using?" — A: "{answer}"']


def test_the_cli_record_of_tau_bench_quotes_the_answer_with_its_however(tmp_path: Path) -> None:
    record = cli_record(TAU_BENCH, tmp_path, at=13)
    assert (
        '- Q: "Can you let me know the departure time of my original flight from Atlanta?" — A:'
        f' "{DEPARTS} {HOWEVER}"'
    ) in record["Resolved Questions"]
