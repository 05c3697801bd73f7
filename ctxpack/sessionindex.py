"""What the stages look up in one session, found once per run: how its calls
and results pair, what each call does, where its compaction records sit, and
the facts of each message.

One compaction reads the same session in several stages: prune planning, the
boundaries, the summarizer, the retention check and the archive record. Each
of them used to pair the session, describe its calls and extract its facts for
itself. The run makes one index per input session and hands it to each stage,
which reads it instead."""

from __future__ import annotations

import contextlib
import itertools
from array import array

from ctxpack import markers
from ctxpack import messages as m
from ctxpack.calls import CallInfo, describe
from ctxpack.facts.extract import FactMemo, ran_only, result_command
from ctxpack.tokens import counter as tokens
from ctxpack.toolpairs import Pairing, ToolUse, calls_of, pair
from ctxpack.transcript import Message


class SessionIndex:
    """One session's messages as the stages look them up. Every lookup is
    made on first use: a run that never asks for one does not pay for it."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages
        # Filled by the summarizer as it reads the middle, read again by the
        # preserved facts and by the retention check.
        self.facts = FactMemo()
        # True when a later stage (the retention check) reads the facts of
        # every message that ran, not only those the summary reads.
        self.facts_of_all = False
        self._pairing: Pairing | None = None
        # Other lists paired through the index (the pruned session), each
        # with the place of each of its messages once a lookup needs them, so
        # that a stretch or a selection of one is found.
        self._versions: list[_Version] = []
        # A re-run test, a re-read file: the same call is described once.
        self._described: dict[tuple[str, str], CallInfo] = {}
        # Where the records sit in each list asked about (the boundaries and
        # the request read the pruned session's).
        self._summaries: list[tuple[list[Message], list[int]]] = []

    def unread_facts_beside(
        self, read: list[Message], *, workers: int
    ) -> contextlib.AbstractContextManager[None]:
        """The facts of the session's messages a summary of `read` does not
        read itself (the head, the tail, what pruning replaced), found in a
        child while it runs, when a later stage asks for every message's
        (facts_of_all) and the session is long enough for a child."""
        if (
            not self.facts_of_all
            or workers < 2
            or len(self.messages) < tokens.PARALLEL_MIN_MESSAGES
        ):
            return contextlib.nullcontext()
        seen = {id(msg) for msg in read}
        # The messages as the facts are asked for: one with a call no result
        # answers is asked for as a copy without it, which no one asks for now.
        ran = ran_only(self.messages, pairing=self.pairing)
        unread = [
            (msg, result_command(self.pairing, index))
            for index, (msg, original) in enumerate(zip(ran, self.messages, strict=True))
            if msg is original and id(msg) not in seen
        ]
        return self.facts.learned_beside(unread)

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
        shrunk; every role, result id and call id kept), a stretch of either
        (the middle, the tail; such replaced messages in it too: a turn a
        record was merged into, read back without it), or a selection that
        leaves out only messages no pairing turns on (a record taken out of
        the middle)."""
        for version in self._versions:
            if messages is version.messages:
                return version.pairing
        for version in self._versions:
            start = version.place(messages[0]) if messages else -1
            stop = start + len(messages)
            if start >= 0 and stop <= len(version.messages):
                moved = _moves(version.messages, start, messages)
                if moved is not None:
                    return _moved(version.pairing.within(start, stop), moved)
        for version in self._versions:
            kept = _selection(version, messages)
            if kept is not None:
                start, stop = kept[0], kept[-1] + 1
                stretch = (
                    version.pairing.within(start, stop)
                    if start or stop < len(version.messages)
                    else version.pairing
                )
                # Not kept as a version: the one selection a run asks for (the
                # middle without the records in it) is asked for once, by the
                # scan, and a long middle's pairing is tens of megabytes.
                return stretch.selected([k - start for k in kept])
        return self._add(messages, self._version(messages))

    def _add(self, messages: list[Message], pairing: Pairing) -> Pairing:
        self._versions.append(_Version(messages, pairing))
        return pairing

    def _version(self, messages: list[Message]) -> Pairing:
        if messages is self.messages:
            return self.pairing
        moved = _moves(self.messages, 0, messages) if len(messages) == len(self.messages) else None
        return pair(messages) if moved is None else _moved(self.pairing, moved)

    def summaries(self, messages: list[Message]) -> list[int]:
        """markers.summary_indexes(messages), found once per list."""
        for known, places in self._summaries:
            if known is messages:
                return places
        places = markers.summary_indexes(messages)
        self._summaries.append((messages, places))
        return places

    def stages_done(self) -> None:
        """Let go of what only the stages read: the facts and the other lists
        paired through the index (the pruned session, whose replaced messages
        it holds). The archive record, which comes after them, reads the
        session's own pairing and calls; a long session's facts and pruned
        copies are a large part of the run's memory."""
        self.facts = FactMemo()
        self._versions = []
        self._summaries = []

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


class _Version:
    """A list paired through the index, and where each of its messages is."""

    __slots__ = ("_ids", "messages", "pairing")

    def __init__(self, messages: list[Message], pairing: Pairing) -> None:
        self.messages, self.pairing = messages, pairing
        self._ids: bytes | None = None

    def place(self, msg: Message) -> int:
        """Where `msg` itself is in the list (its first place), or -1."""
        # By id: every message of the list is alive while it is, so an id is
        # that very message. The ids are packed as machine words and searched
        # in C: a dict of them costs some twenty times the memory, and a long
        # session has hundreds of thousands of messages in each version.
        if self._ids is None:
            self._ids = array("Q", map(id, self.messages)).tobytes()
        word = array("Q", (id(msg),)).tobytes()
        at = self._ids.find(word)
        while at > 0 and at % _ID_BYTES:
            at = self._ids.find(word, at + 1)
        return at // _ID_BYTES if at >= 0 else -1


_ID_BYTES = array("Q").itemsize


def _selection(version: _Version, messages: list[Message]) -> list[int] | None:
    """The places in `version` of `messages` when they are some of its
    messages, in its order, and every one left out between the first and the
    last is pairing-neutral: no result, no call, and not followed by a kept
    result (which would then follow another message and could pair with its
    calls); else None. (Those before the first and after the last are a
    stretch's edges, which `Pairing.within` reads.)"""
    known = version.messages
    if not messages or len(messages) >= len(known):
        return None
    # Each message is looked for after the one before it: in one walk.
    kept: list[int] = []
    at, end = 0, len(known)
    for msg in messages:
        while at < end and known[at] is not msg:
            at += 1
        if at == end:
            return None
        kept.append(at)
        at += 1
    for before, after in itertools.pairwise(kept):
        if after - before == 1:
            continue
        if m.is_tool_result(known[after]):
            return None
        for msg in known[before + 1 : after]:
            if (
                m.is_tool_result(msg)
                or m.tool_calls(msg)
                or m.legacy_function_call(msg) is not None
            ):
                return None
    return kept


def _moves(
    known: list[Message], start: int, messages: list[Message]
) -> dict[ToolUse, ToolUse] | None:
    """When `messages` pair as the messages of `known` from `start` on do
    (each the very message, or one with the same role, the same result id
    and, for a turn that calls, the same call ids in the same slots), the
    calls that changed (name or arguments) as the pairing of that stretch
    names them, and what they are now; else None."""
    moved: dict[ToolUse, ToolUse] = {}
    stretch = zip(known[start : start + len(messages)], messages, strict=True)
    for index, (old, new) in enumerate(stretch):
        if old is new:
            continue
        if m.role(old) != m.role(new) or m.result_call_id(old) != m.result_call_id(new):
            return None
        if m.role(new) != "assistant":
            continue
        before, after = calls_of(old, index), calls_of(new, index)
        if [(u.call_id, u.slot) for u in before] != [(u.call_id, u.slot) for u in after]:
            return None
        moved.update((u, v) for u, v in zip(before, after, strict=True) if u != v)
    return moved


def _moved(known: Pairing, moved: dict[ToolUse, ToolUse]) -> Pairing:
    """`known` with each call in `moved` named as it is now."""
    if not moved:
        return known
    return Pairing(
        links={index: moved.get(use, use) for index, use in known.links.items()},
        calls=[moved.get(use, use) for use in known.calls],
        answered=known.answered,
        orphan_results=known.orphan_results,
    )
