"""What the stages look up in one session, found once per run: how its calls
and results pair, what each call does, and the facts of each message.

One compaction reads the same session in several stages: prune planning, the
boundaries, the summarizer, the retention check and the archive record. Each
of them used to pair the session, describe its calls and extract its facts for
itself. The run makes one index per input session and hands it to each stage,
which reads it instead."""

from __future__ import annotations

from ctxpack import messages as m
from ctxpack.facts.extract import FactMemo
from ctxpack.toolpairs import Pairing, ToolUse, calls_of, pair
from ctxpack.tools import CallInfo, describe
from ctxpack.transcript import Message


class SessionIndex:
    """One session's messages as the stages look them up. Every lookup is
    made on first use: a run that never asks for one does not pay for it."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages
        # Filled by the summarizer as it reads the middle, read again by the
        # preserved facts and by the retention check.
        self.facts = FactMemo()
        self._pairing: Pairing | None = None
        # Other lists paired through the index (the pruned session), with the
        # place of each of their messages, so that a stretch of one is found.
        self._versions: list[tuple[list[Message], Pairing, dict[int, int]]] = []
        # A re-run test, a re-read file: the same call is described once.
        self._described: dict[tuple[str, str], CallInfo] = {}

    @property
    def pairing(self) -> Pairing:
        """toolpairs.pair of the session's messages."""
        if self._pairing is None:
            self._pairing = pair(self.messages)
        return self._pairing

    def pairing_of(self, messages: list[Message]) -> Pairing:
        """toolpairs.pair(messages), read off a pairing already made when
        `messages` is the session, a version of it whose replaced messages pair
        the same way (pruning: an output's text replaced, a call's arguments
        shrunk; every role, result id and call id kept), or a stretch of
        either (the middle, the tail)."""
        for known, pairing, _ in self._versions:
            if messages is known:
                return pairing
        for known, pairing, places in self._versions:
            start = places.get(id(messages[0]), -1) if messages else -1
            stop = start + len(messages)
            if start >= 0 and stop <= len(known) and _same_run(known, start, messages):
                return pairing.within(start, stop)
        pairing = self._version(messages)
        self._versions.append((messages, pairing, {id(msg): i for i, msg in enumerate(messages)}))
        return pairing

    def _version(self, messages: list[Message]) -> Pairing:
        if messages is self.messages:
            return self.pairing
        if len(messages) != len(self.messages):
            return pair(messages)
        moved: dict[ToolUse, ToolUse] = {}
        for index, (old, new) in enumerate(zip(self.messages, messages, strict=True)):
            if old is new:
                continue
            if m.role(old) != m.role(new) or m.result_call_id(old) != m.result_call_id(new):
                return pair(messages)
            if m.role(new) != "assistant":
                continue
            before, after = calls_of(old, index), calls_of(new, index)
            if [(u.call_id, u.slot) for u in before] != [(u.call_id, u.slot) for u in after]:
                return pair(messages)
            moved.update((u, v) for u, v in zip(before, after, strict=True) if u != v)
        known = self.pairing
        if not moved:
            return known
        return Pairing(
            links={index: moved.get(use, use) for index, use in known.links.items()},
            calls=[moved.get(use, use) for use in known.calls],
            answered=known.answered,
            orphan_results=known.orphan_results,
        )

    def call_info(self, index: int) -> CallInfo:
        """What the call that the tool result at `index` answers does; for a
        result that answers no call, what its own tool name says."""
        use = self.pairing.links.get(index)
        if use is not None:
            key = (use.name, use.arguments)
        else:
            name = self.messages[index].get("name")
            key = (name if isinstance(name, str) else "", "")
        info = self._described.get(key)
        if info is None:
            info = self._described[key] = describe(*key)
        return info


def _same_run(known: list[Message], start: int, messages: list[Message]) -> bool:
    """Whether `messages` are the very messages of `known` from `start` on."""
    return all(a is b for a, b in zip(known[start : start + len(messages)], messages, strict=True))
