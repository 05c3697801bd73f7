"""The whole compaction: prune -> align -> summarize/update -> assemble (SPEC 4)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxpack import markers
from ctxpack import messages as m
from ctxpack.assemble import assemble, without_merged_summary
from ctxpack.boundaries import plan_boundaries
from ctxpack.budget import Budget
from ctxpack.count import Tally, tally
from ctxpack.facts import preserved_facts_section
from ctxpack.llm_settings import LLMSettings
from ctxpack.offline import OfflineSummarizer
from ctxpack.prune import PruneResult, PruneSettings, prune_messages
from ctxpack.summarize import run_summary
from ctxpack.summarizer import SummaryRequest
from ctxpack.tokens import TokenCounter
from ctxpack.transcript import Message, Transcript

# Share of the summary budget the summarizer may fill; the rest is room for
# the preserved-facts section so the whole summary stays within budget.
SUMMARY_SHARE = 0.85


@dataclass(frozen=True)
class CompressSettings:
    budget: Budget = field(default_factory=Budget)
    force: bool = False
    prune: bool = True
    prune_only: bool = False
    summarize: bool = True
    min_savings: int = 0
    focus: str | None = None
    previous_summary: str | None = None
    llm: LLMSettings | None = None
    strict: bool = False
    abort_on_failure: bool = False


@dataclass
class SessionReport:
    label: str
    status: str  # under-threshold | pruned | compacted | nothing-to-compress
    before: Tally
    after: Tally
    pruned: int = 0
    deduplicated: int = 0
    args_shrunk: int = 0
    prune_saved: int = 0
    summary_saved: int = 0
    summary_tokens: int = 0
    summary_source: str | None = None
    summary_model: str | None = None
    updated_previous_summary: bool = False
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "session": self.label,
            "status": self.status,
            "tokens_before": self.before.tokens,
            "tokens_after": self.after.tokens,
            "messages_before": self.before.messages,
            "messages_after": self.after.messages,
            "ratio": ratio(self.after.tokens, self.before.tokens),
            "pruned": self.pruned,
            "deduplicated": self.deduplicated,
            "args_shrunk": self.args_shrunk,
            "savings": {"prune": self.prune_saved, "summarize": self.summary_saved},
            "summary_tokens": self.summary_tokens,
            "summary_source": self.summary_source,
            "summary_model": self.summary_model,
            "updated_previous_summary": self.updated_previous_summary,
            "before": self.before.to_dict(),
            "after": self.after.to_dict(),
            "warnings": list(self.warnings),
        }


def ratio(after: int, before: int) -> float:
    return round(after / before, 4) if before else 1.0


def compress_messages(
    messages: list[Message],
    *,
    counter: TokenCounter,
    settings: CompressSettings,
    label: str = "",
    last_timestamp: str | None = None,
) -> tuple[list[Message], SessionReport]:
    before = tally(messages, counter=counter)
    report = SessionReport(label=label, status="under-threshold", before=before, after=before)
    threshold = settings.budget.threshold_tokens
    if not settings.force and before.tokens < threshold:
        return messages, report

    current = messages
    if settings.prune:
        pruned = prune_messages(
            current,
            counter=counter,
            settings=PruneSettings(budget=settings.budget, min_savings=settings.min_savings),
        )
        current = pruned.messages
        _record_prune(report, pruned)
        if pruned.applied and pruned.rows:
            report.status = "pruned"
        if settings.prune_only and (not settings.force and counter.messages(current) < threshold):
            report.after = tally(current, counter=counter)
            return current, report
    if not settings.summarize:
        report.after = tally(current, counter=counter)
        return current, report

    before_summary = counter.messages(current)
    out = summarize_messages(
        current,
        counter=counter,
        settings=settings,
        report=report,
        last_timestamp=last_timestamp,
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
) -> list[Message]:
    """Stages 2-4 and assembly on already-pruned messages."""
    plan = plan_boundaries(messages, counter=counter, budget=settings.budget)
    if not plan.compressible:
        if report.status != "pruned":
            report.status = "nothing-to-compress"
        return messages
    head, middle, tail = plan.head(messages), plan.middle(messages), plan.tail(messages)
    previous = settings.previous_summary
    old = plan.previous_summary(messages)
    if old is not None:
        previous = markers.summary_body(old)
        # A summary merged into a turn gives that turn's own text back to the middle.
        own = without_merged_summary(old)
        kept = [own if msg is old else msg for msg in middle]
        middle = [msg for msg in kept if msg is not None]
    report.updated_previous_summary = previous is not None
    budget_tokens = settings.budget.summary_budget(counter.messages(middle))
    request = SummaryRequest(
        middle=middle,
        budget_tokens=int(budget_tokens * SUMMARY_SHARE),
        previous_summary=previous,
        focus=settings.focus,
        last_timestamp=last_timestamp,
    )
    result = run_summary(
        request,
        counter=counter,
        llm=settings.llm,
        strict=settings.strict,
        abort_on_failure=settings.abort_on_failure,
        offline=OfflineSummarizer(),
    )
    text = result.text.rstrip()
    active = _active_request(messages, plan.latest_user_index, plan.head_end, plan.tail_start)
    if active:
        text = f"{text}\n\n{active}"
    room = budget_tokens - counter.text(text)
    facts = preserved_facts_section(middle, text, counter=counter, cap_tokens=max(room - 2, 0))
    if facts:
        text = f"{text}\n\n{facts}"
    first = not any(markers.has_system_note(msg) for msg in head)
    out = assemble(head=head, summary=text, tail=tail, first_compaction=first)
    if counter.messages(out) >= counter.messages(messages):
        # Compaction must never cost tokens: a middle this small stays verbatim.
        report.warnings.append("summary would not be smaller than the turns it replaces; kept them")
        if report.status != "pruned":
            report.status = "nothing-to-compress"
        return messages
    report.status = "compacted"
    report.summary_tokens = counter.text(text)
    report.summary_source = result.source
    report.summary_model = result.model
    report.warnings.extend(result.warnings)
    return out


def _active_request(
    messages: list[Message], latest_user: int | None, head_end: int, tail_start: int
) -> str:
    """When the latest user turn had to be compacted, say verbatim that it is still open."""
    if latest_user is None or not head_end <= latest_user < tail_start:
        return ""
    ask = m.text(messages[latest_user]).strip()
    if not ask:
        return ""
    return (
        "The user's latest request was compacted into this record and is still the active "
        f"request:\n> {ask.replace(chr(10), chr(10) + '> ')}"
    )


def _record_prune(report: SessionReport, result: PruneResult) -> None:
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


@dataclass
class CompressReport:
    path: str
    format: str
    sessions: list[SessionReport]
    output: str | None = None
    skipped_lines: int = 0

    @property
    def before(self) -> Tally:
        total = Tally()
        for s in self.sessions:
            total.merge(s.before)
        return total

    @property
    def after(self) -> Tally:
        total = Tally()
        for s in self.sessions:
            total.merge(s.after)
        return total

    def to_dict(self) -> dict[str, Any]:
        before, after = self.before, self.after
        return {
            "path": self.path,
            "format": self.format,
            "output": self.output,
            "skipped_lines": self.skipped_lines,
            "tokens_before": before.tokens,
            "tokens_after": after.tokens,
            "ratio": ratio(after.tokens, before.tokens),
            "sessions": [s.to_dict() for s in self.sessions],
        }


def compress_transcript(
    transcript: Transcript, *, counter: TokenCounter, settings: CompressSettings
) -> tuple[Transcript, CompressReport]:
    sessions = []
    reports: list[SessionReport] = []
    last_timestamp = transcript.layout.get("last_timestamp")
    for number, session in enumerate(transcript.sessions):
        messages, report = compress_messages(
            session.messages,
            counter=counter,
            settings=settings,
            label=session.label or f"#{number}",
            last_timestamp=last_timestamp if isinstance(last_timestamp, str) else None,
        )
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
