"""What the user wrote against what they pasted: a terminal screen, a listing,
a table, a stack trace or a code block in a user message is carried in the
ledger with the rest of the message, but states no goal, constraint or fact
and changes no value."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxpack import formats, markers
from ctxpack import messages as m
from ctxpack.align.budget import Budget
from ctxpack.cli import app
from ctxpack.facts.match import collapse
from ctxpack.formats.base import ReadOptions
from ctxpack.pipeline.compaction import CompressSettings, compress_transcript
from ctxpack.summarize.ledger import LEDGER_HEADING, Ledger
from ctxpack.summarize.offline.actions import clip
from ctxpack.summarize.offline.said import MAX_ASK, ask_quote
from ctxpack.summarize.pasted import closing_words, pasted_line, prose, without_screens
from ctxpack.summarize.statements import classified
from ctxpack.summarize.template import parse
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Transcript
from tests.conftest import SHARED

GEMINI = SHARED / "gemini" / "gemini-cli__ntm-agentteamscli__trajectory.json"
PI_LARGE = SHARED / "pi-agent" / "pi-mono__test__fixtures__large-session.jsonl"
PI_OLD = SHARED / "pi-agent" / "pi-mono__session.jsonl"
# A section of pi's README the user pasted, and what they said of it.
CLI_PATTERN = """### CLI Tool Pattern

Pi relies on CLI tools invoked via bash rather than MCP. Create a tool with a README:

```bash
screenshot.sh
```

Usage: "Read ~/agent-tools/screenshot/README.md and take a screenshot"

--- from README.md, this is no longer needed. we should tell people about custom tools here."""
# Changelog lines of a diff, wrapped and padded to the terminal's width.
CHANGELOG = "\n".join(
    line.ljust(72)
    for line in [
        " + 15 - **Newline Handling**: `TruncatedText` now stops at the first",
        " newline and only displays the first line.",
        " + 16",
    ]
)


@pytest.mark.parametrize(
    "line",
    [
        "╭──────────────────────────────╮",
        "│ Step 2: Team Roster            Selected: 0 │",
        "├───src/",
        "└───package.json",
        "⠇ Working... (esc to interrupt)",
        "✔ Backed up original state in git stash (e17ec2d3d)",
        "➜  pi-mono git:(main) ✗ npx tsx packages/coding-agent/src/cli.ts -r",
        "| name | must | region |",
        "    at setTheme (packages/coding-agent/src/theme/theme.ts:88:11)",
        '  File "app/main.py", line 12, in <module>',
        "Traceback (most recent call last):",
        "-rw-r--r--  1 me  staff  120 Apr  6 10:01 README.md",
        "$ npm run check",
        "},",
        "main.py      must      never",
        # What Node prints after a crash's trace.
        "Node.js v23.4.0",
        "Waiting for the debugger to disconnect...",
    ],
)
def test_pasted_lines(line: str) -> None:
    assert pasted_line(line)


@pytest.mark.parametrize(
    "line",
    [
        "You must never push to main.",
        "- [ ] keep the API stable",
        "> as you said earlier, use Python 3.11",
        "So this:",
        "Budget cap is $500 total.",
        "Deploy to us-west-2 by 2026-11-15 (JUDGE-004).",
        "a | b",
        # A line of the user's may name an error; it is not pasted for that.
        "Error: the build fails on CI, never skip the tests.",
        "We must support Node.js v23.4.0 and later.",
    ],
)
def test_prose_lines(line: str) -> None:
    assert not pasted_line(line)


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # A pasted table row says "must": only the user's own line counts.
        ("Keep it short.\n\n| rule | must |\n|---|---|\n| push | never |", ["constraint"]),
        # The sentence that introduces the paste stays; the paste goes.
        ("It must not crash on this:\n╭────╮\n│ You should always X │\n╰────╯", ["constraint"]),
        # A code block's comment is code, whatever it says.
        ("```python\n# must always be sorted\nx = sorted(x)\n```\nWhat does this do?", []),
        # A crash log: paths and versions in it are no facts the user stated.
        (
            "it crashed\n\nTypeError: x is undefined\n    at load (src/theme.ts:12:3)\n"
            "    at main (src/cli.ts:40:1)",
            [],
        ),
        # A listing that names a goal word is not a goal.
        ("├───goal.md\n├───phase-3-of-6.md\n└───status.txt", []),
        # Prose with no paste is read as before.
        ("HARD CONSTRAINT: Do not push to main.\nWe are on phase 4 of 6.", ["constraint", "goal"]),
        # A screen copied off a terminal pads its lines with spaces to one
        # width: the tail of a wrapped line in it is no rule of the user's.
        (
            f"{CHANGELOG}\n\nremove that, it must only say that themes are not supported",
            ["constraint"],
        ),
        # So is one the user introduces, and their introduction stays.
        (f"You must keep this:\n{CHANGELOG}", ["constraint"]),
        # Two trailing spaces end a Markdown line: typed lines, however long.
        ("Never push to main.  \nAlways lint it all.  ", ["constraint", "constraint"]),
        # A document's section pasted before the user's words, a fenced block
        # in it (the pi session's, trimmed): its sentences are the document's.
        (CLI_PATTERN, []),
        # What comes before the section's heading is the user's.
        (
            "You must read this first:\n\n## Setup\n\nYou must run make.\n\n```\nmake\n```\n\n"
            "is that right?",
            ["constraint"],
        ),
        # Rules under a heading of the user's, nothing pasted by its form: theirs.
        (
            "## Constraints\n- Never touch prod.\n- Use Python 3.11.\n\nGo ahead.",
            ["constraint"] * 2,
        ),
    ],
)
def test_only_prose_is_classified(text: str, kinds: list[str]) -> None:
    assert [kind for kind, _ in classified(text)] == kinds


@pytest.mark.skipif(not PI_LARGE.exists(), reason=f"shared transcripts not found at {SHARED}")
def test_a_changelog_pasted_off_a_terminal_states_nothing() -> None:
    """In the large pi session the user pasted the changelog lines of a diff
    off their terminal, wrapped and padded to its width, and asked under it to
    remove them: no line of the paste is a rule or a fact of theirs."""
    messages = formats.read(PI_LARGE.read_bytes(), path=str(PI_LARGE)).sessions[0].messages
    said = [m.text(msg) for msg in messages if m.role(msg) == "user"]
    pasted = next(body for body in said if body.endswith("themes are not supported"))
    assert "\n newline and only displays the first line. " in pasted
    assert classified(pasted) == []


def test_a_paste_changes_no_value() -> None:
    """A later message's pasted trace names another path: the path the user
    gave stays current."""
    ledger = Ledger(
        [],
        [
            "The theme file is /repo/src/theme/theme.ts",
            "it crashed:\n\n    at load (/repo/src/cli.ts:12:3)\n    at x (/repo/src/a.ts:1:1)",
            "Use the config at /repo/conf/base.json, later /repo/conf/prod.json",
        ],
    )
    assert ledger.superseded() == {}
    moved = Ledger([], ["The theme is /repo/src/theme/theme.ts", "The theme is /repo/t.ts"])
    assert moved.superseded() == {"/repo/src/theme/theme.ts": "/repo/t.ts"}


def test_a_ledger_entry_of_one_line_drops_screen_sentences() -> None:
    """An earlier record's entry is one collapsed line: its box-drawn sentences
    are still not read."""
    line = "So this: Step 3: Team Objective │ │ Define what this team does. Should show markers."
    assert prose(line) == "Should show markers."


@pytest.mark.skipif(not GEMINI.exists(), reason=f"shared transcripts not found at {SHARED}")
def test_gemini_session_pasted_screens_are_ledger_not_goals(counter: TokenCounter) -> None:
    """The real Gemini CLI session at a 32,000-token window: the user pasted the
    team-creation dialog (box-drawn) twice and a build log once. The record's
    Goal and Constraints hold the user's own sentences only (after those of
    Gemini CLI's own snapshot, which the session opens with); the ledger
    carries each message, pastes included, their borders thinned: the second
    dialog's words fit whole."""
    original = formats.read(GEMINI.read_bytes(), path=str(GEMINI))
    settings = CompressSettings(budget=Budget(context_length=32_000), force=True)
    result, _ = compress_transcript(original, counter=counter, settings=settings)
    record = next(
        markers.summary_body(msg) for msg in result.sessions[0].messages if markers.is_summary(msg)
    )
    sections = parse(record)
    assert sections["Goal"] == [
        '- Implement a comprehensive "Agent Teams" feature in Gemini CLI, encompassing'
        " multi-agent orchestration, specialized external agent polyfills, and a polished"
        " interactive team creation experience with full lifecycle management.",
        "- In the turns since the previous record, the user asked: \"agent teams shouldn't"
        ' persist, I want it to ask me every boot"',
    ]
    assert sections["Constraints & Preferences"] == [
        "- Maintain Apache-2.0 license headers and established React/Ink patterns.",
        "- Use exact brand colors: Claude Orange (#C15F3C), Gemini Purple (#A855F7), Antigravity"
        " Light Blue (#93C5FD), Gemma Blue (#60A5FA), Codex White (#FFFFFF).",
        "- Standardize on the Gemini symbol (✦) for built-in/local agents.",
        "- Team agents MUST be stored in standalone .md files within an 'agents/' subdirectory"
        " of the team folder.",
        # The user's first rule turns one of the snapshot's around, and
        # stands in its place.
        '- The user said: "agent teams shouldn\'t persist, I want it to ask me every boot"'
        ' (turns around the earlier rule "Active team selection MUST persist in workspace'
        ' settings (.gemini/settings.json…")',
        '- Subagents curated into a team are trusted and should NOT trigger "Ask User"'
        " confirmation dialogues.",
        "- Step 1 navigation MUST support Tab/Shift+Tab for field switching; Step 2 MUST support"
        " Tab for mode toggling.",
        # The room ends here, before the user's "Please stop grouping build &
        # commit" (still in the ledger below).
        '- The user said: "Should show the markers next to the corresponding agent."',
    ]
    stated = [line for items in sections.values() for line in items if "The user " in line]
    assert not any("│" in line or "✔" in line for line in stated)
    ledger = sections[LEDGER_HEADING]
    pasted = [line for line in ledger if line.startswith('- "So this: Step 3: Team Objective │')]
    assert len(pasted) == 1 and "characters cut …]" not in pasted[0]
    assert "──" not in pasted[0] and "│ │" not in pasted[0]
    assert pasted[0].endswith('they know what provider backs it"')
    assert not any(line.startswith("- Current: ") for line in ledger)
    # An ask is quoted by the user's words around a pasted screen, not by the screen.
    request = (
        '"So this: [a pasted screen] Should show the markers next to the corresponding agent.'
        " That way if someone happens to make an indirect reference to one of the agents in the"
        ' description box they know what provider backs it"'
    )
    assert sections["Historical Task Snapshot"][0] == (
        f"- At compaction time, the latest user request in these turns was: {request}"
    )
    assert (
        f"- {request} (no reply recorded in these turns)"
        in sections["Historical Pending User Asks"]
    )


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        (
            "So this:\n╭────╮\n│ Step 3 │\n╰────╯\n\nShould show the markers.",
            "So this:\n[a pasted screen]\n\nShould show the markers.",
        ),
        # A pasted trace or table keeps its words: they are what the ask is about.
        (
            'fix this:\nTraceback (most recent call last):\n  File "a.py", line 1\nValueError: x',
            'fix this:\nTraceback (most recent call last):\n  File "a.py", line 1\nValueError: x',
        ),
        ("| a | b |\n| 1 | 2 |\nwhy 2?", "| a | b |\n| 1 | 2 |\nwhy 2?"),
    ],
)
def test_an_ask_is_quoted_without_the_screens_pasted_into_it(text: str, quoted: str) -> None:
    assert without_screens(text) == quoted


# The user of the real pi session pasted a section of the docs the agent had
# written, then asked about it (line 357 of the file, trimmed).
IMPORTS = """## Available Imports

Custom tools can import from these packages (automatically resolved by pi):

| Package | Purpose |
|---------|---------|
| `@sinclair/typebox` | Schema definitions (`Type.Object`, `Type.String`, etc.) |
| `@mariozechner/pi-coding-agent` | Types (`CustomToolFactory`, `ToolSessionEvent`, etc.) |
| `@mariozechner/pi-ai` | AI utilities (`StringEnum` for Google-compatible enums) |

Node.js built-in modules (`node:fs`, `node:path`, etc.) are also available.


is this true for hooks as well? then we should document it. also the"""
ASKED_OF_IMPORTS = "is this true for hooks as well? then we should document it. also the"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (IMPORTS, ASKED_OF_IMPORTS),
        # A fenced block, a trace, a table: the words after it are the ask.
        (
            "```\nmy-skill/\n  SKILL.md\n```\n\nso this is just an example",
            "so this is just an example",
        ),
        (
            'Traceback (most recent call last):\n  File "a.py", line 1\n\nwhy does it fail?',
            "why does it fail?",
        ),
        ("| a | b |\n| 1 | 2 |\n\nwhy 2?\nand not 3?", "why 2?\nand not 3?"),
        # A section runs from its heading to the last paragraph.
        (
            "### No To-Dos\n\nUse a file.\n\nTo-dos confuse models.\n\npoint at the todo tool",
            "point at the todo tool",
        ),
        # A heading inside a paragraph opens the section there.
        (
            "From the docs:\n## Setup\nRun make.\n\nThen make test.\n\nis this right?",
            "is this right?",
        ),
        # A comment in a fenced block is no heading: prose follows the block.
        ("```\n# build\nmake\n```\n\nIt builds.\n\nok?", None),
        # Prose before the words: no paste just before them, no section.
        ("```\ncode\n```\n\nSome prose.\n\n(Open file: n/a)\nbash-$", None),
        # Nothing pasted, or nothing after the paste, or the words still in a fence.
        ("Fix the parser.\n\nThen run the tests.", None),
        ("why 2?\n\n| a | b |\n| 1 | 2 |", None),
        ("look:\n\n```\ncode\n\nmore code", None),
        ("```\ncode\n```", None),
    ],
)
def test_the_words_that_close_a_message_after_a_paste(text: str, words: str | None) -> None:
    assert closing_words(text) == words


def test_a_long_ask_after_a_paste_is_quoted_with_its_closing_words() -> None:
    quoted = ask_quote(IMPORTS, MAX_ASK)
    assert quoted.startswith("## Available Imports Custom tools can import from these packages")
    assert quoted.endswith(f"characters cut …] {ASKED_OF_IMPORTS}")
    assert len(quoted) <= MAX_ASK
    # What the mark counts and what it stands beside make up the whole ask.
    head, rest = quoted.split(" [… ", 1)
    gone = int(rest.split(" characters", 1)[0].replace(",", ""))
    assert len(head) + gone + len(ASKED_OF_IMPORTS) == len(collapse(IMPORTS))


@pytest.mark.parametrize(
    "text",
    [
        # Short enough to quote whole.
        "### No Built-in To-Dos\n\ncan point at the custom-tools/todo tool as well here",
        # Long, but nothing pasted before its end: its start is quoted.
        "Please refactor the parser. " * 20,
        # Short, after a paste, with an ellipsis of its own.
        "```\nmake check\n```\n\nand then…",
    ],
)
def test_other_asks_are_quoted_as_they_start(text: str) -> None:
    assert ask_quote(text, MAX_ASK) == clip(text, MAX_ASK)


PI_ASKED = (
    '- In the turns since the previous record, the user asked: "## Available Imports Custom'
    " tools can import from these packages (automatically resolved by pi): | Package | Purpose"
    " | |---------|---------| | `@sinclair/typebox` | Schema definitions (`Type.Object`, `Type."
    f' [… 356 characters cut …] {ASKED_OF_IMPORTS}"'
)


@pytest.mark.skipif(not PI_OLD.exists(), reason=f"shared transcripts not found at {SHARED}")
def test_the_pi_session_record_quotes_what_the_user_asked_of_a_paste(
    counter: TokenCounter,
) -> None:
    """The real pi session, compacted whole: the Goal quotes the question the
    user asked of the docs section they pasted, where it used to quote the
    first 300 characters of the section."""
    assert PI_ASKED in _goal(_pi_compacted(counter))


@pytest.mark.skipif(not PI_OLD.exists(), reason=f"shared transcripts not found at {SHARED}")
def test_compress_on_the_command_line_quotes_the_same(tmp_path: Path) -> None:
    assert PI_ASKED in _goal(_pi_compressed(tmp_path))


def _pi_compacted(counter: TokenCounter, window: int | None = None) -> Transcript:
    """The pi session compacted through the library, at `window` tokens."""
    original = _read(PI_OLD)
    budget = Budget() if window is None else Budget(context_length=window)
    settings = CompressSettings(budget=budget, force=True)
    return compress_transcript(original, counter=counter, settings=settings)[0]


def _pi_compressed(tmp_path: Path, *options: str) -> Transcript:
    """The pi session as `ctxpack compress` writes it, with `options`."""
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(
        app,
        [
            *("compress", str(PI_OLD), "--offline", "--force", "--skip-invalid", *options),
            *("-o", str(out), "--archive", str(tmp_path / "a.db")),
        ],
    )
    assert result.exit_code == 0, result.output
    return _read(out)


def _read(path: Path) -> Transcript:
    # pi's older session holds two objects on its line 440: read past, as --skip-invalid does.
    return formats.read(path.read_bytes(), path=str(path), options=ReadOptions(skip_invalid=True))


def _goal(transcript: Transcript) -> list[str]:
    return parse(_record(transcript))["Goal"]


def _stated(transcript: Transcript) -> list[str]:
    return [line for line in _record(transcript).splitlines() if line.startswith("- The user ")]


def _record(transcript: Transcript) -> str:
    return next(
        markers.summary_body(msg)
        for msg in transcript.sessions[0].messages
        if markers.is_summary(msg)
    )


API_KEYS = (
    '- The user said: "API Keys -> API Keys & OAuth, and then make sure the Claude and'
    ' Copilot sections have the same format"'
)


@pytest.mark.skipif(not PI_OLD.exists(), reason=f"shared transcripts not found at {SHARED}")
@pytest.mark.parametrize("window", [16_000, 32_000])
def test_the_pi_session_record_states_none_of_a_pasted_section(
    counter: TokenCounter, window: int
) -> None:
    """The real pi session at 16k and 32k: the record listed "The user said:
    "Pi relies on CLI tools invoked via bash rather than MCP."" and "The user
    noted: "Usage: 'Read ~/agent-tools/screenshot/README.md and take a
    screenshot'"", sentences of the README section the user pasted before
    saying it was no longer needed. The user's own statements are all it lists
    (the ledger still carries the message, section and all)."""
    philosophy = (
        '- The user noted: "i think for the philosophy section, we should be inspirted by'
        ' ../shittycodingagent.ai/src/index.html"'
    )
    expected = [API_KEYS, philosophy] if window == 16_000 else [API_KEYS]
    assert _stated(_pi_compacted(counter, window)) == expected


@pytest.mark.skipif(not PI_OLD.exists(), reason=f"shared transcripts not found at {SHARED}")
def test_compress_on_the_command_line_states_none_of_it(tmp_path: Path) -> None:
    assert _stated(_pi_compressed(tmp_path, "--context-length", "32000")) == [API_KEYS]
