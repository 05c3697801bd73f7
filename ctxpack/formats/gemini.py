"""The `gemini` format (read only): Gemini CLI chat histories.

Three shapes hold the same conversation:
- the model history: a JSON array of `{role: "user"|"model", parts}` Contents;
- a chat recording `session-*.json`: `{sessionId, projectHash, startTime,
  lastUpdated, messages}`, whose `user` and `gemini` records carry `content`
  (a string or parts); a gemini record also carries its `thoughts` and its
  `toolCalls`, each with its `result` parts;
- the same recording as JSONL (`session-*.jsonl`): a metadata line, then one
  record per line. A record whose id was seen replaces it where it stood,
  `{"$rewindTo": id}` drops that record and every later one, `{"$set": ...}`
  updates the metadata.

Parts: text becomes the content, text with `thought: true` reasoning_content;
a functionCall becomes an assistant tool call (its args as JSON text), a
functionResponse a tool message (its `output`/`error` text, else the response
as JSON); images (inlineData, fileData) become image_url parts. A response
answers the call with its id; one without an id answers the oldest open call
of the same name; one that answers no call becomes a user message, as the
model saw it all the same. Recording records of type info, error and warning
are notices shown to the user and never sent to the model: they are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxpack.errors import InputError, MalformedRecord
from ctxpack.formats import jsoncodec
from ctxpack.formats.base import BOM, Format, ReadOptions, is_blank, split_lines
from ctxpack.formats.docpos import ItemError, each_item, item_input_error
from ctxpack.transcript import Message, Session, Transcript

NOTICE_TYPES = frozenset({"info", "error", "warning"})


class _Calls:
    """The calls made so far that no response has answered yet."""

    def __init__(self) -> None:
        self.open: list[tuple[str, str]] = []
        self.made = 0

    def call(self, call_id: Any, name: str) -> str:
        self.made += 1
        found = call_id if isinstance(call_id, str) and call_id else f"gemini-call-{self.made}"
        self.open.append((found, name))
        return found

    def answer(self, call_id: Any, name: str) -> str | None:
        for n, (open_id, open_name) in enumerate(self.open):
            if (open_id == call_id) if call_id else (open_name == name):
                del self.open[n]
                return open_id
        return None


def as_parts(content: Any) -> list[Any]:
    """A PartListUnion (a string, one part, or a list of both) as a list of parts."""
    if content is None:
        return []
    items = content if isinstance(content, list) else [content]
    return [{"text": item} if isinstance(item, str) else item for item in items]


def response_text(response: Any) -> str:
    """What a functionResponse told the model: its output/error text, else its JSON."""
    if isinstance(response, str):
        return response
    if isinstance(response, dict) and response:
        texts = [response[k] for k in ("output", "error") if isinstance(response.get(k), str)]
        if len(texts) == len(response):
            return "\n".join(texts)
    return jsoncodec.dumps(response).decode("utf-8")


def _part_text(part: dict[str, Any]) -> str | None:
    if isinstance(part.get("text"), str):
        return str(part["text"])
    code = part.get("executableCode")
    if isinstance(code, dict) and isinstance(code.get("code"), str):
        return str(code["code"])
    ran = part.get("codeExecutionResult")
    if isinstance(ran, dict) and isinstance(ran.get("output"), str):
        return str(ran["output"])
    return None


def _media(part: dict[str, Any]) -> dict[str, Any] | None:
    blob, linked = part.get("inlineData"), part.get("fileData")
    if isinstance(blob, dict):
        mime = str(blob.get("mimeType") or "")
        url = f"data:{mime};base64,{blob.get('data') or ''}"
    elif isinstance(linked, dict):
        mime, url = str(linked.get("mimeType") or ""), str(linked.get("fileUri") or "")
    else:
        return None
    if mime.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": url}}
    # Other files (PDF, audio) are not counted as images; a note keeps them visible.
    return {"type": "text", "text": f"[attached {mime or 'file'}]"}


def _content(texts: list[str], media: list[dict[str, Any]]) -> str | list[dict[str, Any]] | None:
    if not media:
        if len(texts) <= 1:
            return texts[0] if texts else None
        return [{"type": "text", "text": t} for t in texts]
    return [{"type": "text", "text": t} for t in texts] + media


@dataclass
class _Parts:
    """The parts of one Content, sorted by what they become."""

    texts: list[str] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)
    media: list[dict[str, Any]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    responses: list[dict[str, Any]] = field(default_factory=list)


def split_parts(parts: list[Any]) -> _Parts:
    out = _Parts()
    for part in parts:
        if not isinstance(part, dict):
            raise ValueError(f"a part must be an object, not {type(part).__name__}")
        if isinstance(part.get("functionCall"), dict):
            out.calls.append(part["functionCall"])
        elif isinstance(part.get("functionResponse"), dict):
            out.responses.append(part["functionResponse"])
        elif (text := _part_text(part)) is not None:
            (out.thoughts if part.get("thought") is True else out.texts).append(text)
        elif (found := _media(part)) is not None:
            out.media.append(found)
    return out


def model_message(parts: list[Any], calls: _Calls, *, reasoning: list[str]) -> Message:
    said = split_parts(parts)
    thoughts = reasoning + said.thoughts
    tool_calls = []
    for fc in said.calls:
        name = str(fc.get("name") or "")
        args = fc.get("args") if fc.get("args") is not None else {}
        tool_calls.append(
            {
                "id": calls.call(fc.get("id"), name),
                "type": "function",
                "function": {"name": name, "arguments": jsoncodec.dumps(args).decode("utf-8")},
            }
        )
    content = _content(said.texts, said.media)
    msg: Message = {"role": "assistant", "content": content}
    if content is None and not tool_calls and not thoughts:
        msg["content"] = ""
    if thoughts:
        msg["reasoning_content"] = "\n".join(thoughts)
    if tool_calls:
        msg["tool_calls"] = tool_calls
    return msg


def user_messages(parts: list[Any], calls: _Calls) -> list[Message]:
    """Tool results first (they answer the calls just made), then the user's own turn."""
    said = split_parts(parts)
    out: list[Message] = []
    for fr in said.responses:
        name = str(fr.get("name") or "")
        text = response_text(fr.get("response"))
        call_id = calls.answer(fr.get("id"), name)
        if call_id is None:
            out.append({"role": "user", "content": text})
        else:
            out.append({"role": "tool", "tool_call_id": call_id, "name": name, "content": text})
    content = _content(said.texts + said.thoughts, said.media)
    if content is not None:
        out.append({"role": "user", "content": content})
    return out


def contents_messages(contents: list[Any]) -> list[Message]:
    calls = _Calls()

    def convert(item: Any) -> list[Message]:
        if not isinstance(item, dict) or not isinstance(item.get("parts"), list):
            raise ValueError("no parts list")
        role = item.get("role", "user")
        if role == "model":
            return [model_message(item["parts"], calls, reasoning=[])]
        if role in ("user", "function"):
            return user_messages(item["parts"], calls)
        raise ValueError(f"role must be user or model, not {role!r}")

    return each_item(contents, convert, what="content")


def _thought_text(thought: Any) -> str:
    if not isinstance(thought, dict):
        return ""
    said = [thought.get("subject"), thought.get("description")]
    return "\n".join(str(t) for t in said if isinstance(t, str) and t)


def _result_text(call: dict[str, Any]) -> str:
    texts = []
    for part in as_parts(call.get("result")):
        fr = part.get("functionResponse") if isinstance(part, dict) else None
        if isinstance(fr, dict):
            texts.append(response_text(fr.get("response")))
        elif isinstance(part, dict) and (said := _part_text(part)) is not None:
            texts.append(said)
    if texts:
        return "\n".join(texts)
    # No result recorded (cancelled, still running): say how the call ended.
    shown = call.get("resultDisplay")
    return shown if isinstance(shown, str) and shown else str(call.get("status") or "")


def gemini_record(record: dict[str, Any], calls: _Calls) -> list[Message]:
    recorded = record.get("toolCalls") or []
    if not isinstance(recorded, list) or not all(isinstance(c, dict) for c in recorded):
        raise ValueError("toolCalls must be a list of objects")
    parts = as_parts(record.get("content"))
    parts += [{"functionCall": {k: c.get(k) for k in ("id", "name", "args")}} for c in recorded]
    thoughts: Any = record.get("thoughts")
    reasoning = [_thought_text(t) for t in thoughts] if isinstance(thoughts, list) else []
    msg = model_message(parts, calls, reasoning=[t for t in reasoning if t])
    out = [msg]
    made = msg.get("tool_calls") or []
    for call, made_call in zip(recorded, made[len(made) - len(recorded) :], strict=True):
        name = made_call["function"]["name"]
        calls.answer(made_call["id"], name)
        out.append(
            {
                "role": "tool",
                "tool_call_id": made_call["id"],
                "name": name,
                "content": _result_text(call),
            }
        )
    return out


def records_messages(records: list[Any]) -> list[Message]:
    calls = _Calls()

    def convert(record: Any) -> list[Message]:
        kind = record.get("type") if isinstance(record, dict) else None
        if kind == "user":
            return user_messages(as_parts(record.get("content")), calls)
        if kind == "gemini":
            return gemini_record(record, calls)
        if kind in NOTICE_TYPES:
            return []
        raise ValueError(f"type must be user, gemini, info, error or warning, not {kind!r}")

    return each_item(records, convert, what="message")


def _recording_lines(
    body: bytes, *, path: str, options: ReadOptions
) -> tuple[dict[str, Any], list[Any], list[int], int]:
    """The JSONL recording replayed: metadata, records, their line numbers, lines skipped."""
    meta: dict[str, Any] = {}
    records: dict[str, tuple[int, Any]] = {}
    skipped = 0
    for number, line in enumerate(split_lines(body)[0], start=1):
        if is_blank(line):
            continue
        try:
            obj = jsoncodec.loads(line)
        except jsoncodec.JSONError as exc:
            if options.skip_invalid:
                skipped += 1
                continue
            raise MalformedRecord(str(exc), path=path, line=number) from None
        if isinstance(obj, dict) and isinstance(obj.get("$rewindTo"), str):
            ids = list(records)
            cut = ids.index(obj["$rewindTo"]) if obj["$rewindTo"] in ids else 0
            for stale in ids[cut:]:
                del records[stale]
        elif isinstance(obj, dict) and isinstance(obj.get("$set"), dict):
            meta.update(obj["$set"])
        elif isinstance(obj, dict) and isinstance(obj.get("id"), str):
            at = records[obj["id"]][0] if obj["id"] in records else number
            records[obj["id"]] = (at, obj)
        elif isinstance(obj, dict) and "sessionId" in obj:
            meta.update(obj)
        else:
            raise InputError("not a Gemini CLI recording record", path=path, line=number)
    kept = list(records.values())
    return meta, [obj for _, obj in kept], [at for at, _ in kept], skipped


class GeminiFormat(Format, name="gemini", writable=False):
    """Gemini CLI chat history (model Contents, or a session recording; read only)"""

    def read(self, data: bytes, *, path: str, options: ReadOptions) -> Transcript:
        body = data.removeprefix(BOM)
        skipped = 0
        try:
            doc = jsoncodec.loads(body)
        except jsoncodec.JSONError as exc:
            if len([line for line in split_lines(body)[0] if not is_blank(line)]) < 2:
                raise InputError(str(exc), path=path, line=exc.line) from None
            meta, records, lines, skipped = _recording_lines(body, path=path, options=options)
            try:
                messages = records_messages(records)
            except ItemError as bad:
                raise InputError(str(bad), path=path, line=lines[bad.index]) from None
        else:
            meta = doc if isinstance(doc, dict) else {}
            # A recording's first line alone parses as a document: no messages yet.
            listed: Any = meta.get("messages", [] if "sessionId" in meta else None)
            if not isinstance(doc, list) and not isinstance(listed, list):
                raise InputError(
                    "not a Gemini history (no list of contents or messages)", path=path
                )
            try:
                if isinstance(doc, list):
                    messages = contents_messages(doc)
                else:
                    messages = records_messages(listed)
            except ItemError as bad:
                key = None if isinstance(doc, list) else "messages"
                raise item_input_error(bad, body=body, path=path, key=key) from None
        label = str(meta.get("sessionId") or "")
        session = Session(messages=messages, originals=[(x, b"") for x in messages], label=label)
        stamp = meta.get("lastUpdated")
        layout: dict[str, Any] = {"last_timestamp": stamp} if isinstance(stamp, str) else {}
        return Transcript(
            self.name, [session], path=path, raw=data, skipped_lines=skipped, layout=layout
        )
