"""`ctxpack formats` lists the transcript formats; `ctxpack convert` rewrites a
transcript in another format (built from its messages alone)."""

from __future__ import annotations

from typing import Annotated

import typer

from ctxpack import files as io
from ctxpack.cli import settings as opts
from ctxpack.cli.app import InputArg, JsonOpt, OutputOpt, app, print_json

SidechainsOpt = Annotated[
    bool,
    typer.Option(
        "--include-sidechains",
        help="Claude Code: also read subagent (sidechain) conversations, one session each.",
    ),
]


@app.command("formats", epilog="Example:\n\n\b\n  ctxpack formats --json")
def list_formats(json_out: JsonOpt = False) -> None:
    """List the transcript formats ctxpack reads and writes (detection order)."""
    from ctxpack import formats as registry
    from ctxpack.cli.render import listing

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
    listing(
        ["format", "read", "write", "description"],
        [
            [str(row["name"]), "yes", "yes" if row["writable"] else "-", str(row["description"])]
            for row in rows
        ],
    )


@app.command(
    epilog="Examples:\n\n\b\n  ctxpack convert session.jsonl --to openai -o session.openai.jsonl"
    "\n\n\b\n  ctxpack convert run.traj --to openai > run.jsonl"
)
@opts.takes(opts.READ)
def convert(
    ctx: typer.Context,
    path: InputArg,
    to: Annotated[str, typer.Option("--to", help="Output format (see `ctxpack formats`).")],
    output: OutputOpt = None,
    include_sidechains: SidechainsOpt = False,
) -> None:
    """Rewrite a transcript in another format; the format read is detected unless --from."""
    from ctxpack import formats as registry
    from ctxpack.cli.render import note
    from ctxpack.pipeline.run import FileJob, run_file, unchanged

    from_ = ctx.params["from_"]
    target = registry.get(to).name
    job = FileJob(
        source=path,
        output=opts.output_target(path, output),
        read_options=opts.read_options(ctx, include_sidechains=include_sidechains),
        input_format=from_,
        output_format=target,
        archive=False,
    )
    outcome = run_file(job, stage=unchanged)
    transcript = outcome.report
    assert transcript is not None and outcome.target is not None
    if outcome.data is not None:
        io.write_stdout(outcome.data)
    how = "named" if from_ else "detected"
    messages = sum(len(s.messages) for s in transcript.sessions)
    note(
        f"{transcript.path}: {transcript.format} ({how}), {len(transcript.sessions)} session(s), "
        f"{messages} message(s) -> {target}, written to {outcome.target}"
    )
