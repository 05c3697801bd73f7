"""A later rule that turns an earlier one around: the same verb, must against
must not, about something both name. An update shows the later rule in the
earlier one's place, quoting it, and keeps it first when room runs short."""

from __future__ import annotations

import pytest

from ctxpack.summarize.foreign import to_template
from ctxpack.summarize.reversal import reverses
from ctxpack.tokens.counter import TokenCounter
from tests.test_offline import section, summarize


@pytest.mark.parametrize(
    ("earlier", "later", "turned"),
    [
        # The real Gemini CLI session: its snapshot's rule, then the user.
        (
            "Active team selection MUST persist in workspace settings (.gemini/settings.json).",
            "agent teams shouldn't persist, I want it to ask me every boot",
            True,
        ),
        ("Never push to main.", "You should push to main directly this time.", True),
        ("Commits must be signed.", "Commits do not need to be signed anymore.", True),
        ("The CLI must not print colours.", "The CLI should print colours again.", True),
        # An exception is read as a turn too: it is shown beside the rule it turns.
        (
            "Always run the full test suite.",
            "Don't run the full test suite for docs changes.",
            True,
        ),
        # The same way round: no turn.
        ("Tests must pass before a commit.", "Lint must pass before a commit.", False),
        # Different verbs.
        ("The API must return JSON.", "The API must not log secrets.", False),
        # The same verb, about different things.
        ("You must commit often.", "I shouldn't commit the build folder.", False),
    ],
)
def test_a_later_rule_turns_an_earlier_one_around(earlier: str, later: str, turned: bool) -> None:
    assert reverses(earlier, later) is turned


def test_an_update_shows_the_rule_in_force_where_the_earlier_one_was(
    counter: TokenCounter,
) -> None:
    previous = (
        "[CONTEXT SUMMARY]: earlier work\n\n## Goal\n- Ship the CLI\n\n"
        "## Constraints\n- Keep the README short.\n- Never push to main.\n"
    )
    middle = [
        {"role": "user", "content": "You should push to main directly this time."},
        {"role": "assistant", "content": "Pushing to main."},
    ]
    merged = to_template(previous)
    assert merged is not None
    text = summarize(middle, counter, previous_summary=merged.text).text
    assert section(text, "Constraints & Preferences") == [
        "- Keep the README short.",
        '- The user said: "You should push to main directly this time." (turns around the'
        ' earlier rule "Never push to main.")',
    ]
