"""Reading the structure of a middle: tool actions with their outcomes, user
asks and questions, what the assistant said it decided or would do next."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from ctxpack import messages as m
from ctxpack.facts.extract import FactCollector, FactMemo, Facts, MessageFacts
from ctxpack.facts.match import collapse, folded
from ctxpack.facts.text import sentences
from ctxpack.sessionindex import SessionIndex
from ctxpack.summarize.ledger import user_words
from ctxpack.summarize.offline.actions import Action, clip, make_action, settle
from ctxpack.tokens import counter as tokens
from ctxpack.tokens import forked
from ctxpack.tooloutput import running_session
from ctxpack.toolpairs import Pairing, ToolUse, calls_of, parse_arguments
from ctxpack.transcript import Message

_DECISION_RE = re.compile(
    r"\b(?:I['’]ll use|I will use|I['’]m using|we['’]ll use|decided|instead of|going with"
    r"|I chose|switching to|opted for|I['’]ll go with)\b",
    re.IGNORECASE,
)
_NEXT_RE = re.compile(
    r"\b(?:next(?: steps?|,| I\b| we\b| up\b)|then I['’]ll|then I will|still need|need to"
    r"|left to do|remaining (?:work|steps?|tasks?|items?|issues?|failures?|tests?))\b|\bTODO\b",
    re.IGNORECASE,
)
MAX_ASK = 300
MAX_QUOTE = 240


class Ask:
    """A user's ask: where it was, its text, and the first sentence of the
    assistant's next visible text (None if there is none). Both texts are
    clipped when first read: most asks of a long middle are never shown."""

    __slots__ = ("_limit", "_raw", "_replies", "_text", "index")

    def __init__(self, index: int, raw: str, limit: int, replies: _Replies) -> None:
        self.index = index
        self._raw, self._limit, self._replies = raw, limit, replies
        self._text: str | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = clip(self._raw, self._limit)
        return self._text

    @property
    def reply(self) -> str | None:
        return self._replies.after(self.index)

    @property
    def answered(self) -> bool:
        """The assistant wrote something visible after it."""
        return self._replies.next_of(self.index) is not None

    def __repr__(self) -> str:
        return f"Ask(index={self.index!r}, text={self.text!r}, reply={self.reply!r})"


@dataclass
class Scan:
    actions: list[Action] = field(default_factory=list)
    asks: list[Ask] = field(default_factory=list)
    # The user's own words of every ask, whole (ledger.user_messages of the middle).
    said: list[str] = field(default_factory=list)
    questions: list[Ask] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)
    last_note: str | None = None
    workdir: str | None = None
    file_marks: dict[str, list[str]] = field(default_factory=dict)
    file_touch: dict[str, int] = field(default_factory=dict)
    facts: Facts = field(default_factory=Facts)
    replied: bool = False
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
    reader = _Reader(middle, texts, _result_indexes(index.pairing_of(middle)), memo)
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
        self._replies = _Replies(reader.middle, reader.texts)
        self._facts = FactCollector()
        self._said = _Said()
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
            result.replied = True
            said.bodies.append(self._reader.texts[at])
            said.add(spoken[0], result.decisions, said.decisions)
            said.add(spoken[1], result.next_steps, said.next_steps)
        if asked is not None:
            body, questions = asked
            result.said.append(body)
            result.asks.append(Ask(at, body, MAX_ASK, self._replies))
            result.questions.extend(Ask(at, q, MAX_QUOTE, self._replies) for q in questions)
        for number, (plain, workdir, session_id, running) in enumerate(uses):
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
        self._result.last_note = _last_note(self._said.bodies)
        return self._result


# What reading one message finds, as plain data (a child hands it back with
# marshal): its facts; an assistant text's candidate decisions and next steps
# (None when it wrote nothing visible); a user's own words and questions (None
# when the turn is not the user's); and of each call of an assistant turn, its
# action as far as the call and its results tell it, its working directory,
# the session it polls and the session it left running.
_Use = tuple[tuple[Any, ...], str | None, str, str | None]
_Read = tuple[
    MessageFacts, tuple[list[str], list[str]] | None, tuple[str, list[str]] | None, list[_Use]
]


class _Reader:
    """Reads messages of a middle one at a time, each on its own."""

    def __init__(
        self,
        middle: list[Message],
        texts: list[str],
        answers: dict[ToolUse, list[int]],
        memo: FactMemo,
    ) -> None:
        self.middle, self.texts, self._answers, self.memo = middle, texts, answers, memo

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
        found = self.memo.of(msg, body=body, calls=[(use.arguments, a) for use, a in uses])
        if role == "assistant":
            return found, _spoken(body), None, [self._use(use, args) for use, args in uses]
        if role == "user" and not m.is_tool_result(msg):
            return found, None, _asked(msg), []
        return found, None, None, []

    def _use(self, use: ToolUse, args: dict[str, Any]) -> _Use:
        outputs, output = self.outputs(use)
        action = make_action(use, outputs, seen=None, args=args, output=output)
        workdir = args.get("workdir")
        return (
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


class _Replies:
    """The first sentence of the assistant's next visible text after a turn."""

    def __init__(self, middle: list[Message], texts: list[str]) -> None:
        self._texts = texts
        self._next: list[int | None] = [None] * len(middle)
        upcoming: int | None = None
        for index in range(len(middle) - 1, -1, -1):
            self._next[index] = upcoming
            text = texts[index]
            if m.role(middle[index]) == "assistant" and text and not text.isspace():
                upcoming = index
        self._clipped: dict[int, str] = {}

    def next_of(self, index: int) -> int | None:
        return self._next[index]

    def after(self, index: int) -> str | None:
        found = self._next[index]
        if found is None:
            return None
        if found not in self._clipped:
            self._clipped[found] = clip(next(sentences(self._texts[found]), ""), 160)
        return self._clipped[found]


class _Said:
    """What the assistant wrote so far: its texts, and the keys of the
    decisions and next steps already recorded (each is kept once)."""

    def __init__(self) -> None:
        self.bodies: list[str] = []
        self.decisions: set[str] = set()
        self.next_steps: set[str] = set()

    @staticmethod
    def add(items: list[str], out: list[str], seen: set[str]) -> None:
        for item in items:
            key = collapse(item)
            if key and key not in seen:
                seen.add(key)
                out.append(item)


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
    action.pending, action.failed, action.outcome = False, update.failed, update.outcome
    action.exit, action.tests = update.exit, update.tests


def _result_indexes(pairing: Pairing) -> dict[ToolUse, list[int]]:
    out: dict[ToolUse, list[int]] = {}
    for result_index, use in pairing.links.items():
        out.setdefault(use, []).append(result_index)
    return out


def _asked(msg: Message) -> tuple[str, list[str]] | None:
    """The user's own words in `msg` and the questions among them."""
    body = user_words(msg)
    if body is None:
        return None
    if "?" not in body:
        return body, []
    questions = [
        sentence
        for sentence in sentences(body)
        if sentence.endswith("?") and len(sentence) <= MAX_QUOTE
    ]
    return body, questions


def _spoken(body: str) -> tuple[list[str], list[str]] | None:
    """The quotable sentences of an assistant's text that state a decision,
    and those that name a next step; None when it wrote nothing visible."""
    if not body or body.isspace():
        return None
    decisions: list[str] = []
    next_steps: list[str] = []
    if not _maybe_said(collapse(body)):
        return decisions, next_steps
    for sentence in sentences(body):
        if len(sentence) > 2 * MAX_QUOTE or not _maybe_said(sentence):
            continue
        quoted = clip(sentence, MAX_QUOTE)
        if _DECISION_RE.search(quoted):
            decisions.append(quoted)
        if _NEXT_RE.search(quoted):
            next_steps.append(quoted)
    return decisions, next_steps


def _maybe_said(text: str) -> bool:
    """Whether collapsed `text` may hold a decision or a next step: it holds
    one of the phrases of the two patterns (lowercased; no word boundaries, as
    a quote cut short can end right after one)."""
    t = folded(text)
    return t is None or (
        ("use" in t and ("ll use" in t or "will use" in t))
        or "m using" in t
        or "decided" in t
        or "instead of" in t
        or "going with" in t
        or "chose" in t
        or "switching to" in t
        or "opted for" in t
        or "ll go with" in t
        or (
            "next" in t
            and (
                "next step" in t
                or "next," in t
                or "next i" in t
                or "next we" in t
                or "next up" in t
            )
        )
        or "then i" in t
        or "still need" in t
        or "need to" in t
        or "left to do" in t
        or "remaining " in t
        or "todo" in t
    )


def _last_note(bodies: list[str]) -> str | None:
    """The first two quotable sentences of the last assistant text that has any."""
    for body in reversed(bodies):
        said = list(
            islice((clip(s, MAX_QUOTE) for s in sentences(body) if len(s) <= 2 * MAX_QUOTE), 2)
        )
        if said:
            return " ".join(said)
    return None


def _add_action(result: Scan, action: Action) -> Action:
    for path in action.paths:
        result.file_touch[path] = action.index
        marks = result.file_marks.setdefault(path, [])
        if action.mark and action.mark not in marks:
            marks.append(action.mark)
    prev = result.actions[-1] if result.actions else None
    if prev and (prev.key, prev.tool, prev.pending) == (action.key, action.tool, action.pending):
        prev.count += 1
        prev.outcome, prev.failed = action.outcome, action.failed
        prev.tests, prev.exit, prev.index = action.tests, action.exit, action.index
        return prev
    result.actions.append(action)
    return action
