"""Another agent's compaction summary read into our template's sections.

Claude Code's /compact writes numbered sections ("1. Primary Request and
Intent:", ...) after an "Analysis:" scratchpad; Codex and Hermes write
free-form markdown under their own headings. An update merges such a summary
section by section instead of pasting it whole: each known heading goes to
the template section that holds the same kind of thing, an unknown one to
Critical Context under its own name. What is not merged (the scratchpad, the
closing instruction to continue) is counted in a note; the full text is
archived with the turns the new record replaces.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from ctxpack.summarize.ledger import LEDGER_HEADING, LEDGER_INTRO, with_ledger
from ctxpack.summarize.protocol import HEADINGS
from ctxpack.summarize.statements import is_constraint
from ctxpack.summarize.template import (
    COMPLETED_ACTIONS,
    PREAMBLE,
    Sections,
    as_earlier,
    canonical_heading,
    empty_sections,
    item_text,
    quote,
    with_prefix,
)
from ctxpack.summarize.template import parse as parse_template
from ctxpack.summarize.template import render as render_template

# Section names other agents use, lower-cased, and where their items go.
# Claude Code's request section, which mixes the ask with the user's rules.
_REQUEST = "primary request and intent"
# Claude Code's account of the problems it solved and the troubleshooting
# still going on, item by item: a problem still worked on blocks, one solved
# ("Fixed 4 of 5 failing tests", "Successfully implemented X") is work done;
# what is neither (a choice it made) stays a decision. Its "Errors and fixes"
# pair each problem with its fix: those are the questions it resolved.
_PROBLEMS = "problem solving"
_ONGOING_RE = re.compile(
    r"\b(?:currently|still|ongoing|in progress|unresolved|not yet|working on|trying to)\b", re.I
)
_SOLVED_RE = re.compile(
    r"\b(?:fixed|resolved|solved|implemented|completed|successfully|handled|navigated"
    r"|addressed|worked around|corrected)\b",
    re.I,
)
_TARGETS = {
    # Claude Code /compact.
    _REQUEST: "Goal",
    "key technical concepts": "Critical Context",
    "files and code sections": "Relevant Files",
    "errors and fixes": "Resolved Questions",
    _PROBLEMS: "Key Decisions",
    "all user messages": LEDGER_HEADING,
    "pending tasks": "Historical Remaining Work",
    "current work": "Active State",
    "optional next step": "Historical Remaining Work",
    # Free-form handoffs (Codex, Hermes).
    "goal": "Goal",
    "task": "Goal",
    "objective": "Goal",
    "constraints": "Constraints & Preferences",
    "preferences": "Constraints & Preferences",
    "progress": "Historical In-Progress State",
    "completed": COMPLETED_ACTIONS,
    "current state": "Active State",
    "state": "Active State",
    "decisions": "Key Decisions",
    "errors": "Blocked",
    "blockers": "Blocked",
    "files": "Relevant Files",
    "next steps": "Historical Remaining Work",
    "remaining work": "Historical Remaining Work",
    "todo": "Historical Remaining Work",
    "context": "Critical Context",
}
# A heading none of the names above spells ("User Preferences", "Original
# Request", "Work Completed": pi's compaction) goes to the section of the
# first of these rules it matches; one that matches none keeps its name in
# Critical Context. What is done or under way comes before the task words
# ("Completed Tasks", "Task Status"); what is done (or committed: done work
# too) goes with the record's own actions.
_KEYWORD_TARGETS = (
    (
        re.compile(r"\b(?:preferences?|constraints?|rules?|requirements?)\b"),
        "Constraints & Preferences",
    ),
    (
        re.compile(r"\b(?:remaining|next|pending|todos?|to-?do|follow-?ups?)\b"),
        "Historical Remaining Work",
    ),
    (re.compile(r"\b(?:completed|done|accomplished|committed)\b"), COMPLETED_ACTIONS),
    (re.compile(r"\bprogress\b"), "Historical In-Progress State"),
    (re.compile(r"\b(?:current (?:state|work)|status)\b"), "Active State"),
    (re.compile(r"\b(?:requests?|goals?|tasks?|objectives?|intent)\b"), "Goal"),
    (re.compile(r"\bdecisions?\b"), "Key Decisions"),
    (re.compile(r"\b(?:blocked|blockers?)\b"), "Blocked"),
    (re.compile(r"\bfiles?\b"), "Relevant Files"),
)
# A thematic break (---, ***, ___) between parts of a summary says nothing.
_BREAK_RE = re.compile(r"^\s{0,3}(?:(?:-\s*){3,}|(?:\*\s*){3,}|(?:_\s*){3,})$")
_CLAUDE_OPENING = "This session is being continued from a previous conversation"
_CLOSING_RE = re.compile(r"^\s*Please continue the conversation from where we left", re.I)
_NUMBERED_RE = re.compile(r"^\s{0,3}\d+\.\s+\**([A-Za-z][^*:\n]{1,60}?)\**\s*:\**\s*(.*)$")
# A bold line counts as a heading only at the margin: indented, it names an
# item (a file, an error) inside a section.
_MARKDOWN_RE = re.compile(r"^(?:\s{0,3}#{1,6}\s+(.+?)\s*#*|\*\*([^*\n]{1,60})\*\*:?)\s*$")
_SUMMARY_LINE_RE = re.compile(r"^\s*(?:\*\*)?Summary:?(?:\*\*)?\s*$", re.I)
_ANALYSIS_LINE_RE = re.compile(r"^\s*(?:\*\*)?Analysis:?(?:\*\*)?\s*$", re.I)
_OPENING_RE = re.compile(r"^\s*\[CONTEXT (?:COMPACTION|SUMMARY)[^\]]*\]:?\s*", re.I)
# Claude Code lists the request that made it summarize among the user's
# messages ("Summary request (current message)", "Request for a detailed
# summary of the conversation"): the client's words, not a step of the
# user's task. Such an item describes the request; the user's words it quotes.
_ABOUT_THE_SUMMARY = re.compile(
    r"\bsummar(?:y|i[sz]\w*)\b.*\b(?:conversation|current message|this message)\b"
    r"|\bsummary request\b|\brequest(?:ed|ing)? for (?:an? |the )?(?:\w+ ){0,2}summary\b",
    re.I,
)
_DESCRIBED_CHARS = 100
# The other agent speaking of itself ("I was attempting to push", "we chose"):
# outside what it quotes or shows as code, where "I" is someone else.
_FIRST_PERSON_RE = re.compile(
    r"\b(?:I(?:['’](?:m|ve|ll|d))?(?![/\w-])|[Ww]e(?:['’](?:re|ve|ll|d))?|[Mm]y|me|[Oo]urs?|us)\b"
)
_QUOTED_RE = re.compile(r'"[^"\n]*"|“[^”\n]*”|`[^`\n]*`')
# How an item in the other agent's own voice is attributed to it: after the
# quote, so that the one label of an earlier account ("Earlier state: ") still
# leads the item, as an update reads it.
_SUMMARY_WORDS = " (the earlier summary's words)"
# The sections whose items tell how the work stood when the other agent
# wrote (done, under way, in the way, fixed): each reads as an earlier account.
_STATED = (
    COMPLETED_ACTIONS,
    "Active State",
    "Historical In-Progress State",
    "Blocked",
    "Resolved Questions",
)
# The number a numbered list gave an item: among the record's numbered
# actions it would read as one of theirs.
_LIST_NUMBER_RE = re.compile(r"^- \d+[.)]\s+")


@dataclass(frozen=True)
class Merged:
    """A foreign summary in our template, and what of it stayed out."""

    text: str
    source: str
    merged_sections: int
    left_out_lines: int


def is_ours(body: str) -> bool:
    """True when the summary already uses our template's headings."""
    found = parse_template(body)
    return sum(1 for heading in HEADINGS if heading in found) >= len(HEADINGS) // 2


def to_template(body: str) -> Merged | None:
    """`body` (another agent's summary) rewritten as our template's sections;
    None when it is ours already or holds no text."""
    if not body.strip() or is_ours(body):
        return None
    if body.lstrip().startswith(_SNAPSHOT_OPENING):
        source, lines = "Gemini CLI", snapshot_markdown(body)
    else:
        source = "Claude Code" if _CLAUDE_OPENING in body else "another agent"
        lines = _OPENING_RE.sub("", body, count=1).splitlines()
    left_out = 0
    start = next((i for i, line in enumerate(lines) if _SUMMARY_LINE_RE.match(line)), None)
    if start is not None:
        # Everything before "Summary:" is the opening line and the scratchpad.
        left_out += sum(1 for line in lines[:start] if line.strip())
        lines = lines[start + 1 :]
    kept = []
    for line in lines:
        if _CLOSING_RE.match(line) or _ANALYSIS_LINE_RE.match(line):
            left_out += 1
        elif not line.startswith(_CLAUDE_OPENING):
            kept.append(line)
        else:
            left_out += 1
    sections, count = _sections(kept)
    done = sections[COMPLETED_ACTIONS]
    sections[COMPLETED_ACTIONS] = [_LIST_NUMBER_RE.sub("- ", item, count=1) for item in done]
    for heading in _STATED:
        sections[heading] = [as_earlier(item) for item in sections[heading]]
    note = (
        f"- This record merges {source}'s own summary ({len(body):,} characters, "
        f"{count} section(s)); {left_out} line(s) of it (notes, instructions) are only "
        "in its full text, archived with the source turns below."
    )
    sections["Critical Context"].insert(0, note)
    # The user's own words go to the user ledger, which an update carries on.
    said = [
        f'- "{_unquoted(text)}"'
        for text in map(_item_text, sections.pop(LEDGER_HEADING, []))
        if not _describes_the_summary_request(text)
    ]
    ledger = "\n".join([f"## {LEDGER_HEADING}", LEDGER_INTRO, *said]) if said else ""
    text = with_ledger(render_template(sections), ledger)
    return Merged(text, source, count, left_out)


_SNAPSHOT_OPENING = "<state_snapshot>"
# An element of Gemini CLI's snapshot: its tag, attributes and text.
_ELEMENT_RE = re.compile(r"<(\w+)((?:\s[^<>]*)?)>(.*?)</\1\s*>", re.S)
_COMMENT_RE = re.compile(r"<!--.*?-->", re.S)
_STATUS_RE = re.compile(r"""status\s*=\s*["']([^"']*)["']""")
# Gemini CLI's mark of the step it was on, stale once newer turns follow.
_FOCUS_RE = re.compile(r"\s*<--\s*current focus\s*$", re.I)
# A plan's step marked as in the older snapshot's plan ("1. [DONE] …").
_PLAN_STEP_RE = re.compile(r"^\s*(?:\d+[.)]\s*)?\[(DONE|IN PROGRESS|TODO)\]\s*(.+)$", re.I)
# Where the snapshot's sections go, as the headings they become; a step of
# its plan goes by its status.
_SNAPSHOT_HEADINGS = {
    "overall_goal": "Goal",
    "active_constraints": "Constraints",
    "key_knowledge": "Context",
    "artifact_trail": "Files",
    "file_system_state": "Files",
    "recent_actions": "Completed",
}
_STEP_HEADINGS = {"done": "Completed", "in progress": "Current state", "todo": "Remaining work"}
_STEP_SAID = {"done": "Done: ", "in progress": "In progress: "}


def snapshot_markdown(body: str) -> list[str]:
    """Gemini CLI's <state_snapshot> as markdown lines: a heading per section
    (the names _TARGETS maps), an item per element or line in it. It is read
    by pattern, not as XML: a step may hold "<-- CURRENT FOCUS"."""
    text = _COMMENT_RE.sub("", body)
    outer = _ELEMENT_RE.search(text)
    inner = outer.group(3) if outer is not None and outer.group(1) == "state_snapshot" else text
    blocks: dict[str, list[str]] = {}
    for tag, _, content in _ELEMENT_RE.findall(inner):
        children = _ELEMENT_RE.findall(content)
        if tag in ("task_state", "current_plan"):
            steps = (
                [(_status(attrs), " ".join(text.split())) for _, attrs, text in children]
                if children
                else [_plan_step(line) for line in content.splitlines() if line.strip()]
            )
            for status, step in steps:
                heading = _STEP_HEADINGS.get(status, "Current state")
                said = _STEP_SAID.get(status, "") + _FOCUS_RE.sub("", step)
                blocks.setdefault(heading, []).append(said)
            continue
        heading = _SNAPSHOT_HEADINGS.get(tag, tag.replace("_", " ").capitalize())
        items = blocks.setdefault(heading, [])
        if not children:
            items.extend(
                line.strip().lstrip("-*").strip() for line in content.splitlines() if line.strip()
            )
            continue
        for name, _, child in children:
            said = " ".join(child.split())
            if name == "cwd":
                blocks.setdefault("Context", []).append(f"Working directory: {said}")
                continue
            if name in ("created", "modified", "deleted", "read"):
                said = f"{said} ({name})"
            items.append(said)
    return [
        line
        for heading, items in blocks.items()
        if items
        for line in (f"## {heading}", *(f"- {item}" for item in items if item), "")
    ]


def _status(attrs: str) -> str:
    found = _STATUS_RE.search(attrs)
    return " ".join(found.group(1).lower().replace("_", " ").split()) if found else ""


def _plan_step(line: str) -> tuple[str, str]:
    found = _PLAN_STEP_RE.match(line)
    if found is None:
        return "", line.strip().lstrip("-*").strip()
    return found.group(1).lower(), found.group(2).strip()


def _sections(lines: list[str]) -> tuple[Sections, int]:
    """Template sections from the lines under each foreign heading."""
    out = {**empty_sections(), LEDGER_HEADING: []}
    blocks: list[tuple[str, list[str]]] = [(PREAMBLE, [])]
    for line in lines:
        title, rest = _heading(line)
        if title is None:
            blocks[-1][1].append(line)
            continue
        blocks.append((title, [rest] if rest else []))
    count = 0
    for title, body in blocks:
        items = _items(body)
        if not items:
            continue
        if title == PREAMBLE:
            target, prefix = "Historical Task Snapshot", ""
        else:
            count += 1
            target = _target(title)
            prefix = "" if target else f"{title}: "
            target = target or "Critical Context"
        request, problems = title.lower() == _REQUEST, title.lower() == _PROBLEMS
        for item in items:
            rule = request and is_constraint(item)
            said = item if target == LEDGER_HEADING else _attributed(item)
            if problems:
                out[_problem_place(item_text(item))].append(said)
                continue
            out["Constraints & Preferences" if rule else target].append(with_prefix(said, prefix))
    return out, count


def _problem_place(text: str) -> str:
    """The section a Problem Solving item goes to, by what it says."""
    if _ONGOING_RE.search(text):
        return "Blocked"
    if _SOLVED_RE.search(text):
        return COMPLETED_ACTIONS
    return _TARGETS[_PROBLEMS]


def _attributed(item: str) -> str:
    """An item in which the other agent speaks as "I" or "we", quoted as its
    words: a model resuming from the record would read that "I" as itself.
    An item that spans lines has its first line quoted, the rest under it."""
    head, newline, rest = item.partition("\n")
    if not _FIRST_PERSON_RE.search(_QUOTED_RE.sub("", item_text(item))):
        return item
    marker = head[: len(head) - len(item_text(head))]
    return f"{marker}{quote(item_text(head))}{_SUMMARY_WORDS}{newline}{rest}"


def _target(title: str) -> str:
    """The template section a foreign heading's items go to; "" for none."""
    canonical = canonical_heading(title)
    if canonical in HEADINGS:
        return canonical
    name = title.lower()
    if name in _TARGETS:
        return _TARGETS[name]
    return next((target for words, target in _KEYWORD_TARGETS if words.search(name)), "")


def _heading(line: str) -> tuple[str | None, str]:
    mt = _NUMBERED_RE.match(line)
    if mt and mt.group(1).strip().lower() in _TARGETS:
        return mt.group(1).strip(), mt.group(2).strip()
    mt = _MARKDOWN_RE.match(line)
    if mt:
        title = (mt.group(1) or mt.group(2) or "").strip().strip("*").rstrip(":").strip()
        if title:
            return title, ""
    return None, ""


def _items(body: list[str]) -> list[str]:
    """List items of a section body, dedented so its own bullets start a line
    and nested bullets, code and wrapped lines stay inside their item."""
    kept = (line.rstrip() for line in body if not _BREAK_RE.match(line))
    text = textwrap.dedent("\n".join(kept)).strip("\n")
    if not text.strip():
        return []
    parsed = parse_template(text).get(PREAMBLE, [])
    return [item if item.lstrip().startswith(("-", "*", "+")) else f"- {item}" for item in parsed]


def _item_text(item: str) -> str:
    """A list item's text, on one line, without its marker."""
    return " ".join(item.split()[1:])


def _describes_the_summary_request(text: str) -> bool:
    return (
        len(text) <= _DESCRIBED_CHARS
        and not text.startswith('"')
        and bool(_ABOUT_THE_SUMMARY.search(text))
    )


def _unquoted(text: str) -> str:
    return text[1:-1] if len(text) > 1 and text[0] == text[-1] == '"' else text
