"""Reading the structure of a middle: tool actions with their outcomes, and
what was said (said.py), each message read on its own and folded in order."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from ctxpack import messages as m
from ctxpack.facts.extract import FactCollector, FactMemo, Facts, MessageFacts, result_command
from ctxpack.sessionindex import SessionIndex
from ctxpack.summarize.offline.actions import Action, make_action, settle
from ctxpack.summarize.offline.lastwords import last_note_at
from ctxpack.summarize.offline.marks import CHANGED, REMOVED, REVERTED, moves
from ctxpack.summarize.offline.said import MAX_ASK, MAX_QUOTE, Ask, Replies, Said, asked, spoken
from ctxpack.tokens import counter as tokens
from ctxpack.tokens import forked
from ctxpack.tooloutput import running_session
from ctxpack.toolpairs import Pairing, ToolUse, calls_of, parse_arguments
from ctxpack.tools import thought_of
from ctxpack.transcript import Message


@dataclass
class Scan:
    actions: list[Action] = field(default_factory=list)
    asks: list[Ask] = field(default_factory=list)
    # The user's own words of every ask, whole (ledger.user_messages of the middle).
    said: list[str] = field(default_factory=list)
    questions: list[Ask] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)
    # Where the assistant said each of next_steps (its message in the middle).
    planned_at: list[int] = field(default_factory=list)
    last_note: str | None = None
    # Where the assistant wrote last_note (its message in the middle).
    last_note_at: int | None = None
    workdir: str | None = None
    file_marks: dict[str, list[str]] = field(default_factory=dict)
    file_touch: dict[str, int] = field(default_factory=dict)
    # Each file moved with where it landed (marks.moves): two files.
    moves: set[tuple[str, str]] = field(default_factory=set)
    facts: Facts = field(default_factory=Facts)
    replied: bool = False
    # The assistant's reply to the turns before these, when it spoke first.
    first_reply: str | None = None
    # Keys and heads of the actions that succeeded in the kept tail.
    later_ok: set[str] = field(default_factory=set)


def scan(
    middle: list[Message],
    *,
    tail: list[Message] | None = None,
    index: SessionIndex | None = None,
    workers: int = 1,
) -> Scan:
    """The structure of `middle`; `tail` (the turns kept verbatim after it)
    only tells which failures were fixed later. `index`: the run's index of
    the session, which pairs the middle and the tail and keeps the facts of
    the middle's messages for the later stages of the same run.

    Each message is read on its own (its facts, its call's action, the
    sentences that may be decisions or questions): a long middle is read a
    stretch per core, `workers` at most. What carries from one message to
    the next (files touched, running sessions, repeats, what was said once)
    is then folded in the middle's order, here."""
    if index is None:
        index = SessionIndex(middle)
    result = Scan()
    tail = tail or []
    result.later_ok = succeeded(tail, pairing=index.pairing_of(tail))
    memo = index.facts
    texts = [m.text(msg) for msg in middle]
    reader = _Reader(middle, texts, index.pairing_of(middle), memo)
    if len(middle) < tokens.PARALLEL_MIN_MESSAGES:
        workers = 1
    fold = _Fold(result, reader)
    mapped = forked.each_mapped(reader.read, range(len(middle)), workers=workers)
    # Closed when the fold fails, so that no child outlives it.
    with contextlib.closing(mapped) as reads:
        for at, (msg, read) in enumerate(zip(middle, reads, strict=True)):
            fold.take(at, msg, read)
    return fold.done()


class _Fold:
    """The reads of a middle's messages taken in order into its Scan: what
    carries from one message to the next."""

    def __init__(self, result: Scan, reader: _Reader) -> None:
        self._result, self._reader = result, reader
        self._replies = Replies(reader.middle, reader.texts)
        self._facts = FactCollector()
        self._said = Said()
        # A command still running (Codex exec sessions) finishes in a later
        # poll of its session: the poll's output is that command's outcome.
        self._sessions: dict[str, tuple[ToolUse, Action]] = {}

    def take(self, at: int, msg: Message, read: _Read) -> None:
        result, said = self._result, self._said
        found, spoken, asked, uses = read
        # A child's facts are kept here for the stages after the summary.
        self._reader.memo.learn(msg, found)
        self._facts.add(found)
        if spoken is not None:
            decisions, steps, body = spoken
            # A thought alone answers nobody: the user saw none of it.
            result.replied = result.replied or bool(self._reader.texts[at].strip())
            said.bodies.append(body)
            said.at.append(at)
            said.add(decisions, result.decisions, said.decisions)
            planned = len(result.next_steps)
            said.add(steps, result.next_steps, said.next_steps)
            result.planned_at += [at] * (len(result.next_steps) - planned)
        if asked is not None:
            body, questions = asked
            result.said.append(body)
            result.asks.append(Ask(at, body, MAX_ASK, self._replies))
            result.questions.extend(Ask(at, q, MAX_QUOTE, self._replies) for q in questions)
        for number, plain, workdir, session_id, running in uses:
            if workdir is not None:
                result.workdir = workdir
            polled = self._sessions.get(session_id)
            if polled is not None:
                use = calls_of(msg, at)[number]
                _finish_session(result, self._sessions, polled, *self._reader.outputs(use))
                continue
            action = _add_action(result, settle(Action(*plain), seen=result.file_marks))
            if action.pending and running:
                self._sessions[running] = (calls_of(msg, at)[number], action)

    def done(self) -> Scan:
        self._result.facts = self._facts.facts()
        self._result.first_reply = self._replies.first()
        said = self._said
        noted = last_note_at(said.bodies, quoted=said.decisions | said.next_steps)
        if noted is not None:
            self._result.last_note_at = said.at[noted[0]]
            self._result.last_note = noted[1]
        return self._result


# What reading one message finds, as plain data (a child hands it back with
# marshal): its facts; an assistant's candidate decisions and next steps, and
# the words they were read from (None when it wrote nothing and thought
# nothing); a user's own words and questions (None when the turn is not the
# user's); and of each call of an assistant turn that acts (a note to self
# does not), its number among the turn's calls, its action as far as the call
# and its results tell it, its working directory, the session it polls and
# the session it left running.
_Use = tuple[int, tuple[Any, ...], str | None, str, str | None]
_Spoken = tuple[list[str], list[str], str]
_Read = tuple[MessageFacts, _Spoken | None, tuple[str, list[str]] | None, list[_Use]]


class _Reader:
    """Reads messages of a middle one at a time, each on its own."""

    def __init__(
        self,
        middle: list[Message],
        texts: list[str],
        pairing: Pairing,
        memo: FactMemo,
    ) -> None:
        self.middle, self.texts, self.memo = middle, texts, memo
        self._pairing, self._answers = pairing, _result_indexes(pairing)

    def outputs(self, use: ToolUse) -> tuple[list[Message], str]:
        """The results of `use`, and their texts joined by newlines."""
        found = self._answers.get(use, [])
        return [self.middle[i] for i in found], "\n".join(self.texts[i] for i in found)

    def read(self, at: int) -> _Read:
        msg, body = self.middle[at], self.texts[at]
        role = m.role(msg)
        uses = (
            [(use, parse_arguments(use.arguments)) for use in calls_of(msg, at)]
            if "tool_calls" in msg or "function_call" in msg
            else []
        )
        calls = [(use.arguments, a) for use, a in uses]
        found = self.memo.of(msg, body=body, calls=calls, command=result_command(self._pairing, at))
        if role == "assistant":
            # A note to self (`think`) is the assistant's words, read with its text.
            thoughts = [thought_of(use.name, args) for use, args in uses]
            words = "\n\n".join([body, *filter(None, thoughts)]) if any(thoughts) else body
            said = spoken(words)
            acts = [
                self._use(number, use, args)
                for number, ((use, args), thought) in enumerate(zip(uses, thoughts, strict=True))
                if thought is None
            ]
            return found, None if said is None else (*said, words), None, acts
        if role == "user" and not m.is_tool_result(msg):
            return found, None, asked(msg), []
        return found, None, None, []

    def _use(self, number: int, use: ToolUse, args: dict[str, Any]) -> _Use:
        outputs, output = self.outputs(use)
        action = make_action(use, outputs, seen=None, args=args, output=output)
        workdir = args.get("workdir")
        return (
            number,
            action.plain(),
            workdir.strip() if isinstance(workdir, str) and workdir.strip() else None,
            str(args.get("session_id", "")),
            running_session(output) if action.pending else None,
        )


def succeeded(messages: list[Message], *, pairing: Pairing) -> set[str]:
    """The keys and heads of the calls in `messages` whose results succeeded;
    `pairing`: toolpairs.pair(messages)."""
    out: set[str] = set()
    for use, found in _result_indexes(pairing).items():
        action = make_action(use, [messages[i] for i in found], seen=())
        if not action.failed and not action.pending:
            out.update((action.key, action.head))
    return out


def _finish_session(
    result: Scan,
    sessions: dict[str, tuple[ToolUse, Action]],
    polled: tuple[ToolUse, Action],
    outputs: list[Message],
    output: str,
) -> None:
    use, action = polled
    update = make_action(use, outputs, seen=result.file_marks, output=output)
    if update.pending:
        return
    for key, value in list(sessions.items()):
        if value[1] is action:
            del sessions[key]
    action.pending = False
    action.take_outcome(update)


def _result_indexes(pairing: Pairing) -> dict[ToolUse, list[int]]:
    out: dict[ToolUse, list[int]] = {}
    for result_index, use in pairing.links.items():
        out.setdefault(use, []).append(result_index)
    return out


def _add_action(result: Scan, action: Action) -> Action:
    if action.file_marks and not action.failed:
        result.moves.update(moves(action.file_marks))
    for path, mark in action.marked_paths():
        result.file_touch[path] = action.index
        marks = result.file_marks.setdefault(path, [])
        # A file stays removed until something done to it since succeeds,
        # and reverted until a change since.
        if REMOVED in marks and mark != REMOVED and not action.failed:
            marks.remove(REMOVED)
        if REVERTED in marks and mark in CHANGED and not action.failed:
            marks.remove(REVERTED)
        if mark and mark not in marks:
            marks.append(mark)
    prev = result.actions[-1] if result.actions else None
    if prev and (prev.key, prev.tool, prev.pending) == (action.key, action.tool, action.pending):
        prev.count += 1
        prev.take_outcome(action)
        prev.index = action.index
        return prev
    result.actions.append(action)
    return action
