"""Writing a Codex rollout back.

Without a new summary, edits happen in place: a pruned `function_call_output`
rewrites its output and the mirroring `exec_command_end` event gets the same
text (aggregated_output, stdout, stderr, formatted_output); changed arguments
rewrite the call; a dropped item's line is deleted; an edit inside an earlier
compaction's history rewrites that `compacted` line.

A compaction is written the way Codex resumes one: a `compacted` line whose
`replacement_history` is the new model history up to the first kept tail item
(kept head items as Responses items, then the summary as a user message) and
whose `message` is the summary text, then a `context_compacted` event; both
go just before the first kept tail line, which stays in place with the rest
of the tail. The history they replace leaves the file (ctxpack's archive
keeps it): every response item and earlier compaction before that point, and
the UI events copying items that are gone. Session meta, turn contexts,
telemetry and the copies of kept items stay where they were, byte for byte.
"""

from __future__ import annotations

import uuid
from typing import Any

from ctxpack import messages as m
from ctxpack.errors import UsageError
from ctxpack.formats import jsonl
from ctxpack.formats.base import context_of, layout_of
from ctxpack.formats.codex import (
    CALL_TYPES,
    CodexContext,
    CodexLayout,
    Loc,
    Source,
    first_ordinal,
    numbered,
    payload_at,
)
from ctxpack.formats.codex_items import (
    call_item,
    edited_call,
    edited_item,
    fresh_items,
    message_item,
    texts_of,
)
from ctxpack.formats.origins import first_new_summary, pairs
from ctxpack.transcript import Message, Session, Transcript

EPOCH = "1970-01-01T00:00:00.000Z"
MARKER = "context_compacted"
# UI events that repeat a tool call or a turn already held by a response item.
CALL_EVENTS = ("exec_command_", "patch_apply_", "mcp_tool_call_", "view_image", "dynamic_tool_")
TEXT_EVENTS = frozenset(
    {"user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content"}
)
NAMESPACE = uuid.UUID("0b6d2f5e-8d1c-4c55-b7a3-5a1f4f9e2c37")
Payload = dict[str, Any]
Entry = tuple[Loc | None, Payload | None]


def write(transcript: Transcript) -> bytes:
    layout = layout_of(transcript, CodexLayout)
    doc = layout.doc if layout else jsonl.Lines.empty()
    if len(transcript.sessions) != 1:
        raise UsageError("a Codex rollout holds one session; convert one session at a time")
    stamp = transcript.last_timestamp
    edits = jsonl.Edits()
    _Writer(doc, transcript.sessions[0], stamp if isinstance(stamp, str) else EPOCH).run(edits)
    first = first_ordinal(doc)
    return edits.apply(doc) if first is None else numbered(edits.apply(doc), first=first)


class _Writer:
    def __init__(self, doc: jsonl.Lines, session: Session, stamp: str) -> None:
        self.doc = doc
        self.session = session
        ctx = context_of(session, CodexContext) or CodexContext()
        self.where = ctx.where
        self.mirrors = ctx.mirrors
        self.compacted_at = ctx.compacted_at
        self.stamp = stamp

    def kind(self, orig: Message | None) -> str:
        return self.where[id(orig)].kind if orig is not None else "new"

    def first_line(self, orig: Message | None) -> int | None:
        if orig is None or self.kind(orig) not in ("item", "group"):
            return None
        lines = [li for li, k in self.where[id(orig)].locs if k is None]
        return min(lines) if lines else None

    def run(self, edits: jsonl.Edits) -> None:
        items = pairs(self.session)
        fate = {id(orig): msg for msg, orig in items if orig is not None}
        body = self._system(items, edits)
        cut = first_new_summary(body)
        start = cut + 1 if cut is not None else 0
        region_end = next(
            (
                k
                for k in range(start, len(body))
                if (ln := self.first_line(body[k][1])) is not None and ln > self.compacted_at
            ),
            len(body),
        )
        touched = any(
            self.kind(orig) == "compacted"
            or any(k is not None for _, k in self.where[id(orig)].locs)
            for orig, _ in self.session.originals
            if self.kind(orig) != "meta" and fate.get(id(orig)) is not orig
        )
        fresh = any(orig is None for _, orig in body[:region_end])
        region = body[:region_end]
        if cut is not None:
            first = self.first_line(body[region_end][1]) if region_end < len(body) else None
            stamp = self._stamp(first)
            payload = self._history(region, cut)
            compacted = {"timestamp": stamp, "type": "compacted", "payload": payload}
            marker = {"timestamp": stamp, "type": "event_msg", "payload": {"type": MARKER}}
            edits.insert([jsonl.dump(compacted), jsonl.dump(marker)], before=first)
            for msg, orig in region:
                if orig is not None and msg is not orig and m.role(msg) == "tool":
                    self._mirror(m.result_call_id(msg), m.text(msg), edits)
            self._drop_replaced(first, [msg for msg, _ in body], edits)
        elif self.compacted_at >= 0 and (touched or fresh):
            # Only the earlier compaction's history changed: that line is rewritten.
            index = self.compacted_at
            obj = self.doc.objs[index]
            assert obj is not None
            new = {**obj, "payload": {**obj["payload"], **self._history(region, None)}}
            edits.replace[index] = jsonl.dump(new, like=self.doc.raw[index])
        else:
            region_end = 0
        self._tail(body[region_end:], edits)
        for orig, _ in self.session.originals:
            if fate.get(id(orig)) is None and self.kind(orig) in ("item", "group"):
                edits.delete.update(li for li, k in self.where[id(orig)].locs if k is None)

    # -- system prompt ----------------------------------------------------

    def _system(
        self, items: list[tuple[Message, Message | None]], edits: jsonl.Edits
    ) -> list[tuple[Message, Message | None]]:
        body: list[tuple[Message, Message | None]] = []
        has_meta = any(self.kind(o) == "meta" for o, _ in self.session.originals)
        for n, (msg, orig) in enumerate(items):
            if self.kind(orig) == "meta":
                assert orig is not None
                if msg is not orig:
                    index = self.where[id(orig)].locs[0][0]
                    obj = self.doc.objs[index]
                    assert obj is not None
                    payload = obj["payload"]
                    instructions = payload.get("base_instructions")
                    new_instr: Any = (
                        {**instructions, "text": m.text(msg)}
                        if isinstance(instructions, dict)
                        else m.text(msg)
                    )
                    new = {**obj, "payload": {**payload, "base_instructions": new_instr}}
                    edits.replace[index] = jsonl.dump(new, like=self.doc.raw[index])
            elif n == 0 and orig is None and m.role(msg) == "system" and not has_meta:
                meta = {
                    "id": str(uuid.uuid5(NAMESPACE, m.text(msg))),
                    "timestamp": self.stamp,
                    "originator": "ctxpack",
                    "base_instructions": {"text": m.text(msg)},
                }
                line = {"timestamp": self.stamp, "type": "session_meta", "payload": meta}
                edits.insert([jsonl.dump(line)], before=0 if self.doc.raw else None)
            else:
                body.append((msg, orig))
        return body

    # -- compaction -------------------------------------------------------

    def _history(self, region: list[tuple[Message, Message | None]], cut: int | None) -> Payload:
        """The `compacted` payload for the history up to the first kept tail item."""
        history: list[Payload] = []
        message: Any = ""
        for k, (msg, orig) in enumerate(region):
            if k == cut:
                history.append(message_item("user", msg))
                message = m.text(msg)
            elif orig is not None and self.kind(orig) == "compacted":
                source = self.where[id(orig)]
                old = self.doc.objs[source.locs[0][0]]
                assert old is not None
                if msg is orig:
                    history += [
                        payload_at(self.doc, loc) for loc in source.locs if loc[1] is not None
                    ]
                    message = old["payload"].get("message", "")
                else:
                    history.append(message_item("user", msg))
                    message = m.text(msg)
            else:
                history += [p for _, p in self._entries(msg, orig) if p is not None]
        return {"message": message, "replacement_history": history}

    def _drop_replaced(self, before: int | None, kept: list[Message], edits: jsonl.Edits) -> None:
        """Delete what a new compacted line replaces: every history line before
        it (earlier compactions too) and the UI copies of items that are gone."""
        end = len(self.doc.objs) if before is None else before
        calls, texts = _kept_ids_and_texts(kept)
        for index, obj in enumerate(self.doc.objs):
            payload = obj.get("payload") if obj is not None else None
            if obj is None or not isinstance(payload, dict):
                continue
            early = index < end
            if (early and obj.get("type") in ("response_item", "compacted")) or (
                obj.get("type") == "event_msg" and _stale(payload, calls, texts, early=early)
            ):
                edits.delete.add(index)

    def _stamp(self, index: int | None) -> str:
        candidates = [index] if index is not None else []
        candidates.append(len(self.doc.objs) - 1)
        for i in candidates:
            obj = self.doc.objs[i] if 0 <= i < len(self.doc.objs) else None
            if obj is not None and isinstance(obj.get("timestamp"), str):
                return str(obj["timestamp"])
        return self.stamp

    # -- in-place edits ---------------------------------------------------

    def _tail(self, tail: list[tuple[Message, Message | None]], edits: jsonl.Edits) -> None:
        seq: list[tuple[int | None, Payload | None]] = []
        for msg, orig in tail:
            for loc, payload in self._entries(msg, orig):
                if loc is None:
                    seq.append((None, payload))
                    continue
                index = loc[0]
                obj = self.doc.objs[index]
                assert obj is not None
                if payload is None:
                    edits.delete.add(index)
                elif payload is not obj["payload"]:
                    new = {**obj, "payload": payload}
                    edits.replace[index] = jsonl.dump(new, like=self.doc.raw[index])
                seq.append((index, payload))
            if orig is not None and msg is not orig and m.role(msg) == "tool":
                self._mirror(m.result_call_id(msg), m.text(msg), edits)
        anchors = [n for n, (index, _) in enumerate(seq) if index is not None]
        for n, (spot, payload) in enumerate(seq):
            if spot is not None or payload is None:
                continue
            nxt = next((seq[k][0] for k in anchors if k > n), None)
            prev = next((seq[k][0] for k in reversed(anchors) if k < n), None)
            line = jsonl.dump(
                {
                    "timestamp": self._stamp(nxt if nxt is not None else prev),
                    "type": "response_item",
                    "payload": payload,
                }
            )
            if nxt is not None:
                edits.insert([line], before=nxt)
            elif prev is not None:
                edits.insert([line], before=None, after=prev)
            else:
                edits.insert([line], before=None)

    def _mirror(self, call_id: str, text: str, edits: jsonl.Edits) -> None:
        for index in self.mirrors.get(call_id, []):
            obj = self.doc.objs[index]
            assert obj is not None
            payload = dict(obj["payload"])
            payload["aggregated_output"] = text
            for key in ("stdout", "stderr", "formatted_output"):
                if isinstance(payload.get(key), str) and payload[key]:
                    payload[key] = text
            edits.replace[index] = jsonl.dump({**obj, "payload": payload}, like=self.doc.raw[index])

    def _entries(self, msg: Message, orig: Message | None) -> list[Entry]:
        """(location, payload) for each item of msg; payload None deletes, a
        location None is a new item; an untouched item keeps its payload object."""
        if orig is None:
            return [(None, p) for p in fresh_items(msg)]
        source = self.where[id(orig)]
        if msg is orig:
            return [(loc, payload_at(self.doc, loc)) for loc in source.locs]
        if source.kind == "item":
            loc = source.locs[0]
            return [(loc, edited_item(payload_at(self.doc, loc), msg))]
        if source.kind == "compacted":
            return [(None, message_item("user", msg))]
        return self._group(source, orig, msg)

    def _group(self, source: Source, orig: Message, msg: Message) -> list[Entry]:
        out: list[Entry] = []
        same_text = texts_of(orig) == texts_of(msg)
        texts = texts_of(msg)
        calls = {m.call_id(c): c for c in m.tool_calls(msg)}
        kept_reasoning = msg.get("reasoning")
        keep = kept_reasoning if isinstance(kept_reasoning, list) else []
        placed = False
        placed_reasoning: list[Payload] = []
        for loc in source.locs:
            payload = payload_at(self.doc, loc)
            kind = payload.get("type")
            if kind == "message":
                if same_text:
                    out.append((loc, payload))
                elif texts and not placed:
                    parts = [{"type": "output_text", "text": t} for t in texts]
                    out.append((loc, {**payload, "content": parts}))
                    placed = True
                else:
                    out.append((loc, None))
            elif kind == "reasoning":
                kept = any(payload is r for r in keep)
                out.append((loc, payload if kept else None))
                if kept:
                    placed_reasoning.append(payload)
            elif kind in CALL_TYPES:
                call = calls.pop(str(payload.get("call_id", "")), None)
                if call is None:
                    out.append((loc, None))
                else:
                    if not same_text and texts and not placed:
                        out.append((None, message_item("assistant", {"content": texts})))
                        placed = True
                    out.append((loc, edited_call(payload, call)))
            else:
                out.append((loc, payload))
        if not same_text and texts and not placed:
            out.append((None, message_item("assistant", {"content": texts})))
        out += [(None, call_item(call)) for call in calls.values()]
        # Reasoning the message holds from items outside this turn's lines
        # goes first, where Codex writes a turn's reasoning.
        moved = [
            r
            for r in keep
            if isinstance(r, dict)
            and r.get("type") == "reasoning"
            and not any(r is p for p in placed_reasoning)
        ]
        return [(None, r) for r in moved] + out


def _kept_ids_and_texts(kept: list[Message]) -> tuple[set[str], set[str]]:
    calls: set[str] = set()
    texts: set[str] = set()
    for msg in kept:
        calls.update(m.call_id(c) for c in m.tool_calls(msg))
        if m.is_tool_result(msg):
            calls.add(m.result_call_id(msg))
        texts.update([m.text(msg), *texts_of(msg), *m.reasoning_texts(msg)])
    return calls, texts


def _stale(payload: Payload, calls: set[str], texts: set[str], *, early: bool) -> bool:
    """Whether an event copies an item a compaction removed. Before the new
    compacted line that is any copy whose item is not kept (and the markers of
    earlier compactions); after it, only copies of tool calls, which carry the
    call's id (a web search's event id matches no item, so it stays)."""
    kind = str(payload.get("type", ""))
    call = payload.get("call_id")
    if isinstance(call, str) and (early or kind.startswith(CALL_EVENTS)):
        return call not in calls
    if not early:
        return False
    if kind == MARKER:
        return True
    text = payload.get("message", payload.get("text"))
    return kind in TEXT_EVENTS and isinstance(text, str) and text not in texts
