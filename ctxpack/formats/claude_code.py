"""The `claude-code` format: Claude Code session logs (~/.claude/projects/*/*.jsonl).

Lines form a tree through uuid/parentUuid and the file is append-only, so
rewound branches, sidechains (subagents) and pre-compaction history coexist.
The conversation is the chain from the latest leaf back to a root; a
`compact_boundary` line has no parent, so a compacted session's chain starts
there, followed by the `isCompactSummary` line holding the summary.

One API response is split over several assistant lines (one content block
each) sharing `message.id`; they are merged into one assistant message.
Lines that are not conversation turns (snapshots, queue operations,
attachments, progress, system notices) stay out of the messages and are
written back where they were.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxpack.formats import blocks, jsonl
from ctxpack.formats.base import Format, ReadOptions, context_of, layout_of
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message, Session, Transcript

# Entries that take part in the uuid/parentUuid tree.
CHAIN_TYPES = frozenset({"user", "assistant", "system", "attachment", "progress"})


@dataclass(frozen=True)
class ClaudeCodeLayout:
    """The log's lines as read (a `claude-stream-json` log's too): the writer
    edits them in place."""

    doc: jsonl.Lines


# The messages of one user line, each with the indexes of its content blocks.
Derived = list[tuple[Message, list[int]]]


@dataclass(frozen=True)
class ClaudeCodeContext:
    """Where one conversation's messages came from in the log."""

    # Its line indexes, root first.
    chain: list[int] = field(default_factory=list)
    # The messages derived from each user line, by line index.
    units: dict[int, Derived] = field(default_factory=dict)
    # id(message) -> ("user" or "assistant", the lines it was read from).
    where: dict[int, tuple[str, list[int]]] = field(default_factory=dict)


def is_entry(obj: dict[str, Any] | None) -> bool:
    return obj is not None and obj.get("type") in CHAIN_TYPES and isinstance(obj.get("uuid"), str)


def line(doc: jsonl.Lines, index: int) -> dict[str, Any]:
    obj = doc.objs[index]
    assert obj is not None
    return obj


def chains(doc: jsonl.Lines, *, include_sidechains: bool) -> list[tuple[str, list[int]]]:
    """(label, line indexes root first) for the main conversation and, on
    request, each sidechain; a file holding only sidechain lines (a subagent
    log) is its own main conversation."""
    where: dict[str, int] = {}
    parents: set[str] = set()
    for index, obj in enumerate(doc.objs):
        if is_entry(obj):
            assert obj is not None
            where[obj["uuid"]] = index
            parent = obj.get("parentUuid")
            if isinstance(parent, str):
                parents.add(parent)
    leaves = sorted(i for i in where.values() if line(doc, i)["uuid"] not in parents)
    main = [i for i in leaves if not line(doc, i).get("isSidechain")]
    side = [i for i in leaves if line(doc, i).get("isSidechain")]
    if not main and all(line(doc, i).get("isSidechain") for i in where.values()):
        main, side = side, []
    out: list[tuple[str, list[int]]] = []
    if main:
        out.append(("", _walk(doc, where, main[-1])))
    elif not where:
        out.append(("", []))
    if include_sidechains:
        by_root: dict[int, list[int]] = {}
        for leaf in side:
            chain = _walk(doc, where, leaf)
            by_root[chain[0]] = chain  # the latest leaf of each subagent wins
        for chain in by_root.values():
            root = line(doc, chain[0])
            agent = root.get("agentId") or root["uuid"][:8]
            out.append((f"sidechain {agent}", chain))
    return out


def _walk(doc: jsonl.Lines, where: dict[str, int], leaf: int) -> list[int]:
    chain: list[int] = []
    seen: set[int] = set()
    index: int | None = leaf
    while index is not None and index not in seen:
        seen.add(index)
        chain.append(index)
        parent = line(doc, index).get("parentUuid")
        index = where.get(parent) if isinstance(parent, str) else None
    chain.reverse()
    return chain


def is_boundary(obj: dict[str, Any]) -> bool:
    return obj.get("type") == "system" and obj.get("subtype") == "compact_boundary"


def history_behind(doc: jsonl.Lines, chain: list[int]) -> set[int]:
    """Lines an earlier compaction of this chain replaced: the chain behind
    each compact boundary's `logicalParentUuid`, boundaries behind it too."""
    where = {
        str(obj["uuid"]): i for i, obj in enumerate(doc.objs) if obj is not None and is_entry(obj)
    }
    out: set[int] = set()
    todo = [i for i in chain if is_boundary(line(doc, i))]
    while todo:
        back = line(doc, todo.pop()).get("logicalParentUuid")
        index = where.get(back) if isinstance(back, str) else None
        while index is not None and index not in out:
            out.add(index)
            obj = line(doc, index)
            if is_boundary(obj):
                todo.append(index)
            parent = obj.get("parentUuid")
            index = where.get(parent) if isinstance(parent, str) else None
    return out


def passengers(
    chain: list[int], message_lines: set[int], kept: set[int]
) -> tuple[list[int], dict[int, list[int]]]:
    """Non-message chain lines: those before any kept message line, and the
    rest by the kept message line before them."""
    leading: list[int] = []
    trailing: dict[int, list[int]] = {}
    anchor: int | None = None
    for index in chain:
        if index in message_lines:
            if index in kept:
                anchor = index
        elif anchor is None:
            leading.append(index)
        else:
            trailing.setdefault(anchor, []).append(index)
    return leading, trailing


def session_of(doc: jsonl.Lines, chain: list[int], label: str) -> Session:
    """The messages of one chain plus the source tables the writer needs."""
    slots: list[Any] = []  # a Message, or the message.id of an assistant group
    groups: dict[str, list[int]] = {}
    units: dict[int, Derived] = {}
    where: dict[int, tuple[str, list[int]]] = {}
    for index in chain:
        obj = line(doc, index)
        message = obj.get("message")
        if not isinstance(message, dict):
            continue
        if obj["type"] == "assistant":
            key = str(message.get("id") or obj["uuid"])
            if key not in groups:
                groups[key] = []
                slots.append(key)
            groups[key].append(index)
        elif obj["type"] == "user":
            derived = blocks.user_messages(message.get("content"))
            units[index] = derived
            for msg, _ in derived:
                slots.append(msg)
                where[id(msg)] = ("user", [index])
    messages: list[Message] = []
    for slot in slots:
        if isinstance(slot, str):
            lines = groups[slot]
            msg = blocks.assistant_message(_flat_blocks(doc, lines))
            where[id(msg)] = ("assistant", lines)
            messages.append(msg)
        else:
            messages.append(slot)
    return Session(
        messages=messages,
        originals=[(msg, b"") for msg in messages],
        label=label,
        context=ClaudeCodeContext(chain=chain, units=units, where=where),
    )


def _flat_blocks(doc: jsonl.Lines, lines: list[int]) -> list[Any]:
    out: list[Any] = []
    for index in lines:
        content = line(doc, index)["message"].get("content")
        out.extend(content if isinstance(content, list) else [{"type": "text", "text": content}])
    return out


def last_timestamp(doc: jsonl.Lines, chain: list[int]) -> str | None:
    for index in reversed(chain):
        obj = doc.objs[index]
        if obj is not None and obj.get("type") in ("user", "assistant"):
            stamp = obj.get("timestamp")
            if isinstance(stamp, str):
                return stamp
    return None


def chain_transcript(
    name: str, doc: jsonl.Lines, sessions: list[Session], *, path: str, data: bytes
) -> Transcript:
    """The transcript of a log whose sessions are chains of its lines."""
    first = context_of(sessions[0], ClaudeCodeContext) if sessions else None
    chain = first.chain if first else []
    return Transcript(
        name,
        sessions,
        path=path,
        raw=data,
        skipped_lines=doc.skipped,
        layout=ClaudeCodeLayout(doc),
        last_timestamp=(last_timestamp(doc, chain) or None) if chain else None,
    )


class ClaudeCodeFormat(Format, name="claude-code", writable=True):
    """Claude Code session log (JSONL tree of typed lines; compact_boundary markers)"""

    def read(self, data: bytes, *, path: str, options: ReadOptions) -> Transcript:
        doc = jsonl.parse(data, path=path, options=options)
        sessions = [
            session_of(doc, chain, label)
            for label, chain in chains(doc, include_sidechains=options.include_sidechains)
        ]
        return chain_transcript(self.name, doc, sessions, path=path, data=data)

    def write(self, transcript: Transcript, *, counter: TokenCounter) -> bytes:
        from ctxpack.formats.claude_code_write import write

        if transcript.unchanged() and layout_of(transcript, ClaudeCodeLayout) is not None:
            return transcript.raw
        return write(transcript, counter=counter)
