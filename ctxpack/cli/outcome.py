"""After a compaction: the transcript on stdout, the report on stderr and
in --report FILE. Shared by `compress`, `summarize` and `update`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ctxpack import files

if TYPE_CHECKING:
    from ctxpack.pipeline.run import FileJob, FileOutcome, Stage
    from ctxpack.report import CompressReport


@contextlib.contextmanager
def working(model: str | None) -> Iterator[None]:
    """A spinner with elapsed time while an LLM call may be running (terminals only)."""
    if model is None:
        yield
        return
    from ctxpack.cli.render import console

    if not console.is_terminal:
        yield
        return
    # Imported only for a spinner: rich.progress costs a small call a few percent.
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn(f"compacting, summarizer {model}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        progress.add_task("", total=None)
        yield


def compact_one(
    job: FileJob, *, stage: Stage[CompressReport], model: str | None, report_file: str | None
) -> None:
    from ctxpack.cli.render import compress_report
    from ctxpack.pipeline.run import run_file

    with working(model):
        outcome: FileOutcome[CompressReport] = run_file(job, stage=stage)
    assert outcome.report is not None
    outcome.report.output = outcome.target
    if outcome.data is not None:
        # The transcript first: the report then tells the truth about where it went.
        files.write_stdout(outcome.data)
    compress_report(outcome.report)
    if report_file is not None:
        write_report(report_file, outcome.report.to_dict())


def write_report(path: str, document: dict[str, Any]) -> None:
    import orjson

    files.write_atomic(path, orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")
