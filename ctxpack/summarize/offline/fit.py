"""Fitting candidate items into the template within a token budget.

Each section offers items most important first. Items about the focus topic
go in first, then every section gets its share of the budget, then what is
left goes round the sections in proportion to their shares. Sections that lost items
end with a "(+N more)" line. The final text is counted exactly and trimmed
from the least important item added until it fits. The room it leaves
unused (the "(+N more)" room of a section shown whole, what the costs
overstated) is the preserved facts' first; what they leave can grow the
summary (Fitted.grown)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate

from ctxpack.summarize.protocol import HEADINGS
from ctxpack.summarize.template import COMPLETED_ACTIONS, render, render_compact
from ctxpack.tokens.counter import TokenCounter


@dataclass(frozen=True, slots=True)
class Item:
    # Slots: a long middle makes one for each of its tens of thousands of actions.
    text: str
    order: int = 0  # position when displayed (lower first); ties keep priority order


SHARES = {
    "Historical Task Snapshot": 0.05,
    "Goal": 0.05,
    "Constraints & Preferences": 0.07,
    "Completed Actions": 0.22,
    "Active State": 0.08,
    "Historical In-Progress State": 0.04,
    "Blocked": 0.08,
    "Key Decisions": 0.05,
    "Resolved Questions": 0.04,
    "Historical Pending User Asks": 0.05,
    "Relevant Files": 0.14,
    "Historical Remaining Work": 0.05,
    "Critical Context": 0.08,
}
PRIORITY = (
    "Historical Task Snapshot",
    "Goal",
    "Constraints & Preferences",
    "Blocked",
    "Active State",
    "Completed Actions",
    "Relevant Files",
    "Historical Pending User Asks",
    "Historical In-Progress State",
    "Critical Context",
    "Key Decisions",
    "Historical Remaining Work",
    "Resolved Questions",
)
_MORE_RESERVE = 8
# The room left after every section's share is handed out over about this many rounds.
LEFTOVER_ROUNDS = 20
# Passes over the room the first fit left unused.
_REFILLS = 2


def more_line(heading: str, count: int) -> str:
    if heading == COMPLETED_ACTIONS:
        return f"- (+{count} other actions not shown)"
    return f"- (+{count} more)"


def focus_terms(focus: str | None) -> list[str]:
    if not focus or not focus.strip():
        return []
    words = [w for w in focus.lower().split() if len(w) >= 3]
    return [focus.lower().strip(), *words]


def mentions(text: str, terms: Sequence[str]) -> bool:
    lowered = text.lower()
    return any(term in lowered for term in terms)


def assemble(
    candidates: Mapping[str, Sequence[Item]],
    chosen: Mapping[str, Sequence[int]],
    *,
    compact: bool = False,
    earlier: Mapping[str, int] | None = None,
) -> str:
    """The sections' chosen items; `earlier`: by section, how many items an
    earlier record had no room for, which its "(+N more)" line counts too."""
    sections: dict[str, list[str]] = {}
    for heading in HEADINGS:
        items = candidates.get(heading, ())
        picked = sorted(chosen.get(heading, ()), key=lambda i: (items[i].order, i))
        lines = [items[i].text for i in picked]
        omitted = len(items) - len(picked) + (earlier or {}).get(heading, 0)
        if omitted and picked:
            more = more_line(heading, omitted)
            lines = [more, *lines] if heading == COMPLETED_ACTIONS else [*lines, more]
        elif omitted:
            lines = [more_line(heading, omitted)]
        sections[heading] = lines
    return render_compact(sections) if compact else render(sections)


def _queues(
    costs: Mapping[str, Sequence[int]], taken: set[tuple[str, int]]
) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """Each section's items not taken, in order, and the cheapest of each
    queue from each place on: once none left fits, no round can take one (a
    long middle queues tens of thousands)."""
    queues = {h: [i for i in range(len(costs[h])) if (h, i) not in taken] for h in PRIORITY}
    cheapest = {
        h: list(accumulate((costs[h][i] for i in reversed(queue)), min))[::-1]
        for h, queue in queues.items()
    }
    return queues, cheapest


@dataclass(frozen=True)
class Fitted:
    """A fitted summary, its warnings, and the same summary in `extra` tokens
    more than it takes (grown(extra), once): the items it left out go round
    that room, and every item it holds stays."""

    text: str
    warnings: list[str]
    grown: Callable[[int], str]


def fit(
    candidates: Mapping[str, Sequence[Item]],
    *,
    budget: int,
    counter: TokenCounter,
    focus: str | None = None,
    compact: bool = False,
    earlier: Mapping[str, int] | None = None,
) -> Fitted:
    """The rendered summary within `budget` tokens, any warnings, and the
    summary grown on demand (Fitted.grown); `compact`: empty sections share one
    line (template.render_compact); `earlier`: see assemble."""
    skeleton = render_compact({}) if compact else render({})
    warnings: list[str] = []
    # Every candidate is weighed, a long middle's thousands of actions too.
    lengths = iter(counter.texts([item.text for h in HEADINGS for item in candidates.get(h, ())]))
    costs = {h: [next(lengths) + 1 for _ in candidates.get(h, ())] for h in HEADINGS}
    crowded = sum(1 for h in HEADINGS if costs[h] or (earlier or {}).get(h))
    room = budget - counter.text(skeleton) - _MORE_RESERVE * crowded
    chosen: dict[str, list[int]] = {h: [] for h in HEADINGS}
    added: list[tuple[str, int]] = []
    taken: set[tuple[str, int]] = set()
    used = 0

    def take(heading: str, index: int) -> None:
        nonlocal used
        chosen[heading].append(index)
        added.append((heading, index))
        taken.add((heading, index))
        used += costs[heading][index]

    terms = focus_terms(focus)
    if terms:
        for heading in PRIORITY:
            for i, item in enumerate(candidates.get(heading, ())):
                if mentions(item.text, terms) and used + costs[heading][i] <= room:
                    take(heading, i)
    for heading in PRIORITY:
        share = room * SHARES[heading]
        spent = sum(costs[heading][i] for i in chosen[heading])
        for i, cost in enumerate(costs[heading]):
            if (heading, i) in taken:
                continue
            if spent + cost > share or used + cost > room:
                break
            take(heading, i)
            spent += cost
    # What is left goes round the sections in small rounds, each taking
    # tokens in proportion to its share (an item at least), so no section with
    # material is starved, and one of many long items does not crowd out the
    # next item of a section before it.
    queues, cheapest = _queues(costs, taken)
    at = dict.fromkeys(PRIORITY, 0)

    def go_round(limit: int) -> None:
        while any(at[h] < len(q) and cheapest[h][at[h]] <= limit - used for h, q in queues.items()):
            for heading in PRIORITY:
                queue, place = queues[heading], at[heading]
                allowance, spent, start = limit * SHARES[heading] / LEFTOVER_ROUNDS, 0, place
                while place < len(queue) and (
                    place == start or spent + costs[heading][queue[place]] <= allowance
                ):
                    i = queue[place]
                    place += 1
                    if used + costs[heading][i] <= limit:
                        take(heading, i)
                        spent += costs[heading][i]
                at[heading] = place

    def trimmed(limit: int, *, keep: int) -> str:
        """The summary within `limit` tokens: the items added last, after
        the first `keep`, taken back out until it fits (summed item costs
        are no exact count of the rendered text). What is taken out can be
        offered again to a larger room."""
        text = assemble(candidates, chosen, compact=compact, earlier=earlier)
        while counter.text(text) > limit and len(added) > keep:
            heading, index = added.pop()
            chosen[heading].remove(index)
            taken.discard((heading, index))
            text = assemble(candidates, chosen, compact=compact, earlier=earlier)
        return text

    go_round(room)
    text = trimmed(budget, keep=0)
    if counter.text(text) > budget:
        text = skeleton
    if counter.text(text) > budget:
        warnings.append(
            f"summary budget of {budget} tokens is below the bare template "
            f"({counter.text(skeleton)} tokens); wrote the headings only"
        )
    first = text

    def grown(extra: int) -> str:
        """The summary in `extra` tokens more than it takes: the items left out
        go round that room. Any that overshoot were added last, and are the
        first taken back out."""
        nonlocal queues, cheapest, at
        text = first
        if text == skeleton:
            return text
        limit = counter.text(text) + extra
        for _ in range(_REFILLS):
            spare = limit - counter.text(text)
            if spare < 2:
                break
            before = len(added)
            queues, cheapest = _queues(costs, taken)
            at = dict.fromkeys(PRIORITY, 0)
            go_round(used + spare)
            if len(added) == before:
                break
            text = trimmed(limit, keep=before)
        return text

    return Fitted(text=text, warnings=warnings, grown=grown)
