"""Writing ShareGPT records back in their own shape.

Unchanged records keep their exact bytes (the line, or the array element's
byte span); a changed record is re-serialized in the file's own JSON style,
keeping every unchanged turn as it was. A new message (a summary, a note)
becomes a turn of its own; tool calls are written in the record's own
convention (glaive `function_call`/`observation` turns, or Hermes tags).
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any

from ctxpack import messages as m
from ctxpack.formats import jsonspans
from ctxpack.formats.base import layout_of
from ctxpack.formats.origins import resolve
from ctxpack.formats.records import RecordLines
from ctxpack.formats.sharegpt import Origin, ShareGPTLayout, session_context
from ctxpack.transcript import Message, Session, Transcript

SYNTHETIC_ID = re.compile(r"call_\d+_\d+")
ROLE_TO_FROM = {"system": "system", "developer": "system", "user": "human", "assistant": "gpt"}


def write(transcript: Transcript) -> bytes:
    layout = layout_of(transcript, ShareGPTLayout)
    if layout is None:
        records = [record_of(s) for s in transcript.sessions]
        return b"".join(_compact(record) + b"\n" for record in records)
    file = layout.file
    if isinstance(file, RecordLines):
        changed = [s for s in transcript.sessions if not s.unchanged()]
        return file.write({session_context(s).line: record_of(s) for s in changed})
    root = file.root()
    if layout.array:
        items = []
        for s in transcript.sessions:
            span = session_context(s).span
            if s.unchanged() and span is not None:
                items.append(file.body[span[0] : span[1]])
            else:
                items.append(file.style.dumps(record_of(s), level=1))
        text = jsonspans.render_array(file.body, root, items, style=file.style, level=1)
    else:
        text = file.style.dumps(record_of(transcript.sessions[0]))
    return file.splice([(root, text)])


def _compact(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def record_of(session: Session) -> dict[str, Any]:
    context = session_context(session)
    record = context.record
    turns: list[Any] = record.get("conversations", [])
    where = context.where
    hermes = not turns or any(
        isinstance(t, dict)
        and (t.get("from") == "tool" or "<tool_call>" in str(t.get("value", "")))
        for t in turns
    )
    pairs = list(zip(session.messages, resolve(session).origin, strict=True))
    out: list[Any] = []
    system: str | None = None
    i = 0
    while i < len(pairs):
        msg, orig = pairs[i]
        if orig is None:
            out += new_turns(msg, hermes=hermes)
            i += 1
            continue
        origin = where[id(orig)]
        if origin.turn < 0:
            if msg is not orig:
                system = m.text(msg)
            i += 1
            continue
        group = [(msg, orig)]
        i += 1
        while (
            i < len(pairs)
            and pairs[i][1] is not None
            and where[id(pairs[i][1])].turn == origin.turn
        ):
            group.append(pairs[i])  # type: ignore[arg-type]
            i += 1
        turn = turns[origin.turn]
        if len(group) == origin.count and all(a is b for a, b in group):
            out.append(turn)
        else:
            out.append(_rebuilt(turn, group, where, hermes=hermes))
    new = {**record, "conversations": out}
    if system is not None:
        new["system"] = system
    return new


def _rebuilt(
    turn: dict[str, Any],
    group: list[tuple[Message, Message]],
    where: dict[int, Origin],
    *,
    hermes: bool,
) -> dict[str, Any]:
    source = turn.get("from")
    first = group[0][0]
    if m.role(first) == "tool":
        segments = []
        for msg, orig in group:
            segment = where[id(orig)].segment
            if msg is orig and segment:
                segments.append(segment)
            elif segment:
                segments.append(_response_tag(segment, msg))
            else:
                segments.append(m.text(msg))
        return {**turn, "value": "\n".join(segments)}
    if m.role(first) == "assistant":
        calls = m.tool_calls(first)
        if source == "function_call" and len(calls) == 1 and not m.has_visible_text(first):
            return {**turn, "value": _glaive_value(calls[0])}
        if source == "function_call":
            return {**turn, "from": "gpt", "value": _assistant_value(first, hermes=True)}
        return {**turn, "value": _assistant_value(first, hermes=hermes or bool(calls))}
    return {**turn, "value": m.text(first)}


def _response_tag(segment: str, msg: Message) -> str:
    inner = segment.removeprefix("<tool_response>").removesuffix("</tool_response>").strip()
    try:
        obj = json.loads(inner)
    except json.JSONDecodeError:
        obj = None
    if isinstance(obj, dict):
        obj = {**obj, "content": m.text(msg)}
        inner = json.dumps(obj, ensure_ascii=False)
    else:
        inner = m.text(msg)
    return f"<tool_response>\n{inner}\n</tool_response>"


def _glaive_value(call: dict[str, Any]) -> str:
    arguments: Any = m.call_arguments(call)
    with contextlib.suppress(json.JSONDecodeError):
        arguments = json.loads(arguments)
    return json.dumps({"name": m.call_name(call), "arguments": arguments}, ensure_ascii=False)


def _assistant_value(msg: Message, *, hermes: bool) -> str:
    parts: list[str] = []
    reasoning = msg.get("reasoning_content")
    if hermes and isinstance(reasoning, str) and reasoning:
        parts.append(f"<think>\n{reasoning}\n</think>")
    text = m.text(msg)
    if text:
        parts.append(text)
    for call in m.tool_calls(msg):
        arguments: Any = m.call_arguments(call)
        with contextlib.suppress(json.JSONDecodeError):
            arguments = json.loads(arguments)
        body = {"name": m.call_name(call), "arguments": arguments}
        if not SYNTHETIC_ID.fullmatch(m.call_id(call)):
            body["id"] = m.call_id(call)
        parts.append(f"<tool_call>\n{json.dumps(body, ensure_ascii=False)}\n</tool_call>")
    return "\n".join(parts)


def new_turns(msg: Message, *, hermes: bool) -> list[dict[str, Any]]:
    role = m.role(msg)
    if role in ("tool", "function"):
        if not hermes:
            return [{"from": "observation", "value": m.text(msg)}]
        body = {
            "tool_call_id": m.result_call_id(msg),
            "name": msg.get("name", ""),
            "content": m.text(msg),
        }
        tag = f"<tool_response>\n{json.dumps(body, ensure_ascii=False)}\n</tool_response>"
        return [{"from": "tool", "value": tag}]
    if role == "assistant":
        calls = m.tool_calls(msg)
        if hermes or not calls:
            return [{"from": "gpt", "value": _assistant_value(msg, hermes=hermes)}]
        turns = [{"from": "gpt", "value": m.text(msg)}] if m.has_visible_text(msg) else []
        return turns + [{"from": "function_call", "value": _glaive_value(c)} for c in calls]
    return [{"from": ROLE_TO_FROM.get(role, "human"), "value": m.text(msg)}]
