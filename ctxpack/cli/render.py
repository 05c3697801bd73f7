"""Everything people read: rich tables and messages, on stderr only."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from ctxpack.count import CountReport, Tally
from ctxpack.tokens import KINDS

console = Console(stderr=True, highlight=False)

MAX_SESSION_ROWS = 20


def error(text: str) -> None:
    console.print(f"[bold red]error:[/] {_escape(text)}")


def warn(text: str) -> None:
    console.print(f"[yellow]warning:[/] {_escape(text)}")


def note(text: str) -> None:
    console.print(_escape(text), style="dim")


def _escape(text: str) -> str:
    return text.replace("[", "\\[")


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def tally_tables(tally: Tally) -> list[Table]:
    roles = Table(show_edge=False)
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
    roles.add_row("total", f"{tally.messages:,}", f"{tally.tokens:,}", "100%", style="bold")

    kinds = Table(show_edge=False)
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
        console.print(_escape(header), style="bold", soft_wrap=True)
        if len(report.sessions) > 1:
            console.print(_sessions_table(report))
        for table in tally_tables(report.total):
            console.print(table)
    if len(reports) > 1:
        grand = Tally()
        for report in reports:
            grand.merge(report.total)
        console.print(f"all {len(reports)} files", style="bold")
        for table in tally_tables(grand):
            console.print(table)


def _sessions_table(report: CountReport) -> Table:
    table = Table(show_edge=False)
    table.add_column("session")
    table.add_column("messages", justify="right")
    table.add_column("tokens", justify="right")
    for label, t in report.sessions[:MAX_SESSION_ROWS]:
        table.add_row(label, f"{t.messages:,}", f"{t.tokens:,}")
    hidden = len(report.sessions) - MAX_SESSION_ROWS
    if hidden > 0:
        table.add_row(f"… {hidden} more (see --json)", "", "", style="dim")
    return table


def key_values(title: str, rows: list[tuple[str, Any]]) -> None:
    table = Table(title=title, title_justify="left", show_header=False, show_edge=False)
    table.add_column("key", style="bold")
    table.add_column("value")
    for key, value in rows:
        table.add_row(key, _escape(str(value)))
    console.print(table)
