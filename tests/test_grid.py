"""People's tables and messages off a terminal: the plain lines are exactly
what rich writes there, so a log reads the same whichever drew it."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from ctxpack.cli import grid, render
from ctxpack.cli.grid import Grid, plain_width
from ctxpack.pipeline.compaction import CompressSettings
from ctxpack.pipeline.run import FileJob, run_file
from ctxpack.pipeline.stages import Compress
from ctxpack.tokens.tally import count_transcript
from tests.conftest import FIXTURES

# Words of every width rich measures: ASCII, accents, wide CJK, symbols,
# brackets and backslashes (which markup would eat), long unbreakable runs.
WORDS = st.sampled_from(
    ["a", "ab", "tokens", "12,345", "→", "✓", "é", "中文", "[bold]", "\\", "C:\\[x]", "x" * 30]
)
SEPARATORS = st.sampled_from(["", " ", "  ", ", ", "\n"])
TEXT = st.lists(st.tuples(WORDS, SEPARATORS), max_size=12).map(
    lambda parts: "".join(w + sep for w, sep in parts)
)
CELL = TEXT | st.lists(st.tuples(TEXT, st.sampled_from(["", "dim", "bold red"])), max_size=3)


@st.composite
def grids(draw: st.DrawFn) -> Grid:
    table = Grid(show_header=draw(st.booleans()), title=draw(st.just("") | TEXT))
    count = draw(st.integers(1, 6))
    for _ in range(count):
        table.add_column(
            draw(TEXT).replace("\n", " "),
            justify=draw(st.sampled_from(["left", "right"])),
            bold=draw(st.booleans()),
            no_wrap=draw(st.booleans()),
            max_width=draw(st.sampled_from([None, None, 4, 12, 40])),
        )
    for _ in range(draw(st.integers(0, 6))):
        cells = [draw(CELL) for _ in range(count)]
        table.add_row(*cells, bold=draw(st.booleans()), dim=draw(st.booleans()))
        if draw(st.booleans()):
            table.add_section()
    return table


def rich_lines(renderable: Any, width: int, **options: Any) -> str:
    out = io.StringIO()
    console = Console(
        file=out, width=width, force_terminal=False, legacy_windows=False, highlight=False
    )
    console.print(renderable, **options)
    return out.getvalue()


@settings(max_examples=400, deadline=None)
@given(table=grids(), width=st.sampled_from([8, 16, 24, 40, 61, 80, 120, 200]))
def test_plain_lines_are_rich_lines(table: Grid, width: int) -> None:
    plain = table.plain(width)
    if plain is not None:
        assert plain == rich_lines(table.to_rich(), width)


@settings(max_examples=200, deadline=None)
@given(table=grids(), width=st.sampled_from([40, 80, 200]))
def test_rows_laid_out_together_read_as_rows_laid_out_alone(table: Grid, width: int) -> None:
    # On a terminal a long listing goes to rich as one row of multi-line cells.
    assert rich_lines(table.to_rich(width), width) == rich_lines(table.to_rich(), width)


def test_an_empty_cell_keeps_its_line_when_rows_are_laid_out_together() -> None:
    table = Grid(show_header=False)
    table.add_column("")
    table.add_row([])  # no styled pieces at all
    table.add_row("a")
    assert rich_lines(table.to_rich(40), 40) == rich_lines(table.to_rich(), 40) == "   \n a \n"


def test_a_long_listing_goes_to_rich_as_one_row() -> None:
    table = Grid(title="batch")
    table.add_column("file", no_wrap=True)
    table.add_column("tokens", justify="right")
    for number in range(500):
        table.add_row(f"s{number:03d}.jsonl", f"{number * 1000:,}", dim=number == 499)
    table.add_section()
    table.add_row("500 file(s)", "124,750,000", bold=True)
    assert len(table.to_rich(80).rows) == 3
    assert rich_lines(table.to_rich(80), 80) == table.plain(80)


def test_wide_tables_wrap_and_narrow_ones_fall_back_to_rich() -> None:
    table = Grid(show_header=False)
    table.add_column("key", bold=True)
    table.add_column("value")
    table.add_row("facts kept", "paths 64/65, commands 55/69, " * 4)
    table.add_row("ratio", "2.9%")
    wrapped = table.plain(80)
    assert wrapped is not None
    # The value column takes what the key leaves of 80 cells; every line is that wide.
    assert wrapped.splitlines() == [
        " facts kept │ paths 64/65, commands 55/69, paths 64/65, commands 55/69, paths   ",
        "            │ 64/65, commands 55/69, paths 64/65, commands 55/69,               ",
        " ratio      │ 2.9%                                                              ",
    ]
    assert wrapped == rich_lines(table.to_rich(), 80)
    assert table.plain(6) is None


@pytest.mark.parametrize(
    "text", ["tab\there", "cr\rlf", "bell\x07", "esc\x1b[1m", "line\u2028separator"]
)
def test_text_rich_would_transform_goes_to_rich(text: str) -> None:
    table = Grid()
    table.add_column("a")
    table.add_row(text)
    assert not grid.plain_text(text)
    assert table.plain(80) is None


class Stream(io.StringIO):
    def __init__(self, *, tty: bool, encoding: str = "utf-8") -> None:
        super().__init__()
        self.tty, self._encoding = tty, encoding

    def isatty(self) -> bool:
        return self.tty

    @property
    def encoding(self) -> str:
        return self._encoding


@pytest.mark.parametrize(
    ("env", "stream", "width"),
    [
        ({"COLUMNS": "120"}, Stream(tty=False), 120),
        ({"COLUMNS": "120"}, Stream(tty=True), None),
        ({"COLUMNS": "120", "FORCE_COLOR": "1"}, Stream(tty=False), None),
        # rich reads an empty FORCE_COLOR as "no colour"
        ({"COLUMNS": "120", "FORCE_COLOR": ""}, Stream(tty=True), 120),
        ({"COLUMNS": "120", "TTY_COMPATIBLE": "1"}, Stream(tty=False), None),
        ({"COLUMNS": "120", "TTY_COMPATIBLE": "0"}, Stream(tty=True), 120),
        ({"COLUMNS": "120"}, Stream(tty=False, encoding="latin-1"), None),
        ({"COLUMNS": "2"}, Stream(tty=False), None),
    ],
)
def test_plain_width_follows_rich(
    env: dict[str, str], stream: Stream, width: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert plain_width(stream) == width
    if width is not None:
        # The same stream through rich: no styles, the same width.
        console = Console(file=stream, legacy_windows=False)
        assert not console.is_terminal
        assert console.width == width


def _both(show: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", "80")
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    show()
    plain = capsys.readouterr().err
    with monkeypatch.context() as patch:
        patch.setattr(render, "plain_width", lambda stream: None)
        patch.setattr(render, "_console", None)
        show()
        drawn = capsys.readouterr().err
    render._console = None
    assert plain == drawn
    return plain


REAL = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"


def test_count_report_reads_the_same_plain_and_drawn(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxpack import formats
    from ctxpack.tokens.counter import TokenCounter

    transcript = formats.read(REAL.read_bytes(), path=str(REAL))
    report = count_transcript(transcript, counter=TokenCounter())
    text = _both(lambda: render.count_report([report, report]), capsys, monkeypatch)
    assert text.splitlines()[0].startswith(f"{REAL} — claude-code, 1 session(s), o200k_base")
    assert " total     │" in text
    assert text.count("all 2 files") == 1


def test_compress_report_reads_the_same_plain_and_drawn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    job = FileJob(source=str(REAL), output=str(tmp_path / "out.jsonl"), archive=False)
    outcome = run_file(job, stage=Compress(settings=CompressSettings(force=True)))
    assert outcome.report is not None
    outcome.report.output = outcome.target
    text = _both(lambda: render.compress_report(outcome.report), capsys, monkeypatch)
    assert " facts kept       │ " in text
    # A word wider than its column ends in an ellipsis, on either path.
    assert f" written to       │ {str(tmp_path)[:40]}" in text


@pytest.mark.parametrize(
    "text", ["plain words", "C:\\[x] and [bold]not markup[/]", "中文 → ✓", "a\rb\tc"]
)
def test_messages_read_the_same_plain_and_drawn(
    text: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def messages() -> None:
        render.error(text)
        render.warn(text)
        render.note(text)

    shown = _both(messages, capsys, monkeypatch)
    if grid.plain_text(text):
        assert shown == f"error: {text}\nwarning: {text}\n{text}\n"


def test_a_closed_stderr_is_left_to_rich() -> None:
    # `2>&-`: Python has no sys.stderr; rich writes nowhere, and so do we.
    assert plain_width(None) is None
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stderr", None)
        render._console = None
        render.note("nowhere to go")
    render._console = None


def test_on_a_terminal_a_title_is_styled_as_rich_styles_one() -> None:
    from rich.table import Table

    table = Grid(title="prune plan — s.jsonl")
    table.add_column("#", justify="right")
    table.add_row("1")
    drawn = Table(show_edge=False, title="prune plan — s.jsonl", title_justify="left")
    drawn.add_column("#", justify="right")
    drawn.add_row("1")

    def on_terminal(renderable: Any) -> str:
        out = io.StringIO()
        Console(file=out, width=40, force_terminal=True, color_system="standard").print(renderable)
        return out.getvalue()

    assert on_terminal(table.to_rich(40)) == on_terminal(drawn)
