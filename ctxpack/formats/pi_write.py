"""Writing a pi session back.

Lines off the conversation path (other branches), the header and entries
that carry no message stay byte for byte; a changed message rewrites its
entry's `message` in place; a dropped one's entry leaves the file; any other
message a stage added gets an entry of its own just before the entry of the
message after it. A new summary is a user message entry just before the first
kept tail entry, in both layouts. Not a `compaction` entry: pi puts a
compaction's summary before every entry it keeps, so the head (the user's
first task) would follow the record; a message keeps head, record, tail in the
order they happened, and a later compaction finds the record again in place.
What it replaces leaves the path (ctxpack's archive keeps it): earlier
compactions and the entries they hid. The path is relinked so each kept
entry's `parentId` is the entry before it; an older layout compaction that
stays gets its `firstKeptEntryIndex` recounted.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ctxpack import messages as m
from ctxpack.errors import UsageError
from ctxpack.formats import jsonl
from ctxpack.formats.base import context_of, layout_of
from ctxpack.formats.origins import first_new_summary, pairs
from ctxpack.formats.pi import PiContext, PiLayout
from ctxpack.refs import sha256_hex
from ctxpack.tokens.counter import TokenCounter
from ctxpack.toolpairs import parse_arguments
from ctxpack.transcript import Message, Transcript

EPOCH = "1970-01-01T00:00:00.000Z"
Entry = dict[str, Any]


def write(transcript: Transcript, *, counter: TokenCounter) -> bytes:
    if len(transcript.sessions) != 1:
        raise UsageError("a pi session file holds one session; convert one session at a time")
    layout = layout_of(transcript, PiLayout)
    session = transcript.sessions[0]
    if layout is None:
        return _fresh(session.messages, transcript.last_timestamp or EPOCH)
    doc, version = layout.doc, layout.version
    ctx = context_of(session, PiContext) or PiContext()
    stamp = transcript.last_timestamp or EPOCH
    items = pairs(session)
    fate = {id(orig): msg for msg, orig in items if orig is not None}
    line_of = {ctx.where[id(orig)]: orig for orig, _ in session.originals}
    cut = first_new_summary(items)
    # A new message goes in just before the entry of the next message that has
    # one (at the end when none follows); the summary thus before the tail.
    before: dict[int | None, list[Entry]] = {}
    line: int | None = None
    for k in range(len(items) - 1, -1, -1):
        msg, orig = items[k]
        if orig is not None:
            line = ctx.where[id(orig)]
            continue
        made = _summary_entry(msg, version, stamp) if k == cut else _entry(msg, k, version, stamp)
        before.setdefault(line, []).insert(0, made)
    edits = jsonl.Edits()
    # The new path: (line index or None for a new entry, entry object).
    seq: list[tuple[int | None, Entry]] = []
    for index in ctx.path:
        entry = doc.objs[index] or {}
        orig = line_of.get(index)
        seq += [(None, made) for made in before.get(index, ())]
        # pi honours only the latest compaction on the path: a new summary
        # replaces every earlier one and the entries they hid.
        if cut is not None and (entry.get("type") == "compaction" or index in ctx.hidden):
            edits.delete.add(index)
            continue
        new = fate.get(id(orig)) if orig is not None else entry
        if new is None:
            edits.delete.add(index)
        elif orig is None or new is orig:
            seq.append((index, entry))
        elif entry.get("type") == "compaction":
            seq.append((index, {**entry, "summary": m.text(new)}))
        else:
            seq.append((index, {**entry, "message": pi_message(new, entry.get("message"))}))
    seq += [(None, made) for made in before.get(None, ())]
    _relink(doc, seq, version, edits)
    return edits.apply(doc)


def _fresh(messages: list[Message], stamp: str) -> bytes:
    """A version-3 session file holding the messages alone, one chain."""
    seed = sha256_hex(b"".join(jsonl.dump(msg) for msg in messages))
    header = {"type": "session", "version": 3, "id": seed[:32], "timestamp": stamp, "cwd": ""}
    lines, parent = [jsonl.dump(header)], None
    for n, msg in enumerate(messages):
        entry_id = f"{n:08x}"
        entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": stamp}
        lines.append(jsonl.dump({**entry, "message": _message(msg, stamp)}))
        parent = entry_id
    return b"\n".join(lines) + b"\n"


def _message(msg: Message, stamp: str) -> Entry:
    message = pi_message(msg, None)
    message.setdefault("timestamp", _user("", stamp)["timestamp"])
    return message


def _entry(msg: Message, position: int, version: int, stamp: str) -> Entry:
    """A message a stage added, other than the summary (a turn it rebuilt
    whose original it could not tell)."""
    entry: Entry = {"type": "message", "timestamp": stamp, "message": _message(msg, stamp)}
    if version < 2:
        return entry
    # Its place in the output keeps equal messages' ids apart.
    key = b"%d\n" % position + jsonl.dump(msg)
    return {"id": sha256_hex(key)[:8], "parentId": None, **entry}


def _summary_entry(msg: Message, version: int, stamp: str) -> Entry:
    text = m.text(msg)
    entry: Entry = {"type": "message", "timestamp": stamp, "message": _user(text, stamp)}
    if version < 2:
        return entry
    # _relink sets parentId once the entry before it is known.
    return {"id": sha256_hex(text.encode("utf-8"))[:8], "parentId": None, **entry}


def _relink(
    doc: jsonl.Lines, seq: list[tuple[int | None, Entry]], version: int, edits: jsonl.Edits
) -> None:
    if version >= 2:
        parent: Any = None
        for k, (index, entry) in enumerate(seq):
            entry = {**entry, "parentId": parent} if entry.get("parentId") != parent else entry
            if entry.get("type") == "compaction" and entry.get("firstKeptEntryId") is None:
                after = seq[k + 1][1] if k + 1 < len(seq) else {}
                entry = {**entry, "firstKeptEntryId": after.get("id", entry["id"])}
            seq[k] = (index, entry)
            parent = entry.get("id")
    else:
        _recount(doc, seq)
    anchor: int | None = None
    pending: list[bytes] = []
    for index, entry in seq:
        if index is None:
            pending.append(jsonl.dump(entry))
            continue
        if pending:
            edits.insert(pending, before=index)
            pending = []
        if entry is not doc.objs[index]:
            edits.replace[index] = jsonl.dump(entry, like=doc.raw[index])
        anchor = index
    if pending:
        edits.insert(pending, before=None, after=anchor)


def _recount(doc: jsonl.Lines, seq: list[tuple[int | None, Entry]]) -> None:
    """Older layout compactions name their first kept entry by its index among
    the parsed entries (the header is 0): recount it over the new file."""
    position = {index: k + 1 for k, (index, _) in enumerate(seq) if index is not None}
    parsed = [i for i, obj in enumerate(doc.objs) if obj is not None]
    for k, (index, entry) in enumerate(seq):
        at = entry.get("firstKeptEntryIndex")
        if entry.get("type") != "compaction" or not isinstance(at, int) or at >= len(parsed):
            continue
        target = next((position[i] for i in parsed[at:] if i in position), len(seq))
        if target != at:
            seq[k] = (index, {**entry, "firstKeptEntryIndex": target})


def _user(text: str, stamp: str) -> Entry:
    try:
        millis = int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        millis = 0
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": millis}


def _parts(content: Any) -> list[Any]:
    if isinstance(content, list):
        return [{"type": "text", "text": p} if isinstance(p, str) else p for p in content]
    return [{"type": "text", "text": content or ""}]


def pi_message(msg: Message, old: Any) -> Entry:
    """A changed chat message as the pi message it replaces, keeping that
    message's other fields."""
    base: Entry = old if isinstance(old, dict) else {}
    role = m.role(msg)
    if role == "tool":
        if base.get("role") == "toolResult":
            return {**base, "content": _parts(msg.get("content"))}
        return {
            **base,
            "role": "toolResult",
            "toolCallId": m.result_call_id(msg),
            "content": _parts(msg.get("content")),
        }
    if role != "assistant":
        if base.get("role") in ("user", "custom"):
            return {**base, "content": _parts(msg.get("content"))}
        stamp = base.get("timestamp")
        return {
            "role": "user",
            "content": _parts(msg.get("content")),
            **({"timestamp": stamp} if stamp is not None else {}),
        }
    return {**base, "role": "assistant", "content": _assistant_parts(msg, base.get("content"))}


def _assistant_parts(msg: Message, old: Any) -> list[Any]:
    parts = [p for p in old if isinstance(p, dict)] if isinstance(old, list) else []
    texts = [t for t in m.text_parts(msg) if t]
    reasoning = msg.get("reasoning_content")
    calls = {m.call_id(c): c for c in m.tool_calls(msg)}
    old_texts = [p.get("text") for p in parts if p.get("type") == "text"]
    old_thinking = "\n".join(
        str(p.get("thinking", ""))
        for p in parts
        if p.get("type") == "thinking" and p.get("thinking")
    )
    out: list[Any] = []
    placed = texts == old_texts
    for part in parts:
        kind = part.get("type")
        if kind == "thinking":
            if reasoning and reasoning == old_thinking:
                out.append(part)
        elif kind == "text":
            if placed and texts == old_texts:
                out.append(part)
            elif not placed:
                out += [{"type": "text", "text": t} for t in texts]
                placed = True
        elif kind == "toolCall":
            call = calls.pop(str(part.get("id", "")), None)
            if call is not None:
                args = parse_arguments(m.call_arguments(call))
                out.append(part if part.get("arguments") == args else {**part, "arguments": args})
        else:
            out.append(part)
    if reasoning and reasoning != old_thinking:
        out.insert(0, {"type": "thinking", "thinking": reasoning})
    if not placed:
        out += [{"type": "text", "text": t} for t in texts]
    for call in calls.values():
        out.append(
            {
                "type": "toolCall",
                "id": m.call_id(call),
                "name": m.call_name(call),
                "arguments": parse_arguments(m.call_arguments(call)),
            }
        )
    return out
