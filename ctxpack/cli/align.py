"""`ctxpack align`: show where head, middle and tail fall, and why."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from ctxpack import settings as config
from ctxpack.cli import settings as opts
from ctxpack.cli.app import InputArg, JsonOpt, app, print_json

if TYPE_CHECKING:
    from ctxpack.align.budget import Budget
    from ctxpack.align.plan import AlignPlan
    from ctxpack.tokens.counter import TokenCounter
    from ctxpack.transcript import Transcript


MAX_SESSION_ROWS = 20

EPILOG = (
    "Regions: head [0, head_end) and tail [tail_start, end) stay verbatim; the middle"
    " [head_end, tail_start) is what summarize replaces. Indexes count messages from 0.\n\n"
    "--json prints one object on stdout, always of the shape"
    ' {"path", "format", "encoding", "estimate", "budget": {...}, "sessions": [plan, ...]}'
    ' with one plan per session (its label under "session"), even for a single session.'
    " `ctxpack summarize --plan FILE` reads it back.\n\n"
    "Examples:\n\n\b\n  ctxpack align session.jsonl\n\n"
    "  ctxpack align session.jsonl --tail-tokens 4000 --protect-first 2\n\n"
    "  ctxpack align session.jsonl --json > plan.json &&"
    " ctxpack summarize --plan plan.json session.jsonl"
)


@app.command(epilog=EPILOG)
@opts.takes(opts.READ, opts.COUNT, opts.BUDGET, opts.CONFIG)
def align(ctx: typer.Context, path: InputArg, json_out: JsonOpt = False) -> None:
    """Plan the head, middle and tail of each session (stage 2); change nothing."""
    from ctxpack.align.boundaries import plan_boundaries

    resolved = opts.resolve(ctx)
    budget = config.budget_from(resolved)
    counter = opts.counter(ctx, resolved)
    transcript = opts.load(ctx, path, fmt=ctx.params["from_"])
    plans = [
        (
            _label(session.label, n),
            plan_boundaries(session.messages, counter=counter, budget=budget),
        )
        for n, session in enumerate(transcript.sessions)
    ]
    if json_out:
        print_json(_report(transcript, counter, budget, plans))
    else:
        _render(transcript, counter, budget, plans)


def _label(label: str, number: int) -> str:
    return label or f"#{number}"


def _report(
    transcript: Transcript,
    counter: TokenCounter,
    budget: Budget,
    plans: list[tuple[str, AlignPlan]],
) -> dict[str, Any]:
    return {
        "path": transcript.path,
        "format": transcript.format,
        "encoding": counter.encoding_name,
        "estimate": counter.estimate,
        "budget": {
            "context_length": budget.context_length,
            "threshold": budget.threshold,
            "target_ratio": budget.target_ratio,
            "tail_tokens": budget.tail_tokens,
            "protect_first": budget.protect_first,
            "protect_last": budget.protect_last,
            "tail_budget": budget.tail_budget,
        },
        "sessions": [{"session": label, **plan.to_dict()} for label, plan in plans],
    }


def _span(start: int, end: int) -> str:
    if end <= start:
        return "-"
    return f"#{start}" if end - start == 1 else f"#{start}-#{end - 1}"


def _regions(plan: AlignPlan) -> list[tuple[str, int, int, int]]:
    return [
        ("head", 0, plan.head_end, plan.tokens_head),
        ("middle", plan.head_end, plan.tail_start, plan.tokens_middle),
        ("tail", plan.tail_start, plan.total, plan.tokens_tail),
    ]


def _render(
    transcript: Transcript,
    counter: TokenCounter,
    budget: Budget,
    plans: list[tuple[str, AlignPlan]],
) -> None:
    from rich.markup import escape

    from ctxpack.cli.render import console

    mode = "estimate (4 chars/token)" if counter.estimate else counter.encoding_name
    header = f"{transcript.path} — {transcript.format}, {len(plans)} session(s), {mode}"
    if transcript.skipped_lines:
        header += f", {transcript.skipped_lines} invalid line(s) skipped"
    console.print(escape(header), style="bold", soft_wrap=True)
    console.print(
        escape(
            f"tail budget {budget.tail_budget:,} tokens (soft ceiling x1.5), protect first "
            f"{budget.protect_first}, protect last {budget.protect_last}"
        ),
        style="dim",
    )
    if len(plans) == 1:
        _render_plan(*plans[0])
    else:
        _render_sessions(plans)


def _render_plan(label: str, plan: AlignPlan) -> None:
    from rich.markup import escape
    from rich.table import Table

    from ctxpack.cli.render import console

    table = Table(title=escape(f"session {label}"), title_justify="left", show_edge=False)
    for column, justify in (
        ("region", "left"),
        ("messages", "left"),
        ("count", "right"),
        ("tokens", "right"),
        ("share", "right"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    total = plan.tokens_total
    for name, start, end, tokens in _regions(plan):
        share = f"{100 * tokens / total:.1f}%" if total else "-"
        table.add_row(name, _span(start, end), f"{end - start:,}", f"{tokens:,}", share)
    table.add_section()
    table.add_row("total", _span(0, plan.total), f"{plan.total:,}", f"{total:,}", "", style="bold")
    console.print(table)
    facts = [f"tail budget {plan.tail_budget:,} tokens, soft ceiling {plan.soft_ceiling:,}"]
    if plan.previous_summary_index is not None:
        facts.append(f"existing summary at #{plan.previous_summary_index} (updated, not nested)")
    if plan.latest_user_index is not None:
        facts.append(f"latest user message #{plan.latest_user_index}")
    if plan.latest_assistant_text_index is not None:
        facts.append(f"latest assistant text #{plan.latest_assistant_text_index}")
    console.print(escape("; ".join(facts)), style="dim")
    if plan.adjustments:
        moves = Table(show_edge=False)
        moves.add_column("adjustment")
        moves.add_column("boundary", justify="right")
        moves.add_column("reason")
        for adj in plan.adjustments:
            moves.add_row(adj.kind, f"{adj.from_index} → {adj.to_index}", escape(adj.reason))
        console.print(moves)
    if plan.compressible:
        console.print(
            escape(f"compress {plan.messages_middle} message(s), {plan.tokens_middle:,} tokens"),
            style="bold green",
        )
    else:
        console.print(escape(plan.note), style="bold yellow")


def _render_sessions(plans: list[tuple[str, AlignPlan]]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from ctxpack.cli.render import console

    table = Table(show_edge=False)
    for column in ("session", "head", "middle", "tail", "tokens h/m/t"):
        table.add_column(column, no_wrap=True)
    table.add_column("adjustments")
    for label, plan in plans[:MAX_SESSION_ROWS]:
        spans = [_span(start, end) for _, start, end, _ in _regions(plan)]
        if not plan.compressible:
            spans[1] = "nothing to compress"
        kinds = ", ".join(dict.fromkeys(a.kind for a in plan.adjustments))
        table.add_row(
            escape(label),
            *spans,
            f"{plan.tokens_head:,}/{plan.tokens_middle:,}/{plan.tokens_tail:,}",
            kinds,
        )
    hidden = len(plans) - MAX_SESSION_ROWS
    if hidden > 0:
        table.add_row(f"… {hidden} more (see --json)", "", "", "", "", "", style="dim")
    console.print(table)
    compressible = [plan for _, plan in plans if plan.compressible]
    console.print(
        escape(
            f"{len(compressible)} of {len(plans)} session(s) have something to compress: "
            f"{sum(p.messages_middle for p in compressible):,} message(s), "
            f"{sum(p.tokens_middle for p in compressible):,} tokens"
        ),
        style="bold",
    )
