"""The `openai` format: chat messages as JSONL, a JSON array, or records
(`{"messages": [...]}` and similar) one per line or in one document."""

from __future__ import annotations

import itertools
from typing import Any

from ctxpack.errors import CtxpackError, InputError, UsageError
from ctxpack.formats import jsoncodec, keypath
from ctxpack.formats.base import BOM, LineViews, ReadOptions, is_blank, join_lines
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


def json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def validate_message(obj: Any) -> str | None:
    """Why obj is not a usable chat message, or None when it is."""
    if not isinstance(obj, dict):
        return f"a message must be an object, not {json_type(obj)}"
    if "role" not in obj:
        return "message has no role"
    if not isinstance(obj["role"], str):
        return f"role must be a string, not {json_type(obj['role'])}"
    content = obj.get("content")
    if content is not None and not isinstance(content, str | list):
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


class OpenAIFormat:
    name = "openai"
    description = "OpenAI chat messages: JSONL, a JSON array, or records holding a message list"
    writable = True

    def detect(self, head: bytes) -> bool:
        return b'"role"' in head or b'"messages"' in head or b'"traj"' in head

    def read(self, data: bytes, *, path: str, options: ReadOptions) -> Transcript:
        bom = data.startswith(BOM)
        body = data[len(BOM) :] if bom else data
        explicit = _explicit_path(options.messages_key)
        layout: dict[str, Any] = {"bom": bom}
        # Lines are views into the input: the messages keep their exact bytes
        # for writing back without a second copy of the file.
        lines = LineViews(body)
        layout["final_newline"] = lines.final_newline
        layout["cr"] = bool(lines) and bytes(lines[0][-1:]) == b"\r"
        # The first two lines with content are all the layout depends on.
        nonblank = list(itertools.islice((line for line in lines if not is_blank(line)), 2))
        if not nonblank:
            layout["mode"] = "jsonl-messages"
            session = Session(messages=[], context={"junk": {0: list(lines)}})
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
        layout: dict[str, Any],
    ) -> Transcript:
        messages_mode: bool | None = None
        key: keypath.KeyPath | None = None
        originals: list[tuple[Message, RawLine]] = []
        junk: dict[int, list[RawLine]] = {}
        sessions: list[Session] = []
        plain = not jsoncodec.has_long_digits(data)
        keep = options.keep_bytes
        entries: list[tuple[str, Any]] = []
        skipped = 0
        last = len(lines) - 1
        for index, line in enumerate(lines):
            lineno = index + 1
            # A transcript read for counting only is never written back.
            raw: RawLine = line if keep else b""
            if is_blank(line):
                junk.setdefault(len(originals), []).append(raw)
                entries.append(("raw", raw))
                continue
            try:
                obj = jsoncodec.loads(line, no_long_digits=plain)
                if messages_mode is None:
                    messages_mode = explicit is None and isinstance(obj, dict) and "role" in obj
                    layout["mode"] = "jsonl-messages" if messages_mode else "jsonl-records"
                if messages_mode:
                    problem = validate_message(obj)
                    if problem:
                        raise InputError(problem, path=path, line=lineno)
                    originals.append((obj, raw))
                else:
                    key = key or _record_path(obj, explicit, path, lineno)
                    sessions.append(_record_session(obj, key, path, lineno, raw_line=raw))
                    entries.append(("session", len(sessions) - 1))
            except (jsoncodec.JSONError, InputError) as exc:
                if not options.skip_invalid:
                    reason = exc.message if isinstance(exc, InputError) else str(exc)
                    if (
                        index == last
                        and not layout["final_newline"]
                        and not isinstance(exc, InputError)
                    ):
                        reason += " (the last line looks truncated)"
                    raise InputError(reason, path=path, line=lineno) from None
                skipped += 1
                junk.setdefault(len(originals), []).append(raw)
                entries.append(("raw", raw))
        if messages_mode or messages_mode is None:
            layout["mode"] = "jsonl-messages"
            session = Session(
                messages=[msg for msg, _ in originals],
                originals=originals,
                context={"junk": junk},
            )
            sessions = [session]
        else:
            layout["entries"] = entries
            layout["key"] = key
        if not keep:
            layout["bytes_dropped"] = True
        return Transcript(
            self.name,
            sessions,
            path=path,
            raw=data if keep else b"",
            skipped_lines=skipped,
            layout=layout,
        )

    def _read_document(
        self,
        doc: Any,
        data: bytes,
        path: str,
        options: ReadOptions,
        explicit: keypath.KeyPath | None,
        layout: dict[str, Any],
    ) -> Transcript:
        layout["indent"] = b"\n " in data[:4096]
        if isinstance(doc, list) and explicit is None and (not doc or _looks_like_message(doc[0])):
            layout["mode"] = "json-messages"
            session, skipped = _message_list_session(doc, path, options, label="")
            return Transcript(
                self.name, [session], path=path, raw=data, skipped_lines=skipped, layout=layout
            )
        records = doc if isinstance(doc, list) else [doc]
        layout["mode"] = "json-records" if isinstance(doc, list) else "json-record"
        key = _record_path(records[0], explicit, path, 1) if records else ("messages",)
        layout["key"] = key
        sessions = []
        for number, record in enumerate(records):
            sessions.append(_record_session(record, key, path, None, label=f"#{number}"))
        return Transcript(self.name, sessions, path=path, raw=data, layout=layout)

    def write(self, transcript: Transcript, *, counter: TokenCounter) -> bytes:
        layout = transcript.layout
        mode = layout["mode"]
        if layout.get("bytes_dropped"):
            raise CtxpackError("this transcript was read for counting only and cannot be written")
        if transcript.unchanged():
            return transcript.raw
        if mode == "jsonl-messages":
            body = join_lines(
                _jsonl_message_lines(transcript.sessions[0], cr=layout["cr"]),
                final_newline=layout["final_newline"] or bool(transcript.sessions[0].messages),
            )
        elif mode == "jsonl-records":
            out: list[RawLine] = []
            for kind, value in layout["entries"]:
                if kind == "raw":
                    out.append(value)
                else:
                    out.append(
                        _record_line(transcript.sessions[value], layout["key"], layout["cr"])
                    )
            body = join_lines(out, final_newline=layout["final_newline"])
        else:
            body = self._write_document(transcript) + (b"\n" if layout["final_newline"] else b"")
        return (BOM if layout["bom"] else b"") + body

    def _write_document(self, transcript: Transcript) -> bytes:
        layout = transcript.layout
        indent = bool(layout.get("indent"))
        if layout["mode"] == "json-messages":
            return jsoncodec.dumps(_spliced(transcript.sessions[0]), indent=indent)
        records = [
            s.context["record"]
            if s.unchanged()
            else keypath.replace(s.context["record"], layout["key"], _spliced(s))
            for s in transcript.sessions
        ]
        doc: Any = records if layout["mode"] == "json-records" else records[0]
        return jsoncodec.dumps(doc, indent=indent)


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
        context={"record": record, "raw_line": raw_line},
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
                raise InputError(f"message {number}: {problem}", path=path)
            skipped += 1
            junk.setdefault(len(originals), []).append(msg)
            continue
        originals.append((msg, b""))
    session = Session(
        messages=[msg for msg, _ in originals],
        originals=originals,
        label=label,
        context={"junk": junk},
    )
    return session, skipped


def _interleave(session: Session) -> list[tuple[bool, Any]]:
    """Output messages with the kept-aside items (blank/invalid lines) put back.

    Each kept-aside item sits before the original message that followed it; it
    is emitted just before that message, or before the next survivor if that
    message was removed, so nothing is lost and order is kept.
    """
    junk: dict[int, list[Any]] = session.context.get("junk", {})
    pending = sorted(junk)
    index_of = {id(msg): i for i, (msg, _) in enumerate(session.originals)}
    out: list[tuple[bool, Any]] = []
    cursor = 0
    for msg in session.messages:
        i = index_of.get(id(msg))
        if i is not None and session.originals[i][0] is msg:
            while cursor < len(pending) and pending[cursor] <= i:
                out.extend((True, item) for item in junk[pending[cursor]])
                cursor += 1
        out.append((False, msg))
    for key in pending[cursor:]:
        out.extend((True, item) for item in junk[key])
    return out


def _jsonl_message_lines(session: Session, *, cr: bool) -> list[RawLine]:
    raw = session.raw_bytes()
    out: list[RawLine] = []
    for is_junk, item in _interleave(session):
        if is_junk:
            out.append(item)
        elif id(item) in raw:
            out.append(raw[id(item)])
        else:
            out.append(jsoncodec.dumps(item) + (b"\r" if cr else b""))
    return out


def _spliced(session: Session) -> list[Any]:
    return [item for _, item in _interleave(session)]


def _record_line(session: Session, key: keypath.KeyPath, cr: bool) -> bytes:
    if session.unchanged():
        raw: bytes = session.context["raw_line"]
        return raw
    record = keypath.replace(session.context["record"], key, _spliced(session))
    return jsoncodec.dumps(record) + (b"\r" if cr else b"")
