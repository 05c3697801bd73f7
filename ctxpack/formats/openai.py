"""The `openai` format: chat messages as JSONL, a JSON array, or records
(`{"messages": [...]}` and similar) one per line or in one document."""

from __future__ import annotations

import dataclasses
import itertools
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ctxpack.errors import InputError, MalformedRecord, UsageError
from ctxpack.formats import jsoncodec, keypath
from ctxpack.formats.base import (
    BOM,
    Format,
    LineOriginals,
    LineViews,
    ReadOptions,
    Unkept,
    is_blank,
)
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message, RawLine, Session, Transcript

_JSON_TYPES = {
    int: "a number",
    float: "a number",
    bool: "a boolean",
    str: "a string",
    list: "a list",
    dict: "an object",
    type(None): "null",
}


@dataclass(frozen=True)
class OpenAILayout:
    # One message per line, one record per line, or one JSON document: a
    # message array, an array of records, or one record.
    mode: Literal["jsonl-messages", "jsonl-records", "json-messages", "json-records", "json-record"]
    bom: bool
    final_newline: bool
    cr: bool  # lines end in CRLF
    indent: bool = False  # the document is pretty-printed
    key: keypath.KeyPath | None = None  # where each record holds its messages
    # Each line of a record file: kept as it is (blank, invalid), or the
    # index of the session read from it.
    entries: list[RawLine | int] = field(default_factory=list)
    # Read for counting only: no bytes were kept to write it back with.
    bytes_dropped: bool = False


@dataclass(frozen=True)
class OpenAIContext:
    # Blank or invalid lines (list items in a document) set aside, by the
    # index of the message that followed them.
    junk: dict[int, list[Any]] = field(default_factory=dict)
    record: Any = None  # the record holding the messages
    raw_line: RawLine = b""  # that record's line, in a record file


_MISSING = object()
_CONTENT_TYPES = (str, list)
_BRACE = ord("{")


def _ignore(_: int) -> None:
    return None


def _no_bytes(_: memoryview) -> RawLine:
    return b""


def _own_bytes(line: memoryview) -> RawLine:
    return line


def json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def validate_message(obj: Any) -> str | None:
    """Why obj is not a usable chat message, or None when it is."""
    if not isinstance(obj, dict):
        return f"a message must be an object, not {json_type(obj)}"
    role = obj.get("role", _MISSING)
    if not isinstance(role, str):
        if role is _MISSING:
            return "message has no role"
        return f"role must be a string, not {json_type(role)}"
    content = obj.get("content")
    if content is not None and not isinstance(content, _CONTENT_TYPES):
        return f"content must be a string, a list of parts or null, not {json_type(content)}"
    calls = obj.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list):
            return f"tool_calls must be a list, not {json_type(calls)}"
        for call in calls:
            if not isinstance(call, dict):
                return f"each tool call must be an object, not {json_type(call)}"
    tcid = obj.get("tool_call_id")
    if tcid is not None and not isinstance(tcid, str):
        return f"tool_call_id must be a string, not {json_type(tcid)}"
    return None


class OpenAIFormat(Format, name="openai", writable=True):
    """OpenAI chat messages: JSONL, a JSON array, or records holding a message list"""

    def read(self, data: bytes, *, path: str, options: ReadOptions) -> Transcript:
        bom = data.startswith(BOM)
        body = data[len(BOM) :] if bom else data
        explicit = _explicit_path(options.messages_key)
        # Lines are views into the input: the messages keep their exact bytes
        # for writing back without a second copy of the file.
        lines = LineViews(body)
        layout = OpenAILayout(
            mode="jsonl-messages",
            bom=bom,
            final_newline=lines.final_newline,
            cr=bool(lines) and bytes(lines[0][-1:]) == b"\r",
        )
        # The first two lines with content are all the layout depends on.
        nonblank = list(itertools.islice((line for line in lines if not is_blank(line)), 2))
        if not nonblank:
            session = Session(messages=[], context=OpenAIContext(junk={0: list(lines)}))
            return Transcript(self.name, [session], path=path, raw=data, layout=layout)
        first = bytes(nonblank[0][:64]).lstrip()[:1] or bytes(nonblank[0]).lstrip()[:1]
        # One object per line (a single line is JSONL too); a multi-line
        # object whose first line does not parse alone is one pretty-printed document.
        if first == b"{" and (len(nonblank) == 1 or _parses(nonblank[0])):
            return self._read_jsonl(lines, data, path, options, explicit, layout)
        if first in (b"[", b"{"):
            try:
                doc = jsoncodec.loads(body)
            except jsoncodec.JSONError as exc:
                # JSONL with a corrupt first line looks like a broken document;
                # its second line parsing alone tells them apart.
                if first == b"{" and _parses(nonblank[1]):
                    return self._read_jsonl(lines, data, path, options, explicit, layout)
                raise InputError(str(exc), path=path, line=exc.line) from None
            return self._read_document(doc, data, path, options, explicit, layout)
        raise InputError("not a JSON transcript (expected '[' or '{')", path=path, line=1)

    def _read_jsonl(
        self,
        lines: LineViews,
        data: bytes,
        path: str,
        options: ReadOptions,
        explicit: keypath.KeyPath | None,
        layout: OpenAILayout,
    ) -> Transcript:
        messages_mode: bool | None = None
        key: keypath.KeyPath | None = None
        # Each message read, and the number of its line.
        parsed: list[Message] = []
        numbers = array("q")
        junk: dict[int, list[Any]] = {}
        sessions: list[Session] = []
        keep = options.keep_bytes
        # A read that is never written back reads only texts: a number orjson
        # would round (19+ digits) is never shown, so no line needs the exact path.
        plain = not keep or not jsoncodec.has_long_digits(data)
        entries: list[RawLine | int] = []
        skipped = 0
        last = len(lines) - 1
        # The loop runs once a line on files of hundreds of thousands: orjson is
        # called directly where the file holds no long digit run (a line it
        # refuses goes through jsoncodec, which reads it exactly or says why),
        # and a line starting with "{" is not blank.
        fast, refused, loads = jsoncodec.orjson_loads, jsoncodec.OrjsonError, jsoncodec.loads
        # A transcript read for counting only is never written back: it keeps
        # no line's bytes, nor the number of a message's line.
        kept = _own_bytes if keep else _no_bytes
        keep_message, keep_number = parsed.append, numbers.append if keep else _ignore
        for index, line in enumerate(lines):
            if not line or (line[0] != _BRACE and is_blank(line)):
                raw = kept(line)
                junk.setdefault(len(parsed), []).append(raw)
                entries.append(raw)
                continue
            try:
                try:
                    obj = fast(line) if plain else loads(line)
                except refused:
                    obj = loads(line, no_long_digits=True)
                if messages_mode is None:
                    messages_mode = explicit is None and isinstance(obj, dict) and "role" in obj
                if messages_mode:
                    problem = validate_message(obj)
                    if problem:
                        raise InputError(problem, path=path, line=index + 1)
                    keep_message(obj)
                    keep_number(index)
                    continue
                key = key or _record_path(obj, explicit, path, index + 1)
                raw = kept(line)
                sessions.append(_record_session(obj, key, path, index + 1, raw_line=raw))
                entries.append(len(sessions) - 1)
            except (jsoncodec.JSONError, InputError) as exc:
                if not options.skip_invalid:
                    reason = exc.message if isinstance(exc, InputError) else str(exc)
                    if (
                        index == last
                        and not layout.final_newline
                        and not isinstance(exc, InputError)
                    ):
                        reason += " (the last line looks truncated)"
                    raise MalformedRecord(reason, path=path, line=index + 1) from None
                skipped += 1
                raw = kept(line)
                junk.setdefault(len(parsed), []).append(raw)
                entries.append(raw)
        if messages_mode or messages_mode is None:
            originals: Sequence[tuple[Message, RawLine]] = (
                LineOriginals(parsed, lines, numbers) if keep else Unkept(parsed)
            )
            session = Session(
                messages=list(parsed), originals=originals, context=OpenAIContext(junk=junk)
            )
            sessions = [session]
        else:
            layout = dataclasses.replace(layout, mode="jsonl-records", entries=entries, key=key)
        return Transcript(
            self.name,
            sessions,
            path=path,
            raw=data if keep else b"",
            skipped_lines=skipped,
            layout=dataclasses.replace(layout, bytes_dropped=not keep),
        )

    def _read_document(
        self,
        doc: Any,
        data: bytes,
        path: str,
        options: ReadOptions,
        explicit: keypath.KeyPath | None,
        layout: OpenAILayout,
    ) -> Transcript:
        indent = b"\n " in data[:4096]
        if isinstance(doc, list) and explicit is None and (not doc or _looks_like_message(doc[0])):
            layout = dataclasses.replace(layout, mode="json-messages", indent=indent)
            session, skipped = _message_list_session(doc, path, options, label="")
            return Transcript(
                self.name, [session], path=path, raw=data, skipped_lines=skipped, layout=layout
            )
        records = doc if isinstance(doc, list) else [doc]
        key = _record_path(records[0], explicit, path, 1) if records else ("messages",)
        mode: Literal["json-records", "json-record"] = (
            "json-records" if isinstance(doc, list) else "json-record"
        )
        layout = dataclasses.replace(layout, mode=mode, indent=indent, key=key)
        sessions = []
        for number, record in enumerate(records):
            sessions.append(_record_session(record, key, path, None, label=f"#{number}"))
        return Transcript(self.name, sessions, path=path, raw=data, layout=layout)

    def write(self, transcript: Transcript, *, counter: TokenCounter) -> bytes:
        from ctxpack.formats.openai_write import write

        return write(transcript)


def _explicit_path(text: str | None) -> keypath.KeyPath | None:
    if text is None:
        return None
    try:
        return keypath.parse(text)
    except ValueError as exc:
        raise UsageError(f"--messages-key: {exc}") from None


def _parses(line: RawLine) -> bool:
    try:
        jsoncodec.loads(line)
    except jsoncodec.JSONError:
        return False
    return True


def _looks_like_message(obj: Any) -> bool:
    return isinstance(obj, dict) and "role" in obj


def _record_path(
    record: Any, explicit: keypath.KeyPath | None, path: str, line: int | None
) -> keypath.KeyPath:
    found = keypath.find_messages(record, explicit)
    if found is None:
        wanted = (
            keypath.render(explicit)
            if explicit
            else ", ".join(keypath.render(p) for p in keypath.AUTO_PATHS)
        )
        raise InputError(
            f"no message list at {wanted}; name it with --messages-key", path=path, line=line
        )
    return found


def _record_session(
    record: Any,
    key: keypath.KeyPath,
    path: str,
    line: int | None,
    *,
    raw_line: RawLine = b"",
    label: str = "",
) -> Session:
    try:
        messages = keypath.get(record, key)
    except KeyError:
        raise InputError(f"record has no {keypath.render(key)}", path=path, line=line) from None
    if not isinstance(messages, list):
        raise InputError(f"{keypath.render(key)} is not a list", path=path, line=line)
    for number, msg in enumerate(messages):
        problem = validate_message(msg)
        if problem:
            raise InputError(f"message {number}: {problem}", path=path, line=line)
    return Session(
        messages=list(messages),
        originals=[(msg, b"") for msg in messages],
        label=label or (f"line {line}" if line else ""),
        context=OpenAIContext(record=record, raw_line=raw_line),
    )


def _message_list_session(
    doc: list[Any], path: str, options: ReadOptions, *, label: str
) -> tuple[Session, int]:
    originals: list[tuple[Message, RawLine]] = []
    junk: dict[int, list[Any]] = {}
    skipped = 0
    for number, msg in enumerate(doc):
        problem = validate_message(msg)
        if problem:
            if not options.skip_invalid:
                raise MalformedRecord(f"message {number}: {problem}", path=path)
            skipped += 1
            junk.setdefault(len(originals), []).append(msg)
            continue
        originals.append((msg, b""))
    session = Session(
        messages=[msg for msg, _ in originals],
        originals=originals,
        label=label,
        context=OpenAIContext(junk=junk),
    )
    return session, skipped
