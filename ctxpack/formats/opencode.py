"""The `opencode` format: `opencode export <sessionID>` JSON documents.

`{"info": {session}, "messages": [{"info": {id, role, ...}, "parts": [...]}]}`.
A user message's `text` parts are its text (`ignored` ones are not sent);
an assistant message's `text` parts its text, `reasoning` parts its
reasoning and each `tool` part one call (`callID`, `tool`, `state.input`)
whose `state.output` (or `state.error`) becomes the `tool` message after it.
Step markers, snapshots, patches and files carry no model text. An assistant
message marked `summary` (opencode's own compaction) reads as a summary.

Writing keeps the document's bytes: unchanged messages are copied verbatim,
a changed one is re-serialized in the document's style, a dropped one leaves
the list, a new summary is a user message with one text part, and an
assistant turn with no original is an assistant message of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxpack import markers
from ctxpack import messages as m
from ctxpack.errors import InputError, UsageError
from ctxpack.formats import jsoncodec, jsonspans
from ctxpack.formats.base import BOM, Format, ReadOptions, context_of, layout_of
from ctxpack.formats.openhands import summary_message
from ctxpack.formats.origins import pairs
from ctxpack.refs import sha256_hex
from ctxpack.tokens.counter import TokenCounter
from ctxpack.toolpairs import parse_arguments
from ctxpack.transcript import Message, Session, Transcript

Doc = dict[str, Any]


@dataclass(frozen=True)
class OpencodeLayout:
    data: bytes  # the document without a BOM
    bom: bool


@dataclass(frozen=True)
class OpencodeContext:
    # id(message) -> the index of the opencode message it was read from.
    where: dict[int, int] = field(default_factory=dict)


def _obj(value: Any) -> Doc:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _texts(parts: list[Any], kind: str) -> list[str]:
    return [
        str(p.get("text", ""))
        for p in parts
        if isinstance(p, dict) and p.get("type") == kind and not p.get("ignored")
    ]


def messages_of(item: Doc) -> list[Message]:
    """The chat messages one opencode message stands for."""
    info, parts = _obj(item.get("info")), _list(item.get("parts"))
    text = "\n".join(t for t in _texts(parts, "text") if t)
    if info.get("role") != "assistant":
        return [{"role": "user", "content": text}]
    if info.get("summary") is True:
        ours = {"role": "user", "content": text}
        return [ours if markers.is_summary(ours) else summary_message(text)]
    msg: Message = {"role": "assistant", "content": text or None}
    reasoning = "\n".join(t for t in _texts(parts, "reasoning") if t)
    if reasoning:
        msg["reasoning_content"] = reasoning
    tools = [p for p in parts if isinstance(p, dict) and p.get("type") == "tool"]
    results: list[Message] = []
    for part in tools:
        state = _obj(part.get("state"))
        call_id = str(part.get("callID", ""))
        arguments = jsoncodec.dumps(state.get("input", {})).decode("utf-8")
        call = {"name": str(part.get("tool", "")), "arguments": arguments}
        msg.setdefault("tool_calls", []).append(
            {"id": call_id, "type": "function", "function": call}
        )
        if "output" in state or "error" in state:
            said = state.get("output", state.get("error"))
            results.append({"role": "tool", "tool_call_id": call_id, "content": str(said or "")})
    return [msg, *results]


class OpencodeFormat(Format, name="opencode", writable=True):
    """opencode session export (`opencode export` JSON)"""

    def read(self, data: bytes, *, path: str, options: ReadOptions) -> Transcript:
        body = data.removeprefix(BOM)
        try:
            doc = jsoncodec.loads(body)
        except jsoncodec.JSONError as exc:
            raise InputError(str(exc), path=path, line=exc.line) from None
        if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
            raise InputError("not an opencode export (no messages list)", path=path)
        messages: list[Message] = []
        where: dict[int, int] = {}
        for k, item in enumerate(doc["messages"]):
            if not isinstance(item, dict):
                raise InputError(f"message {k} is not an object", path=path)
            for msg in messages_of(item):
                messages.append(msg)
                where[id(msg)] = k
        info = _obj(doc.get("info"))
        session = Session(
            messages=messages,
            originals=[(msg, b"") for msg in messages],
            label=str(info.get("title", "")),
            context=OpencodeContext(where=where),
        )
        layout = OpencodeLayout(data=body, bom=len(body) != len(data))
        return Transcript(self.name, [session], path=path, raw=data, layout=layout)

    def write(self, transcript: Transcript, *, counter: TokenCounter) -> bytes:
        layout = layout_of(transcript, OpencodeLayout)
        if transcript.unchanged() and layout is not None:
            return transcript.raw
        if len(transcript.sessions) != 1:
            raise UsageError("an opencode export holds one session; convert one at a time")
        if layout is None:
            return _fresh(transcript.sessions[0].messages)
        out = _write(layout.data, transcript.sessions[0])
        return (BOM if layout.bom else b"") + out


def _write(data: bytes, session: Session) -> bytes:
    doc = jsoncodec.loads(data)
    style = jsonspans.detect_style(data)
    span = jsonspans.object_members(data, jsonspans.skip_ws(data, 0))["messages"]
    spans = jsonspans.array_items(data, span[0])
    where = (context_of(session, OpencodeContext) or OpencodeContext()).where
    sid = str((doc.get("info") or {}).get("id", "ses_ctxpack"))
    # opencode requires a user message's agent and model: the session's own.
    users = [
        _obj(i.get("info")) for i in doc["messages"] if _obj(i.get("info")).get("role") == "user"
    ]
    like = {k: v for k, v in (users[-1] if users else {}).items() if k in ("agent", "model")}
    # The outputs of each opencode message, in order; new messages on their own.
    groups: list[tuple[int | None, list[tuple[Message, Message | None, int]]]] = []
    for position, (msg, orig) in enumerate(pairs(session)):
        k = where.get(id(orig)) if orig is not None else None
        if groups and k is not None and groups[-1][0] == k:
            groups[-1][1].append((msg, orig, position))
        else:
            groups.append((k, [(msg, orig, position)]))
    items: list[bytes] = []
    for k, group in groups:
        if k is None:
            items += [style.dumps(_new(msg, sid, like, at), level=2) for msg, _, at in group]
            continue
        outs = [(msg, orig) for msg, orig, _ in group]
        own = [o for o, _ in session.originals if where.get(id(o)) == k]
        if len(outs) == len(own) and all(msg is orig for msg, orig in outs):
            items.append(data[spans[k][0] : spans[k][1]])
        else:
            items.append(style.dumps(_edited(doc["messages"][k], outs), level=2))
    return jsonspans.splice(
        data, [(span, jsonspans.render_array(data, span, items, style=style, level=2))]
    )


def _fresh(messages: list[Message]) -> bytes:
    """An export holding the messages alone: an assistant turn and the results
    after it are one opencode message."""
    sid = "ses_ctxpack" + sha256_hex(jsoncodec.dumps(messages))[:16]
    items: list[Doc] = []
    for n, msg in enumerate(messages):
        if m.role(msg) == "tool" and items and items[-1]["info"]["role"] == "assistant":
            for part in items[-1]["parts"]:
                if part.get("callID") == m.result_call_id(msg):
                    part["state"] = {**part["state"], "status": "completed", "output": m.text(msg)}
            continue
        mid = f"msg_ctxpack{n:08d}"
        if m.role(msg) == "assistant":
            items.append(_assistant(msg, sid, mid))
            continue
        item = _new(msg, sid, {}, n)
        base = {"sessionID": sid, "messageID": mid}
        items.append({"info": {**item["info"], "id": mid}, "parts": [{**item["parts"][0], **base}]})
    doc = {"info": {"id": sid, "title": ""}, "messages": items}
    return (
        jsonspans.Style(indent=2, ensure_ascii=False, item_sep=",", key_sep=": ").dumps(doc) + b"\n"
    )


def _assistant(msg: Message, sid: str, mid: str) -> Doc:
    """An assistant turn as an opencode message of its own, its calls pending."""
    base = {"sessionID": sid, "messageID": mid}
    parts: list[Doc] = []
    if msg.get("reasoning_content"):
        parts.append({**base, "type": "reasoning", "text": str(msg["reasoning_content"])})
    text = m.text(msg)
    if text:
        parts.append({**base, "type": "text", "text": text})
    for call in m.tool_calls(msg):
        state = {"status": "pending", "input": parse_arguments(m.call_arguments(call))}
        parts.append(
            {
                **base,
                "type": "tool",
                "tool": m.call_name(call),
                "callID": m.call_id(call),
                "state": state,
            }
        )
    for k, part in enumerate(parts):
        part["id"] = f"prt_{mid.removeprefix('msg_')}{k:04d}"
    info = {"id": mid, "sessionID": sid, "role": "assistant", "time": {"created": 0}}
    return {"info": info, "parts": parts}


def _new(msg: Message, sid: str, like: Doc, position: int) -> Doc:
    """A message a stage added: the summary, or a turn it rebuilt whose
    original it could not tell (`position`, its place in the output, keeps
    equal turns' ids apart)."""
    if m.role(msg) == "assistant":
        digest = sha256_hex(b"%d\n" % position + jsoncodec.dumps(msg))[:20]
        return _assistant(msg, sid, f"msg_ctxpack{digest}")
    text = m.text(msg)
    digest = sha256_hex(text.encode("utf-8"))[:24]
    mid = f"msg_ctxpack{digest}"
    info = {"role": "user", "time": {"created": 0}, **like, "id": mid, "sessionID": sid}
    part = {"id": f"prt_ctxpack{digest}", "sessionID": sid, "messageID": mid, "type": "text"}
    return {"info": info, "parts": [{**part, "text": text}]}


def _edited(item: Doc, outs: list[tuple[Message, Message | None]]) -> Doc:
    head = outs[0][0]
    texts = [t for t in m.text_parts(head) if t]
    calls = {m.call_id(c): c for msg, _ in outs for c in m.tool_calls(msg)}
    results = {m.result_call_id(msg): m.text(msg) for msg, _ in outs if m.role(msg) == "tool"}
    reasoning = head.get("reasoning_content")
    own_reasoning = "\n".join(t for t in _texts(_list(item.get("parts")), "reasoning") if t)
    parts: list[Any] = []
    placed = thought = False
    for part in item.get("parts", []):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and not part.get("ignored"):
            if not placed and texts:
                parts.append({**part, "text": "\n".join(texts)})
            placed = True
        elif kind == "reasoning":
            if (reasoning or "") == own_reasoning:
                parts.append(part)
            elif reasoning and not thought:
                parts.append({**part, "text": reasoning})
            thought = thought or bool(reasoning)
        elif kind == "tool":
            call = calls.get(str(part.get("callID", "")))
            if call is None:
                continue
            state = dict(part.get("state") or {})
            state["input"] = parse_arguments(m.call_arguments(call))
            said = results.get(str(part.get("callID", "")))
            if said is not None and "output" in state:
                state["output"] = said
                if isinstance(state.get("metadata"), dict) and "output" in state["metadata"]:
                    state["metadata"] = {**state["metadata"], "output": said}
            elif said is not None and "error" in state:
                state["error"] = said
            parts.append({**part, "state": state})
        else:
            parts.append(part)
    # Text or reasoning the original turn had no part for (the sanitizer's
    # note on a turn whose calls all left) goes before its calls and step end.
    if texts and not placed:
        _insert(parts, item, "text", "\n".join(texts), before=("tool", "step-finish"))
    if reasoning and not thought:
        _insert(parts, item, "reasoning", reasoning, before=("text", "tool", "step-finish"))
    return {**item, "parts": parts}


def _insert(parts: list[Any], item: Doc, kind: str, text: str, *, before: tuple[str, ...]) -> None:
    info = _obj(item.get("info"))
    part = {
        "id": "prt_ctxpack" + sha256_hex(f"{kind}\n{text}".encode())[:24],
        "sessionID": info.get("sessionID"),
        "messageID": info.get("id"),
        "type": kind,
        "text": text,
    }
    at = next((i for i, p in enumerate(parts) if _obj(p).get("type") in before), len(parts))
    parts.insert(at, part)
