"""The offline summarizer on real transcripts: every heading, within budget,
deterministic, every path and command kept (in the summary or the preserved
facts), and updates that continue an earlier summary."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ctxpack import formats
from ctxpack import messages as m
from ctxpack.align.budget import Budget
from ctxpack.cli import app
from ctxpack.facts.extract import extract_facts, missing_facts
from ctxpack.facts.preserved import preserved_facts_section
from ctxpack.summarize.foreign import to_template
from ctxpack.summarize.ledger import LEDGER_HEADING, user_words
from ctxpack.summarize.offline.fit import Item, fit
from ctxpack.summarize.offline.sections import PROGRESS_RE, TRACKED_STATE_RE
from ctxpack.summarize.offline.summarizer import OfflineSummarizer, day_of
from ctxpack.summarize.protocol import HEADINGS, SummaryRequest, SummaryResult
from ctxpack.summarize.template import item_key, item_number, parse, render
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message
from tests.conftest import FIXTURES, SHARED, TAU_BENCH
from tests.test_facts import CODEX, HAIKU, OPUS, claude_messages, codex_messages
from tests.test_formats_support import summaries

VERBS = "Ran|Read|Edited|Created|Searched|Fetched|Delegated|Called"
CODEX_MESSAGES = codex_messages(CODEX)
ACTION_RE = re.compile(rf"^\d+\. (?:{VERBS}) .+ — .+ \[tool: [^\]]+\]$")


def summarize(
    middle: list[Message],
    counter: TokenCounter,
    budget: int = 2000,
    **extra: str | None,
) -> SummaryResult:
    request = SummaryRequest(middle=middle, budget_tokens=budget, **extra)
    return OfflineSummarizer().summarize(request, counter=counter)


def section(text: str, heading: str) -> list[str]:
    return parse(text)[heading]


def assert_well_formed(text: str, counter: TokenCounter, budget: int) -> None:
    # The user ledger follows the template whenever the turns hold a user message.
    headings = re.findall(r"^## (.+)$", text, flags=re.MULTILINE)
    assert headings in (list(HEADINGS), [*HEADINGS, LEDGER_HEADING])
    assert counter.text(text) <= budget
    for line in section(text, "Completed Actions"):
        assert ACTION_RE.match(line), line
    for heading, items in parse(text).items():
        # Numbered actions may repeat an action; their numbers tell them apart.
        keys = [item if item_number(item) else item_key(item) for item in items]
        assert len(keys) == len(set(keys)), heading


def assert_keeps_paths_and_commands(
    middle: list[Message], text: str, counter: TokenCounter, cap: int
) -> None:
    preserved = preserved_facts_section(middle, text, counter=counter, cap_tokens=cap).text
    lost = missing_facts(extract_facts(middle), f"{text}\n\n{preserved}")
    assert lost.paths == []
    assert lost.commands == []


@pytest.fixture(scope="module")
def tau_sessions() -> list[list[Message]]:
    transcript = formats.read(TAU_BENCH.read_bytes(), path=str(TAU_BENCH))
    return [session.messages for session in transcript.sessions[:12]]


# ---- first summaries -------------------------------------------------------


def test_tau_bench_sessions(tau_sessions: list[list[Message]], counter: TokenCounter) -> None:
    for messages in tau_sessions:
        middle = messages[1:-4]
        result = summarize(middle, counter, last_timestamp="2026-04-21T13:47:21.766Z")
        assert result.source == "offline" and result.model is None
        assert_well_formed(result.text, counter, 2000)
        assert_keeps_paths_and_commands(
            middle, result.text, counter, 2000 - counter.text(result.text)
        )
        assert section(result.text, "Historical Task Snapshot")[0].startswith("- As of 2026-04-21,")


def test_tau_bench_content(tau_sessions: list[list[Message]], counter: TokenCounter) -> None:
    text = summarize(tau_sessions[0][1:-4], counter).text
    actions = section(text, "Completed Actions")
    assert actions[0].startswith("1. Called get_user_details(user_id=mia_li_3668) — ok")
    assert "[tool: book_reservation]" in actions[4]
    assert "Error: payment amount does not add up, total price is 305, but paid 255" in actions[4]
    assert section(text, "Constraints & Preferences") == [
        '- The user said: "No, I do not want travel insurance."',
        "- The user said: \"Neither of those options works for me as I don't want to fly before "
        '11 AM EST."',
    ]
    assert section(text, "Goal")[0] == (
        "- The user first asked: \"Hi! I'm looking to book a flight from New York to Seattle "
        'on May 20th."'
    )
    blocked = section(text, "Blocked")
    assert len(blocked) == 1 and "book_reservation" in blocked[0]
    resolved = section(text, "Resolved Questions")
    assert resolved[0].startswith('- Q: "Do you have any later flights?" — A: "Here are some')
    assert section(text, "Historical Pending User Asks") == [
        '- "Yes, I confirm. Please go ahead with this payment." (no reply recorded in these turns)'
    ]
    assert section(text, "Relevant Files") == []
    assert "$305" in " ".join(section(text, "Critical Context"))


def test_deterministic_bytes(tau_sessions: list[list[Message]]) -> None:
    middle = codex_messages(CODEX)[2:-4]
    first = summarize(middle, TokenCounter(), focus="cargo").text
    again = summarize(copy.deepcopy(middle), TokenCounter(), focus="cargo").text
    assert first.encode() == again.encode()
    tau = tau_sessions[3][1:-4]
    assert summarize(tau, TokenCounter()).text == summarize(copy.deepcopy(tau), TokenCounter()).text


def test_codex_session(counter: TokenCounter) -> None:
    middle = codex_messages(CODEX)[2:-4]
    result = summarize(middle, counter, last_timestamp="2026-04-20T10:21:59.000Z")
    text = result.text
    assert_well_formed(text, counter, 2000)
    assert_keeps_paths_and_commands(middle, text, counter, 2000)
    blocked = " ".join(section(text, "Blocked"))
    assert "exit 101, error: failed to load manifest for workspace member" in blocked
    actions = "\n".join(section(text, "Completed Actions"))
    assert (
        "26. Ran `cargo test -p cfo_oracle` — exit 101, error: failed to load manifest for "
        "workspace member `/Users/anmolbhardwaj/Documents/New project/apps/process_tui` "
        "[tool: exec_command]"
    ) in actions
    roomy = summarize(middle, counter, budget=4000).text
    assert (
        "13. Ran `git -C /Users/anmolbhardwaj/Documents/'New project' log --oneline -20` — exit "
        "128, fatal: your current branch 'main' does not have any commits yet [tool: exec_command]"
    ) in section(roomy, "Completed Actions")
    # Started in one call, finished in a later poll of its exec session.
    assert "Ran `find /Users/anmolbhardwaj -maxdepth 5 -name .git -type d` — exit 0" in actions
    in_progress = " ".join(section(text, "Historical In-Progress State"))
    assert "still running" in in_progress and "rsync -a" in in_progress
    files = section(text, "Relevant Files")
    assert "- /Users/anmolbhardwaj/Documents/New project/README.md — read" in files
    # `rg --files … -g 'package.json'` read no package.json.
    assert not [line for line in files if line.startswith(("- package.json", "- Anchor.toml"))]
    assert section(text, "Goal")[0] == (
        '- The user first asked: "help me apply for the agentic engineering grant by Superteam"'
    )
    assert section(text, "Active State")[0] == "- Working directory: /Users/anmolbhardwaj"


CODEX_ASK = "help me apply for the agentic engineering grant by Superteam"


def test_a_record_whose_turns_hold_no_ask_names_the_ask_kept_before_it(
    counter: TokenCounter,
) -> None:
    # The first three messages: the sandbox rules, the client's context and the ask.
    head, middle = CODEX_MESSAGES[:3], CODEX_MESSAGES[3:20]
    assert [user_words(msg) for msg in head] == [None, None, CODEX_ASK]
    assert not any(user_words(msg) for msg in middle)
    request = SummaryRequest(middle=middle, head=head, budget_tokens=2000)
    text = OfflineSummarizer().summarize(request, counter=counter).text
    assert section(text, "Goal") == [
        f'- The user first asked, in the turns kept before this record: "{CODEX_ASK}"'
    ]
    # What the client adds to a user turn is no ask: with only that kept, none.
    request = SummaryRequest(middle=middle, head=head[:2], budget_tokens=2000)
    text = OfflineSummarizer().summarize(request, counter=counter).text
    assert section(text, "Goal") == []
    # An ask in the turns is the goal, as before.
    text = summarize(CODEX_MESSAGES[2:20], counter).text
    assert section(text, "Goal") == [f'- The user first asked: "{CODEX_ASK}"']


PI_LARGE = SHARED / "pi-agent" / "pi-mono__test__fixtures__large-session.jsonl"
PI_STUB = FIXTURES / "pi" / "pi-0.73.1__stub-tally.jsonl"
PI_TASK = (
    "Task: build a tally of the numbers 1 to 300 in tally.txt. Constraint: keep every file"
    " inside this directory and never delete anything. Start by printing the numbers."
)


THEN_ASKED = "- The user's first ask is kept before this record; in these turns, they then asked: "


def test_a_first_ask_after_the_one_kept_before_the_record_is_a_follow_up(
    counter: TokenCounter,
) -> None:
    # The real session opens with the client command "/mode", then the task.
    messages = formats.read(PI_LARGE.read_bytes(), path=PI_LARGE.name).sessions[0].messages
    head, middle = messages[:3], messages[3:80]
    assert m.text(head[0]) == "/mode" and user_words(head[0]) is None
    assert user_words(head[2]) is not None
    request = SummaryRequest(middle=middle, head=head, budget_tokens=3000)
    goal = section(OfflineSummarizer().summarize(request, counter=counter).text, "Goal")
    assert goal[0].startswith(THEN_ASKED)
    assert not any(line.startswith("- The user first asked") for line in goal)
    # With only the client command kept before it, the first ask is the task.
    request = SummaryRequest(middle=middle, head=head[:2], budget_tokens=3000)
    goal = section(OfflineSummarizer().summarize(request, counter=counter).text, "Goal")
    assert goal[0].startswith('- The user first asked: "')
    # With no ask in the turns, the one kept before them is named, not the command.
    request = SummaryRequest(middle=middle[:1], head=head, budget_tokens=3000)
    goal = section(OfflineSummarizer().summarize(request, counter=counter).text, "Goal")
    assert goal == [
        '- The user first asked, in the turns kept before this record: "read packages/'
        "coding-agent/docs/theme.md in full, then theme.ts, and then oauth-selector or any of"
        " the other selectors. we still need to port over user-message-selector.ts based on"
        ' the patterns you find in the other files"'
    ]


def test_the_cli_record_points_back_to_the_task_kept_before_it(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    args = ["compress", "--offline", "--force", str(PI_STUB), "-o", str(out)]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    messages = formats.read(out.read_bytes(), path=out.name).sessions[0].messages
    (record,) = summaries(messages)
    assert section(m.text(record), "Goal") == [
        f'{THEN_ASKED}"Now write them to tally.txt, one per line."'
    ]
    # The task itself is before the record, word for word.
    assert [user_words(msg) for msg in messages].index(PI_TASK) < messages.index(record)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("/mode", None),
        ("  /model:list \n", None),
        ("/tmp/out.log is empty", "/tmp/out.log is empty"),
        ("/etc/hosts", "/etc/hosts"),
        ("/plan add a login page", "/plan add a login page"),
    ],
)
def test_a_bare_slash_command_is_not_the_users_words(text: str, words: str | None) -> None:
    assert user_words({"role": "user", "content": text}) == words


def test_the_cli_record_names_the_ask_kept_before_it(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    done = CliRunner().invoke(app, ["compress", "--offline", "--force", str(CODEX), "-o", str(out)])
    assert done.exit_code == 0, done.output
    messages = formats.read(out.read_bytes(), path=out.name).sessions[0].messages
    (record,) = summaries(messages)
    assert (
        f'## Goal\n- The user first asked, in the turns kept before this record: "{CODEX_ASK}"'
        in m.text(record)
    )
    # The ask itself is still there, word for word, before the record.
    assert [user_words(msg) for msg in messages].index(CODEX_ASK) < messages.index(record)


def test_claude_code_session(counter: TokenCounter) -> None:
    middle = claude_messages(HAIKU)[1:-4]
    budget = Budget().summary_budget(counter.messages(middle))
    text = summarize(middle, counter, budget=budget).text
    assert_well_formed(text, counter, budget)
    assert_keeps_paths_and_commands(middle, text, counter, budget - counter.text(text))
    actions = section(text, "Completed Actions")
    assert (
        "3. Created /app/testgen_tests.py — failed, EACCES: permission denied, mkdir '/app' "
        "[tool: Write]"
    ) in actions
    assert (
        "7. Edited /tmp/regex-log-test/app/testgen_tests.py (4 times) — ok [tool: Edit]" in actions
    )
    assert any(
        a.startswith(
            "13. Ran `python -m pytest testgen_tests.py -v --tb=no` — exit 1, 2 failed, 80 passed"
        )
        for a in actions
    )
    assert (
        "2. Ran `python3 << 'EXPAND_EOF'` (a 50-line script) — ok, printed 25 lines, the last"
        ' "test case 24: multiple_dates_no_ipv4_no_match -> 2021-01-15…" [tool: Bash]'
    ) in actions
    state = section(text, "Active State")
    assert state[0] == (
        "- Last test run: `python -m pytest testgen_tests.py -v --tb=no | tail -5` — 83 passed (ok)"
    )
    files = section(text, "Relevant Files")
    assert "- /tmp/regex-log-test/app/regex.txt — created, edited, read" in files
    assert "- /app/testgen_tests.py — create failed" in files
    # The failed Write to /app was redone under /tmp: nothing is blocked.
    assert section(text, "Blocked") == []


def test_small_opus_session_and_empty_middle(counter: TokenCounter) -> None:
    middle = claude_messages(OPUS)[1:-1]
    text = summarize(middle, counter).text
    assert_well_formed(text, counter, 2000)
    assert_keeps_paths_and_commands(middle, text, counter, 2000)
    assert "1. Read /tmp/raw_instruction.txt — ok [tool: Read]" in section(
        text, "Completed Actions"
    )
    empty = summarize([], counter, last_timestamp="2026-04-21T00:00:00Z").text
    assert_well_formed(empty, counter, 2000)
    assert section(empty, "Historical Task Snapshot") == [
        "- As of 2026-04-21, these turns held no user request or tool action."
    ]


def test_tight_budgets_truncate_with_more_lines(counter: TokenCounter) -> None:
    middle = codex_messages(CODEX)[2:-4]
    for budget in (400, 700, 1200):
        result = summarize(middle, counter, budget=budget)
        assert_well_formed(result.text, counter, budget)
        assert "(+" in result.text and result.warnings == []
    tiny = summarize(middle, counter, budget=40)
    assert tiny.text == render({}) and tiny.warnings


def test_focus_spends_the_budget_on_the_topic(counter: TokenCounter) -> None:
    middle = codex_messages(CODEX)[2:-4]
    plain = summarize(middle, counter, budget=700).text
    focused = summarize(middle, counter, budget=700, focus="cargo").text
    assert_well_formed(focused, counter, 700)

    def cargo_lines(text: str) -> int:
        return sum(1 for line in text.splitlines() if "cargo" in line.lower())

    assert cargo_lines(focused) > cargo_lines(plain)
    assert "- This record concentrates on: cargo." in section(focused, "Historical Task Snapshot")


def test_secrets_are_masked(counter: TokenCounter) -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    middle = codex_messages(CODEX)[2:30]
    middle = [*middle, {"role": "user", "content": f"Use token {secret} and never push to main."}]
    text = summarize(middle, counter).text
    assert secret not in text
    assert "[REDACTED:github-token]" in text


def test_day_of() -> None:
    assert day_of("2026-04-21T13:47:21.766Z") == "2026-04-21"
    assert day_of(None) is None and day_of("yesterday") is None


# ---- updates ---------------------------------------------------------------


def numbers(text: str) -> list[int]:
    return [n for n in map(item_number, section(text, "Completed Actions")) if n is not None]


def test_update_continues_numbering_without_duplicates(counter: TokenCounter) -> None:
    messages = codex_messages(CODEX)
    ask = next(i for i, m in enumerate(messages) if m.get("content") == "do that for kosh ai")
    part_a, part_b = messages[2 : ask + 1], messages[ask + 1 : -4]
    first = summarize(part_a, counter).text
    assert '- "do that for kosh ai" (no reply recorded in these turns)' in section(
        first, "Historical Pending User Asks"
    )
    updated = summarize(part_b, counter, previous_summary=first).text
    assert_well_formed(updated, counter, 2000)
    assert_keeps_paths_and_commands(part_b, updated, counter, 2000)
    before, after = numbers(first), numbers(updated)
    assert len(after) == len(set(after)) and after == sorted(after)
    assert min(n for n in after if n > max(before)) == max(before) + 1
    new_lines = [
        line
        for line in section(updated, "Completed Actions")
        if (item_number(line) or 0) > max(before)
    ]
    assert any("-iname '*kosh*'" in line for line in new_lines)
    # The assistant answered after the pending ask: it is no longer pending, and
    # the snapshot still names it since the new turns hold no newer request.
    assert section(updated, "Historical Pending User Asks") == []
    snapshot = section(updated, "Historical Task Snapshot")
    assert "do that for kosh ai" in snapshot[0]
    # Completed Actions goes on from A's list: the count is of A's 29 and B's 3.
    # The last of A's is the build the user aborted: no failure.
    [earlier] = [
        line for line in section(first, "Historical Task Snapshot") if "were recorded" in line
    ]
    assert earlier.startswith("- 29 tool actions were recorded (3 failed); the last: ")
    assert earlier.endswith("— aborted [tool: exec_command]")
    assert [line for line in snapshot if "tool actions were recorded" in line] == [
        "- 32 tool actions were recorded (3 failed); the last: Ran `test -f "
        "/Users/anmolbhardwaj/.superstack/.telemetry-prompted && echo yes || echo no` — exit 0, "
        'printed "yes" [tool: exec_command]'
    ]
    # Still running when A ended and never finished in B: it stays in progress.
    assert "rsync -a" in " ".join(section(updated, "Historical In-Progress State"))
    again = summarize(part_b, counter, previous_summary=first).text
    assert again == updated


def _progress(text: str) -> tuple[int, int]:
    """(actions recorded, failed) as the record's snapshot states them."""
    found = [PROGRESS_RE.match(line) for line in section(text, "Historical Task Snapshot")]
    [(recorded, failed)] = [(m.group(1), m.group(2)) for m in found if m]
    return int(recorded), int(failed)


def test_an_update_counts_every_rounds_actions_even_under_a_new_request(
    counter: TokenCounter,
) -> None:
    messages = codex_messages(CODEX)
    ask = next(i for i, m in enumerate(messages) if m.get("content") == "do that for kosh ai")
    # B opens with a new request, so the snapshot is B's; its count still runs on from A's.
    part_a, part_b = messages[2:ask], messages[ask:-4]
    first = summarize(part_a, counter).text
    alone = summarize(part_b, counter).text
    updated = summarize(part_b, counter, previous_summary=first).text
    assert '"do that for kosh ai"' in section(updated, "Historical Task Snapshot")[0]
    (a, a_failed), (b, b_failed) = _progress(first), _progress(alone)
    assert a and b
    assert _progress(updated) == (a + b, a_failed + b_failed)
    assert max(numbers(updated)) >= max(numbers(first))


def test_update_moves_finished_work_out_of_in_progress(counter: TokenCounter) -> None:
    messages = claude_messages(HAIKU)
    run = "python -m pytest testgen_tests.py -v --tb=no"
    cut = next(i for i, m in enumerate(messages) if run in json.dumps(m.get("tool_calls")))
    # A ends on that call; its result was never recorded.
    part_a, part_b = messages[1 : cut + 1], messages[cut + 2 : -4]
    first = summarize(part_a, counter).text
    pending = f"- Ran `{run}` — no result recorded [tool: Bash]"
    assert pending in section(first, "Historical In-Progress State")
    updated = summarize(part_b, counter, previous_summary=first).text
    assert_well_formed(updated, counter, 2000)
    assert pending not in section(updated, "Historical In-Progress State")
    # What A's turns showed of the state, B's show anew: none of it is history.
    assert section(first, "Active State")
    assert not any(
        line.startswith("- Earlier state:")
        for line in section(updated, "Historical In-Progress State")
    )
    assert any(
        f"Ran `{run} | tail -5` — 83 passed" in line
        for line in section(updated, "Completed Actions")
    )


def test_update_drops_failures_a_later_run_fixed(counter: TokenCounter) -> None:
    messages = claude_messages(HAIKU)
    cut = next(
        i
        for i, m in enumerate(messages)
        if m.get("role") == "tool"
        and "test_integration_multiple_valid_dates_with_ipv4" in str(m["content"])
        and m.get("is_error")
    )
    part_a, part_b = messages[1 : cut + 1], messages[cut + 1 : -4]
    first = summarize(part_a, counter).text
    assert "pytest" in " ".join(section(first, "Blocked"))
    updated = summarize(part_b, counter, previous_summary=first).text
    assert_well_formed(updated, counter, 2000)
    assert section(updated, "Blocked") == []
    notes = [i for i in section(updated, "Historical In-Progress State") if "last message" in i]
    assert notes == [
        "- The assistant's last message in these turns said:"
        ' "Perfect! All 83 tests are passing." (action 27 followed)'
    ]
    assert max(numbers(updated)) == max(numbers(first)) + len(
        [a for a in section(summarize(part_b, counter).text, "Completed Actions")]
    )
    files = section(updated, "Relevant Files")
    assert "- /tmp/regex-log-test/app/regex.txt — created, edited, read" in files


def test_update_from_a_foreign_summary_keeps_its_text(counter: TokenCounter) -> None:
    foreign = (
        "This session is being continued from a previous conversation that ran out of context.\n"
        "The user wants a regex for dates on lines with IPv4 addresses; see /app/regex.txt."
    )
    middle = claude_messages(OPUS)[1:-1]
    text = summarize(middle, counter, previous_summary=foreign).text
    assert_well_formed(text, counter, 2000)
    assert "/app/regex.txt" in " ".join(section(text, "Critical Context"))
    assert numbers(text)[0] == 1


def test_an_update_keeps_an_earlier_account_of_the_state_as_history(
    counter: TokenCounter,
) -> None:
    """Another agent's (or a model's) words on where things stood stay, as of
    then, once newer turns have a state of their own; a line naming what a
    new action finished goes."""
    foreign = (
        "[CONTEXT SUMMARY]\n## Goal\n- Write a regex for dates on lines with IPv4 addresses\n\n"
        "## Current State\n- The regex passes 12 of 13 cases; the leap-day case fails\n"
        "- Read /tmp/raw_instruction.txt — in progress\n"
    )
    middle = claude_messages(OPUS)[1:-1]
    alone = summarize(middle, counter).text
    # As the pipeline hands it over: in our template.
    merged = to_template(foreign)
    assert merged is not None
    text = summarize(middle, counter, previous_summary=merged.text).text
    assert_well_formed(text, counter, 2000)
    assert section(text, "Active State") == section(alone, "Active State") != []
    assert "- Earlier state: The regex passes 12 of 13 cases; the leap-day case fails" in section(
        text, "Historical In-Progress State"
    )
    assert "raw_instruction.txt" not in " ".join(section(text, "Historical In-Progress State"))


def test_an_earlier_account_in_the_other_agents_voice_stays_attributed(
    counter: TokenCounter,
) -> None:
    """Another agent's "I" in its account of the state is quoted as its
    words, and stays so once that account is history."""
    foreign = (
        "[CONTEXT SUMMARY]\n## Goal\n- Write a regex for dates on lines with IPv4 addresses\n\n"
        "## Current State\n- I was making the regex pass its last case. The steps were:\n"
        "- Widened the day range to 29 for February\n"
    )
    merged = to_template(foreign)
    assert merged is not None
    text = summarize(claude_messages(OPUS)[1:-1], counter, previous_summary=merged.text).text
    assert section(text, "Historical In-Progress State")[1:] == [
        '- Earlier state: "I was making the regex pass its last case. The steps were:"'
        " (the earlier summary's words)",
        "- Earlier state: Widened the day range to 29 for February",
    ]


def test_every_state_line_a_record_writes_is_one_an_update_replaces(
    counter: TokenCounter,
) -> None:
    records = [
        summarize(claude_messages(HAIKU)[1:-4], counter).text,
        summarize(codex_messages(CODEX)[2:-4], counter).text,
    ]
    lines = [line for text in records for line in section(text, "Active State")]
    kinds = {line.split(":", 1)[0] for line in lines}
    assert kinds == {
        "- Working directory",
        "- Last test run",
        "- Recent command",
        "- Last file changed",
    }
    assert all(TRACKED_STATE_RE.match(line) for line in lines)


@settings(max_examples=30, deadline=None)
@given(
    start=st.integers(min_value=0, max_value=80),
    length=st.integers(min_value=0, max_value=60),
    budget=st.integers(min_value=150, max_value=3000),
    focus=st.sampled_from([None, "cargo", "README", "grant"]),
)
def test_any_slice_and_budget_fits(start: int, length: int, budget: int, focus: str | None) -> None:
    counter = TokenCounter()
    middle = CODEX_MESSAGES[start : start + length]
    result = summarize(middle, counter, budget=budget, focus=focus)
    headings = re.findall(r"^## (.+)$", result.text, flags=re.MULTILINE)
    assert headings in (list(HEADINGS), [*HEADINGS, LEDGER_HEADING])
    assert counter.text(result.text) <= budget or result.warnings
    assert summarize(middle, counter, budget=budget, focus=focus).text == result.text


def _action_keys(lines: list[str]) -> list[str]:
    """Each listed action without its number, marker or run count."""
    return [re.sub(r" \(\d+ times\)", "", item_key(x)) for x in lines if item_number(x)]


def test_an_action_a_later_one_repeats_gives_way_to_older_work(counter: TokenCounter) -> None:
    """The real pi session ends in a loop: edit dark.json, `npm run build`, over
    and over (34 builds, one failed). Where Completed Actions has room for a few dozen of its 318
    actions, each step of the loop shows once, at its latest run, and the room
    goes to older, different work."""
    messages = formats.read(PI_LARGE.read_bytes(), path=PI_LARGE.name).sessions[0].messages
    middle = messages[3:-20]
    build = "Ran `cd packages/coding-agent && npm run build 2>&1 | tail -3` — ok [tool: bash]"
    every = section(summarize(middle, counter, budget=200_000).text, "Completed Actions")
    builds = [item_number(x) for x in every if x.endswith(build)]
    assert len(every) == 318 and len(builds) == 33  # and one that failed
    shown = section(summarize(middle, counter, budget=6000).text, "Completed Actions")
    keys = _action_keys(shown)
    assert len(keys) == len(set(keys)) >= 35
    assert [item_number(x) for x in shown if x.endswith(build)] == builds[-1:]
    numbers = [item_number(x) for x in shown if item_number(x)]
    assert numbers == sorted(numbers)


WORDS = ("main", "prod", "the lockfile", "vendor/", "the CI config", "secrets")


def quote_words(n: int) -> str:
    return " ".join(f"part{k}" for k in range(n))


def test_the_room_left_goes_round_in_small_rounds(counter: TokenCounter) -> None:
    """Once each section has its share, a section's many long items do not
    crowd out the next item of a section before it."""
    long_ask = "- The latest user request was: " + quote_words(50)
    candidates = {
        "Historical Task Snapshot": [
            Item(long_ask),
            Item("- 40 tool actions were recorded (3 failed)"),
        ],
        "Constraints & Preferences": [Item(f'- The user said: "never touch {w}"') for w in WORDS],
        "Completed Actions": [
            Item(f"{n}. Ran `make build TARGET={n} {quote_words(20)}` — ok [tool: bash]", order=n)
            for n in range(40, 0, -1)
        ],
    }
    text = fit(candidates, budget=600, counter=counter).text
    sections = parse(text)
    assert sections["Historical Task Snapshot"] == [
        x.text for x in candidates["Historical Task Snapshot"]
    ]
    assert sections["Constraints & Preferences"] == [
        x.text for x in candidates["Constraints & Preferences"]
    ]
    assert 0 < len(_action_keys(sections["Completed Actions"])) < 40


def test_a_fitted_summary_grows_into_more_room_and_keeps_what_it_held(
    counter: TokenCounter,
) -> None:
    """Given room a fit did not have, the items it left out go round it, the
    cheapest that fit; every item it held stays, and the text takes at most
    that much more."""
    candidates = {
        heading: [Item(f"- {heading} holds one short item")]
        for heading in HEADINGS
        if heading != "Completed Actions"
    }
    candidates["Completed Actions"] = [
        Item(f"{n}. Ran `make build TARGET={n} {quote_words(n % 7)}` — ok [tool: bash]", order=n)
        for n in range(60, 0, -1)
    ]
    made = fit(candidates, budget=900, counter=counter)
    before = parse(made.text)
    grown = made.grown(120)
    after = parse(grown)
    assert counter.text(made.text) < counter.text(grown) <= counter.text(made.text) + 120
    for heading in HEADINGS:
        assert set(before[heading]) <= set(after[heading])
    shown = set(_action_keys(after["Completed Actions"]))
    left = [x for x in candidates["Completed Actions"] if item_key(x.text) not in shown]
    assert len(left) < 60 - len(_action_keys(before["Completed Actions"]))
    assert counter.text(made.text) + 120 - counter.text(grown) < min(
        counter.text(x.text) + 1 for x in left
    )


def test_a_call_no_result_answered_before_later_work_is_not_in_progress(
    counter: TokenCounter,
) -> None:
    """The real pi session's message 30 makes 16 edits of tui-renderer.ts that
    no result answers: the user stopped them ("i undid your changes") and the
    work went on. They never ran, so they are not in progress; where the turns
    end on them, they are."""
    messages = formats.read(PI_LARGE.read_bytes(), path=PI_LARGE.name).sessions[0].messages
    answered = {x["tool_call_id"] for x in messages if m.role(x) == "tool"}
    assert [m.call_id(c) in answered for c in m.tool_calls(messages[30])] == [False] * 16
    stopped = (
        "- Edited packages/coding-agent/src/tui/tui-renderer.ts (16 times) — no result recorded"
    )
    went_on = section(
        summarize(messages[3:120], counter, 4000).text, "Historical In-Progress State"
    )
    assert not [line for line in went_on if "no result recorded" in line]
    ends = section(summarize(messages[3:31], counter, 4000).text, "Historical In-Progress State")
    assert ends[0] == f"{stopped} [tool: edit]"


@pytest.mark.parametrize(
    ("before", "ask", "quoted"),
    [
        # The real pi-mono session's last ask.
        (
            "Hooks don't have the same aliases. Custom tools loader has: jiti aliases."
            " Should I add the same aliases to hooks loader for consistency?",
            "yes",
            '"yes" (answering "Should I add the same aliases to hooks loader for consistency?")',
        ),
        # The last question before it is the one it answers.
        (
            "Done. Want me to run the tests too? Or commit first?",
            "ok, commit",
            '"ok, commit" (answering "Or commit first?")',
        ),
        # A longer ask says what it wants itself.
        (
            "Should I keep the old flag?",
            "no, drop the old flag and update the README to match",
            '"no, drop the old flag and update the README to match"',
        ),
        # No question before it: nothing to answer.
        ("I renamed the flag.", "ok", '"ok"'),
    ],
)
def test_a_short_ask_is_quoted_with_the_question_it_answers(
    before: str, ask: str, quoted: str, counter: TokenCounter
) -> None:
    middle: list[Message] = [
        {"role": "user", "content": "rename the --fast flag"},
        {"role": "assistant", "content": before},
        {"role": "user", "content": ask},
    ]
    text = summarize(middle, counter).text
    pending = section(text, "Historical Pending User Asks")
    assert pending[0] == f"- {quoted} (no reply recorded in these turns)"
    assert section(text, "Historical Task Snapshot")[0].endswith(
        f"the latest user request in these turns was: {quoted}"
    )
