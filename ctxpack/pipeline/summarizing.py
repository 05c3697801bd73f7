"""Stages 2-4 on pruned messages: the boundaries, the summary with the facts
it does not mention, and the assembly of head, record and tail."""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import TYPE_CHECKING

from ctxpack import markers
from ctxpack import messages as m
from ctxpack.align.boundaries import plan_boundaries
from ctxpack.align.plan import AlignPlan
from ctxpack.errors import UsageError
from ctxpack.evaluate.checks import visible_texts
from ctxpack.facts.extract import Facts, ran_only
from ctxpack.facts.preserved import (
    earlier_facts,
    earlier_left,
    middle_facts,
    preserved_facts_section,
)
from ctxpack.formats import jsoncodec
from ctxpack.pipeline.request import Prepared, prepare_request
from ctxpack.refs import LineBlob, ref_for
from ctxpack.report import SessionReport, Status
from ctxpack.sessionindex import SessionIndex
from ctxpack.summarize.assemble import Assembly, assemble
from ctxpack.summarize.offline.summarizer import OfflineSummarizer
from ctxpack.summarize.offline.update import named_facts
from ctxpack.summarize.protocol import Summarizer
from ctxpack.summarize.stage import run_summary
from ctxpack.summarize.template import below_skeleton, render
from ctxpack.tokens.counter import TokenCounter
from ctxpack.toolpairs import Pairing
from ctxpack.transcript import Message

if TYPE_CHECKING:
    from ctxpack.pipeline.compaction import CompressSettings

# Room kept back when a record grows into what its facts left: counted joined,
# texts may come to a token or two more than counted apart.
_GROWTH_MARGIN = 8


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
    total: int | None = None,
) -> list[Message]:
    """Stages 2-4 and assembly on already-pruned messages. `index`: the run's
    index of the session these messages were pruned from; `total`: the
    tokens of `messages`, when the caller has counted them."""
    if index is None:
        index = SessionIndex(messages)
    # One pairing of these messages serves the boundaries, the facts and assembly.
    pairing = index.pairing_of(messages)
    if plan is None:
        if total is None:
            total = counter.messages(messages)
        scaled = settings.budget.for_session(total)
        if scaled is not settings.budget:
            report.notes.append(
                f"{total:,} tokens, under the tail budget of {settings.budget.tail_budget:,}:"
                f" the tail keeps {scaled.tail_budget:,}"
            )
            settings = replace(settings, budget=scaled)
        plan = plan_boundaries(messages, counter=counter, budget=settings.budget, index=index)
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
        messages,
        plan=plan,
        counter=counter,
        settings=settings,
        last_timestamp=last_timestamp,
        total=total,
        summaries=index.summaries(messages),
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
            total=total,
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
    total: int | None,
) -> list[Message]:
    """The summary of a prepared request, assembled between the kept head
    and tail; `messages` (of `total` tokens, when counted) as they were
    when the summary is no smaller."""
    head, middle, tail, request = prepared.head, prepared.middle, prepared.tail, prepared.request
    budget_tokens = prepared.budget_tokens
    report.updated_previous_summary = request.previous_summary is not None
    # The exact turns this summary replaces, for `ctxpack show` / restore; an
    # earlier record's own turns stay listed before them.
    source_turns = _jsonl([*prepared.archived, *middle])
    refs = [*prepared.earlier_refs, ref_for(source_turns)]
    cited = markers.source_turns([markers.cite(ref, recall=settings.recall) for ref in refs])
    first = settings.system_note and not any(markers.has_system_note(msg) for msg in head)
    # Calls the input itself has no result for yet stay where they were.
    _, unanswered = pairing.orphans()
    pending = frozenset(use.call_id for use in unanswered if use.call_id)

    def assembled(text: str) -> Assembly:
        assembly = assemble(
            head=head,
            summary=text,
            tail=tail,
            first_compaction=first,
            pending=pending,
            recall=settings.recall,
        )
        counter.count_made(assembly.messages)
        return assembly

    if total is None:
        total = counter.messages(messages)
    if (
        summarizer is None
        and settings.llm is None
        and not request.compact
        and not counter.estimate
        and counter.messages(assembled(f"{render({})}\n\n{cited}").messages)
        >= total + _below_skeleton(counter.encoding_name)
    ):
        # Even the bare template leaves the session no smaller than it was,
        # by more than any record the offline summarizer renders can take
        # less: no record is written only to be dropped.
        return _kept(messages, report)
    offline = OfflineSummarizer(index=index)
    result = run_summary(
        request,
        counter=counter,
        llm=settings.llm,
        on_failure=settings.on_failure,
        offline=offline,
        chosen=summarizer,
    )
    active = _active_request(messages, plan.latest_user_index, plan.head_end, plan.tail_start)
    # Calls that never got a result are no facts: they never ran, and the
    # kept turns are read without them.
    ran = ran_only(messages, pairing=pairing)
    # Read by every fitting of the facts: joined once, not a generator one
    # fitting would use up.
    kept = "\n".join(visible_texts(ran[: plan.head_end] + ran[plan.tail_start :]))
    middle_ran = ran_only(middle, pairing=index.pairing_of(middle))
    found = middle_facts(middle_ran, memo=index.facts)
    earlier = earlier_facts(request.previous_summary)
    left = earlier_left(request.previous_summary)
    named_before = named_facts(request.previous_summary)

    def with_facts(summary: str, named: Facts | None = None) -> tuple[str, bool]:
        """The summary and the request still open, then the facts they lose
        in the room they leave (with `named`, last, the facts an earlier
        record named in its other lines); and whether every one of those fit."""
        text = summary.rstrip()
        if active:
            text = f"{text}\n\n{active}"
        facts = preserved_facts_section(
            middle_ran,
            f"{text}\n{kept}",
            counter=counter,
            cap_tokens=max(budget_tokens - counter.text(text) - 2, 0),
            memo=index.facts,
            earlier=earlier,
            earlier_left=left,
            named=named,
            found=found,
        )
        return (f"{text}\n\n{facts.text}" if facts.text else text), not facts.unshown

    summary = result.text
    text, whole = with_facts(summary)
    # The facts come first in the room the offline record leaves. Once every
    # one fits, the record grows into what they and the cited turns leave, as
    # long as every fact still fits beside it (a grown record names more, so
    # they are fewer).
    grown = offline.grown
    spare = budget_tokens - counter.text(f"{text}\n\n{cited}") - _GROWTH_MARGIN
    if grown is not None and grown.text == result.text and whole and spare > 0:
        larger_summary = grown.with_room(spare)
        larger, still = with_facts(larger_summary)
        if still:
            text, summary = larger, larger_summary
    if not named_before.is_empty():
        # What the earlier record's lines named comes after the record's own
        # items: it takes only the room the record and the facts leave.
        text, _ = with_facts(summary, named_before)
    text = f"{text}\n\n{cited}"
    assembly = assembled(text)
    out = assembly.messages
    if counter.messages(out) >= total:
        return _kept(messages, report)
    report.status = Status.COMPACTED
    report.sanitizer_notes = assembly.sanitizer_notes
    report.blobs.append(source_turns)
    report.summarized = (plan.head_end, plan.tail_start)
    report.summary_tokens = counter.text(text)
    report.summary_source = result.source
    report.summary_model = result.model
    report.warnings.extend(result.warnings)
    return out


@functools.cache
def _below_skeleton(encoding: str) -> int:
    return below_skeleton(TokenCounter(encoding=encoding).text)


def _kept(messages: list[Message], report: SessionReport) -> list[Message]:
    """The messages as they were: compaction must never cost tokens, and a
    middle this small stays verbatim."""
    report.warnings.append("summary would not be smaller than the turns it replaces; kept them")
    if report.status != Status.PRUNED:
        report.status = Status.NOTHING_TO_COMPRESS
    return messages


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
