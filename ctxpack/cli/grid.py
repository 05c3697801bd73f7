"""A table for people, on stderr. On a terminal rich lays it out, with its
colours; anywhere else (a log, a pipe, a CI job) rich would write plain lines,
and this module writes the same lines without loading rich's console, which
costs a small command more than its own work. Wrapping, cell widths and
column shrinking are rich's own functions, so the two cannot drift apart.

Text that rich would transform (control characters, tabs) and widths too
narrow to lay out go to rich itself."""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

Justify = Literal["left", "right"]
# A cell: its text, or its pieces with their styles (a style shows on a terminal only).
Cell = str | Sequence[tuple[str, str]]

# Columns are separated by one rule and each cell is padded by a space on
# either side, the layout of rich's Table(show_edge=False).
PAD = 1
HEADER_RULE, HEADER_CROSS, HEADER_BAR = "━", "╇", "┃"
SECTION_RULE, SECTION_CROSS, BAR = "─", "┼", "│"
# Below this many cells a column cannot hold its padding and a character.
NARROWEST = 2 * PAD + 1


# Plain classes: a dataclass costs more to define than a small command's table takes to print.
class Column:
    def __init__(
        self, header: str, justify: Justify, bold: bool, no_wrap: bool, max_width: int | None
    ) -> None:
        self.header, self.justify, self.bold = header, justify, bold
        self.no_wrap, self.max_width = no_wrap, max_width


class Row:
    def __init__(self, cells: tuple[Cell, ...], bold: bool, dim: bool) -> None:
        self.cells, self.bold, self.dim = cells, bold, dim
        self.end_section = False


class Grid:
    """Columns, rows and sections under an optional title (left-aligned), in
    the layout of rich's Table(show_edge=False)."""

    def __init__(self, *, title: str = "", show_header: bool = True) -> None:
        self.title, self.show_header = title, show_header
        self.columns: list[Column] = []
        self.rows: list[Row] = []

    def add_column(
        self,
        header: str = "",
        *,
        justify: Justify = "left",
        bold: bool = False,
        no_wrap: bool = False,
        max_width: int | None = None,
    ) -> None:
        """`no_wrap`: a cell too wide is cut (with an ellipsis), never wrapped,
        and the column is the last to narrow. `max_width`: in cells, padding aside."""
        self.columns.append(Column(header, justify, bold, no_wrap, max_width))

    def add_row(self, *cells: Cell, bold: bool = False, dim: bool = False) -> None:
        self.rows.append(Row(cells, bold, dim))

    def add_section(self) -> None:
        if self.rows:
            self.rows[-1].end_section = True

    def to_rich(self, width: int | None = None) -> Table:
        """The table for rich. Given the console's `width`, rows whose cells
        all fit on one line (the common case of a long listing) are laid out
        as one row of multi-line cells: rich lays out every cell on its own,
        which costs more than the work behind a 500-file batch's table."""
        from rich.table import Table
        from rich.text import Text

        table = Table(show_edge=False, show_header=self.show_header)
        if self.title:
            # A Text title takes no style from the table: give it rich's own.
            table.title, table.title_justify = Text(self.title, style="table.title"), "left"
        for column in self.columns:
            table.add_column(
                _text(column.header),
                justify=column.justify,
                style="bold" if column.bold else None,
                no_wrap=column.no_wrap,
                max_width=column.max_width,
            )
        rows: list[Row] = self.rows
        if width is not None and len(rows) > 1 and self._fits_on_lines(width):
            rows = _merged(rows)
        for row in rows:
            table.add_row(
                *(_text(cell) for cell in row.cells),
                style="bold" if row.bold else "dim" if row.dim else None,
                end_section=row.end_section,
            )
        return table

    def _fits_on_lines(self, width: int) -> bool:
        """Whether every cell is one line at its column's natural width and
        the columns so wide fit `width` (no cell would wrap or be cut)."""
        from rich.cells import cell_len

        texts = [[plain_of(cell) for cell in row.cells] for row in self.rows]
        if any("\n" in t for row in texts for t in row):
            return False
        widths = []
        for i, column in enumerate(self.columns):
            cells = [row[i] for row in texts] + ([column.header] if self.show_header else [])
            natural = max(cell_len(t) for t in cells)
            # An empty column lays out lines of no width, which rich draws otherwise.
            if not natural or (column.max_width is not None and natural > column.max_width):
                return False
            widths.append(natural + 2 * PAD)
        return sum(widths) + len(widths) - 1 <= width

    def plain(self, width: int) -> str | None:
        """The lines rich writes for this table at `width` cells when it writes
        no styles; None when only rich can say (see the module's note)."""
        if not self.columns:
            return None
        header = [c.header for c in self.columns]
        rows = [[plain_of(cell) for cell in row.cells] for row in self.rows]
        texts = [self.title, *header, *(t for r in rows for t in r)]
        if not all(plain_text(line) for t in texts for line in t.split("\n")):
            return None
        widths = _column_widths(self, header, rows, width - (len(self.columns) - 1))
        if widths is None:
            return None
        lines: list[str] = []
        if self.title:
            table_width = sum(widths) + len(widths) - 1
            lines += _wrap(self.title, table_width, "left", fold=True)
        if self.show_header:
            lines += _row_lines(header, self, widths, HEADER_BAR)
            lines.append(HEADER_CROSS.join(HEADER_RULE * w for w in widths))
        for number, (row, cells) in enumerate(zip(self.rows, rows, strict=True)):
            lines += _row_lines(cells, self, widths, BAR)
            if row.end_section and number < len(self.rows) - 1:
                lines.append(SECTION_CROSS.join(SECTION_RULE * w for w in widths))
        # The columns were narrowed to fit `width`: no line is wider.
        return "".join(line + "\n" for line in lines)


def _merged(rows: list[Row]) -> list[Row]:
    """Runs of rows of one style within a section, each as one row of
    multi-line cells (their pieces' styles kept)."""
    runs: list[list[Row]] = []
    for row in rows:
        last = runs[-1][-1] if runs else None
        if last is None or last.end_section or (last.bold, last.dim) != (row.bold, row.dim):
            runs.append([row])
        else:
            runs[-1].append(row)
    out = []
    for run in runs:
        if len(run) == 1:
            out.append(run[0])
            continue
        cells = []
        for column in zip(*(row.cells for row in run), strict=True):
            pieces: list[tuple[str, str]] = []
            for at, cell in enumerate(column):
                if at:
                    # Each row's line, an empty cell's too.
                    pieces.append(("\n", ""))
                pieces += _pieces(cell)
            cells.append(pieces)
        merged = Row(tuple(cells), run[0].bold, run[0].dim)
        merged.end_section = run[-1].end_section
        out.append(merged)
    return out


def _pieces(cell: Cell) -> list[tuple[str, str]]:
    return [(cell, "")] if isinstance(cell, str) else list(cell)


def plain_of(cell: Cell) -> str:
    return cell if isinstance(cell, str) else "".join(text for text, _ in cell)


def _text(cell: Cell) -> Text:
    # Text, not markup: a cell shows what it holds, brackets and backslashes too.
    from rich.text import Text

    return Text(cell) if isinstance(cell, str) else Text.assemble(*cell)


def plain_text(text: str) -> bool:
    """Whether rich writes `text` as it is: nothing it would expand, split or
    strip (a tab, a line break of any kind, a control character)."""
    return text.isprintable()


def plain_width(stream: IO[str] | None) -> int | None:
    """The width rich lays text out at on `stream` when it would write it
    without styles, as rich decides both; None when rich would style it (a
    terminal, FORCE_COLOR, TTY_COMPATIBLE=1) or cannot be matched (Windows'
    consoles, an encoding without box drawing)."""
    env = os.environ
    compatible = env.get("TTY_COMPATIBLE", "")
    # No stream at all (stderr closed): rich knows to write nowhere.
    if stream is None or compatible == "1" or sys.platform == "win32":
        return None
    if compatible != "0":
        force = env.get("FORCE_COLOR")
        if force is not None:
            if force != "":
                return None
        else:
            isatty = getattr(stream, "isatty", None)
            try:
                if isatty is not None and isatty():
                    return None
            except ValueError:  # closed: rich counts it as no terminal
                pass
    encoding = (getattr(stream, "encoding", None) or "utf-8").lower()
    if not encoding.startswith("utf"):
        return None
    columns = env.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() else _terminal_columns() or 80
    return width if width >= NARROWEST else None


def _terminal_columns() -> int:
    """The first standard stream's terminal width, as rich asks them: stdin, stdout, stderr."""
    for fd in (0, 1, 2):
        try:
            return os.get_terminal_size(fd).columns
        except (AttributeError, ValueError, OSError):
            continue
    return 0


def _measure(texts: list[str], limit: int, column: Column) -> int:
    """A column's width at most `limit`: its widest line, padding included
    (rich measures padded text so; only the maximum sets a width)."""
    from rich.cells import cell_len

    if limit - 2 * PAD < 1:
        widest = limit
    else:
        widest = max(
            (min(min(max(map(cell_len, t.split("\n"))), limit) + 2 * PAD, limit) for t in texts),
            default=limit,
        )
    return widest if column.max_width is None else min(widest, column.max_width + 2 * PAD)


def _column_widths(
    grid: Grid, header: list[str], rows: list[list[str]], limit: int
) -> list[int] | None:
    """Each column's width, padding included, in `limit` cells: the widest
    cell, shrunk as rich shrinks a table that does not fit."""
    if limit < NARROWEST * len(grid.columns):
        return None
    cells = [
        ([header[i]] if grid.show_header else []) + [row[i] for row in rows]
        for i in range(len(grid.columns))
    ]
    columns = grid.columns
    widths = [_measure(t, limit, c) or 1 for t, c in zip(cells, columns, strict=True)]
    if sum(widths) > limit:
        from rich._ratio import ratio_reduce

        widths = _collapse(widths, [not c.no_wrap for c in columns], limit)
        if sum(widths) > limit:
            widths = ratio_reduce(sum(widths) - limit, [1] * len(widths), widths, widths)
        widths = [_measure(t, w, c) for t, w, c in zip(cells, widths, columns, strict=True)]
    if min(widths) < NARROWEST:
        return None
    return widths


def _collapse(widths: list[int], wrapable: list[bool], limit: int) -> list[int]:
    """The widest columns that may wrap narrowed, together, until the table
    fits, as rich's Table does."""
    from rich._ratio import ratio_reduce

    excess = sum(widths) - limit
    if not any(wrapable):
        return widths
    while sum(widths) and excess > 0:
        widest = max(w for w, wraps in zip(widths, wrapable, strict=True) if wraps)
        second = max(
            w if wraps and w != widest else 0 for w, wraps in zip(widths, wrapable, strict=True)
        )
        step = widest - second
        ratios = [
            1 if w == widest and wraps else 0 for w, wraps in zip(widths, wrapable, strict=True)
        ]
        if not step:
            break
        widths = ratio_reduce(excess, ratios, [min(excess, step)] * len(widths), widths)
        excess = sum(widths) - limit
    return widths


def _row_lines(cells: list[str], grid: Grid, widths: list[int], bar: str) -> list[str]:
    """One row's lines: each cell wrapped in its column, the shorter ones
    topped up with blank lines (a header sits at the bottom)."""
    wrapped = [
        _wrap(text, width - 2 * PAD, column.justify, no_wrap=column.no_wrap)
        for text, width, column in zip(cells, widths, grid.columns, strict=True)
    ]
    height = max(len(lines) for lines in wrapped)
    blocks = []
    for lines, width in zip(wrapped, widths, strict=True):
        padded = [" " * PAD + line + " " * PAD for line in lines]
        blank = [" " * width] * (height - len(lines))
        blocks.append(blank + padded if bar == HEADER_BAR else padded + blank)
    return [bar.join(parts) for parts in zip(*blocks, strict=True)]


def _wrap(
    text: str, width: int, justify: Justify, *, no_wrap: bool = False, fold: bool = False
) -> list[str]:
    """Text in lines of exactly `width` cells, as rich wraps it: each of its
    lines by rich's word division, the spaces at a break dropped; a word too
    long for the column cut with an ellipsis, or with `fold` (a title)
    carried on over lines. `no_wrap`: each line cut instead."""
    from rich._wrap import divide_line
    from rich.cells import cell_len, set_cell_size

    def cut(line: str) -> str:
        if cell_len(line) <= width:
            return line
        return set_cell_size(line, width) if fold else set_cell_size(line, width - 1) + "…"

    lines = []
    for whole in text.split("\n"):
        breaks = [] if no_wrap else divide_line(whole, width, fold=fold)
        for start, end in itertools.pairwise([0, *breaks, len(whole)]):
            line = whole[start:end]
            if not no_wrap and len(line) > width:  # by characters, as rich counts here
                trailing = len(line) - len(line.rstrip())
                line = line[: len(line) - min(trailing, len(line) - width)]
            # Cut, a line is `width` cells at most; the rest is padding.
            if justify == "right":
                line = cut(line.rstrip())
                lines.append(" " * (width - cell_len(line)) + line)
            else:
                line = cut(line)
                lines.append(line + " " * (width - cell_len(line)))
    return lines
