"""Which tool result answers which tool call: the one pairing rule that
pruning, alignment, sanitizing and evaluation all follow.

Pairing follows the transcript order.
- A result with an id (`tool_call_id`) answers the latest earlier call with
  that id (`tool_calls[].id`); ids do get reused within one transcript.
- A result without an id (legacy `role: "function"`, or a tool message missing
  its `tool_call_id`) answers the id-less calls (the legacy `function_call`,
  or `tool_calls` entries without an id) of the assistant message its run of
  results directly follows. Such a result cannot say which of them it belongs
  to, so it answers all of them.
A result that answers nothing is an orphan; so is a call no result answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from ctxpack import messages as m
from ctxpack.transcript import Message

# The slot of the legacy `function_call`; `tool_calls` entries have their list index.
LEGACY_SLOT = -1


class ToolUse(NamedTuple):
    """One call an assistant message made. A tuple: a long session makes one
    per call in each of several passes, and a frozen dataclass costs three
    times as much to make and to hash."""

    # The position of the assistant message in the list. (It hides the tuple's
    # own index method, which nothing calls on a call.)
    index: int  # type: ignore[assignment]
    call_id: str  # "" for legacy function_call
    name: str
    arguments: str  # raw JSON text as the model wrote it
    slot: int = LEGACY_SLOT  # where in its message: the tool_calls index, or LEGACY_SLOT

    def args(self) -> dict[str, Any]:
        return parse_arguments(self.arguments)


def parse_arguments(arguments: str) -> dict[str, Any]:
    """Arguments as a dict; {} when they are not a JSON object."""
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def calls_of(msg: Message, index: int) -> list[ToolUse]:
    uses = [
        ToolUse(index, m.call_id(call), m.call_name(call), m.call_arguments(call), slot)
        for slot, call in enumerate(m.tool_calls(msg))
    ]
    legacy = m.legacy_function_call(msg)
    if legacy is not None:
        name, arguments = legacy.get("name"), legacy.get("arguments")
        uses.append(
            ToolUse(
                index,
                "",
                name if isinstance(name, str) else "",
                arguments if isinstance(arguments, str) else "",
            )
        )
    return uses


@dataclass(frozen=True)
class Pairing:
    """How the calls and results of one message list pair up."""

    # Index of each result that answers a call -> that call (for a result
    # without an id: the first id-less call it answers).
    links: dict[int, ToolUse]
    # Every call, in order.
    calls: list[ToolUse]
    # Index of each assistant message -> the slots of its calls that some result answers.
    answered: dict[int, set[int]]
    # Indexes of the results that answer no call.
    orphan_results: list[int]

    def results(self) -> list[int]:
        """Indexes of every tool result, in order: each answers a call or is an orphan."""
        return sorted([*self.links, *self.orphan_results])

    def unanswered(self) -> list[ToolUse]:
        return [use for use in self.calls if use.slot not in self.answered.get(use.index, ())]

    def orphans(self) -> tuple[list[int], list[ToolUse]]:
        """(indexes of results that answer no call, calls that no result answers)."""
        return self.orphan_results, self.unanswered()

    def answered_slots(self, index: int) -> set[int]:
        """Slots of the calls of message `index` that some result answers."""
        return self.answered.get(index, set())

    def within(self, start: int, end: int) -> Pairing:
        """pair(messages[start:end]), read off this pairing of `messages`. A
        result answers the same call in a stretch as in the whole list, or none
        when that call lies before the stretch: no call in between can take
        its place, as an id names the latest earlier call with it and an
        id-less result answers the message its run of results follows."""
        moved: dict[ToolUse, ToolUse] = {}
        calls: list[ToolUse] = []
        idless: dict[int, list[int]] = {}
        for use in self.calls:
            if start <= use.index < end:
                local = ToolUse(use.index - start, use.call_id, use.name, use.arguments, use.slot)
                moved[use] = local
                calls.append(local)
                if not use.call_id:
                    idless.setdefault(use.index, []).append(use.slot)
        links: dict[int, ToolUse] = {}
        answered: dict[int, set[int]] = {}
        orphan_results = [r - start for r in self.orphan_results if start <= r < end]
        for result, use in self.links.items():
            if not start <= result < end:
                continue
            target = moved.get(use)
            if target is None:
                orphan_results.append(result - start)
                continue
            links[result - start] = target
            slots = [use.slot] if use.call_id else idless[use.index]
            answered.setdefault(target.index, set()).update(slots)
        orphan_results.sort()
        return Pairing(links=links, calls=calls, answered=answered, orphan_results=orphan_results)

    def selected(self, places: list[int]) -> Pairing:
        """pair() of the messages at `places` (increasing) of the list this
        pairs, when every message left out is neither a result nor a call
        and no kept result directly follows one: each result then answers
        the same call as before, at its new place."""
        new = {old: i for i, old in enumerate(places)}
        moved: dict[ToolUse, ToolUse] = {}
        for use in self.calls:
            moved[use] = ToolUse(new[use.index], use.call_id, use.name, use.arguments, use.slot)
        return Pairing(
            links={new[r]: moved[use] for r, use in self.links.items()},
            calls=list(moved.values()),
            answered={new[i]: set(slots) for i, slots in self.answered.items()},
            orphan_results=[new[r] for r in self.orphan_results],
        )


def pair(messages: list[Message]) -> Pairing:
    calls: list[ToolUse] = []
    answered: dict[int, set[int]] = {}
    latest_by_id: dict[str, ToolUse] = {}
    links: dict[int, ToolUse] = {}
    orphan_results: list[int] = []
    # The id-less calls of the assistant message the current run of results follows.
    positional: list[ToolUse] = []
    for index, msg in enumerate(messages):
        # The role is read once here: this loop runs once per message of a session.
        role = msg.get("role")
        if role in m.RESULT_ROLES:
            tcid = m.result_call_id(msg)
            targets = ([latest_by_id[tcid]] if tcid in latest_by_id else []) if tcid else positional
            if not targets:
                orphan_results.append(index)
                continue
            links[index] = targets[0]
            for use in targets:
                answered.setdefault(use.index, set()).add(use.slot)
            continue
        positional = []
        if role == "assistant":
            for use in calls_of(msg, index):
                calls.append(use)
                if use.call_id:
                    latest_by_id[use.call_id] = use
                else:
                    positional.append(use)
    return Pairing(
        links=links,
        calls=calls,
        answered=answered,
        orphan_results=orphan_results,
    )


def link_results(messages: list[Message]) -> dict[int, ToolUse]:
    """Map the index of each tool/function result to the call it answers."""
    return pair(messages).links


def orphans(messages: list[Message]) -> tuple[list[int], list[ToolUse]]:
    """(indexes of results that answer no call, calls that no result answers)."""
    return pair(messages).orphans()
