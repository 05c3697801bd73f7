"""The fit planner: the whole transcript at or under a token budget.

Every item of a session gets one action: kept verbatim, its output replaced by
a one-liner, its call arguments cut, or summarized into the record (whose own
items it keeps or drops within the record's budget). The planner walks a
ladder of steps from loose to tight; each step decides the verbatim part (how
much tail, whether the configured head and tail stay out of pruning, how far
arguments are cut, the record's form), and the record takes what the budget
leaves. Every candidate is rendered and counted exactly; the loosest step that
fits is kept. The latest user message, the head and every tool group stay
whole at every step (ctxpack.align.boundaries, ctxpack.toolpairs), so raw tool
text goes first and the record, which holds the user ledger, the current
state, errors and files, is cut last.

Several sessions share the budget: each first gets its smallest output, then
the rest of the budget in proportion to what it could still give back.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ctxpack.align.boundaries import latest_user_index, plan_boundaries
from ctxpack.align.budget import Budget
from ctxpack.align.plan import AlignPlan
from ctxpack.errors import BudgetError
from ctxpack.fit.plan import FitPlan
from ctxpack.fit.rows import rows_of
from ctxpack.fit.target import FitTarget
from ctxpack.pipeline.compaction import CompressSettings, record_prune, redact_output
from ctxpack.pipeline.summarizing import summarize_messages
from ctxpack.prune.stage import PruneResult, PruneSettings, prune_messages
from ctxpack.report import CompressReport, SessionReport, Status
from ctxpack.summarize.protocol import Summarizer
from ctxpack.tokens.counter import TokenCounter
from ctxpack.tokens.tally import tally
from ctxpack.transcript import Message, Transcript


@dataclass(frozen=True)
class Step:
    name: str
    # The tail's budget, as a share of the session's budget.
    tail_share: float
    # The configured protect_first stays verbatim; else only the system prompt.
    keep_head: bool
    # The configured protect_last shields the tail from pruning; else one-liners reach it.
    keep_tail: bool
    min_tail: int
    argument_chars: int
    keep_chars: int
    compact: bool


STEPS = (
    Step("loose", 0.5, True, True, 3, 500, 200, False),
    Step("compact record", 0.4, True, True, 3, 500, 200, True),
    Step("one-liners in the tail", 0.3, True, False, 3, 500, 200, True),
    Step("system prompt as the head", 0.2, False, False, 3, 300, 100, True),
    Step("small tail", 0.1, False, False, 1, 200, 60, True),
    Step("smallest", 0.0, False, False, 1, 120, 40, True),
)
# The least budget a record is given, and how often it is re-cut to fit.
RECORD_FLOOR = 48
RECORD_TRIES = 4
# What a record costs beyond its budget: its prefix and end marker, the
# source-turns line and the note on the system prompt.
RECORD_OVERHEAD = 160


@dataclass
class Attempt:
    """One session rendered at one step (`step` -1: the input as it was)."""

    step: int
    messages: list[Message]
    tokens: int
    report: SessionReport
    pruned: PruneResult | None = None
    plan: AlignPlan | None = None

    @property
    def step_name(self) -> str:
        return STEPS[self.step].name if self.step >= 0 else "unchanged"


class _Session:
    def __init__(
        self,
        messages: list[Message],
        *,
        label: str,
        counter: TokenCounter,
        settings: CompressSettings,
        last_timestamp: str | None,
        summarizer: Summarizer | None,
    ) -> None:
        self.messages = messages
        self.summarizer = summarizer
        self.label = label
        self.counter = counter
        self.settings = settings
        self.last_timestamp = last_timestamp
        self.before = tally(messages, counter=counter)
        self.tokens = self.before.tokens
        self.cache: dict[tuple[int, int], Attempt] = {}

    def unchanged(self) -> Attempt:
        report = SessionReport(
            label=self.label, status=Status.UNDER_THRESHOLD, before=self.before, after=self.before
        )
        return Attempt(-1, self.messages, self.tokens, report)

    def smallest(self) -> Attempt:
        tightest = self.attempt(len(STEPS) - 1, budget=0)
        return tightest if tightest.tokens < self.tokens else self.unchanged()

    def solve(self, budget: int) -> Attempt:
        """The loosest step that fits `budget`, or the smallest output."""
        if self.tokens <= budget:
            return self.unchanged()
        best = self.smallest()
        lo, hi = 0, len(STEPS) - 1
        while lo <= hi:
            mid = (lo + hi) // 2
            found = self.attempt(mid, budget=budget)
            if found.tokens <= budget:
                best, hi = found, mid - 1
            else:
                lo = mid + 1
        return best

    def must_keep(self) -> int:
        """Tokens no step can cut: the head and the latest user message."""
        plan = self.smallest().plan
        if plan is None or not plan.compressible:
            return self.smallest().tokens
        user = latest_user_index(self.messages)
        kept = plan.tokens_head
        if user is not None and user >= plan.head_end:
            kept += self.counter.message(self.messages[user])
        return kept

    def attempt(self, step_index: int, *, budget: int) -> Attempt:
        key = (step_index, budget)
        if key not in self.cache:
            self.cache[key] = self._attempt(step_index, budget)
        return self.cache[key]

    def _attempt(self, step_index: int, budget: int) -> Attempt:
        step = STEPS[step_index]
        configured = self.settings.budget
        head = configured.protect_first if step.keep_head else 0
        align = replace(
            configured,
            tail_tokens=int(budget * step.tail_share),
            protect_first=head,
            protect_last=configured.protect_last if step.keep_tail else 0,
            min_tail=step.min_tail,
        )
        pruned = None
        current = self.messages
        if self.settings.prune != "no-prune":
            shield = align if step.keep_tail else replace(align, tail_tokens=0, protect_last=0)
            pruned = prune_messages(
                self.messages,
                counter=self.counter,
                settings=PruneSettings(
                    budget=shield,
                    argument_chars=step.argument_chars,
                    keep_chars=step.keep_chars,
                    recall=self.settings.recall,
                ),
            )
            current = pruned.messages
        plan = plan_boundaries(current, counter=self.counter, budget=align)
        fixed = plan.tokens_head + plan.tokens_tail if plan.compressible else plan.tokens_total
        record = max(RECORD_FLOOR, budget - fixed - RECORD_OVERHEAD)
        found = self._render(step_index, current, plan, align, record, pruned)
        for _ in range(RECORD_TRIES):
            if found.tokens <= budget or record == RECORD_FLOOR:
                break
            record = max(RECORD_FLOOR, record - (found.tokens - budget) - 8)
            found = self._render(step_index, current, plan, align, record, pruned)
        return found

    def _render(
        self,
        step_index: int,
        current: list[Message],
        plan: AlignPlan,
        align: Budget,
        record: int,
        pruned: PruneResult | None,
    ) -> Attempt:
        report = SessionReport(
            label=self.label,
            status=Status.NOTHING_TO_COMPRESS,
            before=self.before,
            after=self.before,
        )
        if pruned is not None:
            record_prune(report, pruned)
            if pruned.applied and pruned.rows:
                report.status = Status.PRUNED
        settings = replace(
            self.settings,
            budget=align,
            record_tokens=record,
            compact_record=STEPS[step_index].compact,
        )
        before_summary = self.counter.messages(current)
        out = summarize_messages(
            current,
            counter=self.counter,
            settings=settings,
            report=report,
            last_timestamp=self.last_timestamp,
            plan=replace(plan, adjustments=list(plan.adjustments)),
            summarizer=self.summarizer,
        )
        report.summary_saved = before_summary - self.counter.messages(out)
        if self.settings.redact:
            out = redact_output(out, report=report, counter=self.counter)
        report.after = tally(out, counter=self.counter)
        return Attempt(step_index, out, report.after.tokens, report, pruned, plan)


def fit_transcript(
    transcript: Transcript,
    *,
    counter: TokenCounter,
    settings: CompressSettings,
    summarizer: Summarizer | None = None,
) -> tuple[Transcript, CompressReport]:
    """Every session compacted so that the whole output is within `settings.fit`.

    An unreachable budget raises BudgetError (nothing is written), unless
    `settings.fit_best_effort`: then the smallest output is kept and says so."""
    target = settings.fit or FitTarget(percent=50)
    sessions = [
        _Session(
            session.messages,
            label=session.label or f"#{number}",
            counter=counter,
            settings=settings,
            last_timestamp=transcript.last_timestamp,
            summarizer=summarizer,
        )
        for number, session in enumerate(transcript.sessions)
    ]
    total = sum(s.tokens for s in sessions)
    budget = target.budget(total)
    if total <= budget:
        chosen = [s.unchanged() for s in sessions]
        smallest = total
    else:
        floors = [s.smallest() for s in sessions]
        smallest = sum(f.tokens for f in floors)
        if smallest > budget:
            if not settings.fit_best_effort:
                raise BudgetError(
                    _unreachable(target, budget, smallest, sessions),
                    smallest=smallest,
                    path=transcript.path,
                )
            chosen = floors
        else:
            shares = _shares(budget, sessions)
            chosen = [s.solve(share) for s, share in zip(sessions, shares, strict=True)]
    after = sum(a.tokens for a in chosen)
    plan = FitPlan(
        target=target.describe(),
        budget=budget,
        tokens_before=total,
        tokens_after=after,
        smallest=smallest,
        met=after <= budget,
        best_effort=after > budget,
        steps=[a.step_name for a in chosen],
        rows=[
            row
            for s, a in zip(sessions, chosen, strict=True)
            for row in rows_of(s.label, s.messages, a.messages, a.report, a.pruned, counter=counter)
        ],
    )
    for a in chosen:
        a.report.notes.append(f"--fit {target.describe()}: step {a.step_name!r}")
        if plan.best_effort:
            a.report.warnings.append(
                f"--fit {target.describe()} ({budget:,} tokens) cannot be reached; "
                f"--fit-best-effort wrote the smallest output, {after:,} tokens"
            )
    kept = [
        session if a.messages is session.messages else session.with_messages(a.messages)
        for session, a in zip(transcript.sessions, chosen, strict=True)
    ]
    report = CompressReport(
        path=transcript.path,
        format=transcript.format,
        sessions=[a.report for a in chosen],
        skipped_lines=transcript.skipped_lines,
        fit=plan,
    )
    return transcript.with_sessions(kept), report


def _shares(budget: int, sessions: list[_Session]) -> list[int]:
    """Each session's budget: its smallest output, and the rest of the budget
    in proportion to the tokens it could still give back."""
    floors = [s.smallest().tokens for s in sessions]
    slack = budget - sum(floors)
    room = [s.tokens - f for s, f in zip(sessions, floors, strict=True)]
    weight = sum(room) or 1
    return [f + slack * r // weight for f, r in zip(floors, room, strict=True)]


def _unreachable(target: FitTarget, budget: int, smallest: int, sessions: list[_Session]) -> str:
    kept = sum(s.must_keep() for s in sessions)
    return (
        f"--fit {target.describe()}: the budget is {budget:,} tokens, but the smallest output "
        f"that keeps the head and the latest user message verbatim is {smallest:,} tokens "
        f"({kept:,} of them are the head and the latest user message alone); nothing was "
        "written. --fit-best-effort writes that smallest output."
    )
