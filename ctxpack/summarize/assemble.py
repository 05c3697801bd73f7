"""Assembly: head + summary message + tail, with roles that keep alternating,
a one-time note on the system message, and tool pairs made whole again."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxpack import messages as m
from ctxpack.markers import (
    SUMMARY_END,
    SUMMARY_PREFIX,
    SYSTEM_NOTE,
    block_span,
    has_system_note,
    summary_prefix,
)
from ctxpack.summarize.sanitize import sanitize_tool_pairs
from ctxpack.transcript import Message

RESULT_ROLES = ("tool", "function")
_PREFIX_HEAD = SUMMARY_PREFIX.split("\n", 1)[0]


@dataclass
class Assembly:
    messages: list[Message]
    # Where the summary ended up: its own message, or the tail message it was merged into.
    summary_index: int
    role: str
    merged: bool
    # What the sanitizer changed to make the tool pairs whole again.
    sanitizer_notes: list[str] = field(default_factory=list)


def summary_block(summary: str, *, recall: bool = False) -> str:
    """The summary as it appears in the transcript: prefix, body, end marker."""
    body = summary.strip()
    if not body:
        raise ValueError("refusing to assemble an empty summary")
    return f"{summary_prefix(recall=recall)}\n\n{body}\n\n{SUMMARY_END}"


def assemble(
    *,
    head: list[Message],
    summary: str,
    tail: list[Message],
    first_compaction: bool,
    pending: frozenset[str] = frozenset(),
    recall: bool = False,
) -> Assembly:
    """Head, record, tail; `pending`: ids of calls the input had no result for
    yet, which stay as they were (see sanitize)."""
    block = summary_block(summary, recall=recall)
    head = _note_system(head) if first_compaction else head
    role = summary_role(head, tail)
    merged = role is None
    if role is None:
        # Either role would sit next to a message of the same role: the
        # summary rides along in the first tail message instead, before that
        # message's own text, which it precedes in time.
        out = [*head, {**tail[0], "content": _prepend_text(tail[0].get("content"), block)}]
        out.extend(tail[1:])
        role = m.role(tail[0])
    else:
        out = [*head, {"role": role, "content": block}, *tail]
    position = len(head)
    # The sanitizer only ever drops tool results, so the summary is still the
    # same-numbered message among the others.
    rank = sum(1 for msg in out[:position] if m.role(msg) not in RESULT_ROLES)
    clean, notes = sanitize_tool_pairs(out, pending=pending)
    kept = [i for i, msg in enumerate(clean) if m.role(msg) not in RESULT_ROLES]
    return Assembly(
        messages=clean,
        summary_index=kept[rank],
        role=role,
        merged=merged,
        sanitizer_notes=notes,
    )


def summary_role(head: list[Message], tail: list[Message]) -> str | None:
    """The role of a standalone summary between head and tail; None: merge it."""
    last = m.role(head[-1]) if head else ""
    only_system = all(m.is_system(msg) for msg in head)
    role = "user" if only_system or last in ("assistant", *RESULT_ROLES) else "assistant"
    if tail and m.role(tail[0]) == role:
        flipped = "assistant" if role == "user" else "user"
        if flipped == last:
            return None
        role = flipped
    return role


def _note_system(head: list[Message]) -> list[Message]:
    """The head with the compaction note on its first system message (once only)."""
    if any(has_system_note(msg) for msg in head):
        return head
    for i, msg in enumerate(head):
        if m.is_system(msg):
            noted = {**msg, "content": _append_text(msg.get("content"), SYSTEM_NOTE)}
            return [*head[:i], noted, *head[i + 1 :]]
    return head


def without_system_note(msg: Message) -> Message:
    """A message as it was before `_note_system` added the compaction note."""
    content = msg.get("content")
    note = {"type": "text", "text": SYSTEM_NOTE}
    if isinstance(content, list) and content and content[-1] == note:
        return {**msg, "content": content[:-1]}
    if isinstance(content, str) and content.endswith(f"\n\n{SYSTEM_NOTE}"):
        return {**msg, "content": content[: -len(SYSTEM_NOTE) - 2]}
    return msg


def _append_text(content: Any, text: str) -> Any:
    """Content with `text` after what was there (a new text part for part lists)."""
    if isinstance(content, list):
        return [*content, {"type": "text", "text": text}]
    if isinstance(content, str) and content.strip():
        return f"{content}\n\n{text}"
    return text


def _prepend_text(content: Any, text: str) -> Any:
    """Content with `text` before what was there (a new first part for part lists)."""
    if isinstance(content, list):
        return [{"type": "text", "text": text}, *content]
    if isinstance(content, str) and content.strip():
        return f"{text}\n\n{content}"
    return text


def without_merged_summary(msg: Message) -> Message | None:
    """A message whose content had our summary merged into it, as it was before
    the merge; None when the message is nothing but a summary. The summary
    sits before the message's own text, or after it where an earlier version
    of ctxpack wrote the file."""
    content = msg.get("content")
    if isinstance(content, str):
        own = _outside_block(content)
        if own.strip():
            return {**msg, "content": own}
        return {**msg, "content": None} if m.tool_calls(msg) else None
    if isinstance(content, list):
        parts = [p for p in content if not (isinstance(p, dict) and _is_block(p.get("text")))]
        rest = {**msg, "content": parts}
        return rest if m.has_visible_text(rest) or m.tool_calls(rest) else None
    return None


def _outside_block(content: str) -> str:
    """`content` without the summary block in it, and the blank line that joined them."""
    span = block_span(content)
    if span is None:
        return content
    start, end = span
    if start == 0:
        return content[end:].removeprefix("\n\n")
    return content[:start].rstrip()


def _is_block(text: Any) -> bool:
    return isinstance(text, str) and text.lstrip().startswith(_PREFIX_HEAD)
