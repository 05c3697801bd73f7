"""`ctxpack summarize` and `ctxpack update`: stages 2-4 on a transcript,
with no threshold check and no pruning (compose with `ctxpack prune`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ctxpack import files
from ctxpack.cli import settings as opts
from ctxpack.cli.app import (
    EstimateOpt,
    FromOpt,
    MessagesKeyOpt,
    SkipInvalidOpt,
    app,
    emit,
    load,
    print_json,
    reported,
)
from ctxpack.errors import UsageError

if TYPE_CHECKING:
    from ctxpack.pipeline.compaction import CompressSettings
    from ctxpack.tokens.counter import TokenCounter
    from ctxpack.transcript import Transcript


SUMMARIZE_EXAMPLES = """Examples:

  ctxpack summarize --offline session.jsonl -o small.jsonl

  ctxpack prune s.jsonl | ctxpack summarize --offline - > small.jsonl

  ctxpack align s.jsonl --json > plan.json && ctxpack summarize s.jsonl --plan plan.json

  ctxpack summarize s.jsonl --model gpt-4o-mini --dump-prompt    # show the request, send nothing
"""

UPDATE_EXAMPLES = """Examples:

  ctxpack update compacted.jsonl -o compacted2.jsonl      # the session went on: fold new turns in

  ctxpack update s.jsonl --previous-summary summary.md --offline
"""


Output = Annotated[
    str | None,
    typer.Option("-o", "--output", help="Write the transcript here (default: stdout when piped)."),
]
Offline = Annotated[bool, typer.Option("--offline", help="Use the offline summarizer.")]
Strict = Annotated[
    bool, typer.Option("--strict", help="Exit 3 instead of falling back to the offline summary.")
]
Abort = Annotated[
    bool, typer.Option("--abort-on-failure", help="Exit 1 and write nothing if the LLM fails.")
]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Do not reuse cached LLM summaries.")]
DumpPrompt = Annotated[
    bool, typer.Option("--dump-prompt", help="Print the exact LLM request as JSON and exit.")
]
PreviousSummary = Annotated[
    str | None, typer.Option("--previous-summary", help="File with an earlier summary to update.")
]
ReportFile = Annotated[str | None, typer.Option("--report", help="Write the report as JSON here.")]
To = Annotated[str | None, typer.Option("--to", help="Output format (default: same as input).")]


def _run(args: dict[str, Any], *, require_previous: bool) -> None:
    import orjson

    from ctxpack import formats
    from ctxpack.align.plan import plans_from_json
    from ctxpack.cli.render import compress_report
    from ctxpack.pipeline.archiving import archive_result, settings_record
    from ctxpack.pipeline.compaction import CompressSettings, summarize_transcript
    from ctxpack.tokens.counter import TokenCounter

    resolved = opts.resolve(args, args["config_file"])
    previous = args["previous_summary"]
    settings = CompressSettings(
        budget=opts.budget(resolved),
        force=True,
        focus=resolved["focus"],
        previous_summary=(
            files.read_input(previous).decode("utf-8", "replace").strip() or None
            if previous
            else None
        ),
        llm=opts.llm_settings(resolved, offline=args["offline"], use_cache=not args["no_cache"]),
        strict=args["strict"],
        abort_on_failure=args["abort_on_failure"],
    )
    counter = TokenCounter(encoding=resolved["encoding"], estimate=args["estimate"])
    transcript = load(
        args["path"],
        fmt=args["from_"],
        messages_key=args["messages_key"],
        skip_invalid=args["skip_invalid"],
    )
    plans = None
    if args.get("plan"):
        raw = files.read_input(args["plan"])
        try:
            document = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise UsageError(f"--plan {args['plan']}: not JSON ({exc})") from None
        plans = plans_from_json(document, sessions=[s.messages for s in transcript.sessions])
    if args["dump_prompt"]:
        _dump_prompt(transcript, counter=counter, settings=settings, plans=plans)
        return
    result, report = summarize_transcript(
        transcript,
        counter=counter,
        settings=settings,
        plans=plans,
        require_previous=require_previous,
    )
    data = formats.write(result, counter=counter, fmt=args["to"])
    if not args["no_archive"]:
        archive_result(
            report.sessions,
            archive_path=args["archive"],
            original=transcript,
            result=result,
            output_bytes=data,
            settings=settings_record(settings),
            report=report.to_dict(),
        )
    report.output = emit(data, source=args["path"], output=args["output"])
    compress_report(report)
    if args["report_file"]:
        files.write_atomic(
            args["report_file"], orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2) + b"\n"
        )


def _dump_prompt(
    transcript: Transcript,
    *,
    counter: TokenCounter,
    settings: CompressSettings,
    plans: list[Any] | None,
) -> None:
    # Without a configured model the request is still shown, for a placeholder model.
    from ctxpack.align.boundaries import plan_boundaries
    from ctxpack.pipeline.compaction import prepare_request
    from ctxpack.summarize.llm.client import LLMSummarizer
    from ctxpack.summarize.llm.settings import LLMSettings

    llm = settings.llm or LLMSettings(model="<model>")
    requests = []
    for number, session in enumerate(transcript.sessions):
        plan = plans[number] if plans else None
        plan = plan or plan_boundaries(session.messages, counter=counter, budget=settings.budget)
        if not plan.compressible:
            continue
        prepared = prepare_request(session.messages, plan=plan, counter=counter, settings=settings)
        requests.append(LLMSummarizer(llm).dump_request(prepared.request))
    print_json(requests[0] if len(requests) == 1 else requests)


def _command(*, require_previous: bool) -> Callable[..., None]:
    """`summarize` and `update` share every option; update insists on a summary."""

    def command(
        path: Annotated[
            str, typer.Argument(help="Transcript file, or - for stdin.", metavar="FILE")
        ],
        output: Output = None,
        plan: Annotated[
            str | None, typer.Option("--plan", help="Plan JSON from `ctxpack align --json`.")
        ] = None,
        offline: Offline = False,
        strict: Strict = False,
        abort_on_failure: Abort = False,
        no_cache: NoCache = False,
        dump_prompt: DumpPrompt = False,
        previous_summary: PreviousSummary = None,
        report_file: ReportFile = None,
        to: To = None,
        context_length: opts.ContextLength = None,
        threshold: opts.Threshold = None,
        target_ratio: opts.TargetRatio = None,
        tail_tokens: opts.TailTokens = None,
        protect_first: opts.ProtectFirst = None,
        protect_last: opts.ProtectLast = None,
        model: opts.Model = None,
        base_url: opts.BaseUrl = None,
        api_key: opts.ApiKey = None,
        timeout: opts.Timeout = None,
        max_retries: opts.MaxRetries = None,
        summarizer_context: opts.SummarizerContext = None,
        focus: opts.Focus = None,
        encoding: opts.Encoding = None,
        estimate: EstimateOpt = False,
        from_: FromOpt = None,
        messages_key: MessagesKeyOpt = None,
        skip_invalid: SkipInvalidOpt = False,
        archive: opts.Archive = None,
        no_archive: opts.NoArchive = False,
        config_file: opts.ConfigFile = None,
    ) -> None:
        with reported():
            _run(dict(locals()), require_previous=require_previous)

    return command


summarize = app.command(
    "summarize",
    epilog=SUMMARIZE_EXAMPLES,
    help="Summarize the middle of each session into one reference record (stages 2-4). "
    "An earlier summary in the input is updated, never nested.",
)(_command(require_previous=False))
update = app.command(
    "update",
    epilog=UPDATE_EXAMPLES,
    help="Fold the turns after an earlier summary into it (stage 4). Fails with a clear "
    "error when the input holds no summary and none is given.",
)(_command(require_previous=True))
