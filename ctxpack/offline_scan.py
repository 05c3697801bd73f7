"""Reading the structure of a middle: tool actions with their outcomes, user
asks and questions, what the assistant said it decided or would do next."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ctxpack import messages as m
from ctxpack.facts import Facts, extract_facts
from ctxpack.facts_text import dedupe, sentences
from ctxpack.markers import is_summary
from ctxpack.offline_actions import Action, clip, make_action
from ctxpack.toolpairs import ToolUse, calls_of, link_results, parse_arguments
from ctxpack.transcript import Message

_SESSION_RE = re.compile(r"Process running with session ID (\d+)")
_WRAPPER_ASK = re.compile(r"^<([\w-]+)>[\s\S]*</\1>$")
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


@dataclass
class Ask:
    index: int
    text: str
    reply: str | None  # first sentence of the next assistant text, if any


@dataclass
class Scan:
    actions: list[Action] = field(default_factory=list)
    asks: list[Ask] = field(default_factory=list)
    questions: list[Ask] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)
    last_note: str | None = None
    workdir: str | None = None
    file_marks: dict[str, list[str]] = field(default_factory=dict)
    file_touch: dict[str, int] = field(default_factory=dict)
    facts: Facts = field(default_factory=Facts)
    replied: bool = False


def scan(middle: list[Message]) -> Scan:
    result = Scan(facts=extract_facts(middle))
    answers = _result_indexes(middle)
    # A command still running (Codex exec sessions) finishes in a later poll of
    # its session: the poll's output is that command's outcome.
    sessions: dict[str, tuple[ToolUse, Action]] = {}
    for index, msg in enumerate(middle):
        role = m.role(msg)
        if role == "assistant":
            _read_assistant(result, middle, index, msg)
            for use in calls_of(msg, index):
                args = parse_arguments(use.arguments)
                workdir = args.get("workdir")
                if isinstance(workdir, str) and workdir.strip():
                    result.workdir = workdir.strip()
                outputs = [middle[i] for i in answers.get(use, [])]
                polled = sessions.get(str(args.get("session_id", "")))
                if polled is not None:
                    _finish_session(result, sessions, polled, outputs)
                    continue
                action = _add_action(result, make_action(use, outputs, seen=result.file_marks))
                session = _SESSION_RE.search("\n".join(m.text(o) for o in outputs)[:400])
                if action.pending and session:
                    sessions[session.group(1)] = (use, action)
        elif role == "user" and not m.is_tool_result(msg):
            _read_user(result, middle, index, msg)
    return result


def _finish_session(
    result: Scan,
    sessions: dict[str, tuple[ToolUse, Action]],
    polled: tuple[ToolUse, Action],
    outputs: list[Message],
) -> None:
    use, action = polled
    update = make_action(use, outputs, seen=result.file_marks)
    if update.pending:
        return
    for key, value in list(sessions.items()):
        if value[1] is action:
            del sessions[key]
    action.pending, action.failed, action.outcome = False, update.failed, update.outcome
    action.exit, action.tests = update.exit, update.tests


def _result_indexes(middle: list[Message]) -> dict[ToolUse, list[int]]:
    out: dict[ToolUse, list[int]] = {}
    for result_index, use in link_results(middle).items():
        out.setdefault(use, []).append(result_index)
    return out


def _next_reply(middle: list[Message], after: int) -> str | None:
    for msg in middle[after + 1 :]:
        if m.role(msg) == "assistant" and m.has_visible_text(msg):
            first = next(sentences(m.text(msg)), "")
            return clip(first, 160)
    return None


def _read_user(result: Scan, middle: list[Message], index: int, msg: Message) -> None:
    body = m.text(msg).strip()
    if not body or is_summary(msg) or _WRAPPER_ASK.match(body) or body.startswith("[Request "):
        return
    reply = _next_reply(middle, index)
    result.asks.append(Ask(index, clip(body, MAX_ASK), reply))
    for sentence in sentences(body):
        if sentence.endswith("?") and len(sentence) <= MAX_QUOTE:
            result.questions.append(Ask(index, clip(sentence, MAX_QUOTE), reply))


def _read_assistant(result: Scan, middle: list[Message], index: int, msg: Message) -> None:
    body = m.text(msg)
    if not body.strip():
        return
    result.replied = True
    said = [clip(s, MAX_QUOTE) for s in sentences(body) if len(s) <= 2 * MAX_QUOTE]
    result.decisions.extend(s for s in said if _DECISION_RE.search(s))
    last_ask = result.asks[-1].index if result.asks else -1
    if index > last_ask:
        result.next_steps.extend(s for s in said if _NEXT_RE.search(s))
    if said:
        result.last_note = " ".join(said[:2])
    result.decisions = dedupe(result.decisions)
    result.next_steps = dedupe(result.next_steps)


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
