"""The deterministic offline summarizer: fills the template from the structure
of the middle (user asks, tool calls and outcomes, files, commands, errors,
what the assistant said), within the token budget, with no model and no clock.

Secrets: items pass through a small local mask (API keys, tokens, passwords)
before they are written; it catches the obvious shapes only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from ctxpack.sessionindex import SessionIndex
from ctxpack.summarize.ledger import (
    Ledger,
    LedgerPlain,
    held,
    left_before,
    previous_entries,
    user_messages,
    with_ledger,
)
from ctxpack.summarize.offline.fit import Item, fit
from ctxpack.summarize.offline.progress import first_new_number
from ctxpack.summarize.offline.scan import scan
from ctxpack.summarize.offline.sections import build, head_goal
from ctxpack.summarize.offline.update import left_out_before, merge_previous
from ctxpack.summarize.protocol import SummaryRequest, SummaryResult
from ctxpack.summarize.statements import Classified, Kind
from ctxpack.summarize.template import (
    parse,
    render,
    render_compact,
)
from ctxpack.tokens import counter as tokens
from ctxpack.tokens import forked
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message

_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}")


def day_of(timestamp: str | None) -> str | None:
    """The calendar date of an ISO timestamp, as written (no timezone shift)."""
    if not timestamp:
        return None
    mt = _DATE_RE.match(timestamp.strip())
    return mt.group(0) if mt else None


def _marked(item: Item, ledger: Ledger) -> Item:
    """The item with its lines marked where they name a replaced value; the
    same item when none does (most do not, and a long middle has thousands)."""
    text = ledger.mark(item.text)
    return item if text == item.text else replace(item, text=text)


@dataclass(frozen=True)
class Grown:
    """A summary the offline summarizer wrote, and the same summary given
    `extra` tokens more room (with_room(extra)); to be asked once."""

    text: str
    with_room: Callable[[int], str]


class OfflineSummarizer:
    name = "offline"

    def __init__(self, *, index: SessionIndex | None = None) -> None:
        # The run's index of the session: it pairs the turns, and keeps the
        # facts read for the preserved facts and the retention check.
        self.index = index
        # The last summary it wrote, and that summary with more room.
        self.grown: Grown | None = None

    def summarize(self, request: SummaryRequest, *, counter: TokenCounter) -> SummaryResult:
        # The ledger and the sections classify the same user messages.
        classify = Classified()
        previous_said = previous_entries(request.previous_summary)
        workers = counter.processes
        if workers > 1 and len(request.middle) >= tokens.PARALLEL_MIN_MESSAGES:
            # The ledger reads only the user's words: a long middle's is made
            # in a child while the scan reads the rest, on the core the scan's
            # fold leaves idle.
            with forked.started(lambda: _ledger_plain(previous_said, request.middle)) as made:
                found = scan(request.middle, tail=request.tail, index=self.index, workers=workers)
                plain, classes = made()
            ledger = Ledger.from_plain(plain)
            classify.update(classes)
        else:
            found = scan(request.middle, tail=request.tail, index=self.index, workers=workers)
            ledger = Ledger(previous_said, found.said, classify=classify)
        date = day_of(request.last_timestamp)
        # The scan has read the user's words already.
        said = found.said
        replaced = ledger.superseded()
        previous = None if request.previous_summary is None else parse(request.previous_summary)
        # An update numbers its new actions after the previous record's.
        start = 1 if previous is None else first_new_number(previous)
        asked = head_goal(request.head)
        fresh = build(
            found,
            date=date,
            focus=request.focus,
            start=start,
            said=said,
            replaced=replaced,
            classify=classify,
            asked_before=bool(asked),
            update=previous is not None,
        )
        # The bare template comes first: the ledger takes only room beyond it.
        skeleton = render_compact({}) if request.compact else render({})
        spare = request.budget_tokens - counter.text(skeleton) - 2
        section = ledger.render(
            budget=request.budget_tokens,
            counter=counter,
            limit=spare,
            earlier=left_before(request.previous_summary),
        )
        candidates = (
            fresh if previous is None else merge_previous(previous, fresh, found, held(section))
        )
        if not candidates["Goal"]:
            candidates["Goal"] = asked
        marked = {
            heading: [_marked(item, ledger) for item in items]
            for heading, items in candidates.items()
        }
        room = request.budget_tokens - (counter.text(section) + 2 if section else 0)
        fitting = fit(
            marked,
            budget=room,
            counter=counter,
            focus=request.focus,
            compact=request.compact,
            earlier=left_out_before(request.previous_summary),
        )
        text = with_ledger(fitting.text, section)
        self.grown = Grown(text, lambda extra: with_ledger(fitting.grown(extra), section))
        return SummaryResult(text=text, source="offline", model=None, warnings=fitting.warnings)


def _ledger_plain(
    previous: list[str], middle: list[Message]
) -> tuple[LedgerPlain, dict[str, list[tuple[Kind, str]]]]:
    """The ledger of `middle` after `previous` entries, and what it classified,
    as plain data. Its user messages are those the scan finds (Scan.said)."""
    classify = Classified()
    ledger = Ledger(previous, user_messages(middle), classify=classify)
    return ledger.plain(), dict(classify)
