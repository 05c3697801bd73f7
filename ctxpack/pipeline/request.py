"""The request for a session's middle: head, middle and tail cut apart, the
record being updated read back, and the budget the summarizer may fill."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ctxpack import markers
from ctxpack.summarize import foreign
from ctxpack.summarize.assemble import without_merged_summary
from ctxpack.summarize.llm.prompts import effective_request
from ctxpack.summarize.protocol import SummaryRequest

if TYPE_CHECKING:
    from ctxpack.align.plan import AlignPlan
    from ctxpack.pipeline.compaction import CompressSettings
    from ctxpack.tokens.counter import TokenCounter
    from ctxpack.transcript import Message

# Share of the summary budget the summarizer may fill; the rest is room for
# the preserved-facts section so the whole summary stays within budget.
SUMMARY_SHARE = 0.85


@dataclass(frozen=True)
class Prepared:
    """A session cut into head, middle and tail, and the request for its middle."""

    head: list[Message]
    middle: list[Message]
    tail: list[Message]
    request: SummaryRequest
    budget_tokens: int
    # The source-turns refs of the record being updated, oldest first.
    earlier_refs: list[str] = field(default_factory=list)
    # Messages archived with the middle: another agent's summary, whose full
    # text the merged record no longer holds.
    archived: list[Message] = field(default_factory=list)


def prepare_request(
    messages: list[Message],
    *,
    plan: AlignPlan,
    counter: TokenCounter,
    settings: CompressSettings,
    last_timestamp: str | None = None,
    total: int | None = None,
    summaries: list[int] | None = None,
) -> Prepared:
    """`total`: the tokens of `messages`, when the caller has counted them;
    `summaries`: where the records of `messages` sit
    (markers.summary_indexes), when the caller knows."""
    head, middle, tail = plan.head(messages), plan.middle(messages), plan.tail(messages)
    previous = settings.previous_summary
    old = plan.previous_summary(messages)
    earlier: list[str] = []
    archived: list[Message] = []
    # What reading the record back took out of the middle, and put in.
    taken: list[Message] = []
    given: list[Message] = []
    own: Message | None = None
    if old is not None:
        body = markers.summary_body(old)
        earlier = markers.source_refs(body)
        previous = markers.without_bookkeeping(body)
        # A summary merged into a turn gives that turn's own text back to the middle.
        own = without_merged_summary(old)
        taken = [msg for msg in middle if msg is old]
        given = [own] * len(taken) if own is not None else []
        kept = [own if msg is old else msg for msg in middle]
        middle = [msg for msg in kept if msg is not None]
    if previous is not None and (merged := foreign.to_template(previous)) is not None:
        previous = merged.text
        if old is not None:
            archived = [old]
    budget_tokens = settings.record_tokens
    if budget_tokens is None:
        if total is not None:
            # The middle is the stretch between head and tail: its tokens are
            # what those leave of the session's, with the record read back
            # counted as what it gave back, not a pass over all of it (a
            # session's tokens are the sum of its messages').
            in_middle = (
                total
                - counter.messages(head)
                - counter.messages(tail)
                - counter.messages(taken)
                + counter.messages(given)
            )
        else:
            in_middle = counter.messages(middle)
        # The summarizer's share of the budget holds the record it updates.
        held = int(counter.text(previous) / SUMMARY_SHARE) if previous is not None else 0
        budget_tokens = settings.budget.summary_budget(in_middle, previous_tokens=held)
    request = SummaryRequest(
        middle=middle,
        budget_tokens=int(budget_tokens * SUMMARY_SHARE),
        previous_summary=previous,
        focus=settings.focus,
        last_timestamp=last_timestamp,
        head=head,
        tail=tail,
        compact=settings.compact_record,
    )
    if summaries is not None:
        # The records the middle still holds: those that sit in it but the one
        # read back, and that one's own turn where it is a record too (another
        # agent's summary, which holds no record of ours to take out).
        inside = {id(messages[i]) for i in summaries if plan.head_end <= i < plan.tail_start}
        own_is_record = own is not None and markers.is_summary(own)
        records = [msg for msg in middle if id(msg) in inside or (own_is_record and msg is own)]
        request = effective_request(request, records=records)
    return Prepared(head, middle, tail, request, budget_tokens, earlier, archived)
