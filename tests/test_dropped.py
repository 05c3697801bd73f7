"""Files the user dropped into a message read as attachments, not as notes of
theirs; a long message that ends in a copied terminal screen is cut to its
head, where the user's words are, and the screen's borders are thinned. The
rules, then the real sessions they were found in, through the library and the
command line."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxpack import formats, markers
from ctxpack.align.budget import Budget
from ctxpack.cli import app
from ctxpack.pipeline.compaction import CompressSettings, compress_transcript
from ctxpack.summarize.ledger import LEDGER_HEADING, Ledger, cut
from ctxpack.summarize.pasted import dropped_file, ends_in_screen, thin_borders
from ctxpack.summarize.statements import classified
from ctxpack.summarize.template import parse
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Transcript
from tests.conftest import SHARED

PI_LARGE = SHARED / "pi-agent" / "pi-mono__test__fixtures__large-session.jsonl"

SHOT = "/var/folders/49/T/NSIRD_screencaptureui_tby1cQ/Screenshot 2025-11-21 at 01.27.21.png"


@pytest.mark.parametrize(
    ("sentence", "found"),
    [
        # macOS terminals quote a dropped file whose path has spaces...
        (f"'{SHOT}'", (SHOT, "")),
        (f'"{SHOT}"', (SHOT, "")),
        # ...or escape its spaces, and the user may type on after it.
        (r"/Users/me/Shot\ 1.png what is this?", ("/Users/me/Shot 1.png", "what is this?")),
        (r'"C:\Users\me\shot.png"', (r"C:\Users\me\shot.png", "")),
        # A bare path with no space is as likely typed: read as before.
        ("/tmp/x.log", None),
        ("/etc/hosts is broken", None),
        # Not a file: no name with an extension, or not absolute.
        ("'/a/b c'", None),
        ("'/a/.env'", None),
        ("'src/app.py'", None),
        ("'/a/x.png'what", None),
    ],
)
def test_a_dropped_file(sentence: str, found: tuple[str, str] | None) -> None:
    assert dropped_file(sentence) == found


def test_a_dropped_file_is_an_attachment_and_the_words_after_it_are_read() -> None:
    text = f"'{SHOT}'\n\nwe must keep the dark theme. any idea why the colors differ?"
    assert classified(text) == [
        ("file", SHOT),
        ("constraint", "we must keep the dark theme."),
    ]
    spoken = r"/Users/me/Shot\ 1.png note: the footer is dim"
    assert classified(spoken) == [
        ("file", "/Users/me/Shot 1.png"),
        ("fact", "note: the footer is dim"),
    ]


SCREEN = "ghosty:\n➜  pi-mono git:(main) ✗ echo $TERM\nxterm-ghostty\n➜  pi-mono git:(main) ✗"


@pytest.mark.parametrize(
    ("text", "ends"),
    [
        (f"why do the colors differ?\n\n{SCREEN}", True),
        (f"{SCREEN}\n\nwhy do the colors differ?", False),
        # A trace may end in its error: not a screen.
        ('why?\n\nTraceback (most recent call last):\n  File "a.py", line 1\nValueError: x', False),
        # A message of one paragraph has nothing before its end to keep.
        (SCREEN, False),
    ],
)
def test_a_message_that_ends_in_a_screen(text: str, ends: bool) -> None:
    assert ends_in_screen(text) is ends


@pytest.mark.parametrize(
    ("text", "thinned"),
    [
        ("╭──────────╮ │ │ │ Step 2: Team Roster │ │ ╰──────╯", "╭─╮ │ Step 2: Team Roster │ ╰─╯"),
        # Different characters side by side are each kept; text has no borders.
        ("━━ ─── a ─ b", "━ ─ a ─ b"),
        ("a -- b ==== c", "a -- b ==== c"),
    ],
)
def test_a_screens_borders_are_thinned(text: str, thinned: str) -> None:
    assert thin_borders(text) == thinned


def test_a_ledger_entry_keeps_the_words_inside_a_screen_not_its_borders() -> None:
    border = "─" * 200
    asked = f"drop the borders around the box:\n\n╭{border}╮\n│ Step 2: Team Roster   │\n╰{border}╯"
    line = Ledger([], [asked]).entries[0].text
    assert line == "drop the borders around the box: ╭─╮ │ Step 2: Team Roster │ ╰─╯"


def test_a_cut_without_its_tail_keeps_the_head_and_counts_the_rest() -> None:
    text = "a" * 150 + " " + "b" * 149
    assert cut(text, 200, tail=False) == f"{'a' * 150} {'b' * 49} [… 100 characters cut …]"
    # Cut again (an update of the record reads the entry back), it keeps its
    # head, and the earlier mark is counted once.
    again = cut(cut(text, 200, tail=False), 100)
    assert again == f"{'a' * 100} [… 200 characters cut …]"
    assert cut(text, 200) == f"{'a' * 133} [… 101 characters cut …] {'b' * 66}"


def test_the_ledger_cuts_a_message_that_ends_in_a_screen_to_its_head(
    counter: TokenCounter,
) -> None:
    asked = f"'{SHOT}'\n\nany idea why the colors differ in the vs code terminal?\n\n" + (
        f"{SCREEN}\n" * 6
    )
    ledger = Ledger([], ["fix the footer colors", asked])
    lines = parse(ledger.render(budget=300, counter=counter))[LEDGER_HEADING]
    assert lines[-1] == (
        f"- \"'{SHOT}' any idea why the colors differ in the vs code terminal? ghosty: ➜"
        ' pi-mono git:(main) ✗ echo $TERM xterm-ghostty ➜ [… 416 characters cut …]"'
    )


def test_a_dropped_file_gives_a_message_no_rank_of_its_own() -> None:
    """A message ranks by what its words state: a screenshot with a question
    ranks as the question, one with a rule as the rule."""
    asked, ruled = Ledger(
        [], [f"'{SHOT}'\n\nany idea why?", f"'{SHOT}'\n\nwe must keep the dark theme"]
    ).entries
    assert (asked.informative, ruled.informative) == (1, 2)
    assert ruled.constraint


SHOTS = [
    "/var/folders/49/l4171l3n219_xwq30fmyzr8w0000gn/T/TemporaryItems/"
    f"NSIRD_screencaptureui_{folder}/Screenshot 2025-11-21 at {time}.png"
    for folder, time in [
        ("tby1cQ", "01.27.21"),
        ("t8nr4u", "01.36.58"),
        ("sSbmaf", "01.39.27"),
        ("elwdQN", "01.48.00"),
    ]
]
GEMINI = SHARED / "gemini" / "gemini-cli__ntm-agentteamscli__trajectory.json"
# The Gemini user's words, then the head of the team dialog they pasted, its
# borders thinned; the dialog runs on to the end of the message.
DIALOG = (
    "maybe we drop the borders around the agent selection box: ╭─╮ │ Step 2: Team Roster"
    " Selected: 0 │ Select agents to include in your team: │ ┌─┐ │ ● 1. [ ] ✦"
    " codebase_investigator [BUILT-IN] (local) │"
)


@pytest.mark.skipif(not PI_LARGE.exists(), reason=f"shared transcripts not found at {SHARED}")
def test_the_pi_session_record_lists_the_dropped_screenshots_as_attachments(
    counter: TokenCounter,
) -> None:
    """The large pi session at 32k: the user dropped four screenshots into
    their messages, and Critical Context listed each path as "The user noted:
    "'/var/…/Screenshot 2025-11-21 at 01.27.21.png'"."""
    context = parse(_record(_compacted(PI_LARGE, counter)))["Critical Context"]
    assert [line for line in context if "Screenshot" in line] == [
        f"- The user attached: `{shot}`" for shot in SHOTS
    ]


@pytest.mark.skipif(not GEMINI.exists(), reason=f"shared transcripts not found at {SHARED}")
def test_the_gemini_ledger_shows_the_pasted_dialog_not_its_borders(counter: TokenCounter) -> None:
    """The Gemini session at 32k: the ledger's entry for the message that
    pasted the team dialog held the user's words, then `╭───…` to its cut,
    and the border's last 200 characters after it."""
    ledger = parse(_record(_compacted(GEMINI, counter)))[LEDGER_HEADING]
    [entry] = [line for line in ledger if line.startswith('- "- Please stop grouping')]
    assert DIALOG in entry and entry.endswith(' characters cut …]"')
    assert "──" not in entry


@pytest.mark.skipif(not PI_LARGE.exists(), reason=f"shared transcripts not found at {SHARED}")
def test_compress_on_the_command_line_lists_the_same(tmp_path: Path) -> None:
    records = []
    for path in (PI_LARGE, GEMINI):
        out = tmp_path / path.name
        args = ["compress", str(path), "--offline", "--force", "--context-length", "32000"]
        result = CliRunner().invoke(
            app, [*args, "-o", str(out), "--archive", str(tmp_path / "a.db")]
        )
        assert result.exit_code == 0, result.output
        records.append(parse(_record(formats.read(out.read_bytes(), path=str(out)))))
    pi, gemini = records
    attached = [line for line in pi["Critical Context"] if "Screenshot" in line]
    assert attached == [f"- The user attached: `{shot}`" for shot in SHOTS]
    assert any(DIALOG in line for line in gemini[LEDGER_HEADING])


def _compacted(path: Path, counter: TokenCounter) -> Transcript:
    original = formats.read(path.read_bytes(), path=str(path))
    settings = CompressSettings(budget=Budget(context_length=32_000), force=True)
    return compress_transcript(original, counter=counter, settings=settings)[0]


def _record(transcript: Transcript) -> str:
    return next(
        markers.summary_body(msg)
        for msg in transcript.sessions[0].messages
        if markers.is_summary(msg)
    )
