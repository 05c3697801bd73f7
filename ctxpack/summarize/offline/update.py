"""Updating an earlier summary with new turns, section by section.

New material ranks before old (it is closer to the live conversation), except
for the goal, where the earliest words stay first; the constraints are shown
in the order they were said, the newest kept first (_rules). Only items
that are clearly obsolete go: in-progress or blocked entries whose target a
new action completed, pending asks the assistant has since answered, and
state that the new turns replace. Text outside the
template's headings (a preserved-facts section, another agent's summary) is
kept as context."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ctxpack.facts.extract import Facts
from ctxpack.facts.match import collapse, dedupe
from ctxpack.facts.text import identifiers_in, urls_in, versions_in
from ctxpack.summarize.ledger import LEDGER_HEADING
from ctxpack.summarize.offline.actions import VERBS, clip, head_of
from ctxpack.summarize.offline.files import (
    file_item,
    file_items,
    in_rank,
    kept_apart,
    named_by_tools,
    one_per_file,
)
from ctxpack.summarize.offline.fit import Item
from ctxpack.summarize.offline.marks import CHANGED, REMOVED, REVERTED, THERE
from ctxpack.summarize.offline.progress import counted_on, first_new_number
from ctxpack.summarize.offline.said import pending_words, questions_in
from ctxpack.summarize.offline.scan import Scan
from ctxpack.summarize.offline.sections import (
    ASKED_BEFORE,
    ASKED_SINCE,
    LAST_NOTE_PREFIX,
    PROGRESS_RE,
    TRACKED_STATE_RE,
    repeats_last,
    unique,
)
from ctxpack.summarize.protocol import HEADINGS, PRESERVED_FACTS_HEADING
from ctxpack.summarize.reversal import Denials, reverses
from ctxpack.summarize.template import (
    COMPLETED_ACTIONS,
    EARLIER_STATE,
    Sections,
    as_earlier,
    item_number,
    item_text,
    left_out,
    parse,
    quote,
)

# An action's line (Action.line) as an item: listed (marked as earlier in an
# earlier account of the state), or numbered in Completed Actions.
_ACTION_ITEM_RE = re.compile(
    rf"^(?:[-*]|\d+\.)\s+(?:{EARLIER_STATE})?"
    rf"(?P<verb>{'|'.join(VERBS.values())})\s+(?P<target>.+?)"
    r"(?: \(\d+ times\))? — (?P<outcome>.*)"
)
_TOOL_NOTE_RE = re.compile(r" \[tool: [^\]]*\]$")
# The error a failed run's outcome quotes after how it ended (not what an
# exit it expects printed: "exit 1, nothing printed" is grep finding nothing).
_FAILED_OUTCOME_RE = re.compile(r"^(?:failed|exit [1-9]\d*), (?!(?:nothing )?printed\b)(.+)$")
_FILE_VERBS = frozenset(VERBS[kind] for kind in ("read", "edit", "create"))
_SCRIPT_NOTE_RE = re.compile(r" \(a \d+-line script\)$")
# How an earlier account of the state reads once the user has since said that
# what it reports done must not be.
REVERSED_STATE = "Earlier, since reversed: "
# A step an earlier account of the state says went wrong ("was rejected",
# "failed due to unstaged changes"): it tells the resuming model more than a
# routine one, and is kept before them when the room runs short.
_FAILED_RE = re.compile(
    r"\b(?:fail(?:ed|s|ure|ing)?|rejected|denied|could(?:n['’]t| not)|unable to|aborted"
    r"|crashed|timed out)\b",
    re.I,
)
# How a new rule that turns an earlier one around quotes it, and how much of it.
REVERSED = "turns around the earlier rule "
REVERSED_QUOTE = 80
# An item that quotes someone: a lead, then their words (quote() keeps no
# double quote inside).
_QUOTING_RE = re.compile(r'^[\w ]+: "([^"]+)"')


# The sections whose earlier items an update keeps, whatever the new turns
# did: what the earlier record had no room for there is still left out, and
# counted on. Elsewhere it may be obsolete now (a state replaced, a step done).
_KEPT = (
    "Goal",
    "Constraints & Preferences",
    COMPLETED_ACTIONS,
    "Key Decisions",
    "Resolved Questions",
    "Relevant Files",
    "Historical Remaining Work",
    "Critical Context",
)


def left_out_before(previous: str | None) -> dict[str, int]:
    """By section, how many items the earlier record `previous` had no room
    for, where the update still counts them: they are in the archived turns
    only, which the update does not read."""
    found = left_out(previous) if previous else {}
    return {heading: found[heading] for heading in _KEPT if found.get(heading)}


def _old(items: Sequence[str]) -> list[Item]:
    return [Item(text) for text in items]


def _goal(old: Sequence[str], new: Sequence[Item]) -> list[Item]:
    """The earlier Goal, then the new turns' (their ask, their newest state):
    shown in that order, but where room is short the task the earlier Goal
    opens with and the new turns' items are kept before its later ones."""
    earlier = unique([Item(text, order=at) for at, text in enumerate(old)])
    added = unique(earlier, new)[len(earlier) :]
    shown = [Item(item.text, order=len(old) + item.order) for item in added]
    return [*earlier[:1], *shown, *earlier[1:]]


class _Finished:
    """What the new turns completed successfully: targets and command heads."""

    def __init__(self, scan: Scan) -> None:
        ok = [a for a in scan.actions if not a.pending and not a.failed]
        self.text = collapse(" ".join(part for a in ok for part in (a.key, *a.paths)))
        self.heads = {a.head for a in ok if a.command}

    def covers(self, item: str) -> bool:
        """The item names an action whose target a new action completed."""
        mt = _ACTION_ITEM_RE.match(item)
        if not mt:
            return False
        command = _command_in(mt.group("target"))
        if command is not None:
            command = collapse(command.rstrip("…"))
            return command in self.text or head_of(command) in self.heads
        return collapse(mt.group("target")) in self.text


def _command_in(target: str) -> str | None:
    """The command a run's target (actions.code_span) shows; None for a target
    that is no command."""
    target = _SCRIPT_NOTE_RE.sub("", target)
    return target.strip("`").strip() if target.startswith("`") else None


def named_facts(previous: str | None) -> Facts:
    """The facts the earlier record `previous` names in its Completed Actions
    and Relevant Files: the files listed, read and edited, the commands run,
    the errors the failed runs ended with, the ids and links in those lines.
    A clipped command, path or error is none: read back whole, it would name
    something that never was. An update reads the earlier record's text, not
    its archived turns: once a line is no longer shown, its facts are these."""
    if not previous:
        return Facts()
    sections = parse(previous)
    paths = [found[0] for found in map(file_item, sections.get("Relevant Files", [])) if found]
    commands: list[str] = []
    errors: list[str] = []
    identifiers: list[str] = []
    urls: list[str] = []
    for item in sections.get(COMPLETED_ACTIONS, []):
        mt = _ACTION_ITEM_RE.match(item)
        if not mt:
            continue
        target, verb = mt.group("target"), mt.group("verb")
        command = _command_in(target) if verb == VERBS["run"] else None
        if command is not None and not command.endswith("…"):
            commands.append(command)
            identifiers.extend(versions_in(command))
        elif verb in _FILE_VERBS and not target.endswith("…"):
            paths.append(target)
        failed = _FAILED_OUTCOME_RE.match(_TOOL_NOTE_RE.sub("", mt.group("outcome")))
        if failed and not failed.group(1).endswith("…"):
            errors.append(failed.group(1))
        identifiers.extend(identifiers_in(item))
        urls.extend(urls_in(item))
    return Facts(
        paths=dedupe(paths),
        commands=dedupe(commands),
        errors=dedupe(errors),
        identifiers=dedupe(identifiers),
        urls=dedupe(urls),
    )


def merge_previous(
    previous: Sections, new: dict[str, list[Item]], scan: Scan, held: Callable[[str], bool]
) -> dict[str, list[Item]]:
    """The earlier record's sections with the new turns' items; `held`: whether
    the record's user ledger holds some words as they stand."""
    finished = _Finished(scan)
    old = {heading: list(previous.get(heading, [])) for heading in HEADINGS}
    merged: dict[str, list[Item]] = {}

    snapshot = counted_on(new["Historical Task Snapshot"], old["Historical Task Snapshot"])
    if not scan.asks:
        # The earlier request still stands; its progress is counted in the new line.
        kept = [t for t in old["Historical Task Snapshot"] if not PROGRESS_RE.match(t)]
        snapshot = unique(_old(kept), snapshot)
    merged["Historical Task Snapshot"] = snapshot
    # Two asks led as the new turns' own would leave the model to guess which is.
    asked = [text.replace(ASKED_SINCE, ASKED_BEFORE, 1) for text in old["Goal"]]
    merged["Goal"] = _goal(asked, new["Goal"])
    merged["Constraints & Preferences"] = _rules(
        old["Constraints & Preferences"], new["Constraints & Preferences"], held
    )
    # An account of the state in words (a model's, another agent's) that the
    # user has since turned around is no current state: it is said to be
    # reversed, after the state that still stands.
    worded = [
        text
        for text in old["Active State"]
        if not TRACKED_STATE_RE.match(text) and not finished.covers(text)
    ]
    in_progress = [
        text
        for text in old["Historical In-Progress State"]
        if not finished.covers(text) and not (scan.last_note and text.startswith(LAST_NOTE_PREFIX))
    ]
    # Work another agent's summary reports done, too: it stays with the
    # actions unless reversed (no regex: a record holds hundreds of actions).
    said_done = [t for t in old[COMPLETED_ACTIONS] if t.partition(" ")[2].startswith(EARLIER_STATE)]
    denied = Denials(scan.said)
    turned = [text for text in worded + in_progress + said_done if _reversed_by(text, denied)]
    done = [text for text in old[COMPLETED_ACTIONS] if text not in turned]
    merged[COMPLETED_ACTIONS] = _actions(done, new[COMPLETED_ACTIONS], first_new_number(previous))
    # The new turns' state replaces what the earlier turns showed of theirs;
    # the words are history now, unless a new action finished what they name
    # (those are left out then).
    merged["Active State"] = new["Active State"] or [
        Item(text) for text in old["Active State"] if text not in turned
    ]
    earlier_state = [text for text in worded if text not in turned] if new["Active State"] else []
    # The earlier record's items are shown after the new turns' own (whose
    # order is 0) as they stood; of its state, the failed steps rank first.
    history = [
        *map(as_earlier, earlier_state),
        *(text for text in in_progress if text not in turned),
        *map(_as_reversed, turned),
    ]
    shown = [Item(text, order=at) for at, text in enumerate(history, start=1)]
    stated = len(earlier_state)
    shown[:stated] = sorted(shown[:stated], key=lambda item: not _FAILED_RE.search(item.text))
    merged["Historical In-Progress State"] = unique(new["Historical In-Progress State"], shown)
    blocked = [text for text in old["Blocked"] if not finished.covers(text)]
    merged["Blocked"] = unique(new["Blocked"], _old(blocked))
    merged["Key Decisions"] = unique(new["Key Decisions"], _old(old["Key Decisions"]))

    pending_old = old["Historical Pending User Asks"]
    answered: list[Item] = []
    if scan.replied:
        # The assistant spoke after those asks: they are no longer open. The
        # questions among their words are shown answered, each as asked
        # (not the whole ask, clipped and with the rest of what it said), with
        # the reply the new turns open with; where the user spoke first, the
        # reply may answer them instead, and none is quoted.
        reply = quote(scan.first_reply) if scan.first_reply else "answered in later turns"
        for text in pending_old:
            if asked := questions_in(pending_words(text) or ""):
                answered.append(Item(f"- Q: {' / '.join(map(quote, asked))} — A: {reply}"))
        pending_old = []
    merged["Resolved Questions"] = unique(
        new["Resolved Questions"], answered, _old(old["Resolved Questions"])
    )
    merged["Historical Pending User Asks"] = unique(
        new["Historical Pending User Asks"], _old(pending_old)
    )
    merged["Relevant Files"] = _files(
        old["Relevant Files"], new["Relevant Files"], denied, denied.deeds(map(_state, turned))
    )
    merged["Historical Remaining Work"] = unique(
        new["Historical Remaining Work"], _old(old["Historical Remaining Work"])
    )
    # Whatever a foreign summary held outside our headings stays as context
    # (last in line for the budget). The ledger is carried by its own rules
    # (Ledger), the facts an earlier pass preserved by the preserved-facts
    # section of this one, outside the summary's budget.
    foreign = [
        text
        for heading, items in previous.items()
        if heading not in (*HEADINGS, LEDGER_HEADING, PRESERVED_FACTS_HEADING)
        for text in items
    ]
    merged["Critical Context"] = unique(
        new["Critical Context"], _old(old["Critical Context"]), _old(foreign)
    )
    return merged


def _reversed_by(text: str, denied: Denials) -> bool:
    """Whether the earlier state item `text` is, or the user's words since
    (`denied`) made it, one the user turned around."""
    state = item_text(text).removeprefix(EARLIER_STATE)
    return state.startswith(REVERSED_STATE) or denied.undo(state)


def _state(text: str) -> str:
    """What the earlier state item `text` says, less how the record marked it."""
    return item_text(text).removeprefix(EARLIER_STATE).removeprefix(REVERSED_STATE)


def _as_reversed(text: str) -> str:
    marker, _, rest = text.partition(" ")
    rest = rest.removeprefix(EARLIER_STATE)
    return text if rest.startswith(REVERSED_STATE) else f"{marker} {REVERSED_STATE}{rest}"


def _rules(old: list[str], new: list[Item], held: Callable[[str], bool]) -> list[Item]:
    """The earlier record's rules and the new ones, shown in the order they
    were said; a new rule that turns an earlier one around (reversal.py)
    stands in that one's place, quoting it. When the room runs short the rule
    in force is kept first: a turned rule, then the new turns' rules (the
    user's latest word, the latest first), then the earlier record's, in its
    order. A rule whose words the user ledger holds yields to one the record
    holds nowhere else: cut, that one would be gone from the record, not only
    from this section."""
    # The earlier record's rules are shown before every new one (whose order
    # counts up from 0): theirs count up to -1.
    placed: list[tuple[bool, Item]] = []  # (a turn, the item)
    used: list[Item] = []
    for at, text in enumerate(old, start=-len(old)):
        later = next((item for item in new if item not in used and reverses(text, item.text)), None)
        if later is None:
            placed.append((False, Item(text, order=at)))
            continue
        used.append(later)
        earlier = clip(item_text(text), REVERSED_QUOTE)
        placed.append((True, Item(f'{later.text} ({REVERSED}"{earlier}")', order=at)))
    turns = [item for turn, item in placed if turn]
    latest = sorted((item for item in new if item not in used), key=lambda item: -item.order)
    latest += [item for turn, item in placed if not turn]
    quoted = [held(_words(item.text)) for item in latest]
    return unique(
        turns,
        [item for item, found in zip(latest, quoted, strict=True) if not found],
        [item for item, found in zip(latest, quoted, strict=True) if found],
    )


def _words(text: str) -> str:
    """The words a rule's item quotes (`The user said: "…"`), or its own."""
    found = _QUOTING_RE.match(item_text(text))
    return found.group(1) if found else item_text(text)


def _actions(old: list[str], new: list[Item], start: int) -> list[Item]:
    """Earlier numbered actions stay as they were; the new ones are numbered on
    from `start` (a repeated action is a new event)."""
    renumbered = []
    for offset, item in enumerate(sorted(new, key=lambda i: i.order)):
        body = item.text.split(". ", 1)[1] if item_number(item.text) is not None else item.text
        number = start + offset
        text = f"{number}. {body}"
        # The summarizer numbers its actions from the same start: most stay
        # the items they are (a long middle has tens of thousands).
        same = text == item.text and item.order == number
        renumbered.append(item if same else Item(text, order=number))
    # An action in words (another agent's) has no number: shown first, in
    # the order it was told.
    told = enumerate(old, start=-len(old))
    previous = [Item(text, order=item_number(text) or at) for at, text in told]
    return repeats_last([*reversed(renumbered), *reversed(previous)])


def _files(old: list[str], new: list[Item], denied: Denials, turned: Denials) -> list[Item]:
    """The files of both, their marks merged; a note in other words (another
    agent's of what it did to a file) is an account of the state: where the
    user's words since (`denied`) turned it around, or it tells the same deed
    as an account of the state they turned around (`turned`), it says so (the
    file stays listed)."""
    listed: tuple[dict[str, list[str]], dict[str, list[str]]] = ({}, {})
    opaque: list[Item] = []
    stretches = []
    for earlier, texts in enumerate(([item.text for item in new], old)):
        files = []
        for text in texts:
            read = file_item(text)
            if read is None:
                reversed_ = earlier and (_reversed_by(text, denied) or turned.undo(item_text(text)))
                opaque.append(Item(_as_reversed(text) if reversed_ else text))
                continue
            listed[earlier][read[0]] = read[1]
            files.append((earlier, *read))
        cut = named_by_tools([found for *_, found in files])
        stretches.append((files[:cut], files[cut:]))
    # Ranked as the files of one stretch of turns are, the new turns' first
    # among equals: a file the earlier turns edited before one the new only mention.
    marks: dict[str, list[str]] = {}
    for earlier, path, read_marks in in_rank(stretches):
        found = marks.setdefault(path, [])
        # The new turns' marks are the later ones: a file they did something
        # to is there again, whatever the earlier record said removed it, and
        # one they changed is no longer as the earlier record reverted it.
        back = earlier and any(mark in THERE for mark in found)
        changed = earlier and any(mark in CHANGED for mark in found)
        for mark in read_marks:
            stale = (back and mark == REMOVED) or (changed and mark == REVERTED)
            if mark not in found and not stale:
                found.append(mark)
    apart = kept_apart(listed[0]) | kept_apart(listed[1])
    return unique(file_items(one_per_file(marks, apart=apart)), opaque)
