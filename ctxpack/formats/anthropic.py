"""The `anthropic` format: Messages API conversations.

Shapes: a request-like record `{"system", "messages": [...]}` (one JSON
document, a JSON array of them, or one per line) and a bare JSON array of
Anthropic messages (Cline's api_conversation_history.json). Blocks map as in
`blocks`; Cline returns tool results as a user text block starting
"[tool] Result:", which is read as the result of the call before it.
Written back in the same shape; unchanged messages keep their bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from ctxpack import messages as m
from ctxpack.errors import InputError
from ctxpack.formats import blocks, jsoncodec, jsonspans
from ctxpack.formats.base import Format, ReadOptions, context_of, layout_of
from ctxpack.formats.origins import resolve
from ctxpack.formats.records import RecordDocument, RecordLines, open_file
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message, Session, Transcript

_TEXT_RESULT = re.compile(r"\[[^\]\n]+\] Result:")

Derived = list[tuple[Message, list[int]]]


@dataclass(frozen=True)
class AnthropicLayout:
    file: RecordLines | RecordDocument
    # What a document holds: a bare message list (Cline), an array of
    # records, or one record; None for one record per line.
    shape: Literal["messages", "records", "record"] | None = None


@dataclass
class AnthropicContext:
    """Where one session's messages came from."""

    items: list[Any] = field(default_factory=list)  # the Anthropic messages as read
    # The messages derived from each item, with the indexes of their blocks.
    units: dict[int, Derived] = field(default_factory=dict)
    # id(message) -> the index of its item; -1 for the system prompt.
    where: dict[int, int] = field(default_factory=dict)
    record: dict[str, Any] = field(default_factory=dict)  # the record holding the items
    line: int = -1  # the record's line in a JSONL file
    span: jsonspans.Span | None = None  # the record's bytes in an array of records
    spans: list[jsonspans.Span] = field(default_factory=list)  # each item's bytes
    members: dict[str, jsonspans.Span] = field(default_factory=dict)  # one record's members


def session_of(items: list[Any], system: Any, *, label: str) -> tuple[Session, AnthropicContext]:
    messages: list[Message] = []
    units: dict[int, Derived] = {}
    where: dict[int, int] = {}
    if isinstance(system, list):
        system = [blocks.block_to_part(b) for b in system]
    if system:
        msg = {"role": "system", "content": system}
        messages.append(msg)
        where[id(msg)] = -1
    unanswered: list[str] = []
    for index, item in enumerate(items):
        if not isinstance(item, dict) or item.get("role") not in ("user", "assistant"):
            raise ValueError(f"message {index} is not an Anthropic user or assistant message")
        content = item.get("content")
        if item["role"] == "assistant":
            listed = content if isinstance(content, list) else [{"type": "text", "text": content}]
            msg = blocks.assistant_message(listed)
            derived: Derived = [(msg, list(range(len(listed))))]
            unanswered = [m.call_id(c) for c in m.tool_calls(msg)]
        else:
            derived = _text_results(blocks.user_messages(content), content, unanswered)
            unanswered = []
        units[index] = derived
        for msg, _ in derived:
            messages.append(msg)
            where[id(msg)] = index
    context = AnthropicContext(items=items, units=units, where=where)
    session = Session(
        messages=messages, originals=[(msg, b"") for msg in messages], label=label, context=context
    )
    return session, context


def _context(session: Session) -> AnthropicContext:
    return context_of(session, AnthropicContext) or AnthropicContext()


def _text_results(derived: Derived, content: Any, unanswered: list[str]) -> Derived:
    """Read a leading "[tool] Result:" text block as the answer to the open call."""
    answered = {m.result_call_id(msg) for msg, _ in derived if m.role(msg) == "tool"}
    open_calls = [c for c in unanswered if c not in answered]
    if not open_calls or not isinstance(content, list) or not derived:
        return derived
    msg, indexes = derived[-1]
    first = content[indexes[0]] if indexes else None
    if m.role(msg) != "user" or not isinstance(first, dict) or first.get("type") != "text":
        return derived
    text = first.get("text")
    if not isinstance(text, str) or not _TEXT_RESULT.match(text):
        return derived
    result: Message = {"role": "tool", "tool_call_id": open_calls[0], "content": text}
    rest = indexes[1:]
    tail: Derived = [({"role": "user", "content": msg["content"][1:]}, rest)] if rest else []
    return [*derived[:-1], (result, indexes[:1]), *tail]


class AnthropicFormat(Format, name="anthropic", writable=True):
    """Anthropic Messages API: {system, messages} records or a bare message list (Cline)"""

    def read(self, data: bytes, *, path: str, options: ReadOptions) -> Transcript:
        file = open_file(data, path=path)
        skipped = 0
        if isinstance(file, RecordLines):
            layout = AnthropicLayout(file)
            sessions, skipped = file.read(_line_session, path=path, options=options)
        else:
            try:
                layout, sessions = self._document(*file)
            except ValueError as exc:
                raise InputError(str(exc), path=path) from None
        return Transcript(
            self.name,
            sessions,
            path=path,
            raw=data,
            skipped_lines=skipped,
            layout=layout,
            last_timestamp=_last_ts(sessions) or None,
        )

    def _document(
        self, document: RecordDocument, doc: Any
    ) -> tuple[AnthropicLayout, list[Session]]:
        body, start = document.body, document.start
        if isinstance(doc, list) and all(isinstance(x, dict) and "role" in x for x in doc):
            session, context = session_of(doc, None, label="")
            context.spans = jsonspans.array_items(body, start)
            return AnthropicLayout(document, "messages"), [session]
        if isinstance(doc, list):
            spans = jsonspans.array_items(body, start)
            sessions = []
            for number, record in enumerate(doc):
                session, context = _record_session(record, f"#{number}")
                context.span = spans[number]
                sessions.append(session)
            return AnthropicLayout(document, "records"), sessions
        session, context = _record_session(doc, "")
        context.members = jsonspans.object_members(body, start)
        context.spans = jsonspans.array_items(body, context.members["messages"][0])
        return AnthropicLayout(document, "record"), [session]

    def write(self, transcript: Transcript, *, counter: TokenCounter) -> bytes:
        layout = layout_of(transcript, AnthropicLayout)
        if layout is None:
            records = [_record(s, {}) for s in transcript.sessions]
            return b"".join(jsoncodec.dumps(r) + b"\n" for r in records)
        if transcript.unchanged():
            return transcript.raw
        file = layout.file
        if isinstance(file, RecordLines):
            changed = [(s, _context(s)) for s in transcript.sessions if not s.unchanged()]
            return file.write({c.line: _record(s, c.record) for s, c in changed})
        root = file.root()
        if layout.shape == "messages":
            text = _render_messages(transcript.sessions[0], file, root, level=1)
            return file.splice([(root, text)])
        if layout.shape == "records":
            items = []
            for s in transcript.sessions:
                context = _context(s)
                if s.unchanged() and context.span is not None:
                    items.append(file.body[context.span[0] : context.span[1]])
                else:
                    items.append(file.style.dumps(_record(s, context.record), level=1))
            text = jsonspans.render_array(file.body, root, items, style=file.style, level=1)
            return file.splice([(root, text)])
        session = transcript.sessions[0]
        context = _context(session)
        record = _record(session, context.record)
        members = context.members
        if record.get("system") != context.record.get("system"):
            if "system" not in members:
                return file.splice([(root, file.style.dumps(record))])
            system = file.style.dumps(record["system"], level=1)
            edits = [(members["system"], system)]
        else:
            edits = []
        span = members["messages"]
        edits.append((span, _render_messages(session, file, span, level=2)))
        return file.splice(edits)


def _line_session(record: Any, number: int) -> Session:
    return _record_session(record, f"line {number + 1}", line=number)[0]


def _record_session(record: Any, label: str, *, line: int = -1) -> tuple[Session, AnthropicContext]:
    if not isinstance(record, dict) or not isinstance(record.get("messages"), list):
        raise ValueError("record has no messages list")
    session, context = session_of(record["messages"], record.get("system"), label=label)
    context.record, context.line = record, line
    return session, context


def _render_messages(
    session: Session, file: RecordDocument, span: jsonspans.Span, *, level: int
) -> bytes:
    context = _context(session)
    body, style = file.body, file.style
    spans = context.spans
    by_identity = {id(item): spans[i] for i, item in enumerate(context.items) if i < len(spans)}
    out = []
    for item in messages_of(session):
        known = by_identity.get(id(item))
        out.append(body[known[0] : known[1]] if known else style.dumps(item, level=level))
    return jsonspans.render_array(body, span, out, style=style, level=level)


def _record(session: Session, record: dict[str, Any]) -> dict[str, Any]:
    out = {**record, "messages": messages_of(session)}
    system = _system_of(session)
    if system is not None:
        out["system"] = system
    return out


def _system_of(session: Session) -> Any:
    context = _context(session)
    for msg, orig in zip(session.messages, resolve(session).origin, strict=True):
        if m.role(msg) != "system":
            continue
        if orig is not None and context.where.get(id(orig)) == -1 and msg is orig:
            return context.record.get("system")
        content = msg.get("content")
        return content if isinstance(content, str) else blocks.content_to_blocks(content)
    return None


def messages_of(session: Session) -> list[Any]:
    """The Anthropic message list for the session's current messages."""
    context = _context(session)
    items, units, where = context.items, context.units, context.where
    res = resolve(session)
    out: list[Any] = []
    done: set[int] = set()
    fresh: set[int] = set()
    for msg, orig in zip(session.messages, res.origin, strict=True):
        if m.role(msg) == "system":
            continue
        index = where.get(id(orig), -1) if orig is not None else -1
        if index < 0:
            _append_new(out, msg, fresh)
            continue
        if index in done:
            continue
        done.add(index)
        item = items[index]
        derived = units[index]
        fate = {id(o): res.fate(o) for o, _ in derived}
        if item.get("role") == "assistant":
            new = fate[id(derived[0][0])]
            if new is derived[0][0]:
                out.append(item)
                continue
            assert new is not None
            content = item.get("content")
            listed = content if isinstance(content, list) else [{"type": "text", "text": content}]
            kept = [b for _, b in blocks.assistant_blocks(listed, derived[0][0], new)]
            if kept:
                out.append({**item, "content": kept})
            continue
        content = blocks.user_blocks(item.get("content"), derived, fate)
        if content is item.get("content"):
            out.append(item)
        elif content is not None:
            out.append({**item, "content": content})
    return out


def _append_new(out: list[Any], msg: Message, fresh: set[int]) -> None:
    role = m.role(msg)
    if role in ("tool", "function"):
        block = blocks.result_block(None, msg)
        last = out[-1] if out else None
        if isinstance(last, dict) and id(last) in fresh and _only_results(last):
            last["content"].append(block)
            return
        item: dict[str, Any] = {"role": "user", "content": [block]}
    elif role == "assistant":
        listed = [b for _, b in blocks.assistant_blocks([], None, msg)]
        item = {"role": "assistant", "content": listed or ""}
    else:
        content = msg.get("content")
        value = content if isinstance(content, str) else blocks.content_to_blocks(content)
        item = {"role": "user", "content": value}
    fresh.add(id(item))
    out.append(item)


def _only_results(item: dict[str, Any]) -> bool:
    content = item.get("content")
    return isinstance(content, list) and all(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def _last_ts(sessions: list[Session]) -> str | None:
    if not sessions:
        return None
    for item in reversed(_context(sessions[-1]).items):
        ts = item.get("ts") if isinstance(item, dict) else None
        if isinstance(ts, int | float) and not isinstance(ts, bool):
            return datetime.fromtimestamp(ts / 1000, tz=UTC).isoformat().replace("+00:00", "Z")
    return None
