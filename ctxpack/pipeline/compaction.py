"""The whole compaction: prune -> align -> summarize/update -> assemble."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from ctxpack import markers
from ctxpack import messages as m
from ctxpack.align.boundaries import plan_boundaries
from ctxpack.align.budget import Budget
from ctxpack.align.plan import AlignPlan
from ctxpack.errors import UsageError
from ctxpack.evaluate.checks import visible_texts
from ctxpack.facts.extract import preserved_facts_section, ran_only
from ctxpack.fit.target import FitTarget
from ctxpack.formats import jsoncodec
from ctxpack.pipeline.request import Prepared, prepare_request
from ctxpack.prune.stage import PruneResult, PruneSettings, plan_prune, prune_messages
from ctxpack.redact import redact_messages
from ctxpack.refs import LineBlob, ref_for
from ctxpack.report import CompressReport, SessionReport, Status
from ctxpack.sessionindex import SessionIndex
from ctxpack.settings import BUILTIN_ENGINE
from ctxpack.summarize.assemble import assemble
from ctxpack.summarize.llm.settings import LLMSettings
from ctxpack.summarize.offline.summarizer import OfflineSummarizer
from ctxpack.summarize.protocol import Summarizer
from ctxpack.summarize.stage import OnFailure, run_summary
from ctxpack.tokens import counter as tokens
from ctxpack.tokens.counter import TokenCounter
from ctxpack.tokens.tally import tally
from ctxpack.toolpairs import Pairing
from ctxpack.transcript import Message, Transcript

# Stage 1 before the summary; or stop after it when that is under the threshold; or skip it.
PruneMode = Literal["prune", "prune-only", "no-prune"]


@dataclass(frozen=True)
class CompressSettings:
    budget: Budget = field(default_factory=Budget)
    force: bool = False
    prune: PruneMode = "prune"
    min_savings: int = 0
    focus: str | None = None
    previous_summary: str | None = None
    llm: LLMSettings | None = None
    on_failure: OnFailure = "fallback"
    # Mask secrets in the written transcript too, not only in LLM requests.
    redact: bool = False
    # Tell the model that placeholders and the record can be read back (ctxpack mcp).
    recall: bool = False
    # The whole output within this budget (ctxpack.fit), or the smallest output if unreachable.
    fit: FitTarget | None = None
    fit_best_effort: bool = False
    # The record's budget (None: Budget.summary_budget of the middle) and form.
    record_tokens: int | None = None
    compact_record: bool = False
    # By name (ctxpack.engines.registry), so that settings travel to batch workers.
    engine: str = BUILTIN_ENGINE
    summarizer: str | None = None
    # False: the system message stays as it was, which keeps a prompt cache warm.
    system_note: bool = True


def compress_messages(
    messages: list[Message],
    *,
    counter: TokenCounter,
    settings: CompressSettings,
    label: str = "",
    last_timestamp: str | None = None,
    summarizer: Summarizer | None = None,
    index: SessionIndex | None = None,
) -> tuple[list[Message], SessionReport]:
    """`summarizer`: a plugin chosen by name; None: the LLM or offline one, by
    settings.llm. `index`: the run's index of `messages`."""
    out, report = _compact(
        messages,
        counter=counter,
        settings=settings,
        label=label,
        last_timestamp=last_timestamp,
        summarizer=summarizer,
        index=index if index is not None else SessionIndex(messages),
    )
    if settings.redact:
        out = redact_output(out, report=report, counter=counter)
    return out, report


def redact_output(
    messages: list[Message], *, report: SessionReport, counter: TokenCounter
) -> list[Message]:
    """Messages with every secret masked; the same list when there was none."""
    masked, count = redact_messages(messages)
    if not count:
        return messages
    report.notes.append(f"masked {count} secret(s) in the output (--redact)")
    report.after = tally(masked, counter=counter)
    return masked


def _compact(
    messages: list[Message],
    *,
    counter: TokenCounter,
    settings: CompressSettings,
    label: str,
    last_timestamp: str | None,
    summarizer: Summarizer | None,
    index: SessionIndex,
) -> tuple[list[Message], SessionReport]:
    prune_settings = PruneSettings(
        budget=settings.budget, min_savings=settings.min_savings, recall=settings.recall
    )
    plan = None
    prune = settings.prune != "no-prune"
    if prune and len(messages) >= tokens.PARALLEL_MIN_MESSAGES:
        # A large session is counted in child processes while pruning plans
        # (planning needs no counts), rather than one after the other.
        with counter.counting(messages):
            plan = plan_prune(messages, counter=counter, settings=prune_settings, index=index)
    before = tally(messages, counter=counter)
    report = SessionReport(label=label, status=Status.UNDER_THRESHOLD, before=before, after=before)
    threshold = settings.budget.threshold_tokens
    if not settings.force and not settings.budget.reached(before.tokens):
        report.notes.append(
            f"under the threshold of {threshold:,} tokens: unchanged; --force compacts anyway"
        )
        return messages, report

    current = messages
    if prune:
        pruned = prune_messages(
            current, counter=counter, settings=prune_settings, plan=plan, index=index
        )
        current = pruned.messages
        record_prune(report, pruned)
        if pruned.applied and pruned.rows:
            report.status = Status.PRUNED
        if settings.prune == "prune-only" and counter.messages(current) < threshold:
            report.notes.append("pruning alone brought it under the threshold (--prune-only)")
            report.after = tally(current, counter=counter)
            return current, report

    before_summary = counter.messages(current)
    out = summarize_messages(
        current,
        counter=counter,
        settings=settings,
        report=report,
        last_timestamp=last_timestamp,
        summarizer=summarizer,
        index=index,
    )
    report.summary_saved = before_summary - counter.messages(out)
    report.after = tally(out, counter=counter)
    return out, report


def summarize_messages(
    messages: list[Message],
    *,
    counter: TokenCounter,
    settings: CompressSettings,
    report: SessionReport,
    last_timestamp: str | None = None,
    plan: AlignPlan | None = None,
    require_previous: bool = False,
    summarizer: Summarizer | None = None,
    index: SessionIndex | None = None,
) -> list[Message]:
    """Stages 2-4 and assembly on already-pruned messages. `index`: the run's
    index of the session these messages were pruned from."""
    if index is None:
        index = SessionIndex(messages)
    # One pairing of these messages serves the boundaries, the facts and assembly.
    pairing = index.pairing_of(messages)
    if plan is None:
        tokens_in = counter.messages(messages)
        scaled = settings.budget.for_session(tokens_in)
        if scaled is not settings.budget:
            report.notes.append(
                f"{tokens_in:,} tokens, under the tail budget of {settings.budget.tail_budget:,}:"
                f" the tail keeps {scaled.tail_budget:,}"
            )
            settings = replace(settings, budget=scaled)
        plan = plan_boundaries(messages, counter=counter, budget=settings.budget, pairing=pairing)
    else:
        plan.check(messages)
    if require_previous and plan.previous_summary_index is None and not settings.previous_summary:
        raise UsageError(
            f"{report.label or 'transcript'}: no previous summary to update; "
            "run `ctxpack summarize`, or pass --previous-summary FILE"
        )
    if not plan.compressible:
        if report.status != Status.PRUNED:
            report.status = Status.NOTHING_TO_COMPRESS
        report.notes.append(plan.note or "nothing to compress")
        return messages
    prepared = prepare_request(
        messages, plan=plan, counter=counter, settings=settings, last_timestamp=last_timestamp
    )
    # The retention check reads the facts of every message that ran: those
    # the summary does not read itself are found beside it, on a core it
    # leaves idle, instead of after it.
    with index.unread_facts_beside(prepared.middle, workers=counter.processes):
        return _summarized(
            messages,
            prepared=prepared,
            plan=plan,
            pairing=pairing,
            index=index,
            counter=counter,
            settings=settings,
            summarizer=summarizer,
            report=report,
        )


def _summarized(
    messages: list[Message],
    *,
    prepared: Prepared,
    plan: AlignPlan,
    pairing: Pairing,
    index: SessionIndex,
    counter: TokenCounter,
    settings: CompressSettings,
    summarizer: Summarizer | None,
    report: SessionReport,
) -> list[Message]:
    """The summary of a prepared request, assembled between the kept head
    and tail; `messages` as they were when the summary is no smaller."""
    head, middle, tail, request = prepared.head, prepared.middle, prepared.tail, prepared.request
    budget_tokens = prepared.budget_tokens
    report.updated_previous_summary = request.previous_summary is not None
    result = run_summary(
        request,
        counter=counter,
        llm=settings.llm,
        on_failure=settings.on_failure,
        offline=OfflineSummarizer(index=index),
        chosen=summarizer,
    )
    text = result.text.rstrip()
    active = _active_request(messages, plan.latest_user_index, plan.head_end, plan.tail_start)
    if active:
        text = f"{text}\n\n{active}"
    room = budget_tokens - counter.text(text)
    # Calls that never got a result are no facts: they never ran, and the
    # kept turns are read without them.
    ran = ran_only(messages, pairing=pairing)
    kept = ran[: plan.head_end] + ran[plan.tail_start :]
    facts = preserved_facts_section(
        ran_only(middle, pairing=index.pairing_of(middle)),
        "\n".join([text, *visible_texts(kept)]),
        counter=counter,
        cap_tokens=max(room - 2, 0),
        memo=index.facts,
    )
    if facts:
        text = f"{text}\n\n{facts}"
    # The exact turns this summary replaces, for `ctxpack show` / restore; an
    # earlier record's own turns stay listed before them.
    source_turns = _jsonl([*prepared.archived, *middle])
    refs = [*prepared.earlier_refs, ref_for(source_turns)]
    cited = [markers.cite(ref, recall=settings.recall) for ref in refs]
    text = f"{text}\n\n{markers.source_turns(cited)}"
    first = settings.system_note and not any(markers.has_system_note(msg) for msg in head)
    # Calls the input itself has no result for yet stay where they were.
    _, unanswered = pairing.orphans()
    pending = frozenset(use.call_id for use in unanswered if use.call_id)
    assembly = assemble(
        head=head,
        summary=text,
        tail=tail,
        first_compaction=first,
        pending=pending,
        recall=settings.recall,
    )
    out = assembly.messages
    if counter.messages(out) >= counter.messages(messages):
        # Compaction must never cost tokens: a middle this small stays verbatim.
        report.warnings.append("summary would not be smaller than the turns it replaces; kept them")
        if report.status != Status.PRUNED:
            report.status = Status.NOTHING_TO_COMPRESS
        return messages
    report.status = Status.COMPACTED
    report.sanitizer_notes = assembly.sanitizer_notes
    report.blobs.append(source_turns)
    report.summarized = (plan.head_end, plan.tail_start)
    report.summary_tokens = counter.text(text)
    report.summary_source = result.source
    report.summary_model = result.model
    report.warnings.extend(result.warnings)
    return out


def _jsonl(messages: list[Message]) -> LineBlob:
    """Messages as JSONL, made a stretch at a time whenever read: a large
    middle's JSONL is never held whole beside its messages."""
    return LineBlob(lambda: (jsoncodec.dumps(msg) + b"\n" for msg in messages))


def _active_request(
    messages: list[Message], latest_user: int | None, head_end: int, tail_start: int
) -> str:
    """When the latest user turn had to be compacted, say verbatim that it is still open."""
    if latest_user is None or not head_end <= latest_user < tail_start:
        return ""
    ask = m.text(messages[latest_user]).strip()
    return markers.active_request(ask) if ask else ""


def record_prune(report: SessionReport, result: PruneResult) -> None:
    for row in result.rows:
        if row.action == "dedupe":
            report.deduplicated += 1
        elif row.action == "shrink-args":
            report.args_shrunk += 1
        else:
            report.pruned += 1
    report.prune_saved = result.tokens_before - result.tokens_after if result.applied else 0
    if not result.applied and result.rows:
        report.warnings.append("pruning skipped: it would free less than --min-savings")


def compress_transcript(
    transcript: Transcript,
    *,
    counter: TokenCounter,
    settings: CompressSettings,
    summarizer: Summarizer | None = None,
    indexes: list[SessionIndex] | None = None,
) -> tuple[Transcript, CompressReport]:
    """`indexes`: the run's index of each session."""

    def compact(
        number: int, messages: list[Message], last_timestamp: str | None
    ) -> tuple[list[Message], SessionReport]:
        return compress_messages(
            messages,
            counter=counter,
            settings=settings,
            label=transcript.sessions[number].label or f"#{number}",
            last_timestamp=last_timestamp,
            summarizer=summarizer,
            index=indexes[number] if indexes is not None else None,
        )

    return _each_session(transcript, compact)


def summarize_transcript(
    transcript: Transcript,
    *,
    counter: TokenCounter,
    settings: CompressSettings,
    plans: list[AlignPlan] | None = None,
    require_previous: bool = False,
    summarizer: Summarizer | None = None,
    indexes: list[SessionIndex] | None = None,
) -> tuple[Transcript, CompressReport]:
    """Stages 2-4 only, on every session, with no threshold check (`ctxpack
    summarize`). `indexes`: the run's index of each session."""

    def compact(
        number: int, messages: list[Message], last_timestamp: str | None
    ) -> tuple[list[Message], SessionReport]:
        before = tally(messages, counter=counter)
        report = SessionReport(
            label=transcript.sessions[number].label or f"#{number}",
            status=Status.NOTHING_TO_COMPRESS,
            before=before,
            after=before,
        )
        out = summarize_messages(
            messages,
            counter=counter,
            settings=settings,
            report=report,
            last_timestamp=last_timestamp,
            plan=plans[number] if plans is not None else None,
            require_previous=require_previous,
            summarizer=summarizer,
            index=indexes[number] if indexes is not None else None,
        )
        if out is not messages:
            report.summary_saved = before.tokens - counter.messages(out)
            report.after = tally(out, counter=counter)
        if settings.redact:
            out = redact_output(out, report=report, counter=counter)
        return out, report

    return _each_session(transcript, compact)


def _each_session(
    transcript: Transcript,
    compact: Callable[[int, list[Message], str | None], tuple[list[Message], SessionReport]],
) -> tuple[Transcript, CompressReport]:
    """Compact every session; one left as it was keeps its identity."""
    sessions = []
    reports: list[SessionReport] = []
    for number, session in enumerate(transcript.sessions):
        messages, report = compact(number, session.messages, transcript.last_timestamp)
        sessions.append(
            session if messages is session.messages else session.with_messages(messages)
        )
        reports.append(report)
    summary = CompressReport(
        path=transcript.path,
        format=transcript.format,
        sessions=reports,
        skipped_lines=transcript.skipped_lines,
    )
    return transcript.with_sessions(sessions), summary
