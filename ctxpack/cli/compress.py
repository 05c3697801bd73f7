"""`ctxpack compress` (the whole pipeline, one file, a pipe or a batch) and
`ctxpack config` (the effective settings)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from ctxpack import files
from ctxpack import settings as config
from ctxpack.cli import batchview
from ctxpack.cli import settings as opts
from ctxpack.cli.app import app
from ctxpack.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable

    from ctxpack.cli.batchview import OnDone
    from ctxpack.fit.plan import FitPlan
    from ctxpack.pipeline.batch import Finished
    from ctxpack.pipeline.run import FileJob
    from ctxpack.pipeline.stages import Compress


EXAMPLES = """Examples:

\b
  ctxpack compress session.jsonl                      # writes session.ctxpack.jsonl

\b
  ctxpack compress --force --offline s.jsonl -o small.jsonl --report report.json

\b
  cat s.jsonl | ctxpack compress - | ctxpack count -   # in a pipe

\b
  ctxpack compress logs/ -o compacted/ --jobs 4       # a whole tree, mirrored

\b
  ctxpack compress s3://bucket/runs/ -o s3://bucket/compacted/ --runner ray

\b
  ctxpack compress s.jsonl --model llama3.1 --base-url http://localhost:11434/v1
"""


@app.command(epilog=EXAMPLES)
@opts.takes(
    opts.READ,
    opts.COUNT,
    opts.BUDGET,
    opts.FIT,
    opts.PRUNING,
    opts.SUMMARY,
    opts.ENGINE,
    opts.OUTPUT,
    opts.ARCHIVE,
    opts.JOBS,
    opts.RUNNER,
    opts.CONFIG,
)
def compress(
    ctx: typer.Context,
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Transcript files, directories, or - for stdin; with --runner ray, also"
            " URIs (s3://, gs://, ...).",
            metavar="FILE|DIR|-",
        ),
    ],
    output: Annotated[
        str | None,
        typer.Option(
            "-o",
            "--output",
            help="Output file; a directory: a batch mirrors its tree there, one file"
            " goes into it as <stem>.ctxpack<suffix>.",
        ),
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
    fail_fast: Annotated[
        bool, typer.Option("--fail-fast", help="Stop a batch at the first error.")
    ] = False,
    min_retention: Annotated[
        str | None,
        typer.Option(
            "--min-retention",
            help="Refuse (exit 4, write nothing) a compaction whose compacted turns kept "
            "less than this share of their facts: 0.9, or per category paths=1,commands=0.9.",
        ),
    ] = None,
    include: Annotated[
        list[str] | None,
        typer.Option(
            "--include",
            metavar="GLOB",
            help="In directories, take only files whose name or relative path matches"
            " (repeatable; default: *.jsonl, *.json, *.traj, *.ndjson).",
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="With --fit: print the plan (every message, its action, tokens before and"
            " after, why) and write nothing.",
        ),
    ] = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="With --dry-run: the plan as JSON on stdout.")
    ] = False,
    exclude: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude",
            metavar="GLOB",
            help="In directories, leave out matching files (repeatable).",
        ),
    ] = None,
) -> None:
    """Compact transcripts: prune old tool output, summarize the middle, keep the tail.

    Under the threshold a transcript passes through unchanged (exit 0).
    """
    from ctxpack.cli.outcome import compact_one
    from ctxpack.evaluate.gate import parse_min_retention
    from ctxpack.pipeline.discover import discover
    from ctxpack.pipeline.stages import Compress

    resolved = opts.resolve(ctx)
    settings = opts.compress_settings(
        ctx,
        resolved,
        force=force,
        prune="no-prune" if no_prune else "prune-only" if prune_only else "prune",
        redact=redact,
        min_savings=resolved["min_savings"],
    )
    stage = Compress(
        settings,
        min_retention=parse_min_retention(min_retention) if min_retention is not None else None,
    )
    include_globs, exclude_globs = tuple(include or ()), tuple(exclude or ())
    report_file = ctx.params["report_file"]
    if resolved["runner"] == "ray":
        if dry_run or json_out:
            raise UsageError("--dry-run prints the plan of --fit on one transcript, not on Ray")
        _compress_on_ray(
            ctx,
            resolved,
            paths,
            output=output,
            stage=stage,
            fail_fast=fail_fast,
            globs=(include_globs, exclude_globs),
        )
        return
    if resolved["ray_address"] is not None:
        raise UsageError("--ray-address goes with --runner ray")
    found = discover(paths, include=include_globs, exclude=exclude_globs)
    inputs = found.files
    if not inputs:
        _none_found(found.skipped)
    single = len(inputs) == 1 and not any(Path(p).is_dir() for p in paths if p != files.STDIO)
    if (dry_run or json_out) and (settings.fit is None or not single or not dry_run):
        raise UsageError("--dry-run prints the plan of --fit on one transcript (--json with it)")
    if dry_run:
        from ctxpack.cli.render import fit_plan

        job = opts.single_job(ctx, resolved, source=inputs[0][0], output=output, write=False)
        _print_plan(job, stage, json_out=json_out, show=fit_plan)
        return
    if single:
        source = inputs[0][0]
        job = opts.single_job(ctx, resolved, source=source, output=output)
        compact_one(
            job,
            stage=stage,
            model=settings.llm.model if settings.llm else None,
            report_file=report_file,
        )
        return
    if output is not None and Path(output).is_file():
        raise UsageError("-o must name a directory when compressing several files")
    if report_file is not None:
        files.check_writable(report_file)
    jobs = [
        opts.file_job(
            ctx,
            resolved,
            source=source,
            output=str(Path(output) / rel) if output else files.sibling_output(source),
            named=True,
        )
        for source, rel in inputs
    ]
    for job in jobs:
        if job.output:
            Path(job.output).parent.mkdir(parents=True, exist_ok=True)

    def run(done: OnDone) -> list[Finished]:
        from ctxpack.pipeline.batch import finished, run_batch

        outcomes = run_batch(
            jobs,
            stage=stage,
            workers=max(1, resolved["jobs"]),
            on_done=lambda o: done(o.job.source, bool(o.error)),
        )
        return [finished(o) for o in outcomes]

    batchview.finish(
        batchview.with_progress(len(jobs), run, fail_fast=fail_fast),
        report_file=report_file,
        skipped=found.skipped,
    )


def _compress_on_ray(
    ctx: typer.Context,
    resolved: config.Resolved,
    paths: list[str],
    *,
    output: str | None,
    stage: Compress,
    fail_fast: bool,
    globs: tuple[tuple[str, ...], tuple[str, ...]],
) -> None:
    """The batch on a Ray cluster: the same compaction and report, the files read
    and written through pyarrow's filesystems (local folders, s3://, gs://, ...)."""
    from ctxpack.cli.render import console
    from ctxpack.distributed.corpus import compress_corpus, find

    if files.STDIO in paths:
        raise UsageError("--runner ray reads files, not stdin")
    if output is None:
        raise UsageError("--runner ray writes a mirror of the inputs: give -o DEST (folder or URI)")
    corpus = find(paths, include=globs[0], exclude=globs[1])
    if not corpus.files:
        _none_found(corpus.skipped)
    report_file = ctx.params["report_file"]
    if report_file is not None:
        files.check_writable(report_file)
    job = opts.file_job(ctx, resolved, source="", output=None, named=True)

    def run(done: OnDone) -> list[Finished]:
        return compress_corpus(
            corpus,
            dest=output,
            job=job,
            stage=stage,
            address=resolved["ray_address"],
            quiet=not console.is_terminal,
            on_done=lambda f: done(f.source, bool(f.error)),
        )

    batchview.finish(
        batchview.with_progress(len(corpus.files), run, fail_fast=fail_fast),
        report_file=report_file,
        skipped=corpus.skipped,
    )


def _none_found(skipped: dict[str, int]) -> NoReturn:
    shown = f" ({batchview.skipped_text(skipped)})" if skipped else ""
    raise UsageError(f"no transcripts found in the given paths{shown}")


def _print_plan(
    job: FileJob, stage: Compress, *, json_out: bool, show: Callable[[FitPlan], None]
) -> None:
    from ctxpack.cli.app import print_json
    from ctxpack.pipeline.run import run_file

    report = run_file(job, stage=stage).report
    assert report is not None and report.fit is not None
    if json_out:
        print_json(report.fit.to_dict(rows=True))
    else:
        show(report.fit)


@app.command(
    "config",
    epilog="Examples:\n\n\b\n  ctxpack config"
    "\n\n\b\n  CTXPACK_THRESHOLD=0.7 ctxpack config --model gpt-4o",
)
@opts.takes(opts.EVERY_SETTING, opts.CONFIG)
def show_config(
    ctx: typer.Context,
    json_out: Annotated[bool, typer.Option("--json", help="Print as JSON on stdout.")] = False,
) -> None:
    """Show the effective settings and where each value came from (flag, env, file, default)."""
    from ctxpack.cli.app import print_json
    from ctxpack.cli.render import listing

    resolved = opts.resolve(ctx)
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
        print_json({"config_file": resolved.config_file, "settings": data})
        return
    listing(
        ["setting", "value", "source"],
        [
            [s.name, config.display_value(s, resolved[s.name]), resolved.sources[s.name]]
            for s in config.SETTINGS
        ],
        title=f"config file: {resolved.config_file or 'none'}",
    )
