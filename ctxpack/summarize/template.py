"""The summary template as data: render sections to markdown with `## Heading`
lines, and parse markdown (ours or a model's) back into sections. An update
merges an earlier summary with new turns by the offline summarizer's rules
(summarize/offline/update.py).

A section is a list of items; an item is one list entry and may span lines
(a fenced multi-line command stays inside the item it belongs to)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from ctxpack.summarize.protocol import HEADINGS, PRESERVED_FACTS_HEADING

Sections = dict[str, list[str]]

EMPTY_LINE = "- None recorded."
PREAMBLE = ""  # key for text before the first heading
COMPLETED_ACTIONS = "Completed Actions"
# The compact form's one line for every empty section (a tight --fit budget).
EMPTY_SECTIONS = "Nothing recorded under:"

_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_BOLD_HEADING_RE = re.compile(r"^\s{0,3}\*\*(.+?)\*\*:?\s*$")
_ITEM_START_RE = re.compile(r"^(?:[-*+]\s+|\d+[.)]\s+)")
_NUMBER_RE = re.compile(r"^\s*(\d+)[.)]\s+")
# A section's "(+N more)" line: how many of its items it had no room for.
_MORE_RE = re.compile(r"^\s*(?:[-*+]\s+)?\(\+(\d+) [^)]*\)\s*$")
_EMPTY_RE = re.compile(
    r"^\s*(?:[-*+]\s+)?(?:none(?: recorded)?|n/a|nothing(?: recorded)?)\.?\s*$", re.I
)
_KEY_STRIP_RE = re.compile(r"^\s*(?:[-*+]\s+|\d+[.)]\s+)")

_CANONICAL = {h.lower(): h for h in (*HEADINGS, PRESERVED_FACTS_HEADING)}


def empty_sections() -> Sections:
    return {heading: [] for heading in HEADINGS}


def canonical_heading(title: str) -> str:
    cleaned = title.strip().strip("*_").strip().rstrip(":").strip()
    return _CANONICAL.get(cleaned.lower(), cleaned)


def render(sections: Mapping[str, Sequence[str]]) -> str:
    """Every template heading in order; an empty section says so."""
    blocks = []
    for heading in HEADINGS:
        items = [item for item in sections.get(heading, ()) if item.strip()]
        body = "\n".join(items) if items else EMPTY_LINE
        blocks.append(f"## {heading}\n{body}")
    return "\n\n".join(blocks)


def below_skeleton(count: Callable[[str], int]) -> int:
    """At most how many tokens fewer than the bare template (render({})) any
    record rendered in full takes, by an exact count whose texts add up at
    their blank lines (tokens/counter.py). Each of its sections is a stretch
    of its own that opens with the heading's line and holds a body of a token
    at least; the heading's tokens are the same whatever the body holds, as a
    heading ends in a letter and no token runs on from a letter into a newline."""
    return sum(
        count(f"## {heading}\n{EMPTY_LINE}\n\n") - count(f"## {heading}") - 1
        for heading in HEADINGS
    )


def render_compact(sections: Mapping[str, Sequence[str]]) -> str:
    """The sections that have items, in template order, then one line naming
    the empty ones: the record a tight budget affords, read back like the full one."""
    blocks, empty = [], []
    for heading in HEADINGS:
        items = [item for item in sections.get(heading, ()) if item.strip()]
        if items:
            blocks.append(f"## {heading}\n" + "\n".join(items))
        else:
            empty.append(heading)
    if empty:
        blocks.append(f"{EMPTY_SECTIONS} {'; '.join(empty)}.")
    return "\n\n".join(blocks)


def parse(text: str) -> Sections:
    """Sections by heading; template headings are recognised case-insensitively,
    other headings are kept as written. Placeholder lines ("None recorded.",
    "(+N more)") are dropped."""
    sections: Sections = {}
    current = PREAMBLE
    lines: dict[str, list[str]] = {PREAMBLE: []}
    for line in text.splitlines():
        if line.startswith(EMPTY_SECTIONS):
            for name in line.removeprefix(EMPTY_SECTIONS).strip().rstrip(".").split(";"):
                lines.setdefault(canonical_heading(name), [])
            continue
        heading = _heading_of(line)
        if heading is not None:
            current = heading
            lines.setdefault(current, [])
            continue
        lines[current].append(line)
    for heading, body in lines.items():
        items = _items(body)
        if items or heading != PREAMBLE:
            sections[heading] = items
    return sections


def left_out(text: str) -> dict[str, int]:
    """How many items each section of `text` says it had no room for: the N
    of its "(+N more)" lines, which parse() drops."""
    out: dict[str, int] = {}
    current = PREAMBLE
    for line in text.splitlines():
        heading = _heading_of(line)
        if heading is not None:
            current = heading
        elif found := _MORE_RE.match(line):
            out[current] = out.get(current, 0) + int(found.group(1))
    return out


def _heading_of(line: str) -> str | None:
    mt = _HEADING_RE.match(line)
    if mt:
        return canonical_heading(mt.group(1))
    mt = _BOLD_HEADING_RE.match(line)
    if mt and canonical_heading(mt.group(1)) in _CANONICAL.values():
        return canonical_heading(mt.group(1))
    return None


def _items(lines: list[str]) -> list[str]:
    items: list[list[str]] = []
    in_fence = False
    for line in lines:
        stripped = line.strip()
        if in_fence:
            items[-1].append(line)
            in_fence = stripped != "```"
            continue
        if not stripped or _MORE_RE.match(line) or _EMPTY_RE.match(line):
            continue
        fence = stripped.startswith("```")
        continues = bool(items) and not _ITEM_START_RE.match(line)
        if continues and (fence or line[:1].isspace()):
            items[-1].append(line.rstrip())
        else:
            items.append([line.rstrip()])
        in_fence = fence and stripped.count("```") == 1
    return ["\n".join(item).rstrip() for item in items]


def with_prefix(item: str, prefix: str) -> str:
    """A list item with `prefix` put before its text, after its marker."""
    if not prefix:
        return item
    marker, _, text = item.partition(" ")
    return f"{marker} {prefix}{text}"


# How an account of the work from before the record's own turns reads: an
# earlier record's state, every step another agent's summary reports done,
# under way or in the way. The turns since may have changed any of it, and a
# model resuming from the record must not take it for where the work stands.
EARLIER_STATE = "Earlier state: "


def as_earlier(item: str) -> str:
    """`item` marked as an earlier account of the work, once."""
    return item if item_text(item).startswith(EARLIER_STATE) else with_prefix(item, EARLIER_STATE)


def quote(text: str) -> str:
    """Words as a record quotes them: in double quotes, theirs made single, so
    that the quote ends where it seems to."""
    return '"' + text.replace('"', "'") + '"'


def item_text(item: str) -> str:
    """A list item without its marker or number."""
    return _KEY_STRIP_RE.sub("", item, count=1)


def item_key(item: str) -> str:
    """An item's identity for de-duplication: no marker, number or case."""
    return " ".join(item_text(item).split()).lower()


def item_number(item: str) -> int | None:
    mt = _NUMBER_RE.match(item)
    return int(mt.group(1)) if mt else None


def max_number(items: Sequence[str]) -> int:
    return max((n for n in map(item_number, items) if n is not None), default=0)
