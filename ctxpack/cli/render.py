"""Everything people read: tables and messages, on stderr only. On a
terminal rich draws them; elsewhere the same lines are written plainly
(cli.grid), and rich is loaded only for what needs it."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from ctxpack.cli.grid import Grid, plain_text, plain_width
from ctxpack.tokens.counter import KINDS
from ctxpack.tokens.tally import CountReport, Tally

if TYPE_CHECKING:
    from rich.console import Console

MAX_SESSION_ROWS = 20
MAX_NOTES = 5

_console: Console | None = None


def __getattr__(name: str) -> Any:
    # `console`, rich's one Console on stderr, is made when first asked for.
    if name == "console":
        return _rich()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _rich() -> Console:
    global _console
    if _console is None:
        from rich.console import Console

        # emoji off: a path or tool name like `x:warning:y` is printed as written.
        _console = Console(stderr=True, highlight=False, emoji=False)
    return _console


# Messages never wrap: a path or `file:line:` stays whole for people and for grep.
def error(text: str) -> None:
    message(text, label=("error:", "bold red"))


def warn(text: str) -> None:
    message(text, label=("warning:", "yellow"))


def note(text: str) -> None:
    message(text, style="dim")


def message(
    text: str, *, style: str = "", label: tuple[str, str] | None = None, wrap: bool = False
) -> None:
    """One message, `label` (its words, its style) before it; whole on one
    line, or with `wrap` folded at the width as rich folds it."""
    shown = f"{label[0]} {text}" if label else text
    width = plain_width(sys.stderr)
    if width is not None and plain_text(shown) and (not wrap or _fits(shown, width)):
        sys.stderr.write(shown + "\n")
        sys.stderr.flush()
        return
    from rich.text import Text

    styled = Text.assemble(label, " ", text) if label else Text(text)
    _rich().print(styled, style=style or None, soft_wrap=not wrap)


def _fits(text: str, width: int) -> bool:
    from rich.cells import cell_len

    return cell_len(text) <= width


def layout_width() -> int:
    """The width tables are laid out at: rich's console's, or the plain one."""
    return plain_width(sys.stderr) or _rich().width


def show(grid: Grid) -> None:
    """A table: its plain lines where rich would write no styles, else rich's."""
    width = plain_width(sys.stderr)
    lines = grid.plain(width) if width is not None else None
    if lines is None:
        console = _rich()
        console.print(grid.to_rich(console.width))
        return
    sys.stderr.write(lines)
    sys.stderr.flush()


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def tally_tables(tally: Tally) -> list[Grid]:
    roles = Grid()
    roles.add_column("role")
    roles.add_column("messages", justify="right")
    roles.add_column("tokens", justify="right")
    roles.add_column("share", justify="right")
    for role in sorted(tally.tokens_by_role, key=lambda r: -tally.tokens_by_role[r]):
        tokens = tally.tokens_by_role[role]
        roles.add_row(
            role, f"{tally.messages_by_role[role]:,}", f"{tokens:,}", _pct(tokens, tally.tokens)
        )
    roles.add_section()
    roles.add_row("total", f"{tally.messages:,}", f"{tally.tokens:,}", "100%", bold=True)

    kinds = Grid()
    kinds.add_column("kind")
    kinds.add_column("tokens", justify="right")
    kinds.add_column("share", justify="right")
    for kind in KINDS:
        tokens = tally.tokens_by_kind.get(kind, 0)
        kinds.add_row(kind.replace("_", " "), f"{tokens:,}", _pct(tokens, tally.tokens))
    return [roles, kinds]


def count_report(reports: list[CountReport]) -> None:
    for report in reports:
        mode = "estimate (4 chars/token)" if report.estimate else report.encoding
        header = f"{report.path} — {report.format}, {len(report.sessions)} session(s), {mode}"
        if report.skipped_lines:
            header += f", {report.skipped_lines} invalid line(s) skipped"
        message(header, style="bold")
        if len(report.sessions) > 1:
            show(_sessions_table(report))
        for table in tally_tables(report.total):
            show(table)
    if len(reports) > 1:
        grand = Tally()
        for report in reports:
            grand.merge(report.total)
        message(f"all {len(reports)} files", style="bold")
        for table in tally_tables(grand):
            show(table)


def breakpoint_table(path: str, sessions: list[tuple[str, list[Any]]]) -> None:
    """Where a Claude request's cache breakpoints fall, session by session."""
    table = Grid(title=f"{path}: cache breakpoints")
    table.add_column("session")
    table.add_column("after")
    table.add_column("role")
    table.add_column("cached tokens", justify="right")
    for label, found in sessions[:MAX_SESSION_ROWS]:
        for mark in found:
            where = "system prompt" if mark.system else f"message #{mark.index}"
            table.add_row(label, where, mark.role, f"{mark.position:,}")
    hidden = len(sessions) - MAX_SESSION_ROWS
    if hidden > 0:
        table.add_row(f"… {hidden} more (see --json)", "", "", "", dim=True)
    show(table)


def _sessions_table(report: CountReport) -> Grid:
    table = Grid()
    table.add_column("session")
    table.add_column("messages", justify="right")
    table.add_column("tokens", justify="right")
    for label, t in report.sessions[:MAX_SESSION_ROWS]:
        table.add_row(label, f"{t.messages:,}", f"{t.tokens:,}")
    hidden = len(report.sessions) - MAX_SESSION_ROWS
    if hidden > 0:
        table.add_row(f"… {hidden} more (see --json)", "", "", dim=True)
    return table


def key_values(rows: list[tuple[str, Any]]) -> None:
    table = Grid(show_header=False)
    table.add_column("key", bold=True)
    table.add_column("value")
    for key, value in rows:
        table.add_row(key, str(value))
    show(table)


def compress_report(report: Any) -> None:
    """One file's before/after table, per-stage savings and warnings."""
    before, after = report.before, report.after
    statuses = sorted({s.status for s in report.sessions})
    header = (
        f"{report.path} — {report.format}, {len(report.sessions)} session(s): {', '.join(statuses)}"
    )
    if report.skipped_lines:
        header += f"; {report.skipped_lines} invalid line(s) skipped and kept as they were"
    message(header, style="bold")
    notes: dict[str, int] = {}
    for s in report.sessions:
        for text in s.notes:
            notes[text] = notes.get(text, 0) + 1
    shown = sorted(notes.items(), key=lambda item: -item[1])
    for text, n in shown[:MAX_NOTES]:
        note(text if len(report.sessions) == 1 else f"{n} session(s): {text}")
    if len(shown) > MAX_NOTES:
        note(f"… {len(shown) - MAX_NOTES} more kinds of note (see --report)")
    if before.tokens == after.tokens and before.messages == after.messages:
        if report.output:
            note(f"written to {report.output}")
        _warnings(report.sessions)
        return
    table = Grid()
    table.add_column("")
    table.add_column("before", justify="right")
    table.add_column("after", justify="right")
    table.add_column("change", justify="right")
    for role in sorted(set(before.tokens_by_role) | set(after.tokens_by_role)):
        b, a = before.tokens_by_role.get(role, 0), after.tokens_by_role.get(role, 0)
        table.add_row(f"{role} tokens", f"{b:,}", f"{a:,}", _change(a, b))
    table.add_section()
    for kind in KINDS:
        b, a = before.tokens_by_kind.get(kind, 0), after.tokens_by_kind.get(kind, 0)
        if a or b:
            table.add_row(kind.replace("_", " "), f"{b:,}", f"{a:,}", _change(a, b))
    table.add_section()
    table.add_row(
        "messages",
        f"{before.messages:,}",
        f"{after.messages:,}",
        _change(after.messages, before.messages),
    )
    table.add_row(
        "tokens",
        f"{before.tokens:,}",
        f"{after.tokens:,}",
        _change(after.tokens, before.tokens),
        bold=True,
    )
    show(table)

    sessions = report.sessions
    facts = [
        ("pruned outputs", sum(s.pruned for s in sessions)),
        ("deduplicated", sum(s.deduplicated for s in sessions)),
        ("arguments shrunk", sum(s.args_shrunk for s in sessions)),
        ("saved by prune", f"{sum(s.prune_saved for s in sessions):,} tokens"),
        ("saved by summary", f"{sum(s.summary_saved for s in sessions):,} tokens"),
    ]
    summarized = [s for s in sessions if s.summary_source]
    if summarized:
        sources = sorted(
            {
                s.summary_source + (f" ({s.summary_model})" if s.summary_model else "")
                for s in summarized
            }
        )
        facts.append(
            (
                "summary",
                f"{sum(s.summary_tokens for s in summarized):,} tokens, {', '.join(sources)}",
            )
        )
        if any(s.updated_previous_summary for s in summarized):
            facts.append(("previous summary", "updated, not nested"))
    retention = _retention_line(sessions)
    if retention:
        facts.append(("facts kept", retention))
    if report.fit is not None:
        facts.extend(_fit_facts(report.fit))
    facts.append(("ratio", f"{after.tokens / before.tokens:.1%}" if before.tokens else "-"))
    kept = report.cache_prefix_tokens
    facts.append(
        ("cache prefix", f"{kept:,} tokens unchanged ({_pct(kept, before.tokens)} of the input)")
    )
    if report.output:
        facts.append(("written to", report.output))
    key_values(facts)
    _warnings(sessions)


def _fit_facts(plan: Any) -> list[tuple[str, str]]:
    verdict = "met" if plan.met else "not reachable; smallest output written (--fit-best-effort)"
    spent = ", ".join(f"{region} {tokens:,}" for region, tokens in plan.spent().items() if tokens)
    return [
        ("fit budget", f"{plan.budget:,} tokens ({plan.target}): {verdict}"),
        ("fit result", f"{plan.tokens_after:,} tokens; smallest reachable {plan.smallest:,}"),
        ("fit spent", spent or "-"),
    ]


def fit_plan(plan: Any) -> None:
    """The --fit plan for people, on stderr: one row per message and the record."""
    table = Grid()
    for header in ("session", "#", "role", "region", "action", "before", "after", "reason"):
        table.add_column(header, justify="right" if header in ("#", "before", "after") else "left")
    for row in plan.rows:
        table.add_row(
            row.session,
            "" if row.index is None else str(row.index),
            row.role,
            row.region,
            row.action,
            f"{row.tokens_before:,}",
            f"{row.tokens_after:,}",
            row.reason,
        )
    show(table)
    total = sum(row.tokens_after for row in plan.rows)
    met = "within" if total <= plan.budget else "over"
    message(
        f"total {total:,} tokens, {met} the budget of {plan.budget:,} ({plan.target});"
        f" steps: {', '.join(dict.fromkeys(plan.steps))}",
        style="bold",
    )


def _warnings(sessions: list[Any]) -> None:
    grouped: dict[str, list[str]] = {}
    for s in sessions:
        for warning in s.warnings:
            grouped.setdefault(warning, []).append(s.label)
    for warning, labels in grouped.items():
        if len(sessions) == 1:
            warn(warning)
        elif len(labels) <= 3:
            warn(f"{', '.join(labels)}: {warning}")
        else:
            warn(f"{len(labels)} sessions: {warning}")


def _retention_line(sessions: list[Any]) -> str:
    """Kept/found per fact category over the compacted turns of every session."""
    found: dict[str, int] = {}
    missing: dict[str, int] = {}
    before = after = 0
    for s in sessions:
        if not s.retention:
            continue
        for key, n in s.retention["found"].items():
            found[key] = found.get(key, 0) + n
            missing[key] = missing.get(key, 0) + s.retention["missing"][key]
        before += s.retention["region_tokens_before"]
        after += s.retention["region_tokens_after"]
    parts = [
        f"{key} {found[key] - missing[key]}/{found[key]}"
        for key in found
        if found[key] and key != "overall"
    ]
    if before:
        parts.append(f"region {before:,} → {after:,} tokens")
    return ", ".join(parts)


def _change(after: int, before: int) -> str:
    if before == after:
        return "="
    if not before:
        return f"+{after:,}"
    return f"{(after - before) / before:+.1%}"


def listing(headers: list[str], rows: list[list[str]], *, title: str | None = None) -> None:
    """A listing is data, so it goes to stdout: a table on a terminal; piped, plain
    columns (no box, no colour) that grep, cut and awk read. The title goes to stderr."""
    from ctxpack import files

    if title is not None:
        note(title)
    if sys.stdout.isatty():
        from rich.console import Console

        table = Grid()
        for header in headers:
            table.add_column(header)
        for row in rows:
            table.add_row(*row)
        Console(highlight=False, emoji=False).print(table.to_rich())
        return
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=True)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [headers, *rows]
    ]
    files.write_stdout("".join(line + "\n" for line in lines).encode())
