"""`ctxpack prune`: stage 1 alone — old tool output out, no LLM."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ctxpack import files
from ctxpack import settings as config
from ctxpack.cli import settings as opts
from ctxpack.cli.app import InputArg, OutputOpt, app, print_json
from ctxpack.errors import UsageError

if TYPE_CHECKING:
    from ctxpack.prune.stage import PruneResult
    from ctxpack.transcript import Transcript


EXAMPLES = """Examples:

\b
  ctxpack prune --dry-run session.jsonl            # the plan and its savings; writes nothing

\b
  ctxpack prune session.jsonl -o pruned.jsonl

\b
  cat s.jsonl | ctxpack prune - | ctxpack count -

\b
  ctxpack prune runs.json --messages-key traj --tail-tokens 2000 --protect-last 6 --dry-run --json
"""

MAX_PLAN_ROWS = 200
WIDE_COLUMNS = 120

DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Print the plan on stderr and write nothing.")
]


@app.command(epilog=EXAMPLES)
@opts.takes(opts.READ, opts.COUNT, opts.BUDGET, opts.PRUNING, opts.ARCHIVE, opts.CONFIG)
def prune(
    ctx: typer.Context,
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
) -> None:
    """Replace old tool output with one-line digests, collapse repeated output and
    shrink huge tool arguments — no LLM. The protected head and tail stay verbatim;
    message count, order, roles and tool-call ids never change."""
    from ctxpack.cli.render import warn
    from ctxpack.pipeline.pruning import Prune
    from ctxpack.pipeline.run import run_file
    from ctxpack.prune.stage import PruneSettings

    if json_out and output == files.STDIO:
        raise UsageError("--json prints the plan on stdout; write the transcript with -o FILE")
    resolved = opts.resolve(ctx)
    job = opts.single_job(
        ctx,
        resolved,
        source=path,
        output=output,
        write=not dry_run and not (json_out and output is None),
    )
    stage = Prune(
        PruneSettings(
            budget=config.budget_from(resolved),
            min_savings=resolved["min_savings"],
            recall=resolved["recall"],
        )
    )
    outcome = run_file(job, stage=stage)
    report = outcome.report
    assert report is not None
    if outcome.data is not None:
        files.write_stdout(outcome.data)
    if json_out:
        print_json(plan_json(report.original, report.results, dry_run=dry_run))
    elif dry_run:
        render_plan(report.original, report.results)
    if outcome.target is not None:
        summary_line(report.original, report.results, outcome.target)
    for warning in report.warnings:
        warn(warning)


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
    from ctxpack.cli.grid import Cell, Grid
    from ctxpack.cli.render import layout_width, message, show

    many = len(results) > 1
    # Narrow terminals get the reason under the tool, so no column is squeezed to nothing.
    wide = layout_width() >= WIDE_COLUMNS
    table = Grid(title=f"prune plan — {transcript.path}")
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
            what: list[Cell] = (
                [row.tool, row.reason]
                if wide
                else [[(row.tool, ""), ("\n", ""), (row.reason, "dim")]]
            )
            cells = [str(row.index), row.role, row.action, *what]
            cells.append(f"{row.tokens_before:,} → {row.tokens_after:,}")
            table.add_row(*([session.label or "-"] if many else []), *cells)
    if shown:
        show(table)
    if hidden:
        message(f"… {hidden:,} more rows (see --json)", style="dim", wrap=True)
    for session, result in zip(transcript.sessions, results, strict=True):
        if result.rows and not result.applied:
            label = f"{session.label}: " if many else ""
            message(f"{label}{result.note}", style="yellow", wrap=True)
    message("plan: " + _totals_text(results), style="bold")
    for reason in _why_unchanged(results):
        message(reason, style="yellow")


def summary_line(transcript: Transcript, results: list[PruneResult], target: str) -> None:
    from rich.markup import escape

    from ctxpack.cli.render import console

    text = _totals_text(results)
    gated = sum(1 for r in results if r.rows and not r.applied)
    if gated:
        text += f"; {gated:,} session(s) left unchanged (under --min-savings)"
    console.print(escape(f"pruned {transcript.path} → {target}: {text}"), soft_wrap=True)
    for reason in _why_unchanged(results):
        console.print(escape(reason), style="yellow", soft_wrap=True)


def _why_unchanged(results: list[PruneResult]) -> list[str]:
    """When no message changes: why, once per reason, with how many sessions it is."""
    if any(r.applied for r in results):
        return []
    reasons = Counter(r.note for r in results if not r.rows)
    if len(results) == 1:
        return [f"nothing to prune: {note}" for note in reasons]
    return [
        f"nothing to prune in {count:,} of {len(results):,} sessions: {note}"
        for note, count in reasons.most_common()
    ]


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
