"""`ctxpack formats` lists the transcript formats; `ctxpack convert` rewrites a
transcript in another format (built from its messages alone)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ctxpack import files as io
from ctxpack.cli.app import (
    FromOpt,
    JsonOpt,
    MessagesKeyOpt,
    OutputOpt,
    SkipInvalidOpt,
    app,
    emit,
    print_json,
    reported,
)
from ctxpack.errors import UsageError

if TYPE_CHECKING:
    pass


SidechainsOpt = Annotated[
    bool,
    typer.Option(
        "--include-sidechains",
        help="Claude Code: also read subagent (sidechain) conversations, one session each.",
    ),
]


@app.command("formats", epilog="Example:\n\n  ctxpack formats --json")
def list_formats(json_out: JsonOpt = False) -> None:
    """List the transcript formats ctxpack reads and writes (detection order)."""
    from rich.table import Table

    from ctxpack import formats as registry
    from ctxpack.cli.render import console

    rows = [
        {
            "name": adapter.name,
            "readable": True,
            "writable": adapter.writable,
            "description": adapter.description,
        }
        for adapter in registry.REGISTRY.values()
    ]
    if json_out:
        print_json(rows)
        return
    table = Table(show_edge=False)
    for column in ("format", "read", "write", "description"):
        table.add_column(column)
    for row in rows:
        table.add_row(
            str(row["name"]), "yes", "yes" if row["writable"] else "-", str(row["description"])
        )
    console.print(table)


@app.command(
    epilog="Examples:\n\n  ctxpack convert session.jsonl --to openai -o session.openai.jsonl"
    "\n\n  ctxpack convert run.traj --to openai > run.jsonl"
)
def convert(
    path: Annotated[str, typer.Argument(help="Transcript file, or - for stdin.", metavar="FILE")],
    to: Annotated[str, typer.Option("--to", help="Output format (see `ctxpack formats`).")],
    output: OutputOpt = None,
    from_: FromOpt = None,
    include_sidechains: SidechainsOpt = False,
    messages_key: MessagesKeyOpt = None,
    skip_invalid: SkipInvalidOpt = False,
) -> None:
    """Rewrite a transcript in another format; the format read is detected unless --from."""
    from ctxpack import formats as registry
    from ctxpack.cli.render import note
    from ctxpack.formats.base import ReadOptions
    from ctxpack.tokens.counter import TokenCounter

    with reported():
        target = registry.get(to)
        if not target.writable:
            raise UsageError(f"format {target.name!r} can be read but not written")
        data = io.read_input(path)
        options = ReadOptions(
            skip_invalid=skip_invalid,
            messages_key=messages_key,
            include_sidechains=include_sidechains,
        )
        name = "<stdin>" if path == io.STDIO else path
        transcript = registry.read(data, path=name, fmt=from_, options=options)
        # Converting counts nothing itself: the default counter.
        out = registry.write(transcript, counter=TokenCounter(), fmt=target.name)
        where = emit(out, source=path, output=output)
        how = "named" if from_ else "detected"
        messages = sum(len(s.messages) for s in transcript.sessions)
        note(
            f"{name}: {transcript.format} ({how}), {len(transcript.sessions)} session(s), "
            f"{messages} message(s) -> {target.name}, written to {where}"
        )
