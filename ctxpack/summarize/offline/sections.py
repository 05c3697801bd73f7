"""Candidate items for every template section, built from a scan of the
middle. Each list is most important first; wording is past tense so old asks
read as history, not as orders."""

from __future__ import annotations

import bisect
import re
from collections.abc import Collection, Sequence

from ctxpack.alternation import any_of
from ctxpack.facts.match import collapse
from ctxpack.redact import mask
from ctxpack.summarize.ledger import user_words
from ctxpack.summarize.offline.actions import Action, clip, without_count
from ctxpack.summarize.offline.files import file_items, file_marks
from ctxpack.summarize.offline.fit import Item
from ctxpack.summarize.offline.marks import asks_only, looks_only
from ctxpack.summarize.offline.said import MAX_QUOTE, NO_REPLY, OPEN_QUESTION, Ask, ask_quote
from ctxpack.summarize.offline.scan import Scan
from ctxpack.summarize.statements import Classify, classified
from ctxpack.summarize.template import COMPLETED_ACTIONS, item_key, quote
from ctxpack.transcript import Message

VALUES_PER_LINE = 8
RECENT_COMMANDS = 3
LAST_NOTE_PREFIX = "- The assistant's last message in these turns said:"
# How an update's goal leads the first ask of its turns; once the record is
# itself updated, that ask came before the record the next one updates.
ASKED_SINCE = "- In the turns since the previous record, the user asked:"
ASKED_BEFORE = "- In turns before the previous record, the user asked:"
# The snapshot's progress line, in either number: what it counted, and the
# rest of the line, so that an update counts on from it.
PROGRESS_RE = re.compile(
    r"^- (\d[\d,]*) tool actions? (?:was|were) recorded(?: \((\d[\d,]*) failed\))?(.*)\Z",
    re.DOTALL,
)


def progress_line(recorded: int, failed: int) -> str:
    """The start of the snapshot's progress line: how many tool actions the
    record holds, and how many of them failed (not those the user stopped)."""
    words = "tool action was" if recorded == 1 else "tool actions were"
    return f"- {recorded} {words} recorded ({failed} failed)"


def ask_quoted(ask: Ask) -> str:
    """An ask as the record quotes it: a short one with the question it answers."""
    question = ask.answering
    return quote(ask.text) + (f" (answering {quote(question)})" if question else "")


def when(date: str | None) -> str:
    return f"As of {date}" if date else "At compaction time"


def build(
    scan: Scan,
    *,
    date: str | None,
    focus: str | None,
    start: int,
    said: Sequence[str] = (),
    replaced: Collection[str] = (),
    classify: Classify = classified,
    asked_before: bool = False,
    update: bool = False,
) -> dict[str, list[Item]]:
    """`said`: the user's messages of these turns; `replaced`: values a later
    message changed (a statement naming one stays in the ledger only);
    `asked_before`: the turns kept before these hold the user's first ask;
    `update`: these turns come after a record they update."""
    sections = _sections(scan, date, focus, start, asked_before, update)
    _add_statements(sections, said, replaced, classify)
    for heading, items in sections.items():
        if heading != COMPLETED_ACTIONS:
            sections[heading] = unique(items)
    return sections


def repeats_last(actions: Sequence[Item]) -> list[Item]:
    """Completed Actions, most recent first, with each action a later one
    repeats (the same thing done, with the same result) moved after all the
    others. Where the section has no room for every action, a loop of edits
    and builds shows its latest round, and the older work beside it."""
    later: set[str] = set()
    fresh: list[Item] = []
    repeated: list[Item] = []
    for item in actions:
        key = without_count(item_key(item.text))
        (repeated if key in later else fresh).append(item)
        later.add(key)
    return fresh + repeated


def unique(*groups: Sequence[Item]) -> list[Item]:
    """Items in order, each text once (compared without marker or case)."""
    seen: set[str] = set()
    out = []
    for group in groups:
        for item in group:
            key = item_key(item.text)
            if key not in seen:
                seen.add(key)
                out.append(item)
    return out


def _sections(
    scan: Scan, date: str | None, focus: str | None, start: int, asked_before: bool, update: bool
) -> dict[str, list[Item]]:
    done = [a for a in scan.actions if not a.pending]
    numbered = list(enumerate(done, start))
    return {
        "Historical Task Snapshot": _snapshot(scan, date, focus, done),
        "Goal": _goal(scan, asked_before, update),
        "Constraints & Preferences": [
            Item(f"- The user said: {quote(mask(d))}") for d in scan.facts.directives
        ],
        "Completed Actions": repeats_last(
            [Item(f"{n}. {action.line()}", order=n) for n, action in reversed(numbered)]
        ),
        "Active State": _active(scan, done),
        "Historical In-Progress State": _in_progress(scan, numbered),
        "Blocked": _blocked(done, scan.later_ok),
        "Key Decisions": [
            Item(f"- The assistant stated: {quote(d)}") for d in reversed(scan.decisions)
        ],
        "Resolved Questions": _resolved(scan),
        "Historical Pending User Asks": _pending(scan),
        "Relevant Files": file_items(file_marks(scan)),
        "Historical Remaining Work": _planned(scan, numbered),
        "Critical Context": _context(scan),
    }


def _planned(scan: Scan, numbered: list[tuple[int, Action]]) -> list[Item]:
    """Each plan, newest first, with the actions of its own stretch: those
    after it up to the user's next message or the assistant's next plan.
    The user's answer to a plan (an id it asked for, a "yes") comes before
    the actions that carry it out, so the stretch ends only at a message or
    plan after its first action. Up to the end of the turns, an early plan
    would claim every later action, and say nothing of which carried it out."""
    at_of = [action.index for _, action in numbered]
    ends = sorted({ask.index for ask in scan.asks} | set(scan.planned_at))
    items = []
    for step, at in zip(scan.next_steps, scan.planned_at, strict=True):
        first = bisect.bisect_left(at_of, at)
        followed = ""
        if first < len(at_of):
            end = bisect.bisect_right(ends, at_of[first])
            last = bisect.bisect_left(at_of, ends[end]) - 1 if end < len(ends) else len(at_of) - 1
            followed = _followed(numbered[first][0], numbered[last][0])
        items.append(Item(f"- The assistant planned: {quote(step)}{followed}"))
    return items[::-1]


def _followed(first: int, last: int) -> str:
    if first == last:
        return f" (action {first} followed)"
    return f" (actions {first}–{last} followed)"


def _resolved(scan: Scan) -> list[Item]:
    """Each answered question with its answer, newest first; questions in a
    row that one reply answers (two in one message, or a second asked before
    the reply came) are one line, so the answer is quoted once."""
    answered: list[tuple[int | None, list[str], str]] = []
    for ask in scan.questions:
        reply = ask.reply
        if not reply:
            continue
        if answered and answered[-1][0] == ask.replied_at:
            answered[-1][1].append(ask.text)
        else:
            answered.append((ask.replied_at, [ask.text], reply))
    return [
        Item(f"- Q: {' / '.join(map(quote, asked))} — A: {quote(reply)}")
        for _, asked, reply in reversed(answered)
    ]


def _snapshot(scan: Scan, date: str | None, focus: str | None, done: list[Action]) -> list[Item]:
    items = []
    if scan.asks:
        ask = ask_quoted(scan.asks[-1])
        items.append(Item(f"- {when(date)}, the latest user request in these turns was: {ask}"))
    if done:
        failed = sum(1 for a in done if a.failed and not a.aborted)
        last = done[-1].line()
        items.append(Item(f"{progress_line(len(done), failed)}; the last: {last}"))
    if focus and focus.strip():
        items.append(Item(f"- This record concentrates on: {clip(focus, 120)}."))
    if not items:
        items.append(Item(f"- {when(date)}, these turns held no user request or tool action."))
    return items


def _goal(scan: Scan, asked_before: bool, update: bool) -> list[Item]:
    # Later asks are in the user ledger, word for word.
    if not scan.asks:
        return []
    # After an ask kept before the record, the first one in it is a follow-up
    # (often the answer to a question): the task is the ask above, verbatim.
    # An update's first ask follows the goal the record it updates holds.
    first = scan.asks[0]
    if update:
        return [Item(f"{ASKED_SINCE} {ask_quoted(first)}", order=0)]
    if asked_before:
        # An answer that only hands over what was asked for (an ID, a "yes")
        # adds nothing to the task above: the follow-up is the first ask that
        # does; with none, the record names the ask kept before it.
        follow_up = next((ask for ask in scan.asks if not ask.only_answers), None)
        if follow_up is None:
            return []
        first = follow_up
        said = "The user's first ask is kept before this record; in these turns, they then asked"
    else:
        said = "The user first asked"
    return [Item(f"- {said}: {ask_quoted(first)}", order=0)]


def head_goal(head: Sequence[Message]) -> list[Item]:
    """The goal of a record whose turns hold no ask: the user's first ask in
    the turns kept before it, so the record does not read as if there were none."""
    for msg in head:
        body = user_words(msg)
        if body is not None:
            asked = quote(ask_quote(body))
            return [Item(f"- The user first asked, in the turns kept before this record: {asked}")]
    return []


_STATED = {
    "constraint": ("Constraints & Preferences", "The user said"),
    "goal": ("Goal", "The user stated"),
    "fact": ("Critical Context", "The user noted"),
    "file": ("Critical Context", "The user attached"),
}


def _add_statements(
    sections: dict[str, list[Item]],
    said: Sequence[str],
    replaced: Collection[str],
    classify: Classify,
) -> None:
    """Each user sentence that states a constraint, a goal or a fact goes first
    in its section (the latest first; shown in the order it was said)."""
    found: dict[str, list[Item]] = {heading: [] for heading, _ in _STATED.values()}
    position = 0
    # A sentence naming a replaced value is not stated as current (the ledger
    # marks it superseded). One search of a sentence finds any of them: a long
    # middle has thousands of sentences, and a session changes dozens of values.
    names_replaced = any_of([old.lower() for old in replaced]).search
    # A goal the asks above quote already is not stated again beside them.
    asks = "\n".join(item.text for item in sections["Goal"])
    for text in said:
        for kind, sentence in classify(text):
            position += 1
            if names_replaced(sentence.lower()):
                continue
            heading, lead = _STATED[kind]
            shown = mask(clip(sentence, MAX_QUOTE))
            # A path is shown as a path: quoting it would read as their words.
            quoted = f"`{shown}`" if kind == "file" else quote(shown)
            if heading == "Goal" and quoted[1:-1] in asks:
                continue
            found[heading].append(Item(f"- {lead}: {quoted}", order=position))
    for heading, items in found.items():
        if heading == "Goal":
            # The first ask stays first; the newest state comes next.
            sections[heading] = [*sections[heading][:1], *reversed(items), *sections[heading][1:]]
        else:
            sections[heading] = [*reversed(items), *sections[heading]]


# The lines _active writes: what the turns themselves show of the state, which
# an update's newer turns show anew. Any other line of an earlier record's
# Active State is its writer's (a model's, another agent's) account.
TRACKED_STATE_RE = re.compile(
    r"^- (?:Working directory|Last test run|Recent command|Last file changed): "
)


def _active(scan: Scan, done: list[Action]) -> list[Item]:
    items = []
    if scan.workdir:
        items.append(Item(f"- Working directory: {clip(scan.workdir, 200)}"))
    tested = [a for a in done if a.tests]
    if tested:
        last = tested[-1]
        items.append(Item(f"- Last test run: {last.target} — {last.tests} ({_status(last)})"))
    ran = [a for a in done if a.kind == "run"]
    # What a command changed or tested is the state; what one only looked at
    # is not, unless nothing else ran, and then what it read or searched
    # before what it asked (`pwd`, `git status`).
    worked: list[Action] = []
    found: list[Action] = []
    for action in ran:
        if not looks_only(action.kind, action.command):
            worked.append(action)
        elif not asks_only(action.command):
            found.append(action)
    for action in _recent(worked) or _recent(found) or _recent(ran):
        items.append(Item(f"- Recent command: {action.target} — {_status(action)}"))
    edits = [a for a in done if a.kind in ("edit", "create") and not a.failed]
    if edits:
        items.append(Item(f"- Last file changed: {edits[-1].target}"))
    return items


def _recent(ran: list[Action]) -> list[Action]:
    """The last RECENT_COMMANDS distinct commands of `ran`, latest first: a
    command run again is one of them, as its last run ended."""
    recent: dict[str, Action] = {}
    for action in reversed(ran):
        if action.key not in recent:
            recent[action.key] = action
            if len(recent) == RECENT_COMMANDS:
                break
    return list(recent.values())


def _status(action: Action) -> str:
    if action.exit is not None:
        return f"exit {action.exit}"
    return "aborted" if action.aborted else "failed" if action.failed else "ok"


def _in_progress(scan: Scan, numbered: list[tuple[int, Action]]) -> list[Item]:
    """What was under way when the turns end: a command still running, a call
    no result answered yet. A call no result answered while later calls went
    on (the user stopped it) never ran: it is no work in progress. The
    assistant's last words say which actions came after them: what they
    announced ("Let's create the main file:") is done, not under way."""
    last_done = max((a.index for a in scan.actions if not a.pending), default=-1)
    items = []
    for action in reversed(scan.actions):
        if action.pending and (action.answered or action.index >= last_done):
            items.append(Item(f"- {action.line()}"))
    if scan.last_note:
        noted = scan.last_note_at if scan.last_note_at is not None else len(scan.actions)
        after = [n for n, action in numbered if action.index >= noted]
        followed = _followed(after[0], after[-1]) if after else ""
        items.append(Item(f"{LAST_NOTE_PREFIX} {quote(scan.last_note)}{followed}"))
    return items


def unresolved_failures(done: list[Action], later_ok: Collection[str] = ()) -> list[Action]:
    """Failed actions with no later success on the same target or command,
    in these turns or (`later_ok`: keys and heads) in the turns kept after them;
    none the user stopped."""
    out: list[Action] = []
    # What the later actions did, gathered walking back from the end.
    ok_keys: set[str] = set(later_ok)
    ok_heads: set[str] = set(later_ok)
    failed_heads: set[str] = set()
    for action in reversed(done):
        if action.aborted:
            continue
        if not action.failed:
            ok_keys.add(action.key)
            ok_heads.add(action.head)
            continue
        # The latest failed attempt stands for the earlier ones.
        if not (action.key in ok_keys or action.head in ok_heads or action.head in failed_heads):
            out.append(action)
        failed_heads.add(action.head)
    out.reverse()
    return out


def _blocked(done: list[Action], later_ok: set[str]) -> list[Item]:
    return [
        Item(f"- {a.what()} — {a.outcome}; not resolved later [tool: {a.tool}]")
        for a in reversed(unresolved_failures(done, later_ok))
    ]


def _pending(scan: Scan) -> list[Item]:
    items = [
        Item(f"- {ask_quoted(ask)}{NO_REPLY}") for ask in reversed(scan.asks) if not ask.answered
    ]
    asked = " ".join(ask.text for ask in scan.asks if not ask.answered)
    items.extend(
        Item(f"- {OPEN_QUESTION}{quote(q.text)}")
        for q in reversed(scan.questions)
        if not q.answered and q.text not in asked
    )
    return items


def _context(scan: Scan) -> list[Item]:
    facts = scan.facts
    items = [Item(f"- ID: {ident}") for ident in facts.identifiers]
    items.extend(Item(f"- URL: {mask(url)}") for url in facts.urls)
    values = facts.values
    for i in range(0, len(values), VALUES_PER_LINE):
        chunk = ", ".join(collapse(v) for v in values[i : i + VALUES_PER_LINE])
        items.append(Item(f"- Values mentioned: {chunk}"))
    return items
