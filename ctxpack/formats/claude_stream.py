"""The `claude-stream-json` format: `claude -p --output-format stream-json` logs.

Lines are `{"type": "system"|"assistant"|"user"|"result", ...}`, either as
the CLI prints them (`subtype`, `session_id`, `uuid`, `parent_tool_use_id` at
top level) or re-wrapped as `{"type", "message": {...}, "timestamp"}`. There is
no parent chain: the model's context is everything after the last
`compact_boundary`, whose next user line holds the summary ("This session is
being continued ..."). Assistant lines of one API response (same message.id)
merge into one message, as in `claude-code`; lines of a subagent (a
`parent_tool_use_id`) are left out unless sidechains are asked for.

Written back like `claude-code`, without the uuid chain: edits in place, and a
compaction as a `compact_boundary` system line just before the first kept
tail line, then copies of the kept head lines, then a user line holding the
record (the order the turns happened in).
A compaction drops the turns of the main conversation before that point and
the markers of earlier compactions; init, result and subagent lines stay.
"""

from __future__ import annotations

from typing import Any

from ctxpack import messages as m
from ctxpack.formats import jsonl
from ctxpack.formats.base import Format, ReadOptions, layout_of
from ctxpack.formats.claude_code import ClaudeCodeLayout, chain_transcript, line, session_of
from ctxpack.formats.claude_code_write import SessionWriter, Slot, write
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message, Session, Transcript

Obj = dict[str, Any]


def subtype(obj: Obj) -> Any:
    message = obj.get("message")
    if isinstance(message, dict) and "subtype" in message:
        return message["subtype"]
    return obj.get("subtype")


def _conversation(obj: Obj) -> bool:
    """A turn, or the marker of a compaction (which a new one supersedes)."""
    if obj.get("type") in ("user", "assistant"):
        return True
    return obj.get("type") == "system" and subtype(obj) in ("compact_boundary", "status")


def _parent_tool(obj: Obj) -> Any:
    return obj.get("parent_tool_use_id") or (obj.get("message") or {}).get("parent_tool_use_id")


def views(
    doc: jsonl.Lines, *, include_sidechains: bool, whole_history: bool = False
) -> list[tuple[str, list[int]]]:
    start = 0
    for index, obj in enumerate(doc.objs):
        if whole_history:
            break
        if obj is not None and obj.get("type") == "system" and subtype(obj) == "compact_boundary":
            start = index
    main: list[int] = []
    side: dict[str, list[int]] = {}
    for index in range(start, len(doc.objs)):
        obj = doc.objs[index]
        if obj is None:
            continue
        parent = _parent_tool(obj)
        if parent:
            side.setdefault(str(parent), []).append(index)
        else:
            main.append(index)
    out = [("", main)]
    if include_sidechains:
        out += [(f"sidechain {key}", lines) for key, lines in side.items()]
    return out


class StreamWriter(SessionWriter):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.wrapped = any(
            obj is not None and isinstance(obj.get("message"), dict) and obj.get("type") == "system"
            for obj in self.doc.objs
        )
        self.session_id = next(
            (
                sid
                for obj in self.doc.objs
                if obj is not None
                and isinstance(
                    sid := obj.get("session_id") or (obj.get("message") or {}).get("session_id"),
                    str,
                )
            ),
            None,
        )

    def _line(self, kind: str, body: Obj, *, key: str, ref: Obj) -> Obj:
        if self.wrapped:
            return {"type": kind, "message": body, "timestamp": self._timestamp(ref)}
        out: Obj = {"type": kind, "message": body, "parent_tool_use_id": None}
        if self.session_id:
            out["session_id"] = self.session_id
        out["uuid"] = self.ids.new(key)
        return out

    def _user(self, content: Any, *, key: str, ref: Obj, **extra: Any) -> Obj:
        return self._line("user", {"role": "user", "content": content}, key=key, ref=ref)

    def _assistant(self, body: Obj, *, key: str, ref: Obj) -> Obj:
        return self._line("assistant", body, key=key, ref=ref)

    def _copy(self, obj: Obj) -> Obj:
        if "uuid" not in obj:
            return dict(obj)
        return {**obj, "uuid": self.ids.new(f"copy/{obj['uuid']}")}

    def _clone(self, index: int, content: list[Any], *, key: str) -> Obj:
        obj = line(self.doc, index)
        out = {**obj, "message": {**obj["message"], "content": content}}
        return {**out, "uuid": self.ids.new(f"clone/{key}")} if "uuid" in out else out

    def _link(self, seq: list[Slot], *, compacted: bool) -> None:
        return

    def replaced(self, index: int) -> bool:
        return _conversation(line(self.doc, index))

    def earlier_history(self) -> set[int]:
        start = self.chain[0] if self.chain else len(self.doc.objs)
        return {
            i
            for i, obj in enumerate(self.doc.objs[:start])
            if obj is not None and _conversation(obj) and not _parent_tool(obj)
        }

    def _markers(self, summary: Message) -> tuple[Slot, Slot]:
        ref = self.env_ref
        meta = {"trigger": "manual", "post_tokens": self.post_tokens()}
        if self.wrapped:
            body: Obj = {
                "subtype": "compact_boundary",
                "compact_metadata": meta,
                "uuid": self.ids.new("boundary"),
            }
            if self.session_id:
                body["session_id"] = self.session_id
            boundary: Obj = {"type": "system", "message": body, "timestamp": self._timestamp(ref)}
        else:
            boundary = {"type": "system", "subtype": "compact_boundary", "compact_metadata": meta}
            if self.session_id:
                boundary["session_id"] = self.session_id
            boundary["uuid"] = self.ids.new("boundary")
        text = [{"type": "text", "text": m.text(summary)}]
        note = self._user(text, key="summary", ref=ref)
        return Slot(boundary, None), Slot(note, None)


class ClaudeStreamFormat(Format, name="claude-stream-json", writable=True):
    """Claude Code stream-json output (claude -p --output-format stream-json)"""

    def read(self, data: bytes, *, path: str, options: ReadOptions) -> Transcript:
        doc = jsonl.parse(data, path=path, options=options)
        sessions: list[Session] = [
            session_of(doc, lines, label)
            for label, lines in views(
                doc,
                include_sidechains=options.include_sidechains,
                whole_history=options.whole_history,
            )
        ]
        return chain_transcript(self.name, doc, sessions, path=path, data=data)

    def write(self, transcript: Transcript, *, counter: TokenCounter) -> bytes:
        if transcript.unchanged() and layout_of(transcript, ClaudeCodeLayout) is not None:
            return transcript.raw
        return write(transcript, counter=counter, writer=StreamWriter)
