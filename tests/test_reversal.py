"""A later rule that turns an earlier one around: the same verb, must against
must not, about something both name. An update shows the later rule in the
earlier one's place, quoting it, and keeps it first when room runs short.
An earlier account of the state that the user since said must not be is no
current state: the update says it was reversed, after the state that stands."""

from __future__ import annotations

import pytest

from ctxpack.summarize.foreign import to_template
from ctxpack.summarize.reversal import reverses, undoes
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
        # Told to stop doing it: a "must not", of the verb less its -ing.
        (
            "Always group build & commit into one step.",
            "please stop grouping build & commit",
            True,
        ),
        ("You should add a docstring to each function.", "Quit adding docstrings.", True),
        ("Always make a backup of the database first.", "OK, stop making database backups.", True),
        ("Always commit the lockfile with every change.", "Stop committing the lockfile.", True),
        # Said of a thing, not told to the agent: no rule.
        ("The server must keep running.", "The server will stop running at midnight.", False),
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


@pytest.mark.parametrize(
    ("state", "later", "undone"),
    [
        # The real Gemini CLI session: its snapshot's recent action, then the user.
        (
            "Added persistence for team selection in workspace settings.",
            "agent teams shouldn't persist, I want it to ask me every boot",
            True,
        ),
        ("Enabled caching of the API responses.", "Don't cache the API responses any more.", True),
        ("Pushed the release branch to origin.", "Never push the release branch again.", True),
        ("In progress: Commit the wizard changes.", "Do not commit the wizard changes yet.", True),
        (
            "Grouped the build and commit steps into one command.",
            "please stop grouping build & commit",
            True,
        ),
        ("Committed the lockfile.", "Stop committing the lockfile.", True),
        ("Cached the API responses.", "Just quit caching the API responses.", True),
        ("Pushed the docs to origin.", "The docs push will stop pushing to origin.", False),
        # The user asks for what was done: nothing undone.
        ("Added persistence for team selection.", "Team selection must persist.", False),
        # The same verb, about something else.
        ("Pushed the docs to origin.", "Don't push the build folder.", False),
        # Another verb about the same thing.
        ("Added a retry loop to the fetcher.", "The fetcher shouldn't log secrets.", False),
        ("Implemented isolation for agent teams.", "agent teams shouldn't persist", False),
    ],
)
def test_a_later_word_undoes_an_earlier_state(state: str, later: str, undone: bool) -> None:
    assert undoes(state, later) is undone


def test_an_update_says_the_state_the_user_turned_around_is_reversed(
    counter: TokenCounter,
) -> None:
    previous = (
        "[CONTEXT SUMMARY]: earlier work\n\n## Goal\n- Ship team selection\n\n"
        "## Current State\n- Persisting the team choice in settings.json.\n\n"
        "## Progress\n- Added persistence for team selection in workspace settings.\n"
        "- Wrote the team selection dialog.\n"
    )
    middle = [
        {"role": "user", "content": "Team selection shouldn't persist, ask me on every boot."},
        {"role": "assistant", "content": "Understood: the dialog will ask on every boot."},
    ]
    merged = to_template(previous)
    assert merged is not None
    text = summarize(middle, counter, previous_summary=merged.text).text
    assert section(text, "Historical In-Progress State") == [
        "- The assistant's last message in these turns said: \"Understood: the dialog will ask"
        ' on every boot."',
        "- Earlier state: Wrote the team selection dialog.",
        "- Earlier, since reversed: Persisting the team choice in settings.json.",
        "- Earlier, since reversed: Added persistence for team selection in workspace settings.",
    ]


def test_an_update_says_another_agents_file_note_the_user_turned_around_is_reversed(
    counter: TokenCounter,
) -> None:
    previous = (
        "[CONTEXT SUMMARY]: earlier work\n\n## Goal\n- Speed up the API client\n\n"
        "## Relevant Files\n"
        "- src/api/cache.ts - enabled caching of the API responses. (modified)\n"
        "- src/api/retry.ts - added a retry loop to the fetcher. (modified)\n"
    )
    middle = [
        {"role": "user", "content": "Please stop caching the API responses, they go stale."},
        {"role": "assistant", "content": "Understood: no more caching."},
    ]
    merged = to_template(previous)
    assert merged is not None
    text = summarize(middle, counter, previous_summary=merged.text).text
    assert section(text, "Relevant Files") == [
        "- Earlier, since reversed: src/api/cache.ts - enabled caching of the API responses."
        " (modified)",
        "- src/api/retry.ts - added a retry loop to the fetcher. (modified)",
    ]


@pytest.mark.parametrize(
    ("state", "later", "undone"),
    [
        # A short verb is named by its own forms.
        ("Added a retry loop to the fetcher.", "Don't add a retry loop to the fetcher.", True),
        (
            "Adding a retry loop to the fetcher.",
            "Please stop adding retry loops to the fetcher.",
            True,
        ),
        ("Put the build cache under /tmp.", "Don't put the build cache under /tmp.", True),
        ("Putting the build cache under /tmp.", "Stop putting the build cache under /tmp.", True),
        (
            "Set the default region in the config.",
            "Never set a default region in the config.",
            True,
        ),
        ("Setting the default region in the config.", "Stop setting a default region.", True),
        ("Used the staging database for the tests.", "Don't use the staging database.", True),
        ("Uses the staging database for the tests.", "Stop using the staging database.", True),
        # Nor by a word it opens.
        (
            "Updated the address of the fetcher's retry loop.",
            "Stop adding retry loops to the fetcher.",
            False,
        ),
        (
            "Updated the address of the fetcher's retry loop.",
            "Don't add retry loops to the fetcher.",
            False,
        ),
        ("Asked the user about the staging database.", "Don't use the staging database.", False),
        ("Asked the user about the staging database.", "Stop using the staging database.", False),
        ("Moved the default region into the settings.", "Never set a default region.", False),
        ("Moved the default region into the settings.", "Stop setting a default region.", False),
        ("Ran the setup of the default region.", "Never set a default region.", False),
    ],
)
def test_a_short_verb_undoes_a_state_by_its_own_forms(state: str, later: str, undone: bool) -> None:
    assert undoes(state, later) is undone


def test_an_update_says_the_state_a_stopped_habit_added_is_reversed(
    counter: TokenCounter,
) -> None:
    previous = (
        "[CONTEXT SUMMARY]: earlier work\n\n## Goal\n- Make the fetcher reliable\n\n"
        "## Progress\n- Added retries to the fetcher's requests.\n"
        "- Read the fetcher's address from the settings file.\n"
    )
    middle = [
        {
            "role": "user",
            "content": "Please stop adding retries to the fetcher, it hides the errors.",
        },
        {"role": "assistant", "content": "Understood: the fetcher will fail at once."},
    ]
    merged = to_template(previous)
    assert merged is not None
    text = summarize(middle, counter, previous_summary=merged.text).text
    assert section(text, "Historical In-Progress State") == [
        "- The assistant's last message in these turns said: \"Understood: the fetcher will"
        ' fail at once."',
        "- Earlier state: Read the fetcher's address from the settings file.",
        "- Earlier, since reversed: Added retries to the fetcher's requests.",
    ]
