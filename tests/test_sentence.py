"""The user's words cut into sentences. A sentence the user hard-wrapped (a
manual break in an editor, an email wrapped at 72 columns) is one sentence:
the line before ends mid-sentence (on a comma, on a word no sentence ends
on, at a wrapped line's width, or the next line carries on with "and",
"that", ...) and the next opens in lowercase, level with the words above
it. Everything else stays apart: sentence punctuation, a colon, a blank
line, list items, headings, quotes, code, and a short line that ends a
thought of its own ("ok", "thanks")."""

from __future__ import annotations

import pytest

from ctxpack import formats
from ctxpack.facts.sentence import sentences
from ctxpack.facts.text import directives_in
from ctxpack.summarize.ledger import user_words
from ctxpack.summarize.offline.lastwords import last_note
from ctxpack.summarize.offline.said import spoken
from ctxpack.summarize.statements import classified
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message
from tests.conftest import SHARED
from tests.test_offline import section, summarize

RULE = "You must never push to main without asking me first."


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A manual break after a word no sentence ends on.
        ("You must\nnever push to main without asking me first.", [RULE]),
        ("Please keep the\nold API working.", ["Please keep the old API working."]),
        # A break after a comma.
        ("If the tests fail,\nstop and ask me.", ["If the tests fail, stop and ask me."]),
        # The next line carries on the sentence.
        (
            "Keep the old endpoint\nand add the new one beside it.",
            ["Keep the old endpoint and add the new one beside it."],
        ),
        # An email wrapped at 72 columns breaks between any two words.
        (
            "We should never run the migrations against the production\ndatabase"
            " without a backup, and the backup has to be checked first.",
            [
                "We should never run the migrations against the production database"
                " without a backup, and the backup has to be checked first."
            ],
        ),
        # A Windows editor's line break.
        ("You must\r\nnever push to main without asking me first.", [RULE]),
        ("If the tests fail,\r\nstop and ask me.", ["If the tests fail, stop and ask me."]),
        ("Fixed the parser.\r\nnow the exporter", ["Fixed the parser.", "now the exporter"]),
        # A list item's text wrapped under it.
        ("- You must\n  never push to main", ["You must never push to main"]),
        ("1. Run the\n   tests first", ["Run the tests first"]),
        # Sentence punctuation, a colon, a blank line end a sentence.
        ("Fixed the parser.\nnow the exporter", ["Fixed the parser.", "now the exporter"]),
        ("Constraints:\nnever push to main", ["Constraints:", "never push to main"]),
        ("You must\n\nnever push", ["You must", "never push"]),
        # List items, headings, quotes, code stay apart.
        ("- run the\n- fix the lint", ["run the", "fix the lint"]),
        (
            "## Constraints for the\nnever push to main",
            ["Constraints for the", "never push to main"],
        ),
        ("> you must\nnever push", ["you must", "never push"]),
        (
            "```text\nthe build must\nnever be skipped\n```",
            ["```text", "the build must", "never be skipped", "```"],
        ),
        (
            "// read the config from\nconfig = load()",
            ["// read the config from", "config = load()"],
        ),
        (
            "result = [] if the\n    for i in range(b):",
            ["result = [] if the", "for i in range(b):"],
        ),
        # A short line that ends a thought of its own, the next an uppercase one.
        ("ok\ndon't push to main", ["ok", "don't push to main"]),
        ("thanks\nnow run the tests", ["thanks", "now run the tests"]),
        # After a long line or a comma, a request of its own.
        (
            "the build is failing on the ci server since yesterday\ndon't touch the workflow",
            ["the build is failing on the ci server since yesterday", "don't touch the workflow"],
        ),
        ("If it fails,\nplease stop", ["If it fails,", "please stop"]),
        ("When you commit,\nstop adding comments", ["When you commit,", "stop adding comments"]),
        ("You must\nNever push", ["You must", "Never push"]),
        # A list of values, one a line.
        ("green diff is #b5bd68\nred diff #283228", ["green diff is #b5bd68", "red diff #283228"]),
    ],
)
def test_a_wrapped_sentence_is_one_and_lines_of_their_own_stay_apart(
    text: str, expected: list[str]
) -> None:
    assert list(sentences(text)) == expected


def test_a_wrapped_rule_is_one_directive_and_one_constraint() -> None:
    text = "Thanks, the parser works now.\nYou must\nnever push to main without asking me first."
    assert directives_in(text) == [RULE]
    assert classified(text) == [("constraint", RULE)]


def test_a_wrapped_rule_stands_whole_in_the_record() -> None:
    said = (
        "The parser looks right now.\nWhen the tests pass you must\nnever push to main without"
        " asking me first,\nopen a pull request instead.\nNext fix the lint in the exporter."
    )
    middle: list[Message] = [
        {"role": "user", "content": said},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "ok"},
        {"role": "assistant", "content": "Fixing the lint."},
    ]
    record = summarize(middle, TokenCounter()).text
    assert section(record, "Constraints & Preferences") == [
        '- The user said: "When the tests pass you must never push to main without asking me'
        ' first, open a pull request instead."'
    ]


def test_a_wrapped_sentence_that_announces_a_list_is_quoted_with_it() -> None:
    items = "\n- the exporter drops empty rows\n- the loader ignores the env file"
    found = "I read the exporter, the config loader and the CLI, and these are the problems I"
    assert last_note([f"{found}\nfound:{items}"]) == (
        f"{found} found: the exporter drops empty rows; the loader ignores the env file"
    )
    plan = "I read the exporter, the config loader and the CLI, and next I will fix the"
    assert spoken(f"{plan}\nbugs below:{items}") == (
        [],
        [f"{plan} bugs below: the exporter drops empty rows; the loader ignores the env file"],
    )


def test_a_real_task_prompts_wrapped_tip_is_one_sentence() -> None:
    path = (
        SHARED / "swe-agent" / "SWE-agent__function_calling__install-1__marshmallow-code__"
        "marshmallow-1867.traj"
    )
    transcript = formats.read(path.read_bytes(), path=str(path))
    task = next(
        words for msg in transcript.sessions[0].messages if (words := user_words(msg)) is not None
    )
    assert (
        "If the bug reproduction script does not print anything when it successfully runs, we"
        ' recommend adding a print("Script completed successfully, no errors.") command at the'
        " end of the file, so that you can be sure that the script indeed ran fine all the way"
        " through."
    ) in list(sentences(task))
