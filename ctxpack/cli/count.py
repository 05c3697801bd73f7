"""`ctxpack count`: tokens and messages by role and kind."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ctxpack import files
from ctxpack.cli import settings as opts
from ctxpack.cli.app import JsonOpt, app, print_json

if TYPE_CHECKING:
    from ctxpack.evaluate.cache import Breakpoint
    from ctxpack.transcript import Transcript

# The format whose reader starts at the agent's own last compaction.
BOUNDED_FORMAT = "claude-stream-json"


def _messages(transcript: Transcript) -> int:
    return sum(len(s.messages) for s in transcript.sessions)


@app.command(
    epilog="Examples:\n\n\b\n  ctxpack count session.jsonl"
    "\n\n\b\n  cat s.jsonl | ctxpack count - --json"
    "\n\n\b\n  ctxpack count runs.json --messages-key traj --encoding cl100k_base"
    "\n\n\b\n  ctxpack count session.jsonl --cache-breakpoints"
)
@opts.takes(opts.READ, opts.COUNT, opts.CONFIG)
def count(
    ctx: typer.Context,
    paths: Annotated[
        list[str], typer.Argument(help="Transcript files, or - for stdin.", metavar="FILE")
    ],
    json_out: JsonOpt = False,
    whole: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Count the whole file, also the turns before the agent's own last compaction"
            " (claude-stream-json), which it no longer sees.",
        ),
    ] = False,
    cache_breakpoints: Annotated[
        bool,
        typer.Option(
            "--cache-breakpoints",
            help="Also show where a Claude request's four prompt-cache breakpoints would fall"
            " (the end of the system prompt, the last three messages), each with the tokens"
            " it caches.",
        ),
    ] = False,
) -> None:
    """Count tokens and messages by role and by kind, per session and in total.

    What is counted is what the agent would resume from: for claude-stream-json,
    the turns after its last compact boundary (a note says how many come before;
    --all counts them too)."""
    from ctxpack.cli.render import breakpoint_table, count_report, note
    from ctxpack.pipeline.counting import count_by_stretches
    from ctxpack.pipeline.run import parse_transcript
    from ctxpack.tokens.tally import count_transcript

    counter = opts.counter(ctx, opts.resolve(ctx))
    fmt = ctx.params["from_"]
    reports = []
    # Per file: (session label, its breakpoints) for every session.
    marks: list[list[tuple[str, list[Breakpoint]]]] = []
    for path in paths:
        options = opts.read_options(ctx, keep_bytes=False, whole_history=whole)
        raw: bytes | None = None
        if not cache_breakpoints:
            name = files.display_name(path)
            # A large file is counted by children, each of which copies only
            # its stretch of the mapped file; stdin is read once, here.
            with files.mapped_input(path) as mapped:
                source = mapped if mapped is not None else files.read_input(path)
                found = count_by_stretches(
                    source, path=name, fmt=fmt, options=options, counter=counter
                )
            if found is not None:
                reports.append(found)
                continue
            raw = source if isinstance(source, bytes) else None
            del source  # freed with raw once it is parsed
        if raw is None:
            raw = files.read_input(path)
        transcript = parse_transcript(raw, source=path, fmt=fmt, options=options)
        del raw
        # (stdin cannot be read twice: it is counted without the note)
        if not whole and transcript.format == BOUNDED_FORMAT and path != files.STDIO:
            earlier = _messages(opts.load(ctx, path, fmt=fmt, whole_history=True)) - _messages(
                transcript
            )
            if earlier > 0:
                note(
                    f"{transcript.path}: counting from the last compact boundary;"
                    f" {earlier:,} earlier message(s) before it are not counted (--all counts them)"
                )
        reports.append(count_transcript(transcript, counter=counter))
        if cache_breakpoints:
            from ctxpack.evaluate.cache import breakpoints

            marks.append(
                [
                    (s.label or f"#{n}", breakpoints(s.messages, counter=counter))
                    for n, s in enumerate(transcript.sessions)
                ]
            )
    if json_out:
        data = [r.to_dict() for r in reports]
        for document, sessions in zip(data, marks, strict=False):
            document["cache_breakpoints"] = [
                {"session": label, "breakpoints": [vars(b) for b in found]}
                for label, found in sessions
            ]
        print_json(data[0] if len(data) == 1 else {"files": data})
        return
    count_report(reports)
    for report, sessions in zip(reports, marks, strict=False):
        breakpoint_table(report.path, sessions)
