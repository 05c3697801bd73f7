"""The key facts of a stretch of conversation, shared by the summarizers (to
decide what must survive) and by evaluation (to measure what did survive).

Where facts come from, and why:
- paths: user/assistant text, tool-call arguments and commands, error lines.
  Not whole tool outputs: a directory listing would bury the paths that matter.
- commands: tool-call arguments (command/cmd/script, shell argv arrays); a
  long multi-line script is known by its first line, as the record names it.
- errors: tool outputs (recognised error lines; the first line of a failed
  one), each distinct message once. Not a pruned output's one-line digest:
  the evaluation and the preserved facts read the original output. Not an
  exit status 1 that answers (`diff` printing the differences): a result is
  read knowing the command of the call it answers (result_command).
- identifiers: commit SHAs (hex with digits and letters) and UUIDs anywhere,
  versions in what the user, the assistant or a command wrote; never archive
  refs.
- urls: anywhere.
- values: numbers with units and money in user/assistant text.
- directives: user sentences that constrain the work (never, always, don't...).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any

from ctxpack import messages as m
from ctxpack.facts.match import Haystack, collapse
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
    without_outline_numbers,
)
from ctxpack.markers import is_summary
from ctxpack.tokens import forked
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


# One message's facts: (category, items, their collapsed keys) for each
# category it has any of, items de-duplicated within the message.
MessageFacts = tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]
# A message's tool calls as (raw arguments, parsed arguments).
Calls = list[tuple[str, dict[str, Any]]]
_CATEGORIES = tuple(f.name for f in fields(Facts))


def message_facts(
    msg: Message,
    *,
    body: str | None = None,
    calls: Calls | None = None,
    command: str | None = None,
) -> MessageFacts:
    """The facts of one message; `body` (its text) and `calls` (its calls'
    raw and parsed arguments) save work when the caller has them. `command`:
    for a tool result, result_command's, which tells an exit status that
    answers from a failure."""
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
        errors = error_lines(body, flagged=result_flagged_error(msg), command=command)
        for line in errors:
            paths.extend(paths_in_text(line))
        identifiers = identifiers_in(body)
    else:
        paths = paths_in_text(body)
        values = values_in(body)
        identifiers = [*identifiers_in(body), *without_outline_numbers(versions_in(body), body)]
        if role == "user" and not is_summary(msg):
            # A compaction's summary (ours, another agent's) rides in a user
            # turn, but its words are not the user's.
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


def result_command(pairing: Pairing, index: int) -> str | None:
    """The command of the call that the result at `index` answers, as the
    record's action reads it (None: no call, or one that runs no command)."""
    use = pairing.links.get(index)
    return command_of(use.args()) if use is not None else None


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
    pairing = pair(messages)
    for index, msg in enumerate(messages):
        collector.add(message_facts(msg, command=result_command(pairing, index)))
    return collector.facts()


class FactMemo:
    """Facts per message object, for one session's run (SessionIndex.facts).

    The summarizer extracts the middle's facts while it reads it; the pipeline
    then asks for the preserved facts of nearly the same messages, and the
    retention check for the facts of the original ones (mostly the same
    objects). Messages are never changed in place (a changed one is a new
    object), and a result answers the same call wherever the run reads it,
    so a message's facts are found once. Long sessions also repeat whole
    messages (re-run commands, re-read files, injected reminders): equal
    messages are read once, a result only with an equal command."""

    def __init__(self) -> None:
        # Facts by message id. Each message is held here too, so that no
        # other object can take its id while the memo lives: a list slot a
        # message instead of a pair (a long session has hundreds of thousands).
        self._known: dict[int, MessageFacts] = {}
        self._held: list[Message] = []
        self._by_content: dict[
            tuple[str, bool, str, tuple[str, ...], str | None], MessageFacts
        ] = {}

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
    def learned_beside(self, messages: list[tuple[Message, str | None]]) -> Iterator[None]:
        """The facts of those of `messages` (each with its result_command)
        not known yet, found in a child at the lowest priority while the body
        runs (on the time the cores have spare) and learned when it is done."""
        todo = [(msg, command) for msg, command in messages if id(msg) not in self._known]

        def read() -> list[MessageFacts]:
            # A memo of its own: equal messages are read once here too.
            memo = FactMemo()
            return [memo.found(msg, command=command) for msg, command in todo]

        with forked.started(read, background=True) as found:
            yield
            for (msg, _), facts in zip(todo, found(), strict=True):
                self._keep(msg, facts)

    def found(self, msg: Message, *, command: str | None = None) -> MessageFacts:
        """message_facts(msg, command=command), found once: by the message,
        or by what it holds that facts are read from (of)."""
        known = self.known(msg)
        if known is not None:
            return known
        return self.of(msg, body=m.text(msg), calls=message_calls(msg), command=command)

    def of(
        self, msg: Message, *, body: str, calls: Calls, command: str | None = None
    ) -> MessageFacts:
        """message_facts(msg, body=body, calls=calls, command=command), found once."""
        found = self.known(msg)
        if found is None:
            # Everything message_facts reads of the message.
            role = m.role(msg)
            if role in ("tool", "function"):
                kind = "result"
            elif role == "user":
                kind = "summary" if is_summary(msg) else "user"
            else:
                kind = ""
            flagged = kind == "result" and result_flagged_error(msg)
            # A result's command tells whether its exit status 1 answered.
            said = command if kind == "result" else None
            key = (kind, flagged, body, tuple(raw for raw, _ in calls), said)
            found = self._by_content.get(key)
            if found is None:
                found = self._by_content[key] = message_facts(
                    msg, body=body, calls=calls, command=said
                )
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
