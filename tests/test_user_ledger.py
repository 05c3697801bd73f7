"""The user's words and the current state survive compaction, round after
round, offline and through the LLM path: a conversation with planted user
statements of five kinds (safety rules, hard constraints, facts, goals and
state, preferences) in varied phrasing, compacted five times with a small
window. Survival means the statement's key content is in the written
transcript; a value the user changed reads as current in its newest form."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ctxpack import markers
from ctxpack import messages as m
from ctxpack.align.budget import Budget
from ctxpack.cli import app
from ctxpack.pipeline.compaction import CompressSettings, compress_messages
from ctxpack.summarize.ledger import LEDGER_HEADING, Ledger, cut, user_messages
from ctxpack.summarize.offline.summarizer import OfflineSummarizer
from ctxpack.summarize.pasted import prose
from ctxpack.summarize.protocol import SummaryRequest
from ctxpack.summarize.statements import kind_of
from ctxpack.summarize.template import parse
from ctxpack.summarize.values import Change, changes, values_of
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message
from tests.conftest import TAU_BENCH
from tests.llm_server import FakeLLM, llm_server_fixture, ok, settings_for  # noqa: F401
from tests.test_tool_rules import cli_record

runner = CliRunner()
BUDGET = Budget(context_length=16000, protect_first=1, protect_last=4)

# (user message, key content that must survive), five per round.
ROUNDS: list[list[tuple[str, str]]] = [
    [
        ("HARD CONSTRAINT: Do not push to main.", "Do not push to main"),
        ("Budget cap is $500 total.", "Budget cap is $500 total"),
        ("The staging database lives in us-west-2.", "us-west-2"),
        ("We are on phase 3 of 6 of the migration.", "phase 3 of 6"),
        ("Use Python 3.11 for every script.", "Python 3.11"),
    ],
    [
        ("The ticket for this work is JUDGE-004.", "JUDGE-004"),
        ("The release deadline is 2026-11-15.", "2026-11-15"),
        ("Short commit messages, imperative mood.", "Short commit messages, imperative mood"),
        ("Never run migrations against the production cluster.", "against the production"),
        ("Note: the CI runner has 16 GB of memory.", "16 GB of memory"),
    ],
    [
        ("Tests must finish in under 90 seconds.", "under 90 seconds"),
        ("FYI the config lives at /srv/app/config/settings.toml", "/srv/app/config/settings.toml"),
        ("Preference: keep functions under 40 lines.", "keep functions under 40 lines"),
        ("Actually Python 3.12, not the older one.", "Python 3.12"),
        ("The goal is a zero-downtime cutover to the new schema.", "zero-downtime cutover"),
    ],
    [
        ("That part is done, so we are now on phase 4 of 6.", "phase 4 of 6"),
        ("The on-call engineer this week is Priya Raman.", "Priya Raman"),
        ("Only touch files under services/billing/ in this repo.", "services/billing/"),
        ("Do not delete any S3 buckets, even empty ones.", "Do not delete any S3 buckets"),
        ("I prefer pytest over unittest.", "pytest over unittest"),
    ],
    [
        ("Our API rate limit is 1200 requests per minute.", "1200 requests per minute"),
        ("Milestone: billing exports working end to end.", "billing exports working end to end"),
        ("Avoid adding new dependencies.", "Avoid adding new dependencies"),
        ("The feature flag is named EXPORTS_V2.", "EXPORTS_V2"),
        ("Deploy the exporter to eu-central-1 as well.", "eu-central-1"),
    ],
]
# Old value -> the value the user changed it to.
UPDATES = {"phase 3 of 6": "phase 4 of 6", "Python 3.11": "Python 3.12"}


def turns(round_number: int) -> list[Message]:
    """One round of new turns: each statement, a tool call with a long log,
    the assistant's reply, and an acknowledgement now and then."""
    out: list[Message] = []
    for n, (statement, _) in enumerate(ROUNDS[round_number]):
        call = f"r{round_number}c{n}"
        command = json.dumps({"command": f"cat logs/run-{round_number}.log"})
        log = "\n".join(
            f"2026-10-0{n + 1}T10:{i:02d}:00 INFO exporter batch {i} wrote {i * 37} rows"
            for i in range(120)
        )
        reply = "Using Python 3.11 as you asked." if "3.11" in statement else "Understood."
        out += [
            {"role": "user", "content": statement},
            {
                "role": "assistant",
                "content": "Checking the exporter log.",
                "tool_calls": [
                    {
                        "id": call,
                        "type": "function",
                        "function": {"name": "bash", "arguments": command},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call, "content": log},
            {"role": "assistant", "content": reply},
        ]
        if n == 2:
            out += [
                {"role": "user", "content": "ok"},
                {"role": "assistant", "content": "Going on."},
            ]
    return out


def record_of(messages: list[Message]) -> str:
    (record,) = [m.text(msg) for msg in messages if markers.is_summary(msg)]
    return record


def planted(upto: int) -> list[str]:
    return [key for group in ROUNDS[: upto + 1] for _, key in group]


def assert_round(messages: list[Message], round_number: int) -> None:
    text = "\n".join(m.text(msg) for msg in messages)
    keys = planted(round_number)
    lost = [key for key in keys if key not in text]
    assert (len(keys) - len(lost)) / len(keys) >= 0.95, lost
    record = record_of(messages)
    assert f"## {LEDGER_HEADING}" in record
    for old, new in UPDATES.items():
        if new not in " ".join(planted(round_number)):
            continue
        assert f"- Current: {new} (supersedes {old}" in record
        for line in record.splitlines():
            if old in line:
                assert "supersede" in line, line


def compact(messages: list[Message], **settings: Any) -> list[Message]:
    out, session = compress_messages(
        messages,
        counter=TokenCounter(),
        settings=CompressSettings(budget=BUDGET, force=True, prune="no-prune", **settings),
    )
    assert session.status == "compacted", (session.notes, session.warnings)
    return out


def five_rounds(**settings: Any) -> list[list[Message]]:
    messages: list[Message] = [{"role": "system", "content": "You are a coding agent."}]
    outputs = []
    for round_number in range(len(ROUNDS)):
        messages = compact([*messages, *turns(round_number)], **settings)
        assert_round(messages, round_number)
        outputs.append(messages)
    return outputs


def test_five_offline_rounds_keep_the_users_words_and_the_current_state() -> None:
    outputs = five_rounds()
    record = record_of(outputs[-1])
    sections = parse(record.split("\n\n", 1)[1])
    # The first request is the head: it stays verbatim before the record, round
    # after round.
    assert [m.text(msg) for msg in outputs[-1][:2]] == [
        "You are a coding agent.\n\n" + markers.SYSTEM_NOTE,
        "HARD CONSTRAINT: Do not push to main.",
    ]
    # Classification put statements under their headings, whatever their phrasing.
    constraints = " ".join(sections["Constraints & Preferences"])
    assert "Budget cap is $500" in constraints and "Avoid adding new dependencies" in constraints
    assert "The feature flag is named EXPORTS_V2." in " ".join(sections["Critical Context"])
    assert "Milestone: billing exports working end to end." in " ".join(sections["Goal"])
    # Earlier rounds' entries are still there, in the order the user wrote them.
    ledger = sections[LEDGER_HEADING]
    first = next(i for i, item in enumerate(ledger) if "Budget cap is $500" in item)
    later = next(i for i, item in enumerate(ledger) if "EXPORTS_V2" in item)
    assert first < later


def test_five_llm_rounds_keep_the_users_words_with_an_intent_poor_model(
    llm_server: FakeLLM,
) -> None:
    llm_server.responder = lambda body: ok("The agent worked on the exporter.")
    outputs = five_rounds(llm=settings_for(llm_server))
    assert len(llm_server.received) >= 5
    # The model saw the earlier ledger in each update and was told ctxpack keeps it.
    update = llm_server.received[-1].user_text()
    assert "Budget cap is $500" in update and f"`## {LEDGER_HEADING}`" in update
    assert "(superseded: phase 3 of 6 → phase 4 of 6)" in record_of(outputs[-1])


def test_a_round_through_the_cli(tmp_path: Path) -> None:
    messages = five_rounds()[3]
    source = tmp_path / "session.jsonl"
    source.write_text("".join(json.dumps(msg) + "\n" for msg in [*messages, *turns(4)]))
    out = tmp_path / "out.jsonl"
    args = ["compress", "--force", "--offline", "--no-prune", "--no-archive", "--context-length"]
    args += ["16000", "--protect-first", "1", "--protect-last", "4", str(source), "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert_round(written, 4)


# ---- the failing examples, one by one --------------------------------------


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("HARD CONSTRAINT: Do not push to main", "constraint"),
        ("Budget cap is $500 total.", "constraint"),
        ("Please keep the API stable, we only add endpoints.", "constraint"),
        ("Preference: tabs over spaces.", "constraint"),
        ("Please stop grouping build & commit", "constraint"),
        ("Stop adding comments to every line.", "constraint"),
        ("Let's not touch the schema yet.", "constraint"),
        ("I'd rather keep it in one file.", "constraint"),
        ("It is rather slow.", None),
        # Modal words that state a fact, a guess or a promise are no rule.
        ("I don't remember the reservation ID, sorry.", None),
        ("We really don't have any baggage.", None),
        ("I must have left it somewhere else.", None),
        ("There must be some flexibility.", None),
        ("I'll make sure to find my user ID first.", None),
        ("Actually, never mind.", None),
        ("I've always had great service.", None),
        ("It's the background colour that doesn't change.", None),
        ("I don't actually have the reservation ID with me right now.", None),
        ("alright, i think there's only one file left to fix up, tui-renderer.ts", None),
        ("It's only a warning.", None),
        ("ok, let me try the light theme, then we should be good to go for a new release", None),
        ("That should now be fine.", None),
        # A next step, the user's and the agent's, is a task (the real pi-mono
        # session), and a hedged suggestion is no rule either.
        ("then we should document it.", None),
        ("we should tell people about custom tools here.", None),
        ("should probably check against @packages/coding-agent/src/core/settings-manager.ts", None),
        # ... while the same words that set one still do.
        ("We should use uv instead of pip.", "constraint"),
        ("We should never push to main.", "constraint"),
        ("We should only touch the parser.", "constraint"),
        ("I don't want travel insurance.", "constraint"),
        ("Don't have the parser return None.", "constraint"),
        ("The API must have pagination.", "constraint"),
        ("Make sure the total cost doesn't exceed $500.", "constraint"),
        # A budget's cap is a rule (the airline users' in tau-bench); a price is a fact.
        ("I'm willing to pay up to $600 for the business class upgrades.", "constraint"),
        ("I really need the flight on May 24 to fit under $1,000 for any upgrades.", "constraint"),
        ("Keep the total below $300 please.", "constraint"),
        ("It cost under $200 last year.", "fact"),
        ("It costs up to $20 to change a seat.", "fact"),
        ("I don't remember the ID, but never push to main.", "constraint"),
        ("Always run the tests before a commit.", "constraint"),
        ("Use only the standard library.", "constraint"),
        ("The footer should be dimmer.", "constraint"),
        ("There is only one rule: only touch files under src/.", "constraint"),
        ("Note: the cluster is in us-west-2.", "fact"),
        ("FYI the build box runs Python 3.11", "fact"),
        ("The release deadline is 2026-11-15.", "fact"),
        ("The ticket is JUDGE-004.", "fact"),
        # A value alone, a pasted file's caption, says nothing of it.
        ("`~/agent-tools/screenshot/README.md`:", None),
        ("v1.2.3", None),
        ("The timeout is 30s.", "fact"),
        ("Goal: ship the exporter.", "goal"),
        ("We are on phase 3 of 6.", "goal"),
        ("I'm trying to change my flight to Las Vegas.", "goal"),
        ("Our progress so far: the parser is done.", "goal"),
        ("The build status: green on main.", "goal"),
        # Whose effort, and which status, decide it.
        ("Thanks for trying to help.", None),
        ("That sounds like some progress.", None),
        ("Given my status, I was hoping for more.", None),
        ("thanks", None),
        ("Can you look at the logs?", None),
        # A liking is a preference, however it is spelt; liking to do a thing asks for it.
        ("I'd like it terse.", "constraint"),
        ("I would like an aisle seat.", "constraint"),
        ("I would like you to use tabs.", "constraint"),
        ("I like to keep functions short.", "constraint"),
        ("We really hate emojis.", "constraint"),
        ("I would like to cancel all of these reservations.", None),
        ("I'd like to book a flight.", None),
    ],
)
def test_classification_needs_no_keyword_at_the_start(sentence: str, kind: str | None) -> None:
    assert kind_of(sentence) == kind


def test_the_cli_record_of_tau_bench_states_an_ask_once(tmp_path: Path) -> None:
    record = cli_record(TAU_BENCH, tmp_path, at=28)
    assert record["Goal"] == [
        "- The user's first ask is kept before this record; in these turns, they then asked:"
        ' "I would like to cancel all of these reservations, s\'il vous plaît."'
    ]
    assert record["Constraints & Preferences"] == []


@pytest.mark.parametrize(
    ("at", "rule"),
    [
        (14, "I'm willing to pay up to $600 for the business class upgrades."),
        (67, "I really need the flight on May 24 to fit under $1,000 for any upgrades."),
    ],
)
def test_the_cli_record_of_tau_bench_lists_a_budget_as_a_rule(
    tmp_path: Path, at: int, rule: str
) -> None:
    # It was listed in Critical Context as "The user noted: …".
    record = cli_record(TAU_BENCH, tmp_path, at=at)
    assert f'- The user said: "{rule}"' in record["Constraints & Preferences"]
    assert not [line for line in record["Critical Context"] if rule in line]


def summarize(middle: list[Message], previous: str | None = None) -> str:
    request = SummaryRequest(middle=middle, budget_tokens=1700, previous_summary=previous)
    return OfflineSummarizer().summarize(request, counter=TokenCounter()).text


def chat(*said: str) -> list[Message]:
    out: list[Message] = []
    for text in said:
        out += [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}]
    return out


def test_each_failing_example_survives_whole() -> None:
    text = summarize(
        chat(
            "HARD CONSTRAINT: Do not push to main",
            "Budget cap is $500 total.",
            "The release deadline is 2026-11-15.",
            "Work happens under JUDGE-004.",
            "Everything runs in us-west-2.",
            "Scripts run on Python 3.11.",
        )
    )
    sections = parse(text)
    constraints = sections["Constraints & Preferences"]
    assert '- The user said: "HARD CONSTRAINT: Do not push to main"' in constraints
    assert '- The user said: "Budget cap is $500 total."' in constraints
    context = " ".join(sections["Critical Context"])
    for value in ("2026-11-15", "JUDGE-004", "us-west-2", "Python 3.11"):
        assert value in context
    assert sections[LEDGER_HEADING][1:] == [
        '- "HARD CONSTRAINT: Do not push to main"',
        '- "Budget cap is $500 total."',
        '- "The release deadline is 2026-11-15."',
        '- "Work happens under JUDGE-004."',
        '- "Everything runs in us-west-2."',
        '- "Scripts run on Python 3.11."',
    ]


def test_a_goal_updated_in_a_later_round_reads_current() -> None:
    first = summarize(chat("We are on phase 3 of 6.", "Keep going with the exporter."))
    second = summarize(chat("Now we are on phase 4 of 6.", "continue"), previous=first)
    assert "- Current: phase 4 of 6 (supersedes phase 3 of 6)" in second
    assert '- (superseded: phase 3 of 6 → phase 4 of 6) "We are on phase 3 of 6."' in second
    for line in second.splitlines():
        assert "phase 3 of 6" not in line or "supersede" in line
    # The earlier round's words stay, before the new ones.
    ledger = parse(second)[LEDGER_HEADING]
    assert ledger[-2:] == ['- "Now we are on phase 4 of 6."', '- "continue"']


def test_a_statement_whose_value_changed_in_the_same_turns_is_not_stated_again() -> None:
    text = summarize(
        chat(
            "We are on phase 3 of 6.",
            "The budget cap is $500.",
            "Now we are on phase 4 of 6.",
            "The budget cap is $800 now.",
        )
    )
    sections = parse(text)
    # The old values are the ledger's to mark; the sections state only the new ones.
    assert sections["Goal"] == [
        '- The user first asked: "We are on phase 3 of 6." (superseded: now phase 4 of 6)',
        '- The user stated: "Now we are on phase 4 of 6."',
    ]
    assert sections["Constraints & Preferences"] == [
        '- The user said: "The budget cap is $800 now."'
    ]
    assert "- Current: $800 (supersedes $500)" in sections[LEDGER_HEADING]


def test_a_long_middles_ledger_made_in_a_child_is_the_one_made_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On several cores the ledger of a long middle is made in a child while
    the scan reads: the record, an update's included, is the one process's."""
    from ctxpack.tokens import counter as tokens
    from ctxpack.tokens import forked

    children: list[object] = []
    spawn = forked._spawn
    monkeypatch.setattr(forked, "_spawn", lambda *a, **k: children.append(a) or spawn(*a, **k))
    said = [text for round_ in ROUNDS for text, _ in round_]
    first, second = chat(*said[:12]), chat(*said[12:], "continue")
    made = {}
    for workers, minimum in ((1, 10**9), (2, 2)):
        monkeypatch.setattr(tokens, "PARALLEL_MIN_MESSAGES", minimum)
        counter = TokenCounter(workers=workers)
        texts = []
        previous = None
        for middle in (first, second):
            request = SummaryRequest(middle=middle, budget_tokens=1700, previous_summary=previous)
            previous = OfflineSummarizer().summarize(request, counter=counter).text
            texts.append(previous)
        made[workers] = texts
    assert made[1] == made[2]
    assert "- Current: Python 3.12 (supersedes Python 3.11)" in made[2][1]
    # The ledger's child and the scan's, for each of the two records.
    assert len(children) == 4


def test_only_the_users_own_words_count() -> None:
    middle: list[Message] = [
        {"role": "user", "content": "<environment_context>\n<cwd>/x</cwd>\n</environment_context>"},
        {
            "role": "user",
            "content": "Fix the exporter.<system-reminder>Be brief.</system-reminder>",
        },
        {"role": "user", "content": "[Request interrupted by user]"},
        {"role": "user", "content": f"{markers.SUMMARY_PREFIX}\n\n## Goal\n- x"},
        {"role": "tool", "tool_call_id": "a", "content": "rows written"},
        {
            "role": "user",
            "content": "<command-name>/clear</command-name>\n<command-args></command-args>",
        },
    ]
    assert user_messages(middle) == ["Fix the exporter."]


def test_the_ledger_drops_the_least_informative_first_and_never_the_latest() -> None:
    said = ["ok", "thanks", *[f"Please look at module {n} again." for n in range(40)]]
    said += ["Never force-push.", "Ship it by 2026-12-01."]
    ledger = Ledger([], said)
    text = ledger.render(budget=600, counter=TokenCounter())
    assert '"ok"' not in text and '"thanks"' not in text
    assert '- "Never force-push."' in text and '- "Ship it by 2026-12-01."' in text
    assert "less informative user messages left out" in text
    assert TokenCounter().text(text) <= 300


def test_a_long_message_is_cut_head_and_tail_with_the_count() -> None:
    text = "start " + "x" * 2000 + " end"
    short = cut(text, 300)
    assert short.startswith("start ") and short.endswith(" end")
    assert "[… 1,710 characters cut …]" in short


def _plain_changes(statements: list[str]) -> dict[int, list[Change]]:
    """The definition of changes(): each value's latest word is the last value
    after it that shares its shape and a name (in a later statement, or in
    the same one for a named value)."""
    flat = [(i, v) for i, text in enumerate(statements) for v in values_of(prose(text))]
    out: dict[int, list[Change]] = {}
    for k, (i, old) in enumerate(flat):
        latest = None
        for j, new in flat[k + 1 :]:
            slot = old.shape == new.shape and bool(old.names & new.names)
            if slot and (j > i or old.shape in ("ratio", "version")):
                latest = new
        if latest is not None and " ".join(latest.text.lower().split()) != " ".join(
            old.text.lower().split()
        ):
            out.setdefault(i, []).append(Change(old.text, latest.text))
    return out


_CLAUSES = [
    "use Python 3.{n}",
    "the deadline is 2026-0{d}-1{n}",
    "deploy to us-east-{d}",
    "set the ratio to {n}:{d}",
    "the budget is ${n}00",
    "run job_{n} on port 80{d}",
    "move from Python 3.{n} to Python 3.{d}",
    "keep phase {n} of {d}",
]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(st.sampled_from(_CLAUSES), st.integers(1, 3), st.integers(1, 3)),
            min_size=1,
            max_size=3,
        ),
        max_size=12,
    )
)
def test_value_changes_are_their_definition(picked: list[list[tuple[str, int, int]]]) -> None:
    statements = [
        "; and ".join(clause.format(n=n, d=d) for clause, n, d in sentence).capitalize() + "."
        for sentence in picked
    ]
    assert changes(statements) == _plain_changes(statements)


def _plain_mark(ledger: Ledger, text: str) -> str:
    """The definition of Ledger.mark: every line naming a replaced value,
    and not the value now current, says what is current."""
    text = re.sub(r" \(superseded: now [^)]*\)", "", text)
    lines = []
    for line in text.split("\n"):
        lowered = line.lower()
        fresh = [
            new
            for old, new in ledger.superseded().items()
            if old.lower() in lowered and new.lower() not in lowered
        ]
        if fresh and "superseded" not in lowered:
            line = f"{line} (superseded: now {', '.join(dict.fromkeys(fresh))})"
        lines.append(line)
    return "\n".join(lines)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(_CLAUSES), st.integers(1, 3), st.integers(1, 3)),
        min_size=1,
        max_size=8,
    ),
    st.lists(
        st.one_of(
            st.tuples(st.sampled_from(_CLAUSES), st.integers(1, 3), st.integers(1, 3)).map(
                lambda picked: picked[0].format(n=picked[1], d=picked[2])
            ),
            st.sampled_from(["- ran `pytest -x`", "", "(superseded: now 3.2)", "PYTHON 3.1 ok"]),
        ),
        max_size=6,
    ),
)
def test_marking_a_record_line_is_its_definition(
    said: list[tuple[str, int, int]], lines: list[str]
) -> None:
    ledger = Ledger([], [clause.format(n=n, d=d).capitalize() + "." for clause, n, d in said])
    text = "\n".join(lines)
    assert ledger.mark(text) == _plain_mark(ledger, text)
    assert ledger.mark(ledger.mark(text)) == ledger.mark(text)


def test_the_latest_word_on_each_value() -> None:
    statements = [
        "Use Python 3.11 and deploy to us-east-1.",
        "Move from Python 3.11 to Python 3.12.",
        "Deploy to us-east-2 instead.",
        "Keep the budget at $500.",
    ]
    assert changes(statements) == {
        0: [Change("Python 3.11", "Python 3.12"), Change("us-east-1", "us-east-2")],
        1: [Change("Python 3.11", "Python 3.12")],
    }


@given(st.text(alphabet="ab .;!?\n,Zz9", max_size=40), st.data())
def test_a_values_context_is_the_clause_before_it(text: str, data: st.DataObject) -> None:
    from ctxpack.summarize import values

    start = data.draw(st.integers(0, len(text)))
    clause = re.split(r"[.;!?\n]", text[:start])[-1]
    words = [w.lower() for w in values._WORD_RE.findall(clause)]
    content = [w for w in words if w not in values.STOP_WORDS and len(w) > 1]
    expected = frozenset(values.stem(w) for w in content[-values._CONTEXT_WORDS :])
    assert values._context(text, start) == expected
