"""`ctxpack prune`: stage 1 alone — old tool output out, no LLM."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ctxpack import files
from ctxpack.cli import settings as opts
from ctxpack.cli.app import (
    EstimateOpt,
    FromOpt,
    InputArg,
    MessagesKeyOpt,
    OutputOpt,
    SkipInvalidOpt,
    app,
    emit,
    load,
    print_json,
    reported,
)
from ctxpack.errors import UsageError

if TYPE_CHECKING:
    from ctxpack.prune.stage import (
        PruneResult,
    )
    from ctxpack.transcript import Transcript


EXAMPLES = """Examples:

  ctxpack prune --dry-run session.jsonl            # the plan and its savings; writes nothing

  ctxpack prune session.jsonl -o pruned.jsonl

  cat s.jsonl | ctxpack prune - | ctxpack count -

  ctxpack prune runs.json --messages-key traj --tail-tokens 2000 --protect-last 6 --dry-run --json
"""

MAX_PLAN_ROWS = 200
WIDE_COLUMNS = 120

DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Print the plan on stderr and write nothing.")
]


@app.command(epilog=EXAMPLES)
def prune(
    path: InputArg,
    output: OutputOpt = None,
    dry_run: DryRunOpt = False,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the plan and totals as JSON on stdout (the transcript goes to -o).",
        ),
    ] = False,
    context_length: opts.ContextLength = None,
    threshold: opts.Threshold = None,
    target_ratio: opts.TargetRatio = None,
    tail_tokens: opts.TailTokens = None,
    protect_first: opts.ProtectFirst = None,
    protect_last: opts.ProtectLast = None,
    min_savings: opts.MinSavings = None,
    encoding: opts.Encoding = None,
    estimate: EstimateOpt = False,
    from_: FromOpt = None,
    messages_key: MessagesKeyOpt = None,
    skip_invalid: SkipInvalidOpt = False,
    archive: opts.Archive = None,
    no_archive: opts.NoArchive = False,
    config_file: opts.ConfigFile = None,
) -> None:
    """Replace old tool output with one-line digests, collapse repeated output and
    shrink huge tool arguments — no LLM. The protected head and tail stay verbatim;
    message count, order, roles and tool-call ids never change."""
    from ctxpack import formats
    from ctxpack.pipeline.archiving import archive_result
    from ctxpack.prune.stage import PruneSettings, prune_transcript, totals
    from ctxpack.tokens.counter import TokenCounter

    with reported():
        if json_out and output == files.STDIO:
            raise UsageError("--json prints the plan on stdout; write the transcript with -o FILE")
        resolved = opts.resolve(dict(locals()), config_file)
        counter = TokenCounter(encoding=resolved["encoding"], estimate=estimate)
        transcript = load(
            path,
            fmt=from_,
            messages_key=messages_key,
            skip_invalid=skip_invalid,
            keep_bytes=not dry_run,
        )
        settings = PruneSettings(budget=opts.budget(resolved), min_savings=resolved["min_savings"])
        pruned, results = prune_transcript(transcript, counter=counter, settings=settings)
        if json_out:
            print_json(plan_json(transcript, results, dry_run=dry_run))
        elif dry_run:
            render_plan(transcript, results)
        if dry_run or (json_out and output is None):
            return
        data = formats.write(pruned, counter=counter)
        if not no_archive:
            report = {"command": "prune", **totals(results)}
            archive_result(
                [],
                archive_path=archive,
                original=transcript,
                result=pruned,
                output_bytes=data,
                settings={"min_savings": settings.min_savings, **vars(settings.budget)},
                report=report,
            )
        target = emit(data, source=path, output=output)
        summary_line(transcript, results, target)


def plan_json(
    transcript: Transcript, results: list[PruneResult], *, dry_run: bool
) -> dict[str, Any]:
    from ctxpack.prune.stage import totals

    sessions = []
    for session, result in zip(transcript.sessions, results, strict=True):
        sessions.append({"label": session.label, **result.to_dict()})
    return {
        "path": transcript.path,
        "format": transcript.format,
        "dry_run": dry_run,
        "skipped_lines": transcript.skipped_lines,
        **totals(results),
        "results": sessions,
    }


def render_plan(transcript: Transcript, results: list[PruneResult]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from ctxpack.cli.render import console

    many = len(results) > 1
    # Narrow terminals get the reason under the tool, so no column is squeezed to nothing.
    wide = console.width >= WIDE_COLUMNS
    table = Table(show_edge=False, title=f"prune plan — {escape(transcript.path)}")
    table.title_justify = "left"
    if many:
        table.add_column("session", no_wrap=True)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("role", no_wrap=True)
    table.add_column("action", no_wrap=True)
    table.add_column("tool" if wide else "tool / reason", max_width=None if wide else 40)
    if wide:
        table.add_column("reason")
    table.add_column("tokens", justify="right", no_wrap=True)
    shown = hidden = 0
    for session, result in zip(transcript.sessions, results, strict=True):
        for row in result.rows:
            if shown >= MAX_PLAN_ROWS:
                hidden += 1
                continue
            shown += 1
            tool, reason = escape(row.tool), escape(row.reason)
            what = [tool, reason] if wide else [f"{tool}\n[dim]{reason}[/]"]
            cells = [str(row.index), row.role, row.action, *what]
            cells.append(f"{row.tokens_before:,} → {row.tokens_after:,}")
            table.add_row(*([escape(session.label or "-")] if many else []), *cells)
    if shown:
        console.print(table)
    if hidden:
        console.print(f"… {hidden:,} more rows (see --json)", style="dim")
    for session, result in zip(transcript.sessions, results, strict=True):
        if result.rows and not result.applied:
            label = f"{session.label}: " if many else ""
            console.print(escape(f"{label}{result.note}"), style="yellow")
    console.print(escape("plan: " + _totals_text(results)), style="bold", soft_wrap=True)


def summary_line(transcript: Transcript, results: list[PruneResult], target: str) -> None:
    from rich.markup import escape

    from ctxpack.cli.render import console

    text = _totals_text(results)
    gated = sum(1 for r in results if r.rows and not r.applied)
    if gated:
        text += f"; {gated:,} session(s) left unchanged (under --min-savings)"
    console.print(escape(f"pruned {transcript.path} → {target}: {text}"), soft_wrap=True)


def _totals_text(results: list[PruneResult]) -> str:
    """Totals of what is (or, in a dry run, would be) written: gated sessions count as unchanged."""
    from ctxpack.prune.stage import ACTIONS, DEDUPE, SHRINK, SUMMARIZE, totals

    t = totals(results)
    applied = [row for r in results if r.applied for row in r.rows]
    count = {action: sum(1 for row in applied if row.action == action) for action in ACTIONS}
    before, saved = t["tokens_before"], t["saved"]
    share = f"{100 * saved / before:.1f}%" if before else "-"
    return (
        f"{len(applied):,} messages changed ({count[DEDUPE]:,} deduplicated, "
        f"{count[SUMMARIZE]:,} outputs summarized, {count[SHRINK]:,} argument sets shrunk); "
        f"tokens {before:,} → {t['tokens_after']:,}, saved {saved:,} ({share})"
    )
