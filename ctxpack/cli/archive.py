"""`ctxpack restore`, `show`, `log` and `ctxpack archive check|gc`: read back and
maintain the lossless archive of compactions."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ctxpack import files as io
from ctxpack.cli.app import App, InputArg, app, print_json
from ctxpack.cli.settings import ArchiveOpt
from ctxpack.errors import UsageError

if TYPE_CHECKING:
    from rich.table import Table

    from ctxpack.archive.types import Compaction


archive_app = App(
    name="archive",
    help="Verify or prune the archive that makes every compaction reversible.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(archive_app, name="archive")

MAX_REFS_SHOWN = 3


@app.command(
    epilog="Examples:\n\n\b\n  ctxpack restore session.ctxpack.jsonl -o session.jsonl"
    "\n\n\b\n  ctxpack restore grown.ctxpack.jsonl --expand -o session.jsonl  # appended since"
    "\n\n\b\n  cat small.jsonl | ctxpack restore - > original.jsonl"
)
def restore(
    path: InputArg,
    output: Annotated[
        str | None,
        typer.Option(
            "-o",
            "--output",
            metavar="FILE",
            help="Write the original here (atomically). Default: stdout when piped,"
            " else <stem>.restored<suffix> beside the input.",
        ),
    ] = None,
    expand: Annotated[
        bool,
        typer.Option(
            "--expand",
            help="The compacted file grew since (lines appended): restore the original"
            " followed by the new lines.",
        ),
    ] = False,
    archive: ArchiveOpt = None,
) -> None:
    """Rebuild the original transcript, byte for byte, from a compacted one."""
    from ctxpack.archive.store import Archive
    from ctxpack.cli.render import note

    data = io.read_input(path)
    with Archive.open(archive, create=False) as store:
        found = store.find_prefix(data) if expand else store.find_by_output(data)
        original = store.expand(data) if expand else store.restore(data)
        # A file compacted twice restores to the first round's output.
        earlier = store.find_by_output(original)
    target = _write(original, source=path, output=output)
    what = f"compaction {found.id} of {found.source_path}" if found else "the archive"
    extra = len(data) - found.output_size if found and expand else 0
    grown = f" plus {extra:,} appended byte(s)" if extra else ""
    note(f"restored {len(original):,} bytes from {what}{grown} -> {target}")
    if earlier is not None:
        note(
            f"what was restored is itself compacted (compaction {earlier.id} of"
            f" {earlier.source_path}): restore it too for the transcript before that"
        )


def _write(data: bytes, *, source: str, output: str | None) -> str:
    if output is not None and output != io.STDIO:
        io.write_atomic(output, data, inputs=(source,))
        return output
    if output is None and sys.stdout.isatty() and source != io.STDIO:
        target = _restored_name(source)
        if Path(target).exists():
            raise UsageError(f"{target} already exists; choose where to write with -o")
        io.write_atomic(target, data, inputs=(source,))
        return target
    io.write_stdout(data)
    return "stdout"


def _restored_name(source: str) -> str:
    """session.ctxpack.jsonl -> session.restored.jsonl (never the original's own name)."""
    p = Path(source)
    stem = p.stem.removesuffix(".ctxpack") or p.stem
    return str(p.with_name(f"{stem}.restored{p.suffix}"))


@app.command(
    epilog="Examples:\n\n\b\n  ctxpack show ctxpack:3f2a9c01bd"
    "\n\n\b\n  ctxpack show 3f2a9c   # any unique prefix of 6+ hex digits"
    "\n\n\b\n  ctxpack show ctxpack:3f2a9c01bd | less"
)
def show(
    ref: Annotated[
        str,
        typer.Argument(
            help="A ref from a placeholder (ctxpack:<hex>), with or without the prefix.",
            metavar="REF",
        ),
    ],
    archive: ArchiveOpt = None,
) -> None:
    """Print one archived blob (a pruned output, a summarized middle, an original) in full."""
    from ctxpack.archive.store import Archive

    with Archive.open(archive, create=False) as store:
        data = store.get_blob(ref)
    io.write_stdout(data)


@app.command(
    name="log",
    epilog="Examples:\n\n\b\n  ctxpack log\n\n\b\n  ctxpack log --limit 5 --json"
    "\n\n\b\n  ctxpack log --archive ci-archive.db",
)
def log_command(
    limit: Annotated[
        int,
        typer.Option(
            "--limit", "-n", min=0, metavar="N", help="Show at most N compactions (0: all)."
        ),
    ] = 20,
    json_out: Annotated[bool, typer.Option("--json", help="Print the log as JSON on stdout.")] = (
        False
    ),
    archive: ArchiveOpt = None,
) -> None:
    """List archived compactions, newest first: time, source, tokens, id, refs."""
    from rich.console import Console

    from ctxpack.archive.db import resolve_path
    from ctxpack.archive.store import Archive
    from ctxpack.cli.render import listing, note

    entries: list[Compaction] = []
    if resolve_path(archive).exists():
        with Archive.open(archive, create=False) as store:
            entries = store.log(limit or None)
    if json_out:
        print_json([entry.to_dict() for entry in entries])
    elif not entries:
        note(f"no compactions archived in {resolve_path(archive)}")
    elif sys.stdout.isatty():
        Console(highlight=False, emoji=False).print(_log_table(entries))
    else:
        listing(
            ["time", "id", "tokens_before", "tokens_after", "source", "refs"],
            [_log_row(entry) for entry in entries],
        )


def _log_row(entry: Compaction) -> list[str]:
    """One compaction per line, every ref in it: for grep, cut and xargs ctxpack show."""
    return [
        entry.created.astimezone().strftime("%Y-%m-%dT%H:%M"),
        entry.id,
        "-" if entry.tokens_before is None else str(entry.tokens_before),
        "-" if entry.tokens_after is None else str(entry.tokens_after),
        entry.source_path,
        " ".join(_refs(entry)),
    ]


def _refs(entry: Compaction) -> list[str]:
    """The input's ref, then the ref of each blob once: a command's output each
    time it ran is one blob."""
    return list(dict.fromkeys([entry.input_ref, *entry.blob_refs]))


def _log_table(entries: list[Compaction]) -> Table:
    # Stacked cells keep the table readable in 80 columns: long paths fold, refs never do.
    from rich.table import Table

    table = Table(
        show_edge=False,
        show_lines=True,
        caption="refs: the original first, then what was pruned or summarized"
        " (print one with: ctxpack show REF)",
        caption_justify="left",
    )
    table.add_column("time / id", no_wrap=True)
    table.add_column("source", overflow="fold", ratio=1)
    table.add_column("tokens", justify="right", no_wrap=True)
    table.add_column("refs", no_wrap=True)
    for entry in entries:
        before, after = entry.tokens_before, entry.tokens_after
        tokens = f"{before:,}\n→ {after:,}" if before is not None and after is not None else "-"
        source, *blobs = _refs(entry)
        refs = [f"[bold]{source}[/]", *blobs[:MAX_REFS_SHOWN]]
        hidden = len(blobs) - MAX_REFS_SHOWN
        if hidden > 0:
            refs.append(f"… {hidden} more")
        table.add_row(
            entry.created.astimezone().strftime("%Y-%m-%d %H:%M") + "\n" + entry.id,
            _escape(entry.source_path),
            tokens,
            "\n".join(refs),
        )
    return table


def _escape(text: str) -> str:
    return text.replace("[", "\\[")


@archive_app.command(
    epilog="Examples:\n\n\b\n  ctxpack archive check"
    "\n\n\b\n  ctxpack archive check --archive ci-archive.db"
)
def check(archive: ArchiveOpt = None) -> None:
    """Verify every blob against its hash and that every compaction's blobs exist.

    Exits 1 and lists the problems if any.
    """
    from ctxpack.archive.db import resolve_path
    from ctxpack.archive.store import Archive
    from ctxpack.cli.render import console, error, note

    path = resolve_path(archive)
    if not path.exists():
        note(f"no archive at {path}; nothing to check")
        return
    with Archive.open(archive, create=False) as store:
        problems = store.check()
        stats = store.stats()
    for problem in problems:
        error(problem)
    if problems:
        console.print(f"{len(problems)} problem(s) in {_escape(str(path))}", style="bold red")
        raise typer.Exit(1)
    note(
        f"{path}: {stats.compactions:,} compaction(s), {stats.blobs:,} blob(s) verified;"
        " no problems"
    )


@archive_app.command(
    epilog="Examples:\n\n\b\n  ctxpack archive gc --older-than 30d"
    "\n\n\b\n  ctxpack archive gc --older-than 12h --archive ci-archive.db"
)
def gc(
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than",
            metavar="AGE",
            help="Remove compactions older than this: N followed by h, d or w (e.g. 30d).",
        ),
    ],
    archive: ArchiveOpt = None,
) -> None:
    """Remove old compactions and the blobs nothing references any more."""
    from ctxpack.archive.db import resolve_path
    from ctxpack.archive.store import Archive
    from ctxpack.archive.types import parse_age
    from ctxpack.cli.render import note

    age = parse_age(older_than)
    path = resolve_path(archive)
    if not path.exists():
        note(f"no archive at {path}; nothing to remove")
        return
    with Archive.open(archive, create=False) as store:
        removed = store.gc(age)
        stats = store.stats()
    note(
        f"removed {removed:,} compaction(s) older than {older_than.strip()};"
        f" {stats.compactions:,} compaction(s) and {stats.blobs:,} blob(s) remain"
        f" ({stats.stored_bytes / 1e6:,.1f} MB stored)"
    )
