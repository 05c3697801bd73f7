"""Another agent's summary merged into our template, section by section."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxpack import formats, markers
from ctxpack.cli import app
from ctxpack.formats.base import ReadOptions
from ctxpack.summarize.foreign import to_template
from ctxpack.summarize.ledger import previous_entries
from ctxpack.summarize.protocol import HEADINGS
from ctxpack.summarize.template import left_out, parse, render
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message
from tests.conftest import FIXTURES, SHARED
from tests.test_offline import section, summarize

STREAM = (
    FIXTURES
    / "claude-stream-json"
    / "openagents__logs__20251222_175115-call-issue-ready-now-to.jsonl"
)

# pi's compaction of the real pi-mono session (trimmed): headings of its own,
# and a second part for the turn the cut fell in, after a thematic break.
PI_SUMMARY = """# Context Checkpoint: Documentation Review & Update

## Current Progress

Reviewing the documentation against the source.

## Remaining Work

1. **rpc.md**
   - Check commands, events, types match implementation

## Key Patterns Established

- Run `npm run check` after changes

## User Preferences

- Verify docs against source code, don't assume docs are correct
- Be precise about types and behavior

---

**Turn Context (split turn):**

## Context Checkpoint Summary

### Original Request
User asked to review `custom-tools.md` and establish what custom tools are good for.

### Work Completed
1. **Added intro section to custom-tools.md**

### Current State
- `npm run check` passes successfully
"""
PI_OLD = SHARED / "pi-agent" / "pi-mono__session.jsonl"
GEMINI = SHARED / "gemini" / "gemini-cli__ntm-agentteamscli__trajectory.json"

# Gemini CLI's compression writes its summary as a user turn holding a
# <state_snapshot> (trimmed from the real Gemini session; a step of its plan
# may hold "<-- CURRENT FOCUS", which is no XML).
SNAPSHOT = """<state_snapshot>
    <overall_goal>
        Implement a comprehensive "Agent Teams" feature in Gemini CLI.
    </overall_goal>

    <active_constraints>
        <constraint>Maintain Apache-2.0 license headers.</constraint>
        <constraint>Active team selection MUST persist in workspace settings.</constraint>
    </active_constraints>

    <key_knowledge>
        <knowledge>
            Team Isolation: Only agents of the active team are promoted.
        </knowledge>
    </key_knowledge>

    <file_system_state>
        <cwd>/Users/dev/gemini-cli2</cwd>
        <created>packages/cli/src/ui/commands/teamCommand.ts - /team management.</created>
        <modified>packages/core/src/utils/events.ts - added ActiveTeamChanged event.</modified>
    </file_system_state>

    <recent_actions>
        <action>Added persistence for team selection in workspace settings.</action>
    </recent_actions>

    <task_state>
        <step status="DONE">Implement core team discovery and registry (TASK-01).</step>
        <step status="IN PROGRESS">Commit finalized UI changes. <-- CURRENT FOCUS</step>
        <step status="TODO">Finalize documentation.</step>
    </task_state>
</state_snapshot>"""
# The older snapshot's plan: one line per step, its status in brackets.
OLDER_PLAN = """<state_snapshot>
    <overall_goal>Refactor the auth service to the new JWT library.</overall_goal>
    <key_knowledge>
        - Build command: `npm run build`
        <!-- the agent's notes -->
    </key_knowledge>
    <current_plan>
        1. [DONE] Identify the files that use the old library.
        2. [IN PROGRESS] Refactor `src/auth.ts`.
        3. [TODO] Update the tests.
    </current_plan>
</state_snapshot>"""

CLAUDE = """This session is being continued from a previous conversation that ran out \
of context. The conversation is summarized below:
Analysis:
1. **Initial Request**: the user asked for a parser.

Summary:
1. Primary Request and Intent:
   - Write a log parser for the access logs
   - Keep it in the standard library only
2. Key Technical Concepts:
   - Python regular expressions
3. Files and Code Sections:
   - **parser.py**:
     - Added `parse_line()`:
       ```python
       def parse_line(line):
           return PATTERN.match(line)
       ```
4. Errors and fixes:
   - **Test failure**: the date group missed leap days
     - Fix: widened the day range
5. Problem Solving:
   Chose one regex over a tokenizer.
6. All user messages:
   - "Write a log parser"
7. Pending Tasks:
   - Add IPv6 support
8. Current Work:
   Running the parser tests after the leap-day fix.
9. Optional Next Step:
   Add the IPv6 cases to the tests.
Please continue the conversation from where we left it off without asking the user any \
further questions. Continue with the last task that you were asked to work on."""


def _section(text: str, heading: str) -> list[str]:
    return parse(text)[heading]


def test_claude_code_sections_map_onto_ours() -> None:
    merged = to_template(CLAUDE)
    assert merged is not None and merged.source == "Claude Code"
    # Left out: the opening line, the Analysis scratchpad (2), the closing line.
    assert (merged.merged_sections, merged.left_out_lines) == (9, 4)
    text = merged.text
    # What the user asked for is the goal; the rule they set is a constraint.
    assert _section(text, "Goal") == ["- Write a log parser for the access logs"]
    assert _section(text, "Constraints & Preferences") == ["- Keep it in the standard library only"]
    assert _section(text, "Relevant Files") == [
        "- **parser.py**:\n  - Added `parse_line()`:\n    ```python\n    def parse_line(line):\n"
        "        return PATTERN.match(line)\n    ```"
    ]
    # An error with its fix is a question the other agent resolved, as it told it.
    assert _section(text, "Resolved Questions") == [
        "- Earlier state: **Test failure**: the date group missed leap days\n"
        "  - Fix: widened the day range"
    ]
    assert _section(text, "Key Decisions") == ["- Chose one regex over a tokenizer."]
    assert _section(text, "Historical Remaining Work") == [
        "- Add IPv6 support",
        "- Add the IPv6 cases to the tests.",
    ]
    assert _section(text, "Active State") == [
        "- Earlier state: Running the parser tests after the leap-day fix."
    ]
    context = _section(text, "Critical Context")
    assert context[0].startswith("- This record merges Claude Code's own summary (")
    assert "4 line(s) of it (notes, instructions) are only in its full text" in context[0]
    assert context[1:] == ["- Python regular expressions"]
    # The user's words go to the user ledger, as entries an update carries on.
    assert previous_entries(text) == ["Write a log parser"]
    assert "Primary Request" not in text and "Please continue" not in text


@pytest.mark.parametrize(
    ("item", "heading"),
    [
        # A problem solved is work done.
        ("Fixed the leap-day bug in the date group", "Completed Actions"),
        ("Successfully implemented the access-log parser", "Completed Actions"),
        ("Handled the type errors in the tests", "Completed Actions"),
        # Troubleshooting still going on blocks.
        ("Currently resolving a rebase conflict with main", "Blocked"),
        ("IPv6 addresses still fail to parse", "Blocked"),
        # A choice is a decision.
        ("Chose one regex over a tokenizer.", "Key Decisions"),
    ],
)
def test_claude_codes_problem_solving_goes_by_what_each_item_says(item: str, heading: str) -> None:
    body = CLAUDE.replace("   Chose one regex over a tokenizer.", f"   - {item}")
    merged = to_template(body)
    assert merged is not None
    # What was done or blocked was so when Claude Code wrote: an earlier account.
    said = f"- {item}" if heading == "Key Decisions" else f"- Earlier state: {item}"
    assert _section(merged.text, heading)[0] == said
    others = {"Completed Actions", "Blocked", "Key Decisions"} - {heading}
    assert not [h for h in others if said in _section(merged.text, h)]


def test_free_form_handoff_headings_map_and_unknown_ones_keep_their_name() -> None:
    handoff = (
        "[CONTEXT COMPACTION] earlier turns were summarized\n\n"
        "The session built the release script.\n\n"
        "## Goal\n- Ship version 2.1\n\n"
        "## Next steps\n- Tag the release\n\n"
        "## Environment\n- Python 3.11 on the build host\n"
    )
    merged = to_template(handoff)
    assert merged is not None and merged.source == "another agent"
    assert _section(merged.text, "Historical Task Snapshot") == [
        "- earlier turns were summarized",
        "- The session built the release script.",
    ]
    assert _section(merged.text, "Goal") == ["- Ship version 2.1"]
    assert _section(merged.text, "Historical Remaining Work") == ["- Tag the release"]
    assert _section(merged.text, "Critical Context")[1:] == [
        "- Environment: Python 3.11 on the build host"
    ]


def test_headings_of_other_names_go_where_their_words_say() -> None:
    """pi names its sections in its own words; a thematic break between two
    parts of a summary is no item of the section above it."""
    merged = to_template(PI_SUMMARY)
    assert merged is not None
    assert _section(merged.text, "Constraints & Preferences") == [
        "- Verify docs against source code, don't assume docs are correct",
        "- Be precise about types and behavior",
    ]
    assert _section(merged.text, "Goal") == [
        "- User asked to review `custom-tools.md` and establish what custom tools are good for."
    ]
    # What pi reports done goes with what was done, not numbered as one of
    # the record's actions; each item of its account of the work reads as earlier.
    assert _section(merged.text, "Completed Actions") == [
        "- Earlier state: **Added intro section to custom-tools.md**"
    ]
    assert _section(merged.text, "Historical In-Progress State") == [
        "- Earlier state: Reviewing the documentation against the source."
    ]
    assert _section(merged.text, "Active State") == [
        "- Earlier state: `npm run check` passes successfully"
    ]
    assert _section(merged.text, "Historical Remaining Work") == [
        "- 1. **rpc.md**\n   - Check commands, events, types match implementation"
    ]
    # A heading none of whose words say where it goes keeps its name.
    assert _section(merged.text, "Critical Context")[1:] == [
        "- Key Patterns Established: Run `npm run check` after changes"
    ]


@pytest.mark.skipif(not PI_OLD.is_file(), reason=f"{SHARED} is absent")
def test_the_real_pi_session_keeps_the_users_preferences_as_constraints(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    args = ["compress", "--offline", "--force", "--no-archive", "--skip-invalid"]
    result = CliRunner().invoke(app, [*args, str(PI_OLD), "-o", str(out)])
    assert result.exit_code == 0, result.output
    messages = formats.read(out.read_bytes(), path=str(out), options=ReadOptions(skip_invalid=True))
    record = next(
        markers.summary_body(msg)
        for msg in messages.sessions[0].messages
        if markers.is_summary(msg)
    )
    assert _section(record, "Constraints & Preferences")[:4] == [
        "- Verify docs against source code, don't assume docs are correct",
        "- Be precise about types and behavior",
        "- Add concrete example lists (not just abstract descriptions)",
        "- Reference example directories where they exist",
    ]
    assert _section(record, "Goal")[0].startswith("- User asked to review `custom-tools.md`")
    assert not any(item.startswith("---") for item in _section(record, "Critical Context"))
    # pi's account of the work reads as earlier wherever it lands: where it
    # stood, after the record's own last word; what it did, with the actions,
    # before the record's own and numbered as none of them.
    assert _section(record, "Historical In-Progress State")[1:] == [
        "- Earlier state: Both `custom-tools.md` and README.md have been updated",
        "- Earlier state: `npm run check` passes successfully",
        "- Earlier state: The custom-tools.md now has a proper intro explaining use cases and"
        " when to use vs alternatives",
        "- Earlier state: Reviewing and updating pi-coding-agent documentation to ensure it"
        " matches the actual source code implementation.",
    ]
    actions = [item.split("\n")[0] for item in _section(record, "Completed Actions")]
    assert actions[0].startswith("- Earlier state: **system-prompt.ts** (")
    assert actions[-3].startswith("- Earlier state: **Verified accuracy**: ")
    assert [item[:3] for item in actions[-2:]] == ["1. ", "2. "]
    # What pi reports committed is done work, with the rest of it.
    committed = (
        '- Earlier state: All above changes committed with message: "Improve system prompt docs,'
        ' clean up theme/skills/hooks docs, fix toolResults type"'
    )
    assert committed in actions
    assert not [item for item in _section(record, "Critical Context") if "committed" in item]


def test_gemini_clis_snapshot_is_a_summary_merged_section_by_section() -> None:
    assert markers.is_summary({"role": "user", "content": SNAPSHOT})
    merged = to_template(SNAPSHOT)
    assert merged is not None and merged.source == "Gemini CLI"
    assert _section(merged.text, "Goal") == [
        '- Implement a comprehensive "Agent Teams" feature in Gemini CLI.'
    ]
    assert _section(merged.text, "Constraints & Preferences") == [
        "- Maintain Apache-2.0 license headers.",
        "- Active team selection MUST persist in workspace settings.",
    ]
    assert _section(merged.text, "Critical Context")[1:] == [
        "- Team Isolation: Only agents of the active team are promoted.",
        "- Working directory: /Users/dev/gemini-cli2",
    ]
    assert _section(merged.text, "Relevant Files") == [
        "- packages/cli/src/ui/commands/teamCommand.ts - /team management. (created)",
        "- packages/core/src/utils/events.ts - added ActiveTeamChanged event. (modified)",
    ]
    # Its recent actions and the steps of its plan it marked done are done
    # work; the step it was on is its state, without its stale focus mark.
    assert _section(merged.text, "Completed Actions") == [
        "- Earlier state: Added persistence for team selection in workspace settings.",
        "- Earlier state: Done: Implement core team discovery and registry (TASK-01).",
    ]
    assert _section(merged.text, "Historical In-Progress State") == []
    assert _section(merged.text, "Active State") == [
        "- Earlier state: In progress: Commit finalized UI changes."
    ]
    assert _section(merged.text, "Historical Remaining Work") == ["- Finalize documentation."]
    older = to_template(OLDER_PLAN)
    assert older is not None
    assert _section(older.text, "Critical Context")[1:] == ["- Build command: `npm run build`"]
    assert _section(older.text, "Completed Actions") == [
        "- Earlier state: Done: Identify the files that use the old library."
    ]
    assert _section(older.text, "Active State") == [
        "- Earlier state: In progress: Refactor `src/auth.ts`."
    ]
    assert _section(older.text, "Historical Remaining Work") == ["- Update the tests."]


@pytest.mark.skipif(not GEMINI.is_file(), reason=f"{SHARED} is absent")
def test_the_real_gemini_session_resumes_from_its_snapshot(tmp_path: Path) -> None:
    """The real Gemini CLI session opens with the snapshot of its own earlier
    compression: the record's goal is the snapshot's, its rules stay, and the
    one the user turned around since is shown turned around, as is the
    snapshot's state it undid."""
    out = tmp_path / "out.jsonl"
    args = ["compress", "--offline", "--force", "--no-archive", str(GEMINI), "-o", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    messages = formats.read(out.read_bytes(), path=str(out)).sessions[0].messages
    [record] = [markers.summary_body(msg) for msg in messages if markers.is_summary(msg)]
    assert _section(record, "Goal") == [
        '- Implement a comprehensive "Agent Teams" feature in Gemini CLI, encompassing'
        " multi-agent orchestration, specialized external agent polyfills, and a polished"
        " interactive team creation experience with full lifecycle management.",
        "- In the turns since the previous record, the user asked: \"agent teams shouldn't"
        ' persist, I want it to ask me every boot"',
    ]
    rules = _section(record, "Constraints & Preferences")
    # The snapshot's rules are held nowhere else in the record: the user's
    # newer ones, which the user ledger quotes word for word, yield them the room.
    assert rules[:3] == [
        "- Maintain Apache-2.0 license headers and established React/Ink patterns.",
        "- Use exact brand colors: Claude Orange (#C15F3C), Gemini Purple (#A855F7),"
        " Antigravity Light Blue (#93C5FD), Gemma Blue (#60A5FA), Codex White (#FFFFFF).",
        "- Standardize on the Gemini symbol (✦) for built-in/local agents.",
    ]
    assert (
        '- The user said: "agent teams shouldn\'t persist, I want it to ask me every boot"'
        ' (turns around the earlier rule "Active team selection MUST persist in workspace'
        ' settings (.gemini/settings.json…")'
    ) in rules
    assert not any(rule.startswith("- Active team selection MUST persist") for rule in rules)
    # The snapshot's account of the work reads as earlier wherever it lands:
    # the step it was on, without its stale focus mark, after the record's
    # own state; the persistence it reports done, which the user turned
    # around, as reversed. What else it did is done work, with the actions.
    state = _section(record, "Historical In-Progress State")
    assert state[1:] == [
        "- Earlier state: In progress: Commit finalized UI and functional changes.",
        "- Earlier, since reversed: Added persistence for team selection in workspace settings.",
    ]
    assert "CURRENT FOCUS" not in record
    actions = _section(record, "Completed Actions")
    assert not [item for item in actions if "Done: " in item and "Earlier state: " not in item]
    assert "merges Gemini CLI's own summary" in _section(record, "Critical Context")[0]
    # The snapshot's rules are no user directives among the preserved facts.
    assert "<constraint>" not in record


@pytest.mark.skipif(not GEMINI.is_file(), reason=f"{SHARED} is absent")
def test_the_real_gemini_sessions_file_note_of_the_reversed_work_is_reversed(
    tmp_path: Path,
) -> None:
    """The snapshot's note of the settings schema tells the persistence the
    user turned around: it added the active team to the settings, as the
    snapshot's state says it added persistence for team selection there. It
    never says "persist", and reads as reversed with that state; its note of
    another file added for the teams stands. The window holds every note."""
    out = tmp_path / "out.jsonl"
    args = ["compress", "--offline", "--force", "--no-archive", "--context-length", "400000"]
    result = CliRunner().invoke(app, [*args, str(GEMINI), "-o", str(out)])
    assert result.exit_code == 0, result.output
    messages = formats.read(out.read_bytes(), path=str(out)).sessions[0].messages
    [record] = [markers.summary_body(msg) for msg in messages if markers.is_summary(msg)]
    assert (
        "- Earlier, since reversed: Added persistence for team selection in workspace"
        " settings." in _section(record, "Historical In-Progress State")
    )
    assert _section(record, "Relevant Files")[-7:] == [
        "- `packages/core/src/services/modelConfigService.ts`: Added"
        " `unregisterRuntimeModelOverridesByScope` to ensure clean state when deactivating"
        " teams.",
        "- `packages/cli/src/ui/components/TeamCreatorWizard.tsx`: Implemented a 5-step wizard"
        " with standardized brand iconography, field validation, `Tab/Shift+Tab` field"
        " switching, dual-mode roster selection, and `Ctrl+X` external editor support.",
        "- `packages/cli/src/ui/commands/teamCommand.ts`: Created a new slash command for easy"
        " team selection and creation.",
        "- packages/cli/src/ui/commands/teamCommand.ts - /team management. (created)",
        "- packages/cli/src/ui/components/TeamCreatorWizard.tsx - Guided creation UI. (created)",
        "- Earlier, since reversed: packages/cli/src/config/settingsSchema.ts - added"
        " 'activeTeam' to general settings. (modified)",
        "- packages/core/src/utils/events.ts - added ActiveTeamChanged event. (modified)",
    ]


def test_our_own_record_is_left_as_it_is() -> None:
    ours = render({heading: [f"- {heading} item"] for heading in HEADINGS})
    assert to_template(ours) is None
    assert to_template("   ") is None


def test_the_real_stream_json_session_keeps_its_rules_as_constraints(tmp_path: Path) -> None:
    """The real Claude Code stream-json session holds Claude Code's own summary,
    whose request section lists the loop to run and the rules of it."""
    out = tmp_path / "out.jsonl"
    args = ["compress", "--offline", "--force", "--no-archive", str(STREAM), "-o", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    messages = formats.read(out.read_bytes(), path=str(out)).sessions[0].messages
    record = next(markers.summary_body(msg) for msg in messages if markers.is_summary(msg))
    assert _section(record, "Constraints & Preferences") == [
        "- Follow FULL AUTO MODE rules: never stop, never summarize progress, immediately call"
        " issue_ready after each completion",
        "- Always git push after each commit",
    ]
    assert _section(record, "Goal")[0] == (
        "- Start autonomous loop mode by calling issue_ready and continuously working on issues"
    )
    # Its facts all fit with room to spare, and the record grows into that
    # room: the earlier state's failed push and pull, cut for room before.
    state = _section(record, "Historical In-Progress State")
    assert "- Earlier state: Attempted `git push origin main` which was rejected" in state
    assert not [line for line in state if line.startswith("- (+")]
    # Its account in its own voice is labelled once, and quoted as its words.
    assert state[1] == (
        '- Earlier state: "Immediately before this summary request, I was attempting to push the'
        " completed work for issue #716 (CLI commands for aggregate metrics). The specific"
        " sequence was:\" (the earlier summary's words)"
    )
    # Its Problem Solving section: the problems solved are work done, shown
    # first among the actions as the earlier summary's; the rebase still
    # worked on blocks.
    assert _section(record, "Key Decisions") == []
    assert _section(record, "Blocked")[1:] == [
        "- Earlier state: Currently resolving git rebase conflict due to concurrent development"
    ]
    assert _section(record, "Completed Actions")[:5] == [
        "- Earlier state: Successfully implemented per-issue and per-directive metrics tracking"
        " (#714)",
        "- Earlier state: Fixed 4 out of 5 failing autopilot tests, reduced failures from 5 to 1"
        " (#715)",
        "- Earlier state: Implemented complete CLI interface for querying aggregate metrics (#716)",
        "- Earlier state: Navigated database schema migrations and in-memory testing challenges",
        "- Earlier state: Handled type system errors in Rust (borrowing, dereferencing)",
    ]
    # Its errors, each with its fix, are the questions it resolved, as it told them.
    resolved = _section(record, "Resolved Questions")
    assert [item.split("\n")[0] for item in resolved] == [
        "- Earlier state: **Compilation Error - Missing SessionMetrics fields**:",
        "- Earlier state: **Test Failure - Invalid public key in state encryption**:",
        "- Earlier state: **Test Failure - Tool_calls table not found**:",
        "- Earlier state: **Type Error - String vs &str**:",
        "- Earlier state: **Type Error - Cannot dereference i32**:",
    ]
    assert left_out(record)["Resolved Questions"] == 1
    # The earlier state is shown whole beside them.
    assert "Historical In-Progress State" not in left_out(record)
    # Claude Code's list of the user's messages ends with its own request to
    # summarize ("Summary request (current message)"), which is none of theirs.
    assert previous_entries(record) == [
        '"Call issue_ready NOW to get the first issue and begin working." with extensive'
        " FULL AUTO MODE context including active directives and critical autonomous loop"
        " instructions"
    ]


@pytest.mark.parametrize(
    ("item", "kept"),
    [
        # Claude Code's ways of listing the request that made it summarize.
        ("Summary request (current message)", False),
        ("Request for a detailed summary of the conversation", False),
        ("Asked for a summary of our conversation so far", False),
        # The user's own words, quoted, stay whatever they ask for.
        ('"Summarize this conversation for the PR description"', True),
        # Descriptions of steps of the task.
        ("Asked to summarize the test results in the README", True),
        ("Summarize the request handler's error paths", True),
        ("Add a --compact flag to the CLI", True),
    ],
)
def test_the_request_to_summarize_is_no_user_message(item: str, kept: bool) -> None:
    body = CLAUDE.replace('   - "Write a log parser"', f'   - "Write a log parser"\n   - {item}')
    merged = to_template(body)
    assert merged is not None
    expected = ["Write a log parser", item.strip('"')] if kept else ["Write a log parser"]
    assert previous_entries(merged.text) == expected


def test_the_other_agents_first_person_is_quoted_as_its_words() -> None:
    """A model resuming from the record would take the other agent's "I" for
    itself; the user's "I", in quotes, and a name in code are no such voice."""
    body = CLAUDE.replace(
        "   Running the parser tests after the leap-day fix.",
        "   I was running the parser tests after the leap-day fix.\n"
        '   - The user said "I need IPv6 too"\n'
        "   - Renamed `my_parser` to `parser`",
    )
    merged = to_template(body)
    assert merged is not None
    assert _section(merged.text, "Active State") == [
        '- Earlier state: "I was running the parser tests after the leap-day fix."'
        " (the earlier summary's words)",
        '- Earlier state: The user said "I need IPv6 too"',
        "- Earlier state: Renamed `my_parser` to `parser`",
    ]


# Claude Code's account of its current work: routine steps, then a rejected
# push and a failed pull.
CURRENT_WORK = """This session is being continued from a previous conversation that ran out \
of context. The conversation is summarized below:
Summary:
1. Primary Request and Intent:
   - Ship the release of the parser
8. Current Work:
   - Ran the full test suite of the parser package, every test passing on Python 3.11 and 3.12
   - Updated the changelog with the entries for the parser's new date handling and IPv6
   - Committed the release changes with the message "Release 2.1 of the access-log parser"
   - Attempted `git push origin main`, which was rejected: the remote has newer commits
   - Attempted `git pull --rebase origin main`, which failed on unstaged changes in notes.md
   - Checked git status to find the unstaged file in the working tree of the repository
"""


def test_the_earlier_states_failed_steps_are_cut_after_the_routine_ones(
    counter: TokenCounter,
) -> None:
    """When the room runs short, the rejected push and the failed pull stay
    (before, the routine steps did and the pull was cut); what is shown keeps
    the order the steps were taken in."""
    merged = to_template(CURRENT_WORK)
    assert merged is not None
    # A command run since gives the record a state of its own.
    call = {"name": "bash", "arguments": '{"command": "git status"}'}
    middle: list[Message] = [
        {"role": "user", "content": "Go on."},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": call}]},
        {"role": "tool", "tool_call_id": "c1", "content": "On branch main"},
        {"role": "assistant", "content": "Looking at the working tree."},
    ]
    text = summarize(middle, counter, budget=440, previous_summary=merged.text).text
    assert section(text, "Historical In-Progress State") == [
        '- The assistant\'s last message in these turns said: "Looking at the working tree."',
        "- Earlier state: Updated the changelog with the entries for the parser's new date"
        " handling and IPv6",
        "- Earlier state: Attempted `git push origin main`, which was rejected: the remote has"
        " newer commits",
        "- Earlier state: Attempted `git pull --rebase origin main`, which failed on unstaged"
        " changes in notes.md",
    ]
