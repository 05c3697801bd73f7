"""The plan's rows: what became of each input message in one rendered session."""

from __future__ import annotations

from ctxpack import messages as m
from ctxpack.fit.plan import Action, FitRow, Region
from ctxpack.prune.stage import SHRINK, PruneResult
from ctxpack.report import SessionReport
from ctxpack.summarize.assemble import without_merged_summary
from ctxpack.summarize.template import left_out
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message


def rows_of(
    label: str,
    original: list[Message],
    out: list[Message],
    report: SessionReport,
    pruned: PruneResult | None,
    *,
    counter: TokenCounter,
) -> list[FitRow]:
    """One row per input message and one for the record; the rows' `tokens_after`
    add up to the tokens of `out` exactly."""
    changed = {row.index: row for row in pruned.rows} if pruned and pruned.applied else {}
    current = pruned.messages if pruned and pruned.applied else original

    def row(index: int, region: Region, after: Message | None, reason: str = "") -> FitRow:
        msg = original[index]
        action: Action = "keep"
        why = reason or "verbatim"
        if index in changed:
            action = "shrink-args" if changed[index].action == SHRINK else "one-liner"
            why = changed[index].reason
        if after is None:
            action, why = "drop", reason
        return FitRow(
            session=label,
            index=index,
            role=m.role(msg),
            region=region,
            action=action,
            tokens_before=counter.message(msg),
            tokens_after=counter.message(after) if after is not None else 0,
            reason=why,
        )

    if report.summarized is None:
        return [row(i, "whole", out[i]) for i in range(len(original))]
    head_end, tail_start = report.summarized
    rows = [row(i, "head", out[i]) for i in range(head_end)]
    rows += [
        FitRow(
            session=label,
            index=i,
            role=m.role(original[i]),
            region="middle",
            action="summarize",
            tokens_before=counter.message(original[i]),
            tokens_after=0,
            reason="into the record",
        )
        for i in range(head_end, tail_start)
    ]
    record = out[head_end]
    # A record that rides in a tail message leaves that message's own content.
    merged = without_merged_summary(record) is not None
    position = head_end if merged else head_end + 1
    tail: list[FitRow] = []
    for index in range(tail_start, len(original)):
        wanted = current[index]
        found = out[position] if position < len(out) else None
        if found is not None and _same_slot(wanted, found):
            if merged and position == head_end:
                # The record rides in this message: the row counts the message
                # as it would be alone, the record's row the rest.
                tail.append(row(index, "tail", wanted, "verbatim; the record rides in it"))
            else:
                tail.append(row(index, "tail", found))
            position += 1
        else:
            tail.append(row(index, "tail", None, "its call was compacted (tool pairs kept whole)"))
    rest = out[position:]
    record_tokens = counter.message(record) + counter.messages(rest)
    if merged:
        record_tokens -= tail[0].tokens_after if tail else 0
    rows.append(
        FitRow(
            session=label,
            index=None,
            role=m.role(record),
            region="record",
            action="record",
            tokens_before=0,
            tokens_after=record_tokens,
            reason=_record_reason(m.text(record), tail_start - head_end),
        )
    )
    return rows + tail


def _same_slot(wanted: Message, found: Message) -> bool:
    if found is wanted:
        return True
    return m.role(found) == m.role(wanted) and found.get("tool_call_id") == wanted.get(
        "tool_call_id"
    )


def _record_reason(text: str, summarized: int) -> str:
    """What the record holds, and how many items it says it had no room
    for (an earlier record's count it carries on included)."""
    unshown = sum(left_out(text).values())
    reason = f"{summarized} message(s) summarized"
    if unshown:
        reason += f"; {unshown} item(s) it had no room for"
    return reason
