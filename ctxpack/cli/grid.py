"""A table for people, on stderr. On a terminal rich lays it out, with its
colours; anywhere else (a log, a pipe, a CI job) rich would write plain lines,
and this module writes the same lines without loading rich's console, which
costs a small command more than its own work. Wrapping, cell widths and
column shrinking are rich's own functions, so the two cannot drift apart.

Text that rich would transform (control characters, tabs, newlines in a cell)
and widths too narrow to lay out go to rich itself."""

from __future__ import annotations

import itertools
import os
import sys
from typing import IO, TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from rich.table import Table

Justify = Literal["left", "right"]

# Columns are separated by one rule and each cell is padded by a space on
# either side, the layout of rich's Table(show_edge=False).
PAD = 1
HEADER_RULE, HEADER_CROSS, HEADER_BAR = "━", "╇", "┃"
SECTION_RULE, SECTION_CROSS, BAR = "─", "┼", "│"
# Below this many cells a column cannot hold its padding and a character.
NARROWEST = 2 * PAD + 1


# Plain classes: a dataclass costs more to define than a small command's table takes to print.
class Column:
    def __init__(self, header: str, justify: Justify, bold: bool) -> None:
        self.header, self.justify, self.bold = header, justify, bold


class Row:
    def __init__(self, cells: tuple[str, ...], bold: bool) -> None:
        self.cells, self.bold = cells, bold
        self.end_section = False


class Grid:
    def __init__(self, *, show_header: bool = True) -> None:
        self.show_header = show_header
        self.columns: list[Column] = []
        self.rows: list[Row] = []

    def add_column(
        self, header: str = "", *, justify: Justify = "left", bold: bool = False
    ) -> None:
        self.columns.append(Column(header, justify, bold))

    def add_row(self, *cells: str, bold: bool = False) -> None:
        self.rows.append(Row(cells, bold))

    def add_section(self) -> None:
        if self.rows:
            self.rows[-1].end_section = True

    def to_rich(self) -> Table:
        from rich.table import Table
        from rich.text import Text

        # Text, not markup: a cell shows what it holds, brackets and backslashes too.
        table = Table(show_edge=False, show_header=self.show_header)
        for column in self.columns:
            table.add_column(
                Text(column.header), justify=column.justify, style="bold" if column.bold else None
            )
        for row in self.rows:
            table.add_row(
                *(Text(cell) for cell in row.cells),
                style="bold" if row.bold else None,
                end_section=row.end_section,
            )
        return table

    def plain(self, width: int) -> str | None:
        """The lines rich writes for this table at `width` cells when it writes
        no styles; None when only rich can say (see the module's note)."""
        texts = [c.header for c in self.columns] + [t for r in self.rows for t in r.cells]
        if not self.columns or not all(map(plain_text, texts)):
            return None
        widths = _column_widths(self, width - (len(self.columns) - 1))
        if widths is None:
            return None
        lines: list[str] = []
        if self.show_header:
            lines += _row_lines([c.header for c in self.columns], self, widths, HEADER_BAR)
            lines.append(HEADER_CROSS.join(HEADER_RULE * w for w in widths))
        for number, row in enumerate(self.rows):
            lines += _row_lines(list(row.cells), self, widths, BAR)
            if row.end_section and number < len(self.rows) - 1:
                lines.append(SECTION_CROSS.join(SECTION_RULE * w for w in widths))
        from rich.cells import cell_len, set_cell_size

        return "".join(
            (set_cell_size(line, width) if cell_len(line) > width else line) + "\n"
            for line in lines
        )


def plain_text(text: str) -> bool:
    """Whether rich writes `text` as it is: no control character (a tab, a
    newline, a carriage return) that it would expand, split or strip."""
    return text.isprintable() or all(ch >= " " and not "\x7f" <= ch <= "\x9f" for ch in text)


def plain_width(stream: IO[str]) -> int | None:
    """The width rich lays text out at on `stream` when it would write it
    without styles, as rich decides both; None when rich would style it (a
    terminal, FORCE_COLOR, TTY_COMPATIBLE=1) or cannot be matched (Windows'
    consoles, an encoding without box drawing)."""
    env = os.environ
    compatible = env.get("TTY_COMPATIBLE", "")
    if compatible == "1" or sys.platform == "win32":
        return None
    if compatible != "0":
        force = env.get("FORCE_COLOR")
        if force is not None:
            if force != "":
                return None
        else:
            try:
                if stream.isatty():
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


def _measure(texts: list[str], limit: int) -> int:
    """A column's width at most `limit`: its widest cell, padding included
    (rich measures padded text so; only the maximum sets a width)."""
    from rich.cells import cell_len

    if limit - 2 * PAD < 1:
        return limit
    return max((min(min(cell_len(t), limit) + 2 * PAD, limit) for t in texts), default=limit)


def _column_widths(grid: Grid, limit: int) -> list[int] | None:
    """Each column's width, padding included, in `limit` cells: the widest
    cell, shrunk as rich shrinks a table that does not fit."""
    if limit < NARROWEST * len(grid.columns):
        return None
    cells = [
        ([c.header] if grid.show_header else []) + [r.cells[i] for r in grid.rows]
        for i, c in enumerate(grid.columns)
    ]
    widths = [_measure(texts, limit) or 1 for texts in cells]
    if sum(widths) > limit:
        from rich._ratio import ratio_reduce

        widths = _collapse(widths, limit)
        if sum(widths) > limit:
            widths = ratio_reduce(sum(widths) - limit, [1] * len(widths), widths, widths)
        widths = [_measure(texts, width) for texts, width in zip(cells, widths, strict=True)]
    if min(widths) < NARROWEST:
        return None
    return widths


def _collapse(widths: list[int], limit: int) -> list[int]:
    """The widest columns narrowed, together, until the table fits (every
    column may wrap), as rich's Table does."""
    from rich._ratio import ratio_reduce

    excess = sum(widths) - limit
    while sum(widths) and excess > 0:
        widest = max(widths)
        second = max((w for w in widths if w != widest), default=0)
        step = widest - second
        if not step:
            break
        ratios = [1 if w == widest else 0 for w in widths]
        widths = ratio_reduce(excess, ratios, [min(excess, step)] * len(widths), widths)
        excess = sum(widths) - limit
    return widths


def _row_lines(cells: list[str], grid: Grid, widths: list[int], bar: str) -> list[str]:
    """One row's lines: each cell wrapped in its column, the shorter ones
    topped up with blank lines (a header sits at the bottom)."""
    wrapped = [
        _wrap(text, width - 2 * PAD, column.justify)
        for text, width, column in zip(cells, widths, grid.columns, strict=True)
    ]
    height = max(len(lines) for lines in wrapped)
    blocks = []
    for lines, width in zip(wrapped, widths, strict=True):
        padded = [" " * PAD + line + " " * PAD for line in lines]
        blank = [" " * width] * (height - len(lines))
        blocks.append(blank + padded if bar == HEADER_BAR else padded + blank)
    return [bar.join(parts) for parts in zip(*blocks, strict=True)]


def _wrap(text: str, width: int, justify: Justify) -> list[str]:
    """A cell's text in lines of exactly `width` cells, as rich wraps it: its
    word division, the spaces at a break dropped, a word too long for the
    column cut with an ellipsis."""
    from rich._wrap import divide_line
    from rich.cells import cell_len, set_cell_size

    def cut(line: str) -> str:
        return set_cell_size(line, width - 1) + "…" if cell_len(line) > width else line

    offsets = [0, *divide_line(text, width, fold=False), len(text)]
    lines = []
    for start, end in itertools.pairwise(offsets):
        line = text[start:end]
        if len(line) > width:  # by characters, as rich counts here
            trailing = len(line) - len(line.rstrip())
            line = line[: len(line) - min(trailing, len(line) - width)]
        if justify == "right":
            line = cut(line.rstrip())
            line = " " * (width - cell_len(line)) + line
        else:
            line = cut(line)
        line = cut(line)
        size = cell_len(line)
        lines.append(line + " " * (width - size) if size <= width else set_cell_size(line, width))
    return lines
