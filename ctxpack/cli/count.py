"""`ctxpack count`: tokens and messages by role and kind."""

from __future__ import annotations

from typing import Annotated

import typer

from ctxpack.cli import settings as opts
from ctxpack.cli.app import JsonOpt, app, print_json


@app.command(
    epilog="Examples:\n\n  ctxpack count session.jsonl\n\n  cat s.jsonl | ctxpack count - --json"
    "\n\n  ctxpack count runs.json --messages-key traj --encoding cl100k_base"
)
@opts.takes(opts.READ, opts.COUNT, opts.CONFIG)
def count(
    ctx: typer.Context,
    paths: Annotated[
        list[str], typer.Argument(help="Transcript files, or - for stdin.", metavar="FILE...")
    ],
    json_out: JsonOpt = False,
) -> None:
    """Count tokens and messages by role and by kind, per session and in total."""
    from ctxpack.cli.render import count_report
    from ctxpack.tokens.tally import count_transcript

    counter = opts.counter(ctx, opts.resolve(ctx))
    reports = [
        count_transcript(opts.load(ctx, path, fmt=ctx.params["from_"]), counter=counter)
        for path in paths
    ]
    if json_out:
        data = [r.to_dict() for r in reports]
        print_json(data[0] if len(data) == 1 else {"files": data})
    else:
        count_report(reports)
