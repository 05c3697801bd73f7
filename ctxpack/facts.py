"""The key facts of a stretch of conversation, shared by the summarizers (to
decide what must survive) and by evaluation (to measure what did survive).

Where facts come from, and why:
- paths: user/assistant text, tool-call arguments and commands, error lines.
  Not whole tool outputs: a directory listing would bury the paths that matter.
- commands: tool-call arguments (command/cmd/script, shell argv arrays).
- errors: tool outputs (recognised error lines; the first line of a failed one).
- identifiers: commit SHAs (hex with digits and letters) and UUIDs, anywhere.
- urls: anywhere.
- values: numbers with units and money in user/assistant text.
- directives: user sentences that constrain the work (never, always, don't...).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from ctxpack import messages as m
from ctxpack.facts_text import (
    collapse,
    command_of,
    dedupe,
    directives_in,
    error_lines,
    identifiers_in,
    mask_secrets,
    mentions,
    paths_in_arguments,
    paths_in_text,
    result_flagged_error,
    urls_in,
    values_in,
)
from ctxpack.summarizer import PRESERVED_FACTS_HEADING
from ctxpack.tokens import TokenCounter
from ctxpack.toolpairs import calls_of, parse_arguments
from ctxpack.transcript import Message


@dataclass
class Facts:
    """Ordered (first appearance), de-duplicated facts per category."""

    paths: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    identifiers: list[str] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    values: list[str] = field(default_factory=list)
    directives: list[str] = field(default_factory=list)

    def categories(self) -> list[tuple[str, list[str]]]:
        return [(f.name, getattr(self, f.name)) for f in fields(self)]

    def count(self) -> int:
        return sum(len(items) for _, items in self.categories())

    def is_empty(self) -> bool:
        return self.count() == 0


# The preserved-facts section lists these, most important first.
PRESERVED_ORDER = ("paths", "commands", "errors", "identifiers", "urls", "directives")
_LABELS = {
    "paths": "Path",
    "commands": "Command",
    "errors": "Error",
    "identifiers": "ID",
    "urls": "URL",
    "directives": "User directive",
}
PRESERVED_INTRO = "Facts from the compacted turns that the record above does not mention:"


def extract_facts(messages: list[Message]) -> Facts:
    buckets: dict[str, list[str]] = {f.name: [] for f in fields(Facts)}
    for index, msg in enumerate(messages):
        role = m.role(msg)
        body = m.text(msg)
        if m.is_tool_result(msg):
            errors = error_lines(body, flagged=result_flagged_error(msg))
            buckets["errors"].extend(errors)
            for line in errors:
                buckets["paths"].extend(paths_in_text(line))
        else:
            buckets["paths"].extend(paths_in_text(body))
            buckets["values"].extend(values_in(body))
            if role == "user":
                buckets["directives"].extend(directives_in(body))
        buckets["identifiers"].extend(identifiers_in(body))
        buckets["urls"].extend(urls_in(body))
        for use in calls_of(msg, index):
            args = parse_arguments(use.arguments)
            command = command_of(args)
            if command:
                buckets["commands"].append(command)
            buckets["paths"].extend(paths_in_arguments(args, use.arguments))
            buckets["identifiers"].extend(identifiers_in(use.arguments))
            buckets["urls"].extend(urls_in(use.arguments))
    return Facts(**{name: dedupe(items) for name, items in buckets.items()})


def missing_facts(facts: Facts, text: str) -> Facts:
    """The facts that do not appear in `text` (whitespace-insensitive)."""
    haystack = collapse(text)
    return Facts(
        **{
            name: [item for item in items if not mentions(haystack, item)]
            for name, items in facts.categories()
        }
    )


def fact_line(category: str, item: str) -> str:
    """One preserved fact as a list item; multi-line commands stay whole."""
    item = mask_secrets(item)
    label = _LABELS.get(category, category)
    if category == "commands":
        if "\n" in item:
            return f"- {label}:\n```\n{item}\n```"
        fence = "``" if "`" in item else "`"
        pad = " " if fence == "``" else ""
        return f"- {label}: {fence}{pad}{item}{pad}{fence}"
    if category == "directives":
        return f'- {label}: "{collapse(item)}"'
    return f"- {label}: {item}"


def preserved_facts_section(
    middle: list[Message], summary_text: str, *, counter: TokenCounter, cap_tokens: int
) -> str:
    """A `## Preserved Facts` section with the middle's facts the summary lost,
    most important first, within cap_tokens; "" when nothing is missing."""
    missing = missing_facts(extract_facts(middle), summary_text)
    candidates = [
        fact_line(category, item)
        for category in PRESERVED_ORDER
        for item in getattr(missing, category)
    ]
    if not candidates:
        return ""
    head = [f"## {PRESERVED_FACTS_HEADING}", PRESERVED_INTRO]
    used = counter.text("\n".join(head)) + 1
    chosen: list[str] = []
    skipped = 0
    for line in candidates:
        cost = counter.text(line) + 1
        # Keep room for the closing "(+N more)" line while items remain.
        if used + cost + _more_cost(counter) <= cap_tokens:
            chosen.append(line)
            used += cost
        else:
            skipped += 1
    if not chosen:
        return ""
    section = _render(head, chosen, skipped)
    while counter.text(section) > cap_tokens and chosen:
        chosen.pop()
        skipped += 1
        section = _render(head, chosen, skipped)
    return section if chosen else ""


def _more_cost(counter: TokenCounter) -> int:
    return counter.text("- (+999 more facts not shown)") + 1


def _render(head: list[str], chosen: list[str], skipped: int) -> str:
    tail = [f"- (+{skipped} more facts not shown)"] if skipped else []
    return "\n".join([*head, *chosen, *tail])
