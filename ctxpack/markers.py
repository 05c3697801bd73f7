"""The words ctxpack writes into a compacted transcript, and how to recognise
a summary (ours or another agent's) when reading one back."""

from __future__ import annotations

import re

from ctxpack import messages as m
from ctxpack.refs import REF_HEX, REF_PREFIX
from ctxpack.transcript import Message

SUMMARY_PREFIX = (
    "[ctxpack: compacted history — reference only]\n"
    "Earlier turns of this conversation were compacted into the record below. "
    "It is background, not instructions: do not answer questions or redo work "
    "listed in it. The active request is the user's latest message outside this "
    "record."
)
# With recall enabled, the record also says how to read back what it cites.
RECALL_TOOL = "recall"
RECALL_NOTE = (
    "Full text that this record or a placeholder cites by ref (ctxpack:…) can be "
    f"read back with the {RECALL_TOOL} tool: {RECALL_TOOL}('ctxpack:…')."
)
SUMMARY_END = "[end of ctxpack compacted history]"
# The record's last line: the archived exact turns it replaces, oldest first
# (an update adds its own to the earlier ones, so one line covers them all).
SOURCE_TURNS = "Source turns:"
# Said only while the latest user message sits inside the record.
ACTIVE_REQUEST = (
    "The user's latest request was compacted into this record and is still the active request:"
)
SYSTEM_NOTE = (
    "Note: earlier turns of this conversation were compacted by ctxpack; a "
    "reference record of them stands in their place."
)

# Other agents' summary openings (Hermes handoffs, Claude Code continuations,
# Gemini CLI's state snapshot).
FOREIGN_SUMMARY_PREFIXES = (
    "[CONTEXT COMPACTION",
    "[CONTEXT SUMMARY]:",
    "This session is being continued from a previous conversation",
    "<state_snapshot>",
)


def summary_prefix(*, recall: bool) -> str:
    """The record's prefix; with recall, followed by how to read refs back."""
    return f"{SUMMARY_PREFIX} {RECALL_NOTE}" if recall else SUMMARY_PREFIX


def recall_call(ref: str) -> str:
    """How the record and placeholders show the model a ref it can read back."""
    return f"{RECALL_TOOL}('{ref}')"


def cite(ref: str, *, recall: bool) -> str:
    """A ref as the record cites it: bare, or as the recall call that reads it."""
    return recall_call(ref) if recall else ref


_PREFIX_HEAD = SUMMARY_PREFIX.split("\n", 1)[0]
_OPENINGS = (_PREFIX_HEAD, *FOREIGN_SUMMARY_PREFIXES)
_LEADING_SPACE = re.compile(r"\s*")


def is_summary(msg: Message) -> bool:
    """True for a message that holds a compaction summary rather than a turn.

    A tool result never does: it is what a call returned, and an agent that
    reads a compacted transcript (`cat` of one, a test of this tool) gets our
    markers back in one. Taken for a record, it would leave its call without
    a result and put another session's record in place of this one's. No
    record is ever written as, or merged into, a tool result."""
    if m.is_tool_result(msg):
        return False
    # Every stage asks this of every message: look at the parts where they
    # are instead of joining them (none of the markers spans a line break).
    content = msg.get("content")
    if type(content) is str:
        # Most messages are one string: its one part, read in place.
        if content.startswith(_OPENINGS, _text_start(content)):
            return True
        return _PREFIX_HEAD in content and SUMMARY_END in content
    parts = [text for text in m.text_parts(msg) if text]
    first = next((text for text in parts if not text.isspace()), "")
    if first.startswith(_OPENINGS, _text_start(first)):
        return True
    # A summary merged after a tail message's own text (as earlier versions wrote it).
    merged = any(_PREFIX_HEAD in text for text in parts)
    return merged and any(SUMMARY_END in text for text in parts)


def summary_indexes(messages: list[Message]) -> list[int]:
    """Where the compaction records of a session sit, in order: the first
    ends an earlier head, the last is the record an update rewrites."""
    return [i for i, msg in enumerate(messages) if is_summary(msg)]


def _text_start(text: str) -> int:
    """Where `text` starts after its leading whitespace, found without the copy
    lstrip() makes (of a long tool output, once per message per stage)."""
    found = _LEADING_SPACE.match(text)
    return found.end() if found else 0


def block_span(text: str) -> tuple[int, int] | None:
    """Where our record sits in `text`: from its prefix to past its end marker
    (or to the end of `text` when the marker is missing); None: no record.
    The marker is the first at a line's start after the prefix: the record
    may be followed by the text of the turn it rides in, which could quote it."""
    start = text.find(_PREFIX_HEAD)
    if start < 0:
        return None
    end = text.find(f"\n{SUMMARY_END}", start)
    return start, len(text) if end < 0 else end + 1 + len(SUMMARY_END)


def summary_body(msg: Message) -> str:
    """The summary text itself, without our prefix, end marker or merged text."""
    body = m.text(msg)
    span = block_span(body)
    if span is not None:
        body = body[span[0] : span[1]].removesuffix(SUMMARY_END)
        body = (
            body[len(SUMMARY_PREFIX) :]
            if body.startswith(SUMMARY_PREFIX)
            else body[len(_PREFIX_HEAD) :]
        )
        body = body.removeprefix(f" {RECALL_NOTE}")
    return body.strip()


def has_system_note(msg: Message) -> bool:
    """True for a system message that carries our note (the only place it is
    written: a tool output that quotes a compacted transcript holds the words
    too, and is no sign that this session was compacted)."""
    return m.is_system(msg) and SYSTEM_NOTE in m.text(msg)


_REF_RE = re.compile(re.escape(REF_PREFIX) + f"[0-9a-f]{{{REF_HEX}}}")


def active_request(ask: str) -> str:
    """The note that the latest user message was compacted, quoting it."""
    return f"{ACTIVE_REQUEST}\n> {ask.replace(chr(10), chr(10) + '> ')}"


def source_turns(refs: list[str]) -> str:
    return f"{SOURCE_TURNS} {' '.join(refs)}"


def source_refs(body: str) -> list[str]:
    """The refs on a record's source-turns lines, in order, each once."""
    refs: list[str] = []
    for line in body.splitlines():
        if line.startswith(SOURCE_TURNS):
            refs += [ref for ref in _REF_RE.findall(line) if ref not in refs]
    return refs


def without_bookkeeping(body: str) -> str:
    """A record's body without the lines ctxpack writes around the summary (the
    source-turns line, the active-request note and its quote): an update
    writes them afresh, and an old one would contradict the new state."""
    out: list[str] = []
    quoting = False
    for line in body.splitlines():
        if line.startswith(ACTIVE_REQUEST):
            quoting = True
            continue
        if quoting and line.startswith(">"):
            continue
        quoting = False
        if not line.startswith(SOURCE_TURNS):
            out.append(line)
    return "\n".join(out).strip()
