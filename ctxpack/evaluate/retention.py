"""What a compaction kept: the key facts of the turns it replaced, found again
(or not) anywhere in the compacted transcript, plus structural checks. Pure and
deterministic, so it can gate CI (`ctxpack eval --min-retention`).

"The region" is every original message that does not reappear unchanged in the
output (same role, content and tool calls): the summarized middle and every
pruned output or shrunk call around it. Facts of messages that survived
verbatim are kept trivially; the region's facts are the ones at risk. A call
that no result answers never ran: it holds no facts. `compress` reports the
same numbers ("facts kept"), computed here.

A message that comes back with nothing but our system note or our record added
is kept: the region's token ratio sets what stands in for the region (every
output message that is not an original one: the record, placeholders,
one-liners, shrunk calls; of a carried message only what was added) against
the region's original tokens, so a system prompt that gained one line counts
as that line. The whole-file ratio hides all this behind the head and tail
kept verbatim.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ctxpack import markers
from ctxpack.errors import UsageError
from ctxpack.evaluate.checks import (
    Check,
    MessageSet,
    latest_user_check,
    orphan_check,
    summary_checks,
    visible_texts,
    written_summaries,
)
from ctxpack.facts.extract import (
    FactCollector,
    FactMemo,
    Facts,
    MessageFacts,
    ran_only,
    result_command,
)
from ctxpack.facts.match import Haystack
from ctxpack.redact import mask
from ctxpack.report import ratio
from ctxpack.sessionindex import SessionIndex
from ctxpack.summarize.assemble import without_merged_summary, without_system_note
from ctxpack.tokens.counter import TokenCounter
from ctxpack.toolpairs import Pairing
from ctxpack.transcript import Message, Transcript

CATEGORIES: tuple[str, ...] = tuple(name for name, _ in Facts().categories())
OVERALL = "overall"
SCOPES = ("region", "transcript")


@dataclass(frozen=True)
class CategoryRetention:
    """One category's facts: everything found, what survived, what did not."""

    name: str
    found: list[str]
    kept: list[str]
    missing: list[str]

    @property
    def retention(self) -> float:
        """Share kept; 1.0 when there was nothing to keep."""
        return round(len(self.kept) / len(self.found), 4) if self.found else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "found": len(self.found),
            "kept": len(self.kept),
            "retention": self.retention,
            "missing": list(self.missing),
        }


@dataclass
class EvalReport:
    label: str
    region: list[CategoryRetention]
    transcript: list[CategoryRetention]
    checks: list[Check]
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    region_messages: int
    region_tokens_before: int = 0
    region_tokens_after: int = 0
    summary_tokens: int = 0
    sessions: int = 1

    @property
    def ratio(self) -> float:
        return ratio(self.tokens_after, self.tokens_before)

    @property
    def region_ratio(self) -> float:
        """Tokens of what replaced the region over the region's own, pooled by sum."""
        return ratio(self.region_tokens_after, self.region_tokens_before)

    @property
    def failed_checks(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def rows(self, scope: str = "region") -> list[CategoryRetention]:
        return self.region if scope == "region" else self.transcript

    def category(self, name: str, *, scope: str = "region") -> CategoryRetention:
        return next(r for r in self.rows(scope) if r.name == name)

    def found(self, key: str, *, scope: str = "region") -> int:
        return sum(len(r.found) for r in self.rows(scope) if key in (OVERALL, r.name))

    def kept(self, key: str, *, scope: str = "region") -> int:
        return sum(len(r.kept) for r in self.rows(scope) if key in (OVERALL, r.name))

    def retention(self, key: str = OVERALL, *, scope: str = "region") -> float:
        """Share of `key` (a category, or "overall" for all of them) kept."""
        found = self.found(key, scope=scope)
        return round(self.kept(key, scope=scope) / found, 4) if found else 1.0

    def to_dict(self) -> dict[str, Any]:
        retention: dict[str, Any] = {}
        for scope in SCOPES:
            block: dict[str, Any] = {r.name: r.to_dict() for r in self.rows(scope)}
            block[OVERALL] = {
                "found": self.found(OVERALL, scope=scope),
                "kept": self.kept(OVERALL, scope=scope),
                "retention": self.retention(OVERALL, scope=scope),
            }
            retention[scope] = block
        return {
            "session": self.label,
            "sessions": self.sessions,
            "messages_before": self.messages_before,
            "messages_after": self.messages_after,
            "region_messages": self.region_messages,
            "region_tokens_before": self.region_tokens_before,
            "region_tokens_after": self.region_tokens_after,
            "region_ratio": self.region_ratio,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "ratio": self.ratio,
            "summary_tokens": self.summary_tokens,
            "retention": retention,
            "checks": [c._asdict() for c in self.checks],
            "checks_passed": not self.failed_checks,
        }


def retention_summary(report: EvalReport) -> dict[str, Any]:
    """The retention block in short, for embedding in another report."""
    keys = (*CATEGORIES, OVERALL)
    return {
        "region_messages": report.region_messages,
        "region_tokens_before": report.region_tokens_before,
        "region_tokens_after": report.region_tokens_after,
        "region_ratio": report.region_ratio,
        "region": {key: report.retention(key) for key in keys},
        "transcript": {key: report.retention(key, scope="transcript") for key in keys},
        "found": {key: report.found(key) for key in keys},
        "missing": {key: report.found(key) - report.kept(key) for key in keys},
        "failed_checks": [c.name for c in report.failed_checks],
    }


# ---- evaluation ----------------------------------------------------------


class FactCache:
    """Facts per distinct message, shared across sessions (system prompts repeat)."""

    def __init__(self) -> None:
        self._memo = FactMemo()

    def each(
        self, messages: list[Message], *, pairing: Pairing, memo: FactMemo | None = None
    ) -> list[MessageFacts]:
        """The facts of each message, in order. `pairing`: how `messages`
        pair (each result is read knowing its call's command). `memo`: the
        facts the run's summarizer found (SessionIndex.facts)."""
        return [self._one(msg, index, pairing, memo) for index, msg in enumerate(messages)]

    def _one(
        self, msg: Message, index: int, pairing: Pairing, memo: FactMemo | None
    ) -> MessageFacts:
        # The summarizer has just read most of these very messages.
        known = memo.known(msg) if memo is not None else None
        if known is not None:
            return known
        return self._memo.found(msg, command=result_command(pairing, index))


def collected(each: Iterable[MessageFacts]) -> Facts:
    """The facts of messages from those of each one: extraction is per message,
    so merging them in order gives what extract_facts(messages) gives."""
    collector = FactCollector()
    for facts in each:
        collector.add(facts)
    return collector.facts()


def evaluate(
    original: list[Message],
    compacted: list[Message],
    *,
    counter: TokenCounter,
    cache: FactCache | None = None,
    index: SessionIndex | None = None,
) -> EvalReport:
    """Compare one session before and after compaction. `index`: the run's
    index of `original`."""
    cache = cache or FactCache()
    if index is None or index.messages is not original:
        index = SessionIndex(original)
    originals = MessageSet(original)
    carried, added = _carried(compacted, originals, counter=counter)
    survivors = MessageSet([*compacted, *carried])
    # The original's pairing serves both the facts that ran and the orphan check.
    pairing = index.pairing
    ran = ran_only(original, pairing=pairing)
    replaced = [
        not survivors.holds(msg, shape)
        for msg, shape in zip(original, originals.shapes, strict=True)
    ]
    # The region is some of the messages that ran: each one's facts found once.
    # A call left out of `ran` is one no result answers: its results pair alike.
    # Where no message was replaced, every fact stands where it stood: none is
    # lost, and none needs finding (the transcript keeps all it had).
    each: list[MessageFacts] = []
    region: list[MessageFacts] = []
    if any(replaced):
        each = cache.each(ran, pairing=pairing, memo=index.facts)
        region = [facts for facts, gone in zip(each, replaced, strict=True) if gone]
    haystack = Haystack("\n".join(visible_texts(compacted)))
    survives = _Survival(haystack)
    summaries = written_summaries(compacted, originals)
    summary_tokens = sum(counter.text(markers.summary_body(msg)) for msg in summaries)
    # A session's tokens are the sum of its messages': the region's are what
    # the few kept ones leave of the whole, not a second pass over the rest.
    tokens_before = counter.messages(original)
    kept = [msg for msg, gone in zip(original, replaced, strict=True) if not gone]
    return EvalReport(
        label="",
        region=_retention(collected(region), survives),
        transcript=_retention(collected(each), survives),
        checks=[
            orphan_check(original, compacted, original_pairing=pairing),
            latest_user_check(original, compacted, haystack.text),
            *summary_checks(summaries),
        ],
        tokens_before=tokens_before,
        tokens_after=counter.messages(compacted),
        messages_before=len(original),
        messages_after=len(compacted),
        region_messages=len(region),
        region_tokens_before=tokens_before - counter.messages(kept),
        region_tokens_after=added,
        summary_tokens=summary_tokens,
    )


def _carried(
    compacted: list[Message], originals: MessageSet, *, counter: TokenCounter
) -> tuple[list[Message], int]:
    """Original messages that came back with only our system note or our record
    added to them (kept, as far as the region goes), and the tokens of every
    output message that is not an original one, less the carried part."""
    carried: list[Message] = []
    added = 0
    for msg in compacted:
        if msg in originals:
            continue
        added += counter.message(msg)
        own = without_system_note(msg)
        if own is msg:
            own = without_merged_summary(msg) or msg
        if own is not msg and own in originals:
            carried.append(own)
            added -= counter.message(own)
    return carried, added


def evaluate_transcripts(
    original: Transcript,
    compacted: Transcript,
    *,
    counter: TokenCounter,
    cache: FactCache | None = None,
) -> list[EvalReport]:
    """One report per session, the sessions paired by position."""
    if len(original.sessions) != len(compacted.sessions):
        raise UsageError(
            f"{original.path} has {len(original.sessions)} session(s) but {compacted.path} has "
            f"{len(compacted.sessions)}; sessions are compared by position"
        )
    reports = []
    cache = cache or FactCache()
    for number, (before, after) in enumerate(
        zip(original.sessions, compacted.sessions, strict=True)
    ):
        report = evaluate(before.messages, after.messages, counter=counter, cache=cache)
        report.label = before.label or f"#{number}"
        reports.append(report)
    return reports


def combine(reports: list[EvalReport], *, label: str = "all") -> EvalReport:
    """Many sessions as one: facts and tokens summed, a check failed if it failed anywhere."""
    if len(reports) == 1:
        return reports[0]
    checks: dict[str, list[tuple[str, Check]]] = {}
    for report in reports:
        for check in report.checks:
            checks.setdefault(check.name, []).append((report.label, check))
    return EvalReport(
        label=label,
        region=_merge([r.region for r in reports]),
        transcript=_merge([r.transcript for r in reports]),
        checks=[_merge_check(name, results) for name, results in checks.items()],
        tokens_before=sum(r.tokens_before for r in reports),
        tokens_after=sum(r.tokens_after for r in reports),
        messages_before=sum(r.messages_before for r in reports),
        messages_after=sum(r.messages_after for r in reports),
        region_messages=sum(r.region_messages for r in reports),
        region_tokens_before=sum(r.region_tokens_before for r in reports),
        region_tokens_after=sum(r.region_tokens_after for r in reports),
        summary_tokens=sum(r.summary_tokens for r in reports),
        sessions=sum(r.sessions for r in reports),
    )


def _retention(facts: Facts, survives: _Survival) -> list[CategoryRetention]:
    rows = []
    for name, items in facts.categories():
        flags = [survives(item) for item in items]
        kept = [item for item, ok in zip(items, flags, strict=True) if ok]
        missing = [item for item, ok in zip(items, flags, strict=True) if not ok]
        rows.append(CategoryRetention(name, list(items), kept, missing))
    return rows


class _Survival:
    """Whether a fact is found in the compacted text, each fact looked up once
    (the region's facts are the transcript's too)."""

    def __init__(self, haystack: Haystack) -> None:
        self.haystack = haystack
        self._seen: dict[str, bool] = {}

    def __call__(self, item: str) -> bool:
        hit = self._seen.get(item)
        if hit is None:
            # The preserved-facts section masks credentials on purpose; that still counts.
            hit = self.haystack.mentions(item) or self.haystack.mentions(mask(item))
            self._seen[item] = hit
        return hit


def _merge(groups: list[list[CategoryRetention]]) -> list[CategoryRetention]:
    return [
        CategoryRetention(
            name,
            [x for rows in groups for r in rows if r.name == name for x in r.found],
            [x for rows in groups for r in rows if r.name == name for x in r.kept],
            [x for rows in groups for r in rows if r.name == name for x in r.missing],
        )
        for name in CATEGORIES
    ]


def _merge_check(name: str, results: list[tuple[str, Check]]) -> Check:
    failed = [(label, c) for label, c in results if not c.passed]
    if not failed:
        return Check(name, True, f"passed in all {len(results)} sessions")
    shown = "; ".join(f"{label}: {c.detail}" for label, c in failed[:3])
    more = f"; … {len(failed) - 3} more" if len(failed) > 3 else ""
    return Check(name, False, f"failed in {len(failed)} of {len(results)} sessions ({shown}{more})")
