"""`ctxpack summarize` and `ctxpack update`: stages 2-4 on a transcript,
with no threshold check and no pruning (compose with `ctxpack prune`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ctxpack import files
from ctxpack.cli import settings as opts
from ctxpack.cli.app import InputArg, OutputOpt, app, print_json
from ctxpack.errors import UsageError

if TYPE_CHECKING:
    from ctxpack.pipeline.compaction import CompressSettings
    from ctxpack.tokens.counter import TokenCounter
    from ctxpack.transcript import Transcript


SUMMARIZE_EXAMPLES = """Examples:

\b
  ctxpack summarize --offline session.jsonl -o small.jsonl

\b
  ctxpack prune s.jsonl | ctxpack summarize --offline - > small.jsonl

\b
  ctxpack align s.jsonl --json > plan.json && ctxpack summarize s.jsonl --plan plan.json

\b
  ctxpack summarize s.jsonl --model gpt-4o-mini --dump-prompt    # show the request, send nothing
"""

UPDATE_EXAMPLES = """Examples:

\b
  ctxpack update compacted.jsonl -o compacted2.jsonl      # the session went on: fold new turns in

\b
  ctxpack update s.jsonl --previous-summary summary.md --offline
"""


def _read_plan(path: str | None) -> Any:
    import orjson

    if path is None:
        return None
    try:
        return orjson.loads(files.read_input(path))
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"--plan {path}: not JSON ({exc})") from None


def _dump_prompt(
    transcript: Transcript,
    *,
    counter: TokenCounter,
    settings: CompressSettings,
    plan: Any,
) -> None:
    # Without a configured model the request is still shown, for a placeholder model.
    from ctxpack.align.boundaries import plan_boundaries
    from ctxpack.align.plan import plans_from_json
    from ctxpack.pipeline.request import prepare_request
    from ctxpack.summarize.llm.client import LLMSummarizer
    from ctxpack.summarize.llm.settings import LLMSettings

    llm = settings.llm or LLMSettings(model="<model>")
    sessions = [s.messages for s in transcript.sessions]
    plans = plans_from_json(plan, sessions=sessions) if plan is not None else None
    requests = []
    for number, messages in enumerate(sessions):
        session_plan = plans[number] if plans else None
        session_plan = session_plan or plan_boundaries(
            messages, counter=counter, budget=settings.budget
        )
        if not session_plan.compressible:
            continue
        prepared = prepare_request(messages, plan=session_plan, counter=counter, settings=settings)
        requests.append(LLMSummarizer(llm).dump_request(prepared.request))
    print_json(requests[0] if len(requests) == 1 else requests)


def _command(*, require_previous: bool) -> Callable[..., None]:
    """`summarize` and `update` share every option; update insists on a summary
    (and, as it folds new turns into a record, takes no --fit budget)."""
    fit = () if require_previous else (opts.FIT,)

    @opts.takes(
        opts.READ,
        opts.COUNT,
        opts.BUDGET,
        *fit,
        opts.SUMMARY,
        opts.ENGINE,
        opts.OUTPUT,
        opts.ARCHIVE,
        opts.CONFIG,
    )
    def command(
        ctx: typer.Context,
        path: InputArg,
        output: OutputOpt = None,
        plan: Annotated[
            str | None, typer.Option("--plan", help="Plan JSON from `ctxpack align --json`.")
        ] = None,
        dump_prompt: Annotated[
            bool,
            typer.Option("--dump-prompt", help="Print the exact LLM request as JSON and exit."),
        ] = False,
    ) -> None:
        from ctxpack.cli.outcome import compact_one
        from ctxpack.pipeline.stages import Summarize

        resolved = opts.resolve(ctx)
        settings = opts.compress_settings(ctx, resolved, sending=not dump_prompt, force=True)
        document = _read_plan(plan)
        if settings.fit is not None and (document is not None or dump_prompt):
            raise UsageError(
                "--fit plans the cut itself: it cannot go with --plan or --dump-prompt"
            )
        if dump_prompt:
            transcript = opts.load(ctx, path, fmt=ctx.params["from_"])
            counter = opts.counter(ctx, resolved)
            _dump_prompt(transcript, counter=counter, settings=settings, plan=document)
            return
        compact_one(
            opts.single_job(ctx, resolved, source=path, output=output),
            stage=Summarize(settings, plan=document, require_previous=require_previous),
            model=settings.llm.model if settings.llm else None,
            report_file=ctx.params["report_file"],
        )

    return command


# name, help, examples, whether the input must hold a summary already
COMMANDS = (
    (
        "summarize",
        "Summarize the middle of each session into one reference record (stages 2-4). "
        "An earlier summary in the input is updated, never nested.",
        SUMMARIZE_EXAMPLES,
        False,
    ),
    (
        "update",
        "Fold the turns after an earlier summary into it (stage 4). Fails with a clear "
        "error when the input holds no summary and none is given.",
        UPDATE_EXAMPLES,
        True,
    ),
)
for name, text, examples, require_previous in COMMANDS:
    app.command(name, epilog=examples, help=text)(_command(require_previous=require_previous))
