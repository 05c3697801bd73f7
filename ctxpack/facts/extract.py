"""The key facts of a stretch of conversation, shared by the summarizers (to
decide what must survive) and by evaluation (to measure what did survive).

Where facts come from, and why:
- paths: user/assistant text, tool-call arguments and commands, error lines.
  Not whole tool outputs: a directory listing would bury the paths that matter.
- commands: tool-call arguments (command/cmd/script, shell argv arrays); a
  long multi-line script is known by its first line, as the record names it.
- errors: tool outputs (recognised error lines; the first line of a failed
  one), each distinct message once. Not a pruned output's one-line digest:
  the evaluation and the preserved facts read the original output.
- identifiers: commit SHAs (hex with digits and letters) and UUIDs anywhere,
  versions in what the user, the assistant or a command wrote; never archive
  refs.
- urls: anywhere.
- values: numbers with units and money in user/assistant text.
- directives: user sentences that constrain the work (never, always, don't...).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from ctxpack import messages as m
from ctxpack.facts.match import Haystack, collapse, dedupe
from ctxpack.facts.paths import paths_in_text
from ctxpack.facts.text import (
    command_fact,
    directives_in,
    identifiers_in,
    is_slash_command,
    paths_in_arguments,
    urls_in,
    values_in,
    versions_in,
)
from ctxpack.redact import mask
from ctxpack.summarize.protocol import PRESERVED_FACTS_HEADING
from ctxpack.summarize.template import parse
from ctxpack.tokens import forked
from ctxpack.tokens.counter import TokenCounter
from ctxpack.tooloutput import error_lines, result_flagged_error
from ctxpack.toolpairs import LEGACY_SLOT, Pairing, calls_of, pair, parse_arguments
from ctxpack.tools import command_of
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


# One message's facts: (category, items, their collapsed keys) for each
# category it has any of, items de-duplicated within the message.
MessageFacts = tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]
# A message's tool calls as (raw arguments, parsed arguments).
Calls = list[tuple[str, dict[str, Any]]]
_CATEGORIES = tuple(f.name for f in fields(Facts))


def message_facts(
    msg: Message, *, body: str | None = None, calls: Calls | None = None
) -> MessageFacts:
    """The facts of one message; `body` (its text) and `calls` (its calls'
    raw and parsed arguments) save work when the caller has them."""
    if body is None:
        body = m.text(msg)
    if calls is None:
        calls = message_calls(msg)
    role = m.role(msg)
    paths: list[str] = []
    errors: list[str] = []
    values: list[str] = []
    directives: list[str] = []
    identifiers: list[str] = []
    if role == "user" and is_slash_command(body):
        # The client's command, not words of the user's to the model.
        body = ""
    if role in ("tool", "function"):
        errors = error_lines(body, flagged=result_flagged_error(msg))
        for line in errors:
            paths.extend(paths_in_text(line))
        identifiers = identifiers_in(body)
    else:
        paths = paths_in_text(body)
        values = values_in(body)
        identifiers = [*identifiers_in(body), *versions_in(body)]
        if role == "user":
            directives = directives_in(body)
    urls = urls_in(body)
    commands: list[str] = []
    for raw, args in calls:
        command = command_of(args)
        if command:
            commands.append(command_fact(command))
        paths.extend(paths_in_arguments(args, raw))
        identifiers.extend(identifiers_in(raw))
        if command:
            identifiers.extend(versions_in(command))
        urls.extend(urls_in(raw))
    found = (
        ("paths", paths),
        ("commands", commands),
        ("errors", errors),
        ("identifiers", identifiers),
        ("urls", urls),
        ("values", values),
        ("directives", directives),
    )
    return tuple(_unique(name, items) for name, items in found if items)


def _unique(name: str, items: list[str]) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    kept: list[str] = []
    keys: dict[str, None] = {}
    for item in items:
        key = collapse(item)
        if key and key not in keys:
            kept.append(item)
            keys[key] = None
    return name, tuple(kept), tuple(keys)


def ran_only(messages: list[Message], *, pairing: Pairing | None = None) -> list[Message]:
    """The messages without the calls no result answers: a call that never
    ran is no completed fact. Unchanged messages are the same objects.
    `pairing`: toolpairs.pair(messages), when the caller has it already."""
    _, unanswered = (pairing or pair(messages)).orphans()
    if not unanswered:
        return messages
    drop: dict[int, set[int]] = {}
    for use in unanswered:
        drop.setdefault(use.index, set()).add(use.slot)
    out = []
    for index, msg in enumerate(messages):
        slots = drop.get(index)
        if slots is None:
            out.append(msg)
            continue
        copy = dict(msg)
        calls = msg.get("tool_calls")
        if isinstance(calls, list):
            copy["tool_calls"] = [c for n, c in enumerate(calls) if n not in slots]
        if LEGACY_SLOT in slots:
            copy.pop("function_call", None)
        out.append(copy)
    return out


def message_calls(msg: Message, index: int = 0) -> Calls:
    return [(use.arguments, parse_arguments(use.arguments)) for use in calls_of(msg, index)]


class FactCollector:
    """Facts gathered message by message, each kept once (first appearance)."""

    def __init__(self) -> None:
        self._items: dict[str, list[str]] = {name: [] for name in _CATEGORIES}
        self._seen: dict[str, set[str]] = {name: set() for name in _CATEGORIES}

    def add(self, facts: MessageFacts) -> None:
        for category, items, keys in facts:
            if not items:
                continue
            seen, out = self._seen[category], self._items[category]
            for item, key in zip(items, keys, strict=True):
                if key not in seen:
                    seen.add(key)
                    out.append(item)

    def facts(self) -> Facts:
        return Facts(**{name: list(items) for name, items in self._items.items()})


def extract_facts(messages: list[Message]) -> Facts:
    collector = FactCollector()
    for msg in messages:
        collector.add(message_facts(msg))
    return collector.facts()


class FactMemo:
    """Facts per message object, for one session's run (SessionIndex.facts).

    The summarizer extracts the middle's facts while it reads it; the pipeline
    then asks for the preserved facts of nearly the same messages, and the
    retention check for the facts of the original ones (mostly the same
    objects). Messages are never changed in place (a changed one is a new
    object), so a message's facts are found once. Long sessions also repeat
    whole messages (re-run commands, re-read files, injected reminders): equal
    messages are read once."""

    def __init__(self) -> None:
        # Facts by message id. Each message is held here too, so that no
        # other object can take its id while the memo lives: a list slot a
        # message instead of a pair (a long session has hundreds of thousands).
        self._known: dict[int, MessageFacts] = {}
        self._held: list[Message] = []
        self._by_content: dict[tuple[str, bool, str, tuple[str, ...]], MessageFacts] = {}

    def known(self, msg: Message) -> MessageFacts | None:
        """The facts of `msg` when they were found already."""
        return self._known.get(id(msg))

    def learn(self, msg: Message, facts: MessageFacts) -> None:
        """Keep the facts of `msg` found elsewhere (a child process that read it)."""
        self._keep(msg, facts)

    def _keep(self, msg: Message, facts: MessageFacts) -> None:
        if id(msg) not in self._known:
            self._held.append(msg)
        self._known[id(msg)] = facts

    @contextlib.contextmanager
    def learned_beside(self, messages: list[Message]) -> Iterator[None]:
        """The facts of those of `messages` not known yet, found in a child
        at the lowest priority while the body runs (on the time the cores
        have spare) and learned when it is done."""
        todo = [msg for msg in messages if id(msg) not in self._known]
        # A memo of its own in the child: equal messages are read once there too.
        with forked.started(lambda: list(map(FactMemo().found, todo)), background=True) as found:
            yield
            for msg, facts in zip(todo, found(), strict=True):
                self._keep(msg, facts)

    def found(self, msg: Message) -> MessageFacts:
        """message_facts(msg), found once: by the message, or by what it
        holds that facts are read from (of)."""
        known = self.known(msg)
        if known is not None:
            return known
        return self.of(msg, body=m.text(msg), calls=message_calls(msg))

    def of(self, msg: Message, *, body: str, calls: Calls) -> MessageFacts:
        """message_facts(msg, body=body, calls=calls), found once."""
        found = self.known(msg)
        if found is None:
            # Everything message_facts reads of the message.
            role = m.role(msg)
            kind = "result" if role in ("tool", "function") else "user" if role == "user" else ""
            flagged = kind == "result" and result_flagged_error(msg)
            key = (kind, flagged, body, tuple(raw for raw, _ in calls))
            found = self._by_content.get(key)
            if found is None:
                found = self._by_content[key] = message_facts(msg, body=body, calls=calls)
            self._keep(msg, found)
        return found


def missing_facts(facts: Facts, text: str) -> Facts:
    """The facts that do not appear in `text` (whitespace-insensitive)."""
    haystack = Haystack(text)
    return Facts(
        **{
            name: [item for item in items if not haystack.mentions(item)]
            for name, items in facts.categories()
        }
    )


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


def preserved_facts_section(
    middle: list[Message],
    summary_text: str,
    *,
    counter: TokenCounter,
    cap_tokens: int,
    memo: FactMemo | None = None,
    earlier: Sequence[str] = (),
) -> str:
    """A `## Preserved Facts` section with the middle's facts the summary lost,
    most important first, within cap_tokens; "" when nothing is missing.
    `memo`: the facts the summarizer found while it read the middle.
    `earlier`: the items of the section of the record the summary updates:
    its facts were compacted too, and stay while the summary does not name
    them (the facts of a record's own text hold no commands or errors)."""
    collector = FactCollector()
    for msg in middle:
        known = memo.known(msg) if memo is not None else None
        collector.add(message_facts(msg) if known is None else known)
    facts = collector.facts()
    haystack = Haystack(summary_text)
    # The record masks secrets: a fact it names masked is not missing, and
    # facts that differ only in a masked secret are one line.
    candidates = dedupe(
        fact_line(category, item)
        for category in PRESERVED_ORDER
        for item in getattr(facts, category)
        if not (haystack.mentions(item) or haystack.mentions(mask(item)))
    )
    candidates = dedupe(
        [
            *candidates,
            *(line for line in earlier if (fact := fact_of(line)) and not haystack.mentions(fact)),
        ]
    )
    if not candidates:
        return ""
    head = [f"## {PRESERVED_FACTS_HEADING}", PRESERVED_INTRO]
    used = counter.text("\n".join(head)) + 1
    more = _more_cost(counter)
    chosen: list[str] = []
    skipped = 0
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
