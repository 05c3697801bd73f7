"""The whole compaction: prune -> align -> summarize/update -> assemble."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from ctxpack.align.budget import Budget
from ctxpack.align.plan import AlignPlan
from ctxpack.fit.target import FitTarget
from ctxpack.pipeline.summarizing import summarize_messages
from ctxpack.prune.stage import PruneResult, PruneSettings, plan_prune, prune_messages
from ctxpack.redact import redact_messages
from ctxpack.report import CompressReport, SessionReport, Status
from ctxpack.sessionindex import SessionIndex
from ctxpack.settings import BUILTIN_ENGINE
from ctxpack.summarize.llm.settings import LLMSettings
from ctxpack.summarize.protocol import Summarizer
from ctxpack.summarize.stage import OnFailure
from ctxpack.tokens import counter as tokens
from ctxpack.tokens.counter import TokenCounter
from ctxpack.tokens.tally import tally
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
            current,
            counter=counter,
            settings=prune_settings,
            plan=plan,
            index=index,
            total=before.tokens,
        )
        current = pruned.messages
        record_prune(report, pruned)
        if pruned.applied and pruned.rows:
            report.status = Status.PRUNED
        # The report tells the plan's rows: the summary takes their memory.
        del plan, pruned
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
        total=before_summary,
    )
    report.summary_saved = before_summary - counter.messages(out)
    report.after = tally(out, counter=counter)
    return out, report


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
