"""The record's Preserved Facts section: the facts of the compacted turns
that the record does not name, one line each, most important first, within
the room the record leaves; and the facts read back from an earlier record's
section when that record is updated."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ctxpack.facts.extract import FactCollector, FactMemo, Facts, message_facts, result_command
from ctxpack.facts.match import Haystack, collapse, dedupe
from ctxpack.redact import mask
from ctxpack.summarize.protocol import PRESERVED_FACTS_HEADING
from ctxpack.summarize.template import left_out, parse
from ctxpack.tokens.counter import TokenCounter
from ctxpack.toolpairs import Pairing, pair
from ctxpack.transcript import Message

# The preserved-facts section lists these, most important first.
PRESERVED_ORDER = ("errors", "identifiers", "commands", "paths", "urls", "directives")
_LABELS = {
    "paths": "Path",
    "commands": "Command",
    "errors": "Error",
    "identifiers": "ID",
    "urls": "URL",
    "directives": "User directive",
}
PRESERVED_INTRO = "Facts from the compacted turns that the record above does not mention:"


def fact_line(category: str, item: str) -> str:
    """One preserved fact as a list item; multi-line commands stay whole."""
    item = mask(item)
    label = _LABELS.get(category, category)
    if category == "commands":
        if "\n" in item:
            return f"- {label}:\n```\n{item}\n```"
        fence = "``" if "`" in item else "`"
        pad = " " if fence == "``" else ""
        return f"- {label}: {fence}{pad}{item}{pad}{fence}"
    if category == "directives":
        return f'- {label}: "{collapse(item)}"'
    # A text that opens with the label already ("Error: Command failed: tsc
    # --build", cargo's "error: failed to load manifest") carries it once.
    own = len(label) + 1
    if item[:own].lower() == f"{label.lower()}:" and item[own:].strip():
        item = item[own:].lstrip()
    return f"- {label}: {item}"


def fact_of(line: str) -> str | None:
    """The fact a preserved-facts line (fact_line) names; None for any other line."""
    found = _FACT_LINE_RE.match(line)
    if found is None:
        return None
    label, body = found.groups()
    if label == _LABELS["commands"]:
        fenced = _FENCED_RE.fullmatch(body)
        return next(part for part in fenced.groups() if part is not None) if fenced else None
    if label == _LABELS["directives"]:
        return body[1:-1] if len(body) > 1 and body[0] == body[-1] == '"' else None
    return body or None


_FACT_LINE_RE = re.compile(rf"^- ({'|'.join(_LABELS.values())}):(?: |(?=\n))(.*)\Z", re.DOTALL)
_FENCED_RE = re.compile(r"\n```\n(.*)\n```|`` (.*) ``|`([^`]*)`", re.DOTALL)


def earlier_facts(previous_summary: str | None) -> list[str]:
    """The items of the preserved-facts section of a record being updated."""
    if not previous_summary:
        return []
    return parse(previous_summary).get(PRESERVED_FACTS_HEADING, [])


def earlier_left(previous_summary: str | None) -> int:
    """How many facts the preserved-facts section of a record being updated
    had no room for."""
    if not previous_summary:
        return 0
    return left_out(previous_summary).get(PRESERVED_FACTS_HEADING, 0)


@dataclass(frozen=True)
class PreservedFacts:
    """The section ("" when no fact is missing, or none fits) and how many
    of the facts missing from the record it had no room for. The count an
    earlier record carried is not among them: those facts were left out
    before, and no room now would bring them back."""

    text: str
    unshown: int


def preserved_facts_section(
    middle: list[Message],
    summary_text: str,
    *,
    counter: TokenCounter,
    cap_tokens: int,
    memo: FactMemo | None = None,
    earlier: Sequence[str] = (),
    earlier_left: int = 0,
    named: Facts | None = None,
    found: Facts | None = None,
) -> PreservedFacts:
    """A `## Preserved Facts` section with the middle's facts the summary lost,
    most important first, within cap_tokens.
    `memo`: the facts the summarizer found while it read the middle.
    `earlier`: the items of the section of the record the summary updates:
    its facts were compacted too, and stay while the summary does not name
    them (the facts of a record's own text hold no commands or errors).
    `earlier_left`: the facts that section had no room for, counted on: they
    are in its archived turns only, which an update does not read.
    `named`: the facts that record named in its other lines (its actions,
    its files), last in line: the summary may no longer show those lines.
    `found`: middle_facts(middle, memo=memo), when the caller has them (a
    record fitted more than once reads the same middle each time)."""
    haystack = Haystack(summary_text)
    if found is None:
        found = middle_facts(middle, memo=memo)
    candidates = dedupe(
        [
            *_missing(found, haystack),
            *(line for line in earlier if (fact := fact_of(line)) and not haystack.mentions(fact)),
            *(_missing(named, haystack) if named is not None else ()),
        ]
    )
    if not candidates:
        return PreservedFacts("", 0)
    head = [f"## {PRESERVED_FACTS_HEADING}", PRESERVED_INTRO]
    used = counter.text("\n".join(head)) + 1
    more = _more_cost(counter)
    chosen: list[str] = []
    skipped = earlier_left
    for number, line in enumerate(candidates):
        if used + 2 + more > cap_tokens:
            # Every line costs at least 2: none of the rest can fit.
            skipped += len(candidates) - number
            break
        cost = counter.text(line) + 1
        # Keep room for the closing "(+N more)" line while items remain.
        if used + cost + more <= cap_tokens:
            chosen.append(line)
            used += cost
        else:
            skipped += 1
    section = _render(head, chosen, skipped) if chosen else ""
    while counter.text(section) > cap_tokens and chosen:
        chosen.pop()
        skipped += 1
        section = _render(head, chosen, skipped) if chosen else ""
    return PreservedFacts(section, len(candidates) - len(chosen))


def middle_facts(middle: list[Message], *, memo: FactMemo | None = None) -> Facts:
    """The facts of the compacted turns; `memo`: those the summarizer found
    while it read them."""
    collector = FactCollector()
    pairing: Pairing | None = None
    for index, msg in enumerate(middle):
        known = memo.known(msg) if memo is not None else None
        if known is None:
            if pairing is None:
                pairing = pair(middle)
            known = message_facts(msg, command=result_command(pairing, index))
        collector.add(known)
    return collector.facts()


def _missing(facts: Facts, haystack: Haystack) -> list[str]:
    """The lines of the facts `haystack` does not mention, most important
    first. The record masks secrets: a fact it names masked is not missing,
    and facts that differ only in a masked secret are one line."""
    return dedupe(
        fact_line(category, item)
        for category in PRESERVED_ORDER
        for item in getattr(facts, category)
        if not (haystack.mentions(item) or haystack.mentions(mask(item)))
    )


def _more_cost(counter: TokenCounter) -> int:
    return counter.text("- (+999 more facts not shown)") + 1


def _render(head: list[str], chosen: list[str], skipped: int) -> str:
    tail = [f"- (+{skipped} more facts not shown)"] if skipped else []
    return "\n".join([*head, *chosen, *tail])
