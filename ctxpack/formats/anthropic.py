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
from datetime import UTC, datetime
from typing import Any

from ctxpack import messages as m
from ctxpack.errors import InputError
from ctxpack.formats import blocks, jsoncodec, jsonspans
from ctxpack.formats.base import BOM, ReadOptions, join_lines, split_document
from ctxpack.formats.origins import resolve
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message, Session, Transcript

_BLOCK = re.compile(rb'"type"\s*:\s*"(tool_use|tool_result|thinking|redacted_thinking)"')
_SYSTEM = re.compile(rb'"system"\s*:\s*["\[]')
_OPENAI = re.compile(rb'"tool_calls"|"role"\s*:\s*"(tool|function)"')
_TEXT_RESULT = re.compile(r"\[[^\]\n]+\] Result:")

Derived = list[tuple[Message, list[int]]]


def detect(head: bytes) -> bool:
    if b'"role"' not in head or _OPENAI.search(head):
        return False
    return bool(_BLOCK.search(head)) or (bool(_SYSTEM.search(head)) and b'"messages"' in head)


def session_of(items: list[Any], system: Any, *, label: str) -> Session:
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
    return Session(
        messages=messages,
        originals=[(msg, b"") for msg in messages],
        label=label,
        context={"items": items, "system": system, "units": units, "where": where},
    )


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


class AnthropicFormat:
    name = "anthropic"
    description = (
        "Anthropic Messages API: {system, messages} records or a bare message list (Cline)"
    )
    writable = True

    def detect(self, head: bytes) -> bool:
        return detect(head)

    def read(self, data: bytes, *, path: str, options: ReadOptions) -> Transcript:
        body, lines, nonblank, layout = split_document(data)
        sessions: list[Session] = []
        skipped = 0
        if len(nonblank) > 1 and nonblank[0].lstrip().startswith(b"{") and _parses(nonblank[0]):
            layout.update(mode="jsonl", lines=lines)
            for number, line in enumerate(lines):
                if not line.strip():
                    continue
                try:
                    record = jsoncodec.loads(line)
                    session = _record_session(record, f"line {number + 1}")
                except (ValueError, jsoncodec.JSONError) as exc:
                    if not options.skip_invalid:
                        raise InputError(str(exc), path=path, line=number + 1) from None
                    skipped += 1
                    continue
                session.context.update(record=record, line=number)
                sessions.append(session)
        else:
            try:
                doc = jsoncodec.loads(body)
            except jsoncodec.JSONError as exc:
                raise InputError(str(exc), path=path, line=exc.line) from None
            start = jsonspans.skip_ws(body, 0)
            style = jsonspans.detect_style(body)
            layout.update(body=body, start=start, style=style)
            try:
                sessions = self._document(doc, body, start, layout)
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

    def _document(self, doc: Any, body: bytes, start: int, layout: dict[str, Any]) -> list[Session]:
        if isinstance(doc, list) and all(isinstance(x, dict) and "role" in x for x in doc):
            layout["mode"] = "messages"
            session = session_of(doc, None, label="")
            session.context["spans"] = jsonspans.array_items(body, start)
            return [session]
        if isinstance(doc, list):
            layout["mode"] = "records"
            spans = jsonspans.array_items(body, start)
            sessions = []
            for number, record in enumerate(doc):
                session = _record_session(record, f"#{number}")
                session.context.update(record=record, span=spans[number])
                sessions.append(session)
            return sessions
        layout["mode"] = "record"
        session = _record_session(doc, "")
        members = jsonspans.object_members(body, start)
        session.context.update(record=doc, members=members)
        messages_span = members["messages"]
        session.context["spans"] = jsonspans.array_items(body, messages_span[0])
        return [session]

    def write(self, transcript: Transcript, *, counter: TokenCounter) -> bytes:
        layout = transcript.layout
        mode = layout.get("mode")
        if transcript.unchanged() and mode is not None:
            return transcript.raw
        if mode is None:
            records = [_record(s, {}) for s in transcript.sessions]
            return b"".join(jsoncodec.dumps(r) + b"\n" for r in records)
        bom = BOM if layout["bom"] else b""
        if mode == "jsonl":
            lines = list(layout["lines"])
            for s in transcript.sessions:
                if not s.unchanged():
                    old = lines[s.context["line"]]
                    new = jsonspans.detect_style(old).dumps(_record(s, s.context["record"]))
                    lines[s.context["line"]] = new + (b"\r" if old.endswith(b"\r") else b"")
            return bom + join_lines(lines, final_newline=layout["final_newline"])
        body: bytes = layout["body"]
        style: jsonspans.Style = layout["style"]
        root = (layout["start"], jsonspans.value_end(body, layout["start"]))
        if mode == "messages":
            text = _render_messages(transcript.sessions[0], body, root, style, level=1)
            return bom + jsonspans.splice(body, [(root, text)])
        if mode == "records":
            items = [
                body[s.context["span"][0] : s.context["span"][1]]
                if s.unchanged()
                else style.dumps(_record(s, s.context["record"]), level=1)
                for s in transcript.sessions
            ]
            text = jsonspans.render_array(body, root, items, style=style, level=1)
            return bom + jsonspans.splice(body, [(root, text)])
        session = transcript.sessions[0]
        record = _record(session, session.context["record"])
        members = session.context["members"]
        if record.get("system") != session.context["record"].get("system"):
            if "system" not in members:
                return bom + jsonspans.splice(body, [(root, style.dumps(record))])
            system = style.dumps(record["system"], level=1)
            edits = [(members["system"], system)]
        else:
            edits = []
        span = members["messages"]
        edits.append((span, _render_messages(session, body, span, style, level=2)))
        return bom + jsonspans.splice(body, edits)


def _record_session(record: Any, label: str) -> Session:
    if not isinstance(record, dict) or not isinstance(record.get("messages"), list):
        raise ValueError("record has no messages list")
    return session_of(record["messages"], record.get("system"), label=label)


def _parses(line: bytes) -> bool:
    try:
        return isinstance(jsoncodec.loads(line), dict)
    except jsoncodec.JSONError:
        return False


def _render_messages(
    session: Session, body: bytes, span: tuple[int, int], style: jsonspans.Style, *, level: int
) -> bytes:
    spans: list[tuple[int, int]] = session.context.get("spans", [])
    items = session.context.get("items", [])
    by_identity = {id(item): spans[i] for i, item in enumerate(items) if i < len(spans)}
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
    where: dict[int, int] = session.context.get("where", {})
    for msg, orig in zip(session.messages, resolve(session).origin, strict=True):
        if m.role(msg) != "system":
            continue
        if orig is not None and where.get(id(orig)) == -1 and msg is orig:
            return session.context.get("record", {}).get("system")
        content = msg.get("content")
        return content if isinstance(content, str) else blocks.content_to_blocks(content)
    return None


def messages_of(session: Session) -> list[Any]:
    """The Anthropic message list for the session's current messages."""
    items: list[Any] = session.context.get("items", [])
    units: dict[int, Derived] = session.context.get("units", {})
    where: dict[int, int] = session.context.get("where", {})
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
    for item in reversed(sessions[-1].context.get("items", [])):
        ts = item.get("ts") if isinstance(item, dict) else None
        if isinstance(ts, int | float) and not isinstance(ts, bool):
            return datetime.fromtimestamp(ts / 1000, tz=UTC).isoformat().replace("+00:00", "Z")
    return None
