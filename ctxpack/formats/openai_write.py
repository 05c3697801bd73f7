"""Writing an `openai` transcript back in the shape it was read in.

Unchanged messages and records keep their exact bytes; lines set aside when
reading (blank or invalid) go back where they were. A transcript built from
messages alone is written as JSONL.
"""

from __future__ import annotations

from typing import Any

from ctxpack.errors import CtxpackError
from ctxpack.formats import jsoncodec, keypath
from ctxpack.formats.base import BOM, context_of, join_lines, layout_of
from ctxpack.formats.openai import OpenAIContext, OpenAILayout
from ctxpack.transcript import RawLine, Session, Transcript


def write(transcript: Transcript) -> bytes:
    layout = layout_of(transcript, OpenAILayout)
    if layout is None:
        return _plain_lines(transcript.sessions)
    if layout.bytes_dropped:
        raise CtxpackError("this transcript was read for counting only and cannot be written")
    if transcript.unchanged():
        return transcript.raw
    if layout.mode == "jsonl-messages":
        body = join_lines(
            _jsonl_message_lines(transcript.sessions[0], cr=layout.cr),
            final_newline=layout.final_newline or bool(transcript.sessions[0].messages),
        )
    elif layout.mode == "jsonl-records":
        out: list[RawLine] = []
        assert layout.key is not None
        for entry in layout.entries:
            if isinstance(entry, int):
                out.append(_record_line(transcript.sessions[entry], layout.key, layout.cr))
            else:
                out.append(entry)
        body = join_lines(out, final_newline=layout.final_newline)
    else:
        body = _document(transcript, layout)
        body += b"\n" if layout.final_newline else b""
    return (BOM if layout.bom else b"") + body


def _document(transcript: Transcript, layout: OpenAILayout) -> bytes:
    if layout.mode == "json-messages":
        return jsoncodec.dumps(_spliced(transcript.sessions[0]), indent=layout.indent)
    assert layout.key is not None
    key = layout.key
    records = [
        _context(s).record
        if s.unchanged()
        else keypath.replace(_context(s).record, key, _spliced(s))
        for s in transcript.sessions
    ]
    doc: Any = records if layout.mode == "json-records" else records[0]
    return jsoncodec.dumps(doc, indent=layout.indent)


def _context(session: Session) -> OpenAIContext:
    return context_of(session, OpenAIContext) or OpenAIContext()


def _interleave(session: Session) -> list[tuple[bool, Any, int]]:
    """Output messages with the kept-aside items (blank/invalid lines) put back,
    each with its place among the originals (-1: not an original).

    Each kept-aside item sits before the original message that followed it; it
    is emitted just before that message, or before the next survivor if that
    message was removed, so nothing is lost and order is kept.
    """
    junk = _context(session).junk
    pending = sorted(junk)
    originals = session.originals
    index_of = {id(msg): i for i, (msg, _) in enumerate(originals)}
    out: list[tuple[bool, Any, int]] = []
    cursor = 0
    for msg in session.messages:
        i = index_of.get(id(msg), -1)
        if i >= 0 and originals[i][0] is msg:
            while cursor < len(pending) and pending[cursor] <= i:
                out.extend((True, item, -1) for item in junk[pending[cursor]])
                cursor += 1
        else:
            i = -1
        out.append((False, msg, i))
    for key in pending[cursor:]:
        out.extend((True, item, -1) for item in junk[key])
    return out


def _jsonl_message_lines(session: Session, *, cr: bool) -> list[RawLine]:
    originals = session.originals
    out: list[RawLine] = []
    for is_junk, item, place in _interleave(session):
        if is_junk:
            out.append(item)
        elif place >= 0:
            out.append(originals[place][1])
        else:
            out.append(jsoncodec.dumps(item) + (b"\r" if cr else b""))
    return out


def _spliced(session: Session) -> list[Any]:
    return [item for _, item, _ in _interleave(session)]


def _record_line(session: Session, key: keypath.KeyPath, cr: bool) -> RawLine:
    context = _context(session)
    if session.unchanged():
        return context.raw_line
    record = keypath.replace(context.record, key, _spliced(session))
    return jsoncodec.dumps(record) + (b"\r" if cr else b"")


def _plain_lines(sessions: list[Session]) -> bytes:
    """Messages alone as JSONL: one message per line, or one
    `{"messages": [...]}` record per session."""
    if len(sessions) == 1:
        lines = [jsoncodec.dumps(msg) for msg in sessions[0].messages]
    else:
        lines = [jsoncodec.dumps({"messages": s.messages}) for s in sessions]
    return b"".join(line + b"\n" for line in lines)
