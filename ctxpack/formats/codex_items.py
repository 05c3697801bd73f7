"""Codex Responses items built from chat messages, for the rollout writer."""

from __future__ import annotations

from typing import Any

from ctxpack import messages as m
from ctxpack.toolpairs import parse_arguments
from ctxpack.transcript import Message

Payload = dict[str, Any]


def texts_of(msg: Message) -> list[str]:
    content = msg.get("content")
    if isinstance(content, str):
        return [content] if content else []
    return list(m.text_parts(msg)) if isinstance(content, list) else []


def parts_of(msg: Message, text_type: str) -> list[Any]:
    content = msg.get("content")
    if isinstance(content, str) or content is None:
        return [{"type": text_type, "text": content or ""}]
    out: list[Any] = []
    for part in content:
        if isinstance(part, str):
            out.append({"type": text_type, "text": part})
        elif isinstance(part, dict) and part.get("type") in m.TEXT_PART_TYPES:
            out.append({"type": text_type, "text": part.get("text", "")})
        elif isinstance(part, dict) and part.get("type") == "image_url":
            image = part.get("image_url")
            url = image.get("url", "") if isinstance(image, dict) else image
            out.append({"type": "input_image", "image_url": url})
        else:
            out.append(part)
    return out


def message_item(role: str, msg: Message) -> Payload:
    role = "developer" if role == "system" else role
    text_type = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": parts_of(msg, text_type)}


def edited_item(payload: Payload, msg: Message) -> Payload:
    if payload.get("type") == "message":
        old = payload.get("content")
        first = old[0] if isinstance(old, list) and old else {}
        text_type = first.get("type", "input_text") if isinstance(first, dict) else "input_text"
        return {**payload, "content": parts_of(msg, str(text_type))}
    return {**payload, "output": m.text(msg)}


def edited_call(payload: Payload, call: dict[str, Any]) -> Payload:
    arguments = m.call_arguments(call)
    kind = payload.get("type")
    if kind == "function_call":
        return (
            payload
            if payload.get("arguments") == arguments
            else {**payload, "arguments": arguments}
        )
    if kind == "custom_tool_call":
        raw = parse_arguments(arguments).get("input", arguments)
        return payload if payload.get("input") == raw else {**payload, "input": raw}
    return payload


def call_item(call: dict[str, Any]) -> Payload:
    return {
        "type": "function_call",
        "name": m.call_name(call),
        "arguments": m.call_arguments(call),
        "call_id": m.call_id(call),
    }


def fresh_items(msg: Message) -> list[Payload]:
    role = m.role(msg)
    if role == "tool" or role == "function":
        return [
            {
                "type": "function_call_output",
                "call_id": m.result_call_id(msg),
                "output": m.text(msg),
            }
        ]
    if role != "assistant":
        return [message_item(role or "user", msg)]
    out: list[Payload] = []
    reasoning = msg.get("reasoning")
    if isinstance(reasoning, list):
        out += [r for r in reasoning if isinstance(r, dict) and r.get("type") == "reasoning"]
    elif msg.get("reasoning_content"):
        text = str(msg["reasoning_content"])
        out.append({"type": "reasoning", "summary": [{"type": "summary_text", "text": text}]})
    if texts_of(msg):
        out.append(message_item("assistant", msg))
    out += [call_item(call) for call in m.tool_calls(msg)]
    return out
