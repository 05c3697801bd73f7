"""The `sharegpt` format: `{"conversations": [{"from", "value"}]}` records, as
a JSON array, one JSON object, or one record per line.

Turns: system -> system, human -> user, gpt -> assistant, function_call ->
an assistant tool call (glaive: `{"name", "arguments"}`), observation ->
the tool result of the oldest unanswered call (positional). Hermes
trajectories put `<tool_call>{json}</tool_call>` blocks in gpt turns and
several `<tool_response>{json}</tool_response>` blocks in one tool turn;
`<think>` blocks become `reasoning_content`. Calls without ids get stable
synthetic ids `call_<turn>_<n>`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ctxpack.errors import InputError
from ctxpack.formats import jsoncodec, jsonspans
from ctxpack.formats.base import Format, ReadOptions, context_of, layout_of
from ctxpack.formats.records import RecordDocument, RecordLines, open_file
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message, Session, Transcript

THINK = re.compile(r"<think>(.*?)</think>", re.S)
TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)
TOOL_RESPONSE = re.compile(r"<tool_response>\s*(.*?)\s*</tool_response>", re.S)

ROLES = {
    "system": "system",
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "model": "assistant",
    "function_call": "assistant",
    "observation": "tool",
    "function": "tool",
    "tool": "tool",
    "ipython": "tool",
}


@dataclass
class Origin:
    turn: int  # index in conversations; -1 for the record's `system` field
    part: int  # which message of that turn
    count: int  # how many messages the turn produced
    segment: str = ""  # the raw tag block a tool response came from


@dataclass(frozen=True)
class ShareGPTLayout:
    file: RecordLines | RecordDocument
    array: bool = False  # a document holding an array of records, not one record


@dataclass(frozen=True)
class ShareGPTContext:
    """Where one session's messages came from."""

    record: dict[str, Any] = field(default_factory=dict)
    where: dict[int, Origin] = field(default_factory=dict)  # by id(message)
    line: int = -1  # the record's line in a JSONL file
    span: jsonspans.Span | None = None  # the record's bytes in an array of records


def session_context(session: Session) -> ShareGPTContext:
    return context_of(session, ShareGPTContext) or ShareGPTContext()


@dataclass
class _Reader:
    turns: list[Any]
    pending: list[tuple[str, str]] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    where: dict[int, Origin] = field(default_factory=dict)

    def add(self, turn: int, produced: list[tuple[Message, str]]) -> None:
        for part, (msg, segment) in enumerate(produced):
            self.messages.append(msg)
            self.where[id(msg)] = Origin(turn, part, len(produced), segment)

    def answer(self, wanted: str | None) -> tuple[str, str]:
        for k, (call_id, _) in enumerate(self.pending):
            if wanted and call_id == wanted:
                return self.pending.pop(k)
        if self.pending:
            return self.pending.pop(0)
        return (wanted or "", "")

    def turn(self, index: int, turn: Any) -> None:
        if not isinstance(turn, dict) or not isinstance(turn.get("value"), str):
            raise ValueError(f"turn {index} must be an object with a string value")
        source, value = str(turn.get("from", "")), turn["value"]
        role = ROLES.get(source, "user")
        if source == "function_call":
            self.add(index, [(self._glaive_call(index, value), "")])
        elif role == "assistant":
            self.add(index, [(self._assistant(index, value), "")])
        elif role == "tool" or (role == "user" and value.lstrip().startswith("<tool_response>")):
            self.add(index, self._responses(index, value))
        else:
            self.add(index, [({"role": role, "content": value}, "")])

    def _glaive_call(self, index: int, value: str) -> Message:
        try:
            obj = json.loads(value)
        except json.JSONDecodeError:
            return {"role": "assistant", "content": value}
        return {"role": "assistant", "content": None, "tool_calls": [self._call(index, 0, obj)]}

    def _call(self, index: int, n: int, obj: Any) -> dict[str, Any]:
        name = str(obj.get("name", "")) if isinstance(obj, dict) else ""
        arguments = obj.get("arguments", {}) if isinstance(obj, dict) else {}
        if not isinstance(arguments, str):
            arguments = jsoncodec.dumps(arguments).decode("utf-8")
        given = obj.get("id") if isinstance(obj, dict) else None
        call_id = given if isinstance(given, str) and given else f"call_{index}_{n}"
        self.pending.append((call_id, name))
        return {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }

    def _assistant(self, index: int, value: str) -> Message:
        calls = []
        rest = value
        for n, found in enumerate(TOOL_CALL.finditer(value)):
            try:
                obj = json.loads(found.group(1))
            except json.JSONDecodeError:
                continue
            calls.append(self._call(index, n, obj))
            rest = rest.replace(found.group(0), "", 1)
        thoughts = [t.group(1).strip() for t in THINK.finditer(rest)]
        if thoughts:
            rest = THINK.sub("", rest)
        if calls or thoughts:
            rest = rest.strip()
        msg: Message = {"role": "assistant", "content": rest if rest or not calls else None}
        if calls:
            msg["tool_calls"] = calls
        if thoughts:
            msg["reasoning_content"] = "\n".join(thoughts)
        return msg

    def _responses(self, index: int, value: str) -> list[tuple[Message, str]]:
        blocks = list(TOOL_RESPONSE.finditer(value))
        if not blocks:
            call_id, name = self.answer(None)
            return [(_tool(call_id, name, value), "")]
        out = []
        for found in blocks:
            body: Any = found.group(1)
            content: Any = body
            wanted = None
            try:
                obj = json.loads(body)
            except json.JSONDecodeError:
                obj = None
            if isinstance(obj, dict):
                wanted = (
                    obj.get("tool_call_id") if isinstance(obj.get("tool_call_id"), str) else None
                )
                if "content" in obj:
                    inner = obj["content"]
                    content = inner if isinstance(inner, str) else jsoncodec.dumps(inner).decode()
            call_id, name = self.answer(wanted)
            out.append((_tool(call_id, name, content), found.group(0)))
        return out


def _tool(call_id: str, name: str, content: str) -> Message:
    msg: Message = {"role": "tool", "tool_call_id": call_id, "content": content}
    if name:
        msg["name"] = name
    return msg


def record_session(
    record: Any, *, label: str, line: int = -1, span: jsonspans.Span | None = None
) -> Session:
    if not isinstance(record, dict) or not isinstance(record.get("conversations"), list):
        raise ValueError("record has no conversations list")
    reader = _Reader(record["conversations"])
    system = record.get("system")
    if isinstance(system, str) and system:
        reader.add(-1, [({"role": "system", "content": system}, "")])
    for index, turn in enumerate(record["conversations"]):
        reader.turn(index, turn)
    return Session(
        messages=reader.messages,
        originals=[(msg, b"") for msg in reader.messages],
        label=label,
        context=ShareGPTContext(record=record, where=reader.where, line=line, span=span),
    )


def _line_session(record: Any, number: int) -> Session:
    return record_session(record, label=f"line {number + 1}", line=number)


class ShareGPTFormat(Format, name="sharegpt", writable=True):
    """ShareGPT conversations (glaive function calls, Hermes tool tags), JSON or JSONL"""

    def read(self, data: bytes, *, path: str, options: ReadOptions) -> Transcript:
        file = open_file(data, path=path)
        skipped = 0
        if isinstance(file, RecordLines):
            layout = ShareGPTLayout(file)
            sessions, skipped = file.read(_line_session, path=path, options=options)
        else:
            document, doc = file
            layout = ShareGPTLayout(document, array=isinstance(doc, list))
            records = doc if isinstance(doc, list) else [doc]
            spans = jsonspans.array_items(document.body, document.start) if layout.array else []
            sessions = []
            for number, record in enumerate(records):
                span = spans[number] if spans else None
                try:
                    sessions.append(record_session(record, label=f"#{number}", span=span))
                except ValueError as exc:
                    raise InputError(f"record {number}: {exc}", path=path) from None
        stamp = session_context(sessions[-1]).record.get("timestamp") if sessions else None
        return Transcript(
            self.name,
            sessions,
            path=path,
            raw=data,
            skipped_lines=skipped,
            layout=layout,
            last_timestamp=stamp if isinstance(stamp, str) else None,
        )

    def write(self, transcript: Transcript, *, counter: TokenCounter) -> bytes:
        from ctxpack.formats.sharegpt_write import write

        if transcript.unchanged() and layout_of(transcript, ShareGPTLayout) is not None:
            return transcript.raw
        return write(transcript)
