"""`ctxpack count`: tokens and messages by role and kind."""

from __future__ import annotations

from typing import Annotated

import typer

from ctxpack.cli import settings as opts
from ctxpack.cli.app import (
    EstimateOpt,
    FromOpt,
    JsonOpt,
    MessagesKeyOpt,
    SkipInvalidOpt,
    app,
    load,
    print_json,
    reported,
)


@app.command(
    epilog="Examples:\n\n  ctxpack count session.jsonl\n\n  cat s.jsonl | ctxpack count - --json"
    "\n\n  ctxpack count runs.json --messages-key traj --encoding cl100k_base"
)
def count(
    paths: Annotated[
        list[str], typer.Argument(help="Transcript files, or - for stdin.", metavar="FILE...")
    ],
    json_out: JsonOpt = False,
    encoding: opts.Encoding = None,
    estimate: EstimateOpt = False,
    from_: FromOpt = None,
    messages_key: MessagesKeyOpt = None,
    skip_invalid: SkipInvalidOpt = False,
    config_file: opts.ConfigFile = None,
) -> None:
    """Count tokens and messages by role and by kind, per session and in total."""
    from ctxpack.cli.render import count_report
    from ctxpack.tokens.counter import TokenCounter
    from ctxpack.tokens.tally import count_transcript

    with reported():
        resolved = opts.resolve({"encoding": encoding}, config_file)
        counter = TokenCounter(encoding=resolved["encoding"], estimate=estimate)
        reports = []
        for path in paths:
            transcript = load(
                path,
                fmt=from_,
                messages_key=messages_key,
                skip_invalid=skip_invalid,
                keep_bytes=False,
            )
            reports.append(count_transcript(transcript, counter=counter))
        if json_out:
            data = [r.to_dict() for r in reports]
            print_json(data[0] if len(data) == 1 else {"files": data})
        else:
            count_report(reports)
