"""What the assistant said, as the record quotes it. Its last words: their
first two sentences (and those right after that qualify them or state a
decision), none of them a list's number, and none past a sentence that ends
in a colon; such a sentence is quoted with the list it announces (its items,
each with its sub-items, as many as the quote holds), for the list is what
it says (a block reads wrong out of it). Its reply to a question: the first
sentence it wrote after it, the same way, unless that sentence only
announces a tool call; then the first sentence of a later text, before the
user spoke again; with the sentence right after it that qualifies it. A
first sentence that only acknowledges ("Good question!", "You're right!",
"Yes!") leads the one that answers. Questions in a row that one reply
answers are one line, the answer quoted once. A decision is said, not
guessed: a sentence that guesses or suggests another way names no choice. A
next step is left to do: not one its text ends announcing (the tool call
after it did it), nor one that was not needed, and the assistant's own: not
advice to the user nor a requirement on someone else, nor an option it
offers (a need it would have or may have, or a step an "if" governs). A
decision or a step that announces a list is quoted with it. A plan names the
actions of its own stretch: up to the user's next message after them, or the
assistant's next plan."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxpack.facts.sentence import sentences
from ctxpack.summarize.offline.lastwords import last_note
from ctxpack.summarize.offline.plans import plans
from ctxpack.summarize.offline.said import Replies, spoken
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message
from tests.builders import call, result
from tests.conftest import SHARED, TAU_BENCH
from tests.test_offline import section, summarize
from tests.test_tool_rules import cli_record

FLIGHTS = (
    "Here are the available direct flights from New York (JFK) to Seattle (SEA) on May 20th:"
    "\n\n1. **Flight HAT069**\n   - Departure: 06:00 AM EST\n\n2. **Flight HAT083**\n"
    "   - Departure: 01:00 AM EST\n\nPlease let me know which flight you would like."
)


def test_a_numbered_list_s_marker_is_no_sentence() -> None:
    assert list(sentences(FLIGHTS)) == [
        "Here are the available direct flights from New York (JFK) to Seattle (SEA) on May 20th:",
        "Flight HAT069",
        "Departure: 06:00 AM EST",
        "Flight HAT083",
        "Departure: 01:00 AM EST",
        "Please let me know which flight you would like.",
    ]
    assert list(sentences("Step 1. Run it. It took 2.")) == ["Step 1.", "Run it.", "It took 2."]


@pytest.mark.parametrize(
    ("bodies", "note"),
    [
        (
            [FLIGHTS],
            "Here are the available direct flights from New York (JFK) to Seattle (SEA) on May"
            " 20th: Flight HAT069 (Departure: 06:00 AM EST); Flight HAT083 (Departure: 01:00 AM"
            " EST)",
        ),
        (
            [
                "Added a Themes section that covers:\n\n1. **Selecting** - by name\n2. **Custom**"
                "\n\nIt sits before Slash Commands."
            ],
            "Added a Themes section that covers: Selecting - by name; Custom",
        ),
        (
            [
                "Details:\n- **Flights:** \n  - HAT227 ATL to ORD\n  - HAT139 ORD to PHL"
                "\n- **Bags:** 0"
            ],
            "Details: Flights: HAT227 ATL to ORD, HAT139 ORD to PHL; Bags: 0",
        ),
        # As many items as the quote holds, the rest counted.
        (
            ["IDs:\n" + "".join(f"- {'X' * 90}{n}\n" for n in range(9))],
            "IDs: " + "; ".join(f"{'X' * 90}{n}" for n in range(5)) + " (+4 more)",
        ),
        (["**Changes made:**\n- a\n- b"], "Changes made: a; b"),
        # A block is no list: the sentence alone.
        (["Run this:\n```\nmake test\n```"], "Run this:"),
        (["Done. All 83 tests pass. Next, the docs."], "Done. All 83 tests pass."),
        (
            ["I checked the logs: nothing new. The build is green."],
            "I checked the logs: nothing new. The build is green.",
        ),
        (["Found it:", "1. "], "Found it:"),
        (["x" * 800, ""], None),
    ],
)
def test_the_last_note_quotes_up_to_two_sentences(bodies: list[str], note: str | None) -> None:
    assert last_note(bodies) == note


def test_the_cli_record_of_tau_bench_quotes_the_flights_line(tmp_path: Path) -> None:
    record = cli_record(TAU_BENCH, tmp_path)
    assert record["Historical In-Progress State"] == [
        "- The assistant's last message in these turns said: \"Here are the available direct"
        " flights from New York (JFK) to Seattle (SEA) on May 20th: Flight HAT069 (Departure:"
        " 06:00 AM EST, Arrival: 12:00 PM EST, Economy Price: $121, Available Econo…; Flight"
        " HAT083 (Departure: 01:00 AM EST, Arrival: 07:00 AM EST, Economy Price: $100, Available"
        ' Econo…" (action 3 followed)'
    ]


QUESTION = {"role": "user", "content": "what color are the code blocks using?"}
LOOK = {"role": "assistant", "content": "Let me check what color the code uses:"}


def said(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


@pytest.mark.parametrize(
    ("turns", "answer"),
    [
        # The announcement ends its text: a tool call follows, then the answer.
        (
            [LOOK, call("c1", "read", {"path": "theme.ts"}), result("c1", "mdCode: cyan")],
            "Code blocks use cyan.",
        ),
        # A list follows it in the same text: the announcement and its list answer.
        (
            [said("The colors are:\n- cyan for code\n- gray for quotes")],
            "The colors are: cyan for code; gray for quotes",
        ),
        ([said("Cyan. The rest is gray.")], "Cyan."),
    ],
)
def test_a_reply_is_no_announcement_of_a_tool_call(
    turns: list[dict[str, object]], answer: str, counter: TokenCounter
) -> None:
    middle = [QUESTION, *turns, said("Code blocks use cyan.")]
    replies = section(summarize(middle, counter).text, "Resolved Questions")
    assert replies == [f'- Q: "what color are the code blocks using?" — A: "{answer}"']


@pytest.mark.parametrize(
    ("turns", "answer"),
    [
        (
            [said("Good question! Deleting the theme falls back to dark.")],
            "Good question! Deleting the theme falls back to dark.",
        ),
        (
            [said("You're absolutely right! We only have one link color.")],
            "You're absolutely right! We only have one link color.",
        ),
        # Acknowledgements in a row lead with the first.
        ([said("Yes! Perfect! The selector reloads them.")], "Yes! The selector reloads them."),
        # The answer comes after a tool call.
        (
            [
                said("Good question! Let me check:"),
                call("c1", "read", {"path": "theme.ts"}),
                result("c1", "fallback: dark"),
                said("It falls back to dark."),
            ],
            "Good question! It falls back to dark.",
        ),
        # An answer that says something of its own is quoted as it is.
        ([said("Yes, I did. The docs list 44 tokens.")], "Yes, I did."),
    ],
)
def test_a_reply_that_only_acknowledges_leads_the_answer(
    turns: list[dict[str, object]], answer: str, counter: TokenCounter
) -> None:
    middle = [QUESTION, *turns, {"role": "user", "content": "ok"}, said("Done.")]
    replies = section(summarize(middle, counter).text, "Resolved Questions")
    assert replies == [f'- Q: "what color are the code blocks using?" — A: "{answer}"']


def test_a_reply_is_not_looked_for_past_the_user_s_next_turn(counter: TokenCounter) -> None:
    middle = [QUESTION, LOOK, {"role": "user", "content": "never mind, use cyan"}, said("Done.")]
    replies = section(summarize(middle, counter).text, "Resolved Questions")
    assert replies == [
        '- Q: "what color are the code blocks using?" — A: "Let me check what color the code uses:"'
    ]


PI_LARGE = SHARED / "pi-agent" / "pi-mono__test__fixtures__large-session.jsonl"


def test_the_cli_record_of_the_pi_session_quotes_the_answer_not_the_lookup(
    tmp_path: Path,
) -> None:
    resolved = cli_record(PI_LARGE, tmp_path)["Resolved Questions"]
    assert (
        '- Q: "what color are the codeblocks using in markdown?" — A: "`mdCode` (inline code) is'
        " using `cyan` which is `#00d7ff`, and `mdCodeBlock` (code blocks) is using `''`"
        ' (terminal default)."'
    ) in resolved
    assert (
        '- Q: "some differences, muted and dim are the same in vs code terminal, wtf?" — A:'
        ' "Looking at the screenshot, I can see: VS Code (left): `muted` and `dim` render the'
        ' same (gray); Ghostty (right): `muted` and `dim` are different shades"'
    ) in resolved
    assert (
        '- Q: "how can we solve this with our theme stuff?" / "do we need additional design'
        ' tokens?" — A: "Looking at this, the thinking border colors are used to set'
        " `this.editor.borderColor` which expects a chalk-style function `(str: string) =>"
        ' string`."'
    ) in resolved
    assert not [line for line in resolved if line.startswith('- Q: "do we need additional')]


@pytest.mark.parametrize(
    "asked",
    [
        # Two questions in one message.
        [{"role": "user", "content": "Is it cyan? Or is it gray?"}],
        # A second question asked before the reply came.
        [{"role": "user", "content": "Is it cyan?"}, {"role": "user", "content": "Or is it gray?"}],
    ],
)
def test_questions_one_reply_answers_are_one_line(
    asked: list[dict[str, object]], counter: TokenCounter
) -> None:
    middle = [*asked, said("Cyan, the code blocks' color."), QUESTION, said("Gray.")]
    replies = section(summarize(middle, counter).text, "Resolved Questions")
    assert replies == [
        '- Q: "what color are the code blocks using?" — A: "Gray."',
        '- Q: "Is it cyan?" / "Or is it gray?" — A: "Cyan, the code blocks\' color."',
    ]


def test_questions_answered_apart_are_lines_apart_though_the_answers_read_alike(
    counter: TokenCounter,
) -> None:
    asked = [{"role": "user", "content": "Is it cyan?"}, said("Yes."), QUESTION, said("Yes.")]
    replies = section(summarize(asked, counter).text, "Resolved Questions")
    assert replies == [
        '- Q: "what color are the code blocks using?" — A: "Yes."',
        '- Q: "Is it cyan?" — A: "Yes."',
    ]


@pytest.mark.parametrize(
    ("body", "decisions"),
    [
        ("I'll use pathlib instead of os.path.", ["I'll use pathlib instead of os.path."]),
        ("Switching to the 256-color palette now.", ["Switching to the 256-color palette now."]),
        ("I bet VS Code uses the light theme instead of the dark one.", []),
        ("It might be loading `light` instead of `dark`, which would explain it.", []),
        ("The code could be refactored to use a comprehension instead of a loop:", []),
        (
            "I chose SQLite instead of Postgres:\n- no server\n- one file",
            ["I chose SQLite instead of Postgres: no server; one file"],
        ),
    ],
)
def test_a_decision_is_said_not_guessed(body: str, decisions: list[str]) -> None:
    found = spoken(body)
    assert found is not None and found[0] == decisions


def test_the_cli_record_of_the_pi_session_holds_no_guess_as_a_decision(tmp_path: Path) -> None:
    decisions = cli_record(PI_LARGE, tmp_path)["Key Decisions"]
    assert len(decisions) == 16
    assert not [line for line in decisions if "I bet" in line or "might" in line]


@pytest.mark.parametrize(
    ("body", "steps"),
    [
        ("We still need to update the docs.", ["We still need to update the docs."]),
        ("Then I'll update the docs. Done for now.", ["Then I'll update the docs."]),
        # The tool call after it did it.
        ("The build failed. We need to rebuild TUI first:", []),
        # The list it announces is the plan.
        ("We need to rebuild:\n- the TUI\n- the CLI", ["We need to rebuild: the TUI; the CLI"]),
        (
            "Done with the refactor. Next steps:\n1. fix the parser\n2. add tests\n\nGo on?",
            ["Next steps: fix the parser; add tests"],
        ),
        ("They were already correct and I didn't need to change them.", []),
        ("There is no need to change the theme.", []),
        # A step is the assistant's own: advice to the user, a requirement on
        # someone else and a sign-off plan nothing (the airline and Gemini sessions).
        ("You may need to contact a human agent for further assistance with this request.", []),
        ("The cost difference will need to be covered using a payment method.", []),
        ("If you need to cancel just one segment, I recommend contacting a human agent.", []),
        ("Ready for next steps!", []),
    ],
)
def test_a_next_step_is_left_to_do(body: str, steps: list[str]) -> None:
    found = spoken(body)
    assert found is not None and found[1] == steps


@pytest.mark.parametrize(
    ("sentence", "planned"),
    [
        # The assistant goes on: it, or "we", does the next thing.
        ("Next, I'll add the test.", True),
        ("Next, let me check the build log.", True),
        ("next, we run the whole suite.", True),
        ("Next I'll draft the application.", True),
        # "Next" that tells what was done plans nothing.
        ("Next, I ran the tests and they passed.", False),
        ("Next we added the migration.", False),
        ("Next, I was able to reproduce it.", False),
        ("Next, I need to rerun the build.", True),
        ("Next we proceed with the migration.", True),
        # "Next" that describes, or advises the user, plans nothing (the
        # Glaive session's "Next, you can look for any packets ...").
        ("Next, the function returns the parsed value.", False),
        ("Next, you can look for any packets that are being dropped.", False),
        # A need is a step when it is the assistant's own and unconditional.
        ("I'll need to look up your reservation details.", True),
        ("We still need to update the docs.", True),
        ("To determine if your ticket can be changed, I need to know the cabin class.", True),
        ("The tests pass if run alone; we still need to fix the flaky one.", True),
        # A conditional need offers an option (the pi and airline sessions).
        (
            "We'd need to add a separate `linkUrl` token if we want to style them differently.",
            False,
        ),
        ("To determine which flights are over 3 hours, I would need to check them.", False),
        ("If you want a dark theme too, I'd need to add its colors.", False),
        ("If neither condition is met, I need to know if you have travel insurance.", False),
        ("If so, please confirm, and I'll need to know which payment method to use.", False),
        # So is a step an "if" governs.
        ("If the tests pass, then I'll commit the fix.", False),
        ("If that fails, next I'll try the legacy build.", False),
        ("If the tests pass, I'll commit.", False),
        ("First I'll fix the parser, then I'll run the tests.", True),
        ("Let me check if it builds, then I'll commit.", True),
        ("The tests pass if run alone; then I'll commit.", True),
        # A need that may come is a possibility (the Glaive session).
        (
            "We may need to continue collecting data and conducting analysis to ensure that the"
            " system is functioning properly and to identify any new issues that arise.",
            False,
        ),
        ("We might need to add a migration for the new column.", False),
        ("I may also need to update the lock file.", False),
        # Whatever opens it.
        ("Next, we may need to rerun the migration.", False),
        ("Next, we'd need to add a token for links.", False),
        ("Next steps: we might need a separate cache.", False),
        # An option offered is no step taken, however it opens: the pi
        # session's "Or we could add debug logging ..." and the airline
        # session's "I can transfer you to a human agent" said as next steps.
        (
            "Next, we could add debug logging to verify which color mode is actually being"
            " detected.",
            False,
        ),
        ("Next steps: we could add a new token like `mdLinkUrl` to the theme system.", False),
        ("Next, I can also transfer you to a human agent if you want.", False),
        ("Next, I can't reproduce the failure without your config.", False),
        ("Next, we would map them to existing theme colors.", False),
        # Wanting a step is taking it.
        ("Next, I'd like to run the build again.", True),
        # "TODO" marks a note; "todo" in prose names a thing (the Glaive session).
        ("TODO: add tests for the empty case.", True),
        ("- TODO fix the parser", True),
        (
            "Sure, I can help with that. Could you please provide me with the title,"
            " description, and due date of the todo item?",
            False,
        ),
        (
            'The todo item "Buy groceries" has been created successfully with the due date'
            " set for May 15, 2022.",
            False,
        ),
        # The OpenHands session's todo app.
        ("I've created a complete Vue.js todo application with all the requested features.", False),
        ("Click the checkbox to mark a todo as complete", False),
        ("I need to update the changelog.", True),
    ],
)
def test_a_plan_is_a_step_the_assistant_takes_not_one_it_offers(
    sentence: str, planned: bool
) -> None:
    assert plans(sentence) is planned


def test_the_cli_record_of_the_pi_session_plans_what_was_left(tmp_path: Path) -> None:
    """Each plan says which of the recorded actions carried it on: those up to
    the user's next message after them (the theme function, its edits and
    the build; the tests' fixes and their check), not every later one. The
    link URL token the assistant said "we'd need" if the user wanted it was
    an option, no plan: the user's "yes" asked for it."""
    record = cli_record(PI_LARGE, tmp_path)
    assert record["Historical Remaining Work"] == [
        '- The assistant planned: "The pattern is `new Markdown(text, paddingX, paddingY)` -'
        " need to add two more params: `undefined` for defaultTextStyle, and"
        ' `defaultMarkdownTheme` for theme." (actions 42–94 followed)',
        '- The assistant planned: "We need to provide a function that applies the appropriate'
        ' theme color." (actions 21–29 followed)',
    ]
    # Screenshots' times ("Screenshot 2025-11-21 at 01.27.21.png") are no versions.
    assert not [line for line in record["Critical Context"] if line.startswith("- ID: 01.")]


def test_a_plan_says_which_actions_followed_it(counter: TokenCounter) -> None:
    """The Codex session's plan to export the transcript was carried out by
    the call that came with it; a plan after the last action has none."""
    export = call("c1", "bash", {"command": "bash export-session.sh ."})
    middle: list[Message] = [
        {"role": "user", "content": "apply for the grant"},
        {**export, "content": "Next I'll export the session transcript, then read the README."},
        result("c1", "exported to ./codex-session.jsonl"),
        call("c2", "bash", {"command": "cat README.md"}),
        result("c2", "# Grant"),
        {"role": "assistant", "content": "Next I'll draft the application."},
    ]
    text = summarize(middle, counter).text
    assert section(text, "Historical Remaining Work") == [
        '- The assistant planned: "Next I\'ll draft the application."',
        "- The assistant planned: \"Next I'll export the session transcript, then read the"
        ' README." (actions 1–2 followed)',
    ]


@pytest.mark.parametrize("at", [10, 34])
def test_the_cli_record_of_an_airline_session_plans_none_of_the_user_s_steps(
    tmp_path: Path, at: int
) -> None:
    """Advice and a requirement said to the user plan nothing: session 10's
    "You may need to contact a human agent", session 34's "The cost
    difference will need to be covered"."""
    assert cli_record(TAU_BENCH, tmp_path, at=at)["Historical Remaining Work"] == []


def test_the_cli_record_of_an_airline_session_ends_a_plan_where_the_user_spoke_again(
    tmp_path: Path,
) -> None:
    """The user's answer (the reason) came before the lookups that carried
    the plan out; the cancellation the user asked for next is no part of it."""
    record = cli_record(TAU_BENCH, tmp_path, at=177)
    assert record["Historical Remaining Work"] == [
        "- The assistant planned: \"To proceed with the cancellation, I'll need to know the reason"
        ' for cancellation for each reservation." (actions 1–2 followed)'
    ]


def test_a_plan_s_actions_end_at_the_next_plan_or_the_user_s_next_ask(
    counter: TokenCounter,
) -> None:
    """The answer the user gave a plan comes before the actions that carry it
    out; the assistant's next plan, or the user's next ask after them, starts
    other work."""
    middle: list[Message] = [
        {"role": "user", "content": "cancel my trip"},
        {"role": "assistant", "content": "I'll need to look up your reservation first."},
        {"role": "user", "content": "my id is ZX9"},
        call("c1", "get_reservation", {"id": "ZX9"}),
        result("c1", "basic economy, booked yesterday"),
        {"role": "assistant", "content": "Then I'll check the refund rules."},
        call("c2", "get_rules", {"cabin": "basic"}),
        result("c2", "refundable within 24 hours"),
        {"role": "user", "content": "ok cancel it"},
        call("c3", "cancel_reservation", {"id": "ZX9"}),
        result("c3", "cancelled"),
    ]
    assert section(summarize(middle, counter).text, "Historical Remaining Work") == [
        '- The assistant planned: "Then I\'ll check the refund rules." (action 2 followed)',
        '- The assistant planned: "I\'ll need to look up your reservation first."'
        " (action 1 followed)",
    ]


@pytest.mark.parametrize(
    ("turns", "reply"),
    [
        # The assistant speaks first: what it says answers the turns before.
        ([("assistant", "The borders are gone. Anything else?")], "The borders are gone."),
        # A tool's result is nobody speaking.
        ([("tool", "ok"), ("assistant", "The build passes now.")], "The build passes now."),
        # The user spoke first: the reply may answer them instead.
        ([("user", "Also, drop the borders."), ("assistant", "Dropped them.")], None),
        ([("tool", "ok")], None),
    ],
)
def test_the_reply_to_the_turns_before_is_the_first_the_assistant_speaks(
    turns: list[tuple[str, str]], reply: str | None
) -> None:
    middle: list[Message] = [{"role": role, "content": text} for role, text in turns]
    assert Replies(middle, [text for _, text in turns]).first() == reply
