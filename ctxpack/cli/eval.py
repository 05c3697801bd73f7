"""`ctxpack eval`: what a compaction kept, as tables on stderr or JSON on
stdout, and a --min-retention gate for CI (exit 4)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ctxpack import files
from ctxpack.cli import settings as opts
from ctxpack.cli.app import JsonOpt, app, print_json
from ctxpack.errors import RetentionError, UsageError

if TYPE_CHECKING:
    from rich.table import Table

    from ctxpack.evaluate.retention import EvalReport
    from ctxpack.transcript import Transcript


EXAMPLES = """Examples:

\b
  ctxpack compress --force --offline s.jsonl -o small.jsonl

\b
  ctxpack eval s.jsonl small.jsonl                     # tables on stderr

\b
  ctxpack eval s.jsonl small.jsonl --json > eval.json

\b
  ctxpack eval s.jsonl small.jsonl --min-retention 0.9   # CI: exit 4 below 90%

\b
  ctxpack eval run.traj small.json --min-retention paths=1.0,commands=1.0,errors=0.8
"""
MISSING_SHOWN = 3
MISSING_CHARS = 100


@app.command("eval", epilog=EXAMPLES)
@opts.takes(opts.READ, opts.COUNT, opts.CONFIG)
def eval_(
    ctx: typer.Context,
    original: Annotated[
        str,
        typer.Argument(
            help="The transcript before compaction, or - for stdin.", metavar="ORIGINAL"
        ),
    ],
    compacted: Annotated[
        str,
        typer.Argument(
            help="The same transcript after compaction, or - for stdin.", metavar="COMPACTED"
        ),
    ],
    json_out: JsonOpt = False,
    min_retention: Annotated[
        str | None,
        typer.Option(
            "--min-retention",
            help="Fail (exit 4) when the compacted turns kept less than this share of their "
            "facts, or when a check fails: 0.9 for all facts, or per category, e.g. "
            "paths=1.0,commands=0.9. Categories: paths, commands, errors, identifiers, "
            "urls, values, directives, overall.",
        ),
    ] = None,
    compacted_from: Annotated[
        str | None,
        typer.Option("--compacted-from", help="Format of COMPACTED (default: detected)."),
    ] = None,
) -> None:
    """Measure what a compaction kept: per category of facts (paths, commands, errors,
    identifiers, URLs, values, user directives) of the compacted turns, how many are
    still anywhere in COMPACTED; plus checks (tool pairs, latest user message, summary
    headings and prefix) and the token ratio. Sessions are paired by position; the
    formats may differ (e.g. a SWE-agent .traj compacted to OpenAI JSON)."""
    from rich.markup import escape

    from ctxpack.cli.render import console, note
    from ctxpack.evaluate.gate import gate, parse_min_retention
    from ctxpack.evaluate.retention import evaluate_transcripts

    thresholds = parse_min_retention(min_retention) if min_retention is not None else None
    if original == files.STDIO and compacted == files.STDIO:
        raise UsageError("only one of ORIGINAL and COMPACTED can be read from stdin")
    counter = opts.counter(ctx, opts.resolve(ctx))
    before = opts.load(ctx, original, fmt=ctx.params["from_"])
    after = opts.load(ctx, compacted, fmt=compacted_from)
    if not _derived(before, after):
        raise UsageError(
            f"{after.path} does not look derived from {before.path}: no head message in"
            " common and no ctxpack summary, note or ref in it; compare a transcript with"
            " its own compaction"
        )
    reports = evaluate_transcripts(before, after, counter=counter)
    failures = gate(reports, thresholds) if thresholds is not None else []
    if json_out:
        print_json(_payload(before.path, after.path, reports, thresholds, failures))
    else:
        _render(f"{before.path} ({before.format})", f"{after.path} ({after.format})", reports)
    if thresholds is None:
        return
    if failures:
        for failure in failures:
            console.print(f"[red]gate:[/] {escape(failure)}")
        raise RetentionError(f"--min-retention not met ({len(failures)} failure(s))")
    note("gate passed: " + ", ".join(f"{k} ≥ {v:.0%}" for k, v in thresholds.items()))


# How many messages at the start of each session a compaction keeps verbatim
# at the least (the protected head) and is compared on.
HEAD_MESSAGES = 3


def _derived(before: Transcript, after: Transcript) -> bool:
    """Whether COMPACTED can be a compaction of ORIGINAL: a head message in
    common, or anything ctxpack writes (a summary, its note, a ref)."""
    from ctxpack import markers
    from ctxpack import messages as m
    from ctxpack.refs import REF_PREFIX

    def heads(t: Transcript) -> set[str]:
        texts = (m.text(msg) for s in t.sessions for msg in s.messages[:HEAD_MESSAGES])
        return {text for text in texts if text.strip()}

    if heads(before) & heads(after):
        return True
    return any(
        markers.is_summary(msg) or markers.has_system_note(msg) or REF_PREFIX in m.text(msg)
        for s in after.sessions
        for msg in s.messages
    )


def _payload(
    original: str,
    compacted: str,
    reports: list[EvalReport],
    thresholds: dict[str, float] | None,
    failures: list[str],
) -> dict[str, Any]:
    from ctxpack.evaluate.retention import combine

    gate_block = (
        None
        if thresholds is None
        else {"thresholds": thresholds, "passed": not failures, "failures": failures}
    )
    return {
        "original": original,
        "compacted": compacted,
        "total": combine(reports).to_dict(),
        "sessions": [r.to_dict() for r in reports],
        "gate": gate_block,
    }


def _render(original: str, compacted: str, reports: list[EvalReport]) -> None:
    from rich.markup import escape

    from ctxpack.cli.render import console, note
    from ctxpack.evaluate.retention import combine

    total = combine(reports)
    console.print(f"{escape(original)} → {escape(compacted)}", style="bold", soft_wrap=True)
    note(
        f"{total.sessions} session(s); {total.region_messages:,} of {total.messages_before:,} "
        "original messages were compacted (the region); facts are searched in all of "
        "the compacted transcript's text and tool-call arguments"
    )
    console.print(_retention_table(total))
    for row in total.region:
        if row.missing:
            shown = ", ".join(_clip(x) for x in row.missing[:MISSING_SHOWN])
            more = len(row.missing) - MISSING_SHOWN
            tail = f" (+{more} more, see --json)" if more > 0 else ""
            note(f"missing {row.name}: {shown}{tail}")
    console.print(_checks_table(total))
    summary = f"; summary {total.summary_tokens:,} tokens" if total.summary_tokens else ""
    console.print(
        f"tokens {total.tokens_before:,} → {total.tokens_after:,} "
        f"({total.ratio:.1%} of the original){summary}"
    )
    console.print(
        f"region tokens {total.region_tokens_before:,} → {total.region_tokens_after:,} "
        f"({total.region_ratio:.1%}: what replaced the compacted messages over their own)"
    )


def _retention_table(report: EvalReport) -> Table:
    from rich.table import Table

    from ctxpack.evaluate.retention import CATEGORIES, OVERALL

    table = Table(show_edge=False, title="retention", title_justify="left")
    table.add_column("category")
    table.add_column("found", justify="right")
    table.add_column("kept", justify="right")
    table.add_column("retention", justify="right")
    table.add_column("whole transcript", justify="right")
    for key in (*CATEGORIES, OVERALL):
        if key == OVERALL:
            table.add_section()
        found, kept = report.found(key), report.kept(key)
        table.add_row(
            key,
            f"{found:,}",
            f"{kept:,}",
            f"{kept / found:.1%}" if found else "-",
            _share(report, key),
            style="bold" if key == OVERALL else ("red" if kept < found else None),
        )
    return table


def _share(report: EvalReport, key: str) -> str:
    found = report.found(key, scope="transcript")
    return f"{report.kept(key, scope='transcript') / found:.1%}" if found else "-"


def _checks_table(report: EvalReport) -> Table:
    from rich.markup import escape
    from rich.table import Table

    table = Table(show_edge=False, title="checks", title_justify="left")
    table.add_column("check")
    table.add_column("result")
    table.add_column("detail", overflow="fold")
    for check in report.checks:
        result = "[green]pass[/]" if check.passed else "[bold red]FAIL[/]"
        table.add_row(check.name.replace("_", " "), result, escape(check.detail))
    return table


def _clip(text: str) -> str:
    from rich.markup import escape

    flat = " ".join(text.split())
    flat = flat if len(flat) <= MISSING_CHARS else flat[: MISSING_CHARS - 1] + "…"
    return escape(flat)
