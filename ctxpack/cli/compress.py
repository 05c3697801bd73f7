"""`ctxpack compress` (the whole pipeline, one file, a pipe or a batch) and
`ctxpack config` (the effective settings)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ctxpack import files
from ctxpack import settings as config
from ctxpack.cli import settings as opts
from ctxpack.cli.app import (
    EstimateOpt,
    FromOpt,
    MessagesKeyOpt,
    SkipInvalidOpt,
    app,
    reported,
)
from ctxpack.errors import UsageError

if TYPE_CHECKING:
    from ctxpack.pipeline.batch import FileJob, FileOutcome


EXAMPLES = """Examples:

  ctxpack compress session.jsonl                      # writes session.ctxpack.jsonl

  ctxpack compress --force --offline s.jsonl -o small.jsonl --report report.json

  cat s.jsonl | ctxpack compress - | ctxpack count -   # in a pipe

  ctxpack compress logs/ -o compacted/ --jobs 4       # a whole tree, mirrored

  ctxpack compress s.jsonl --model llama3.1 --base-url http://localhost:11434/v1
"""


@app.command(epilog=EXAMPLES)
def compress(
    paths: Annotated[
        list[str],
        typer.Argument(help="Transcript files, directories, or - for stdin.", metavar="FILE|DIR|-"),
    ],
    output: Annotated[
        str | None,
        typer.Option("-o", "--output", help="Output file (one input) or directory (a batch)."),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Compact even under the threshold.")
    ] = False,
    prune_only: Annotated[
        bool,
        typer.Option("--prune-only", help="Stop after pruning when that is under the threshold."),
    ] = False,
    no_prune: Annotated[bool, typer.Option("--no-prune", help="Skip stage 1.")] = False,
    redact: Annotated[
        bool,
        typer.Option(
            "--redact",
            help="Also mask secrets (API keys, tokens, passwords) in the written transcript; "
            "the archive keeps the original for restore.",
        ),
    ] = False,
    offline: Annotated[bool, typer.Option("--offline", help="Use the offline summarizer.")] = False,
    strict: Annotated[
        bool,
        typer.Option("--strict", help="Exit 3 instead of falling back to the offline summary."),
    ] = False,
    abort_on_failure: Annotated[
        bool, typer.Option("--abort-on-failure", help="Exit 1 and write nothing if the LLM fails.")
    ] = False,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Do not reuse cached LLM summaries.")
    ] = False,
    report_file: Annotated[
        str | None, typer.Option("--report", help="Also write the report as JSON to this file.")
    ] = None,
    jobs: Annotated[
        int | None, typer.Option("--jobs", "-j", help="Worker processes for batches [1].")
    ] = None,
    fail_fast: Annotated[
        bool, typer.Option("--fail-fast", help="Stop a batch at the first error.")
    ] = False,
    to: Annotated[
        str | None, typer.Option("--to", help="Output format (default: same as input).")
    ] = None,
    previous_summary: Annotated[
        str | None,
        typer.Option("--previous-summary", help="File with an earlier summary to update."),
    ] = None,
    context_length: opts.ContextLength = None,
    threshold: opts.Threshold = None,
    target_ratio: opts.TargetRatio = None,
    tail_tokens: opts.TailTokens = None,
    protect_first: opts.ProtectFirst = None,
    protect_last: opts.ProtectLast = None,
    min_savings: opts.MinSavings = None,
    model: opts.Model = None,
    base_url: opts.BaseUrl = None,
    api_key: opts.ApiKey = None,
    timeout: opts.Timeout = None,
    max_retries: opts.MaxRetries = None,
    summarizer_context: opts.SummarizerContext = None,
    focus: opts.Focus = None,
    encoding: opts.Encoding = None,
    estimate: EstimateOpt = False,
    from_: FromOpt = None,
    messages_key: MessagesKeyOpt = None,
    skip_invalid: SkipInvalidOpt = False,
    min_retention: Annotated[
        str | None,
        typer.Option(
            "--min-retention",
            help="Refuse (exit 4, write nothing) a compaction whose compacted turns kept "
            "less than this share of their facts: 0.9, or per category paths=1,commands=0.9.",
        ),
    ] = None,
    archive: opts.Archive = None,
    no_archive: opts.NoArchive = False,
    config_file: opts.ConfigFile = None,
) -> None:
    """Compact transcripts: prune old tool output, summarize the middle, keep the tail.

    Under the threshold a transcript passes through unchanged (exit 0).
    """
    from ctxpack.evaluate.gate import parse_min_retention
    from ctxpack.formats.base import ReadOptions
    from ctxpack.pipeline.batch import FileJob, compress_file, discover
    from ctxpack.pipeline.compaction import CompressSettings

    with reported():
        resolved = opts.resolve(dict(locals()), config_file)
        settings = CompressSettings(
            budget=opts.budget(resolved),
            force=force,
            prune=not no_prune,
            prune_only=prune_only,
            redact=redact,
            min_savings=resolved["min_savings"],
            focus=resolved["focus"],
            previous_summary=_read_text(previous_summary),
            llm=opts.llm_settings(resolved, offline=offline, use_cache=not no_cache),
            strict=strict,
            abort_on_failure=abort_on_failure,
        )
        read_options = ReadOptions(skip_invalid=skip_invalid, messages_key=messages_key)
        thresholds = parse_min_retention(min_retention) if min_retention is not None else None
        inputs = discover(paths)
        if not inputs:
            raise UsageError("no transcripts found in the given paths")
        batch = len(inputs) > 1 or any(Path(p).is_dir() for p in paths if p != files.STDIO)

        def job(source: str, output_path: str | None) -> FileJob:
            return FileJob(
                source=source,
                output=output_path,
                settings=settings,
                read_options=read_options,
                input_format=from_,
                output_format=to,
                encoding=resolved["encoding"],
                estimate=estimate,
                archive=not no_archive,
                archive_path=archive,
                min_retention=thresholds,
            )

        if not batch:
            source = inputs[0][0]
            with _working(settings.llm.model if settings.llm else None):
                outcome = compress_file(job(source, _single_output(source, output)))
            _finish([outcome], report_file=report_file, batch=False)
            return
        if output is not None and Path(output).is_file():
            raise UsageError("-o must name a directory when compressing several files")
        batch_jobs = [
            job(source, str(Path(output) / rel) if output else files.sibling_output(source))
            for source, rel in inputs
        ]
        for j in batch_jobs:
            if j.output:
                Path(j.output).parent.mkdir(parents=True, exist_ok=True)
        outcomes = _run_with_progress(batch_jobs, workers=resolved["jobs"], fail_fast=fail_fast)
        _finish(outcomes, report_file=report_file, batch=True)


@contextlib.contextmanager
def _working(model: str | None) -> Iterator[None]:
    """A spinner with elapsed time while an LLM call may be running (terminals only)."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from ctxpack.cli.render import console

    if model is None or not console.is_terminal:
        yield
        return
    with Progress(
        SpinnerColumn(),
        TextColumn(f"compacting, summarizer {model}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        progress.add_task("", total=None)
        yield


def _single_output(source: str, output: str | None) -> str | None:
    if output is not None:
        return None if output == files.STDIO else output
    if sys.stdout.isatty() and source != files.STDIO:
        return files.sibling_output(source)
    return None


def _read_text(path: str | None) -> str | None:
    if path is None:
        return None
    return files.read_input(path).decode("utf-8", errors="replace").strip() or None


def _run_with_progress(jobs: list[FileJob], *, workers: int, fail_fast: bool) -> list[FileOutcome]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ctxpack.cli.render import console
    from ctxpack.pipeline.batch import run_batch

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
        task = progress.add_task("", total=len(jobs))

        def done(outcome: FileOutcome) -> bool:
            progress.update(task, advance=1, description=Path(outcome.job.source).name)
            return not (fail_fast and outcome.error)

        return run_batch(jobs, workers=max(1, workers), on_done=done)


def _finish(outcomes: list[FileOutcome], *, report_file: str | None, batch: bool) -> None:
    import orjson

    from ctxpack.cli.render import batch_totals, compress_report, error

    failures = [o for o in outcomes if o.error]
    reports = [o.report for o in outcomes if o.report is not None]
    if not batch:
        outcome = outcomes[0]
        if outcome.error:
            error(outcome.error)
            raise typer.Exit(outcome.exit_code)
        assert outcome.report is not None
        if outcome.data is not None:
            # The transcript first: the report then tells the truth about where it went.
            files.write_stdout(outcome.data)
        compress_report(outcome.report)
    else:
        batch_totals(
            [
                (
                    _short(r.path, outcomes),
                    r.before.tokens,
                    r.after.tokens,
                    ", ".join(sorted({s.status for s in r.sessions})),
                )
                for r in reports
            ]
        )
        for failure in failures:
            error(failure.error or "")
    if report_file is not None:
        document: dict[str, Any] = (
            reports[0].to_dict() if not batch and reports else _batch_document(outcomes)
        )
        files.write_atomic(report_file, orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")
    if failures:
        raise typer.Exit(max(f.exit_code for f in failures))


def _short(path: str, outcomes: list[FileOutcome]) -> str:
    """A batch row names the file relative to the common directory of the batch."""
    import os.path

    sources = [o.job.source for o in outcomes]
    root = os.path.commonpath(sources) if len(sources) > 1 else os.path.dirname(path)
    return os.path.relpath(path, root) if root else path


def _batch_document(outcomes: list[FileOutcome]) -> dict[str, Any]:
    reports = [o.report for o in outcomes if o.report is not None]
    before = sum(r.before.tokens for r in reports)
    after = sum(r.after.tokens for r in reports)
    return {
        "files": [r.to_dict() for r in reports],
        "errors": [{"path": o.job.source, "error": o.error} for o in outcomes if o.error],
        "tokens_before": before,
        "tokens_after": after,
        "ratio": round(after / before, 4) if before else 1.0,
    }


@app.command(
    "config",
    epilog="Examples:\n\n  ctxpack config\n\n  CTXPACK_THRESHOLD=0.7 ctxpack config --model gpt-4o",
)
def show_config(
    context_length: opts.ContextLength = None,
    threshold: opts.Threshold = None,
    target_ratio: opts.TargetRatio = None,
    tail_tokens: opts.TailTokens = None,
    protect_first: opts.ProtectFirst = None,
    protect_last: opts.ProtectLast = None,
    min_savings: opts.MinSavings = None,
    model: opts.Model = None,
    base_url: opts.BaseUrl = None,
    api_key: opts.ApiKey = None,
    timeout: opts.Timeout = None,
    max_retries: opts.MaxRetries = None,
    summarizer_context: opts.SummarizerContext = None,
    focus: opts.Focus = None,
    encoding: opts.Encoding = None,
    config_file: opts.ConfigFile = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print as JSON on stdout.")] = False,
) -> None:
    """Show the effective settings and where each value came from (flag, env, file, default)."""
    import orjson

    from ctxpack.cli.render import settings_table

    with reported():
        resolved = opts.resolve(dict(locals()), config_file)
        if json_out:
            data = {
                s.name: {
                    "value": config.display_value(s, resolved[s.name])
                    if s.secret
                    else resolved[s.name],
                    "source": resolved.sources[s.name],
                }
                for s in config.SETTINGS
            }
            files.write_stdout(
                orjson.dumps(
                    {"config_file": resolved.config_file, "settings": data},
                    option=orjson.OPT_INDENT_2,
                )
                + b"\n"
            )
            return
        settings_table(
            f"config file: {resolved.config_file or 'none'}",
            [
                (s.name, config.display_value(s, resolved[s.name]), resolved.sources[s.name])
                for s in config.SETTINGS
            ],
        )
