"""The `openhands` format (read only): OpenHands event streams.

V0 events (`action`/`observation`, linked by `cause` and
`tool_call_metadata.tool_call_id`): the actions of one LLM response become
one assistant message with its tool calls (arguments as the model wrote
them, from the embedded response), observations become `tool` messages,
`message` actions user or assistant messages. V1 SDK events (`kind`):
SystemPromptEvent, MessageEvent, ActionEvent (grouped by llm_response_id),
ObservationEvent / AgentErrorEvent / UserRejectObservation; a Condensation
drops its forgotten events and its summary becomes a summary message.

Accepted containers: a JSON list of events, and records holding a
`history` event list (eval output JSONL, one session per record).
"""

from __future__ import annotations

from typing import Any

from ctxpack import markers
from ctxpack.errors import InputError
from ctxpack.formats import jsoncodec
from ctxpack.formats.base import BOM, Format, ReadOptions, split_lines
from ctxpack.transcript import Message, Session, Transcript

SKIPPED_OBSERVATIONS = frozenset({"agent_state_changed", "null", "recall", "condensation"})


def summary_message(text: str) -> Message:
    body = f"{markers.SUMMARY_PREFIX}\n\n{text.strip()}\n{markers.SUMMARY_END}"
    return {"role": "user", "content": body}


def _texts(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return _texts(value.get("text", ""))
    if isinstance(value, list):
        return "\n".join(t for t in (_texts(v) for v in value) if t)
    return ""


def v0_messages(events: list[Any]) -> list[Message]:
    out: list[Message] = []
    by_response: dict[str, Message] = {}
    call_of: dict[Any, tuple[str, str]] = {}
    for event in events:
        if not isinstance(event, dict):
            continue
        args: dict[str, Any] = event["args"] if isinstance(event.get("args"), dict) else {}
        found = event.get("tool_call_metadata")
        meta: dict[str, Any] = found if isinstance(found, dict) else {}
        if "action" in event:
            action = event["action"]
            if meta.get("tool_call_id"):
                _v0_call(event, meta, args, out, by_response, call_of)
            elif action == "system":
                out.append({"role": "system", "content": str(args.get("content", ""))})
            elif action == "message":
                role = "user" if event.get("source") == "user" else "assistant"
                out.append({"role": role, "content": _with_images(args)})
            elif action == "finish":
                text = args.get("final_thought") or args.get("thought") or event.get("message")
                if text:
                    out.append({"role": "assistant", "content": str(text)})
        elif "observation" in event:
            linked = (
                (str(meta["tool_call_id"]), str(meta.get("function_name", "")))
                if meta.get("tool_call_id")
                else call_of.get(event.get("cause"))
            )
            text = _v0_observation_text(event)
            if linked is not None:
                out.append(
                    {"role": "tool", "tool_call_id": linked[0], "name": linked[1], "content": text}
                )
            elif event["observation"] not in SKIPPED_OBSERVATIONS and text:
                out.append({"role": "user", "content": text})
    for msg in by_response.values():
        if not msg["tool_calls"]:
            del msg["tool_calls"]
    return out


def _v0_call(
    event: dict[str, Any],
    meta: dict[str, Any],
    args: dict[str, Any],
    out: list[Message],
    by_response: dict[str, Message],
    call_of: dict[Any, tuple[str, str]],
) -> None:
    response = meta.get("model_response") if isinstance(meta.get("model_response"), dict) else {}
    assert isinstance(response, dict)
    choices = response.get("choices") or [{}]
    said = choices[0].get("message") if isinstance(choices[0], dict) else None
    said = said if isinstance(said, dict) else {}
    key = str(response.get("id") or f"event-{event.get('id')}")
    msg = by_response.get(key)
    if msg is None:
        content = said.get("content") if said else args.get("thought")
        msg = {"role": "assistant", "content": content or None, "tool_calls": []}
        by_response[key] = msg
        out.append(msg)
    call_id, name = str(meta["tool_call_id"]), str(meta.get("function_name", ""))
    arguments = None
    for call in said.get("tool_calls") or []:
        if isinstance(call, dict) and call.get("id") == call_id:
            arguments = (call.get("function") or {}).get("arguments")
    if not isinstance(arguments, str):
        plain = {k: v for k, v in args.items() if k not in ("thought", "confirmation_state")}
        arguments = jsoncodec.dumps(plain).decode("utf-8")
    if all(c["id"] != call_id for c in msg["tool_calls"]):
        msg["tool_calls"].append(
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        )
    call_of[event.get("id")] = (call_id, name)


def _with_images(args: dict[str, Any]) -> Any:
    text = str(args.get("content", ""))
    urls = [u for u in args.get("image_urls") or [] if isinstance(u, str)]
    if not urls:
        return text
    return [{"type": "text", "text": text}] + [
        {"type": "image_url", "image_url": {"url": u}} for u in urls
    ]


def _v0_observation_text(event: dict[str, Any]) -> str:
    content = event.get("content")
    text = content if isinstance(content, str) else _texts(content)
    extras = event.get("extras") if isinstance(event.get("extras"), dict) else {}
    meta = extras.get("metadata") if isinstance(extras, dict) else None
    if event.get("observation") == "run" and isinstance(meta, dict):
        text = f"{meta.get('prefix') or ''}{text}{meta.get('suffix') or ''}"
    return text or str(event.get("message") or "")


def v1_messages(events: list[Any]) -> list[Message]:
    forgotten: set[Any] = set()
    summary: tuple[str, int] | None = None
    for event in events:
        if isinstance(event, dict) and event.get("kind") == "Condensation":
            forgotten.update(event.get("forgotten_event_ids") or [])
            if isinstance(event.get("summary"), str) and event["summary"]:
                summary = (event["summary"], int(event.get("summary_offset") or 0))
    kept = [
        e
        for e in events
        if isinstance(e, dict) and e.get("id") not in forgotten and e.get("kind") != "Condensation"
    ]
    out: list[Message] = []
    by_response: dict[str, Message] = {}
    for position, event in enumerate(kept):
        if summary is not None and position == summary[1]:
            out.append(summary_message(summary[0]))
        _v1_event(event, out, by_response)
    if summary is not None and summary[1] >= len(kept):
        out.append(summary_message(summary[0]))
    return out


def _v1_event(event: dict[str, Any], out: list[Message], by_response: dict[str, Message]) -> None:
    kind = event.get("kind")
    if kind == "SystemPromptEvent":
        out.append({"role": "system", "content": _texts(event.get("system_prompt"))})
    elif kind == "MessageEvent":
        llm = event.get("llm_message") if isinstance(event.get("llm_message"), dict) else {}
        assert isinstance(llm, dict)
        out.append(
            {"role": str(llm.get("role", "user")), "content": _v1_content(llm.get("content"))}
        )
    elif kind == "ActionEvent":
        call = event.get("tool_call") if isinstance(event.get("tool_call"), dict) else {}
        assert isinstance(call, dict)
        key = str(event.get("llm_response_id") or event.get("id"))
        msg = by_response.get(key)
        if msg is None:
            msg = {"role": "assistant", "content": _texts(event.get("thought")) or None}
            if event.get("reasoning_content"):
                msg["reasoning_content"] = str(event["reasoning_content"])
            by_response[key] = msg
            out.append(msg)
        arguments = call.get("arguments", "{}")
        if not isinstance(arguments, str):
            arguments = jsoncodec.dumps(arguments).decode("utf-8")
        msg.setdefault("tool_calls", []).append(
            {
                "id": str(call.get("id") or event.get("tool_call_id", "")),
                "type": "function",
                "function": {
                    "name": str(call.get("name") or event.get("tool_name", "")),
                    "arguments": arguments,
                },
            }
        )
    elif kind in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation"):
        observation = event.get("observation")
        if kind == "ObservationEvent" and isinstance(observation, dict):
            text = _texts(observation.get("content"))
        else:
            text = str(event.get("error") or event.get("rejection_reason") or "")
        out.append(
            {
                "role": "tool",
                "tool_call_id": str(event.get("tool_call_id", "")),
                "name": str(event.get("tool_name", "")),
                "content": text,
            }
        )


def _v1_content(content: Any) -> Any:
    if isinstance(content, str):
        return content
    parts: list[Any] = []
    for item in content or []:
        if isinstance(item, dict) and item.get("type") == "text":
            parts.append({"type": "text", "text": str(item.get("text", ""))})
        elif isinstance(item, dict) and item.get("type") == "image":
            parts += [
                {"type": "image_url", "image_url": {"url": u}} for u in item.get("image_urls") or []
            ]
    if len(parts) == 1 and parts[0].get("type") == "text":
        return parts[0]["text"]
    return parts


def events_messages(events: list[Any]) -> list[Message]:
    if any(isinstance(e, dict) and "kind" in e for e in events[:50]):
        return v1_messages(events)
    return v0_messages(events)


def _last_timestamp(events: list[Any]) -> str | None:
    for event in reversed(events):
        if isinstance(event, dict) and isinstance(event.get("timestamp"), str):
            return str(event["timestamp"])
    return None


class OpenHandsFormat(Format, name="openhands", writable=False):
    """OpenHands event stream (V0 actions/observations or V1 SDK events; read only)"""

    def read(self, data: bytes, *, path: str, options: ReadOptions) -> Transcript:
        body = data.removeprefix(BOM)
        try:
            docs = [jsoncodec.loads(body)]
        except jsoncodec.JSONError as exc:
            lines = [line for line in split_lines(body)[0] if line.strip()]
            if len(lines) < 2:
                raise InputError(str(exc), path=path, line=exc.line) from None
            docs = []
            for number, line in enumerate(lines):
                try:
                    docs.append(jsoncodec.loads(line))
                except jsoncodec.JSONError as bad:
                    raise InputError(str(bad), path=path, line=number + 1) from None
            if not all(isinstance(d, dict) and "history" in d for d in docs):
                docs = [docs]
        sessions: list[Session] = []
        stamp: str | None = None
        for number, doc in enumerate(docs):
            events = doc.get("history") if isinstance(doc, dict) else doc
            if not isinstance(events, list):
                raise InputError("no OpenHands event list", path=path)
            messages = events_messages(events)
            label = str(doc.get("instance_id", f"#{number}")) if isinstance(doc, dict) else ""
            sessions.append(
                Session(messages=messages, originals=[(x, b"") for x in messages], label=label)
            )
            stamp = _last_timestamp(events) or stamp
        return Transcript(self.name, sessions, path=path, raw=data, last_timestamp=stamp or None)
