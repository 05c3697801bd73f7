"""How a batch is shown: its progress bar, its table, and its report document."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ctxpack.cli.grid import plain_width

if TYPE_CHECKING:
    from collections.abc import Callable

    from ctxpack.pipeline.batch import Finished

    # Told each finished file (its source, whether it failed); False stops the run.
    OnDone = Callable[[str, bool], bool]


def skipped_text(skipped: dict[str, int]) -> str:
    parts = ", ".join(f"{n} {reason}" for reason, n in sorted(skipped.items()))
    return f"{sum(skipped.values())} file(s) skipped: {parts}"


def with_progress(
    total: int, run: Callable[[OnDone], list[Finished]], *, fail_fast: bool
) -> list[Finished]:
    def done_plainly(source: str, failed: bool) -> bool:
        return not (fail_fast and failed)

    if plain_width(sys.stderr) is not None:
        # No terminal: no bar to draw, and rich's progress and console
        # (some 30 ms to import, before the workers fork) are not loaded.
        return run(done_plainly)

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ctxpack.cli.render import console

    show = console.is_terminal
    with Progress(
        TextColumn("compressing"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=console,
        disable=not show,
        transient=True,
    ) as progress:
        task = progress.add_task("", total=total)

        def done(source: str, failed: bool) -> bool:
            progress.update(task, advance=1, description=Path(source).name)
            return done_plainly(source, failed)

        return run(done)


# What the number and status columns of a batch row take, borders included.
BATCH_COLUMNS = 52


def shorten_middle(text: str, width: int) -> str:
    """The start and the end of a long name, which say the most (dir… and .ext)."""
    if len(text) <= width:
        return text
    keep = max(width - 1, 2)
    return text[: keep - keep // 2] + "…" + text[len(text) - keep // 2 :]


def batch_totals(rows: list[tuple[str, int | None, int | None, str]]) -> None:
    """A row per file: its name, tokens before and after, and status; a file
    that failed has no tokens, and the totals are of the others."""
    from ctxpack.cli.grid import Grid
    from ctxpack.cli.render import layout_width, show

    table = Grid(title="batch")
    # One line per file: a name too long for the terminal loses its middle.
    name_width = max(layout_width() - BATCH_COLUMNS, 20)
    table.add_column("file", no_wrap=True)
    table.add_column("before", justify="right")
    table.add_column("after", justify="right")
    table.add_column("ratio", justify="right")
    table.add_column("status")
    done = [
        (before, after) for _, before, after, _ in rows if before is not None and after is not None
    ]
    for name, before, after, status in rows:
        if before is None or after is None:
            table.add_row(shorten_middle(name, name_width), "-", "-", "-", status)
            continue
        ratio = f"{after / before:.1%}" if before else "-"
        table.add_row(shorten_middle(name, name_width), f"{before:,}", f"{after:,}", ratio, status)
    tb, ta = sum(before for before, _ in done), sum(after for _, after in done)
    failed = len(rows) - len(done)
    files = f"{len(done)} file(s)" + (f", {failed} failed" if failed else "")
    table.add_section()
    table.add_row(files, f"{tb:,}", f"{ta:,}", f"{ta / tb:.1%}" if tb else "-", "", bold=True)
    show(table)


def finish(done: list[Finished], *, report_file: str | None, skipped: dict[str, int]) -> None:
    from ctxpack.cli.app import SKIP_INVALID_HINT
    from ctxpack.cli.outcome import write_report
    from ctxpack.cli.render import error, note, warn
    from ctxpack.report import ERROR, file_status

    failures = [f for f in done if f.error]
    reports = [f.report for f in done if f.report is not None]
    # Once per batch: per row, it is quadratic in the number of files.
    root = _common_root([f.source for f in done])
    batch_totals(
        [
            (
                _short(f.report["path"], root),
                f.report["tokens_before"],
                f.report["tokens_after"],
                file_status(s["status"] for s in f.report["sessions"]),
            )
            if f.report is not None
            else (_short(f.source, root), None, None, ERROR)
            for f in done
        ]
    )
    if skipped:
        note(skipped_text(skipped))
    for report in reports:
        for warning in dict.fromkeys(w for s in report["sessions"] for w in s["warnings"]):
            warn(f"{report['path']}: {warning}")
    for failure in failures:
        error(failure.error or "")
    if any(failure.skippable for failure in failures):
        note(SKIP_INVALID_HINT)
    if report_file is not None:
        write_report(report_file, _batch_document(done))
    if failures:
        raise typer.Exit(max(f.exit_code for f in failures))


def _common_root(sources: list[str]) -> str | None:
    """The common directory of a batch's files; None for one file (its own directory)."""
    import os.path

    return os.path.commonpath(sources) if len(sources) > 1 else None


def _short(path: str, root: str | None) -> str:
    """A batch row names the file relative to the common directory of the batch."""
    import os.path

    where = os.path.dirname(path) if root is None else root
    return os.path.relpath(path, where) if where else path


def _batch_document(done: list[Finished]) -> dict[str, Any]:
    reports = [f.report for f in done if f.report is not None]
    before = sum(r["tokens_before"] for r in reports)
    after = sum(r["tokens_after"] for r in reports)
    return {
        "files": reports,
        "errors": [{"path": f.source, "error": f.error} for f in done if f.error],
        "tokens_before": before,
        "tokens_after": after,
        "ratio": round(after / before, 4) if before else 1.0,
    }
