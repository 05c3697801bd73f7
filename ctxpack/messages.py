"""Reading the parts of an OpenAI chat message that every stage needs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ctxpack.transcript import Message

TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text", "tool_output", "refusal"})
IMAGE_PART_TYPES = frozenset({"image_url", "image", "input_image"})
REASONING_KEYS = ("reasoning_content", "reasoning", "thinking")
SYSTEM_ROLES = ("system", "developer")
# The roles of tool results: a tool message, or the legacy function message.
RESULT_ROLES = ("tool", "function")


def role(msg: Message) -> str:
    value = msg.get("role")
    return value if isinstance(value, str) else ""


def is_system(msg: Message) -> bool:
    return role(msg) in SYSTEM_ROLES


def is_tool_result(msg: Message) -> bool:
    return msg.get("role") in RESULT_ROLES


def tool_calls(msg: Message) -> list[dict[str, Any]]:
    calls = msg.get("tool_calls")
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def call_id(call: dict[str, Any]) -> str:
    value = call.get("id")
    return value if isinstance(value, str) else ""


def call_name(call: dict[str, Any]) -> str:
    return _function_text(call, "name")


def call_arguments(call: dict[str, Any]) -> str:
    return _function_text(call, "arguments")


def _function_text(call: dict[str, Any], key: str) -> str:
    fn = call.get("function")
    value = fn.get(key) if isinstance(fn, dict) else None
    return value if isinstance(value, str) else ""


def legacy_function_call(msg: Message) -> dict[str, Any] | None:
    """The pre-tools `function_call` of an assistant message, if any."""
    fc = msg.get("function_call")
    return fc if isinstance(fc, dict) else None


def result_call_id(msg: Message) -> str:
    value = msg.get("tool_call_id")
    return value if isinstance(value, str) else ""


def text_parts(msg: Message) -> Iterator[str]:
    """Every model-visible text of the content, in order."""
    content = msg.get("content")
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                yield part
            elif isinstance(part, dict) and part.get("type") in TEXT_PART_TYPES:
                text = part.get("text")
                if isinstance(text, str):
                    yield text


def text(msg: Message) -> str:
    content = msg.get("content")
    # Most messages hold one string: it is their text as it is.
    if isinstance(content, str):
        return content
    return "\n".join(text_parts(msg))


def image_count(msg: Message) -> int:
    content = msg.get("content")
    if not isinstance(content, list):
        return 0
    return sum(1 for p in content if isinstance(p, dict) and p.get("type") in IMAGE_PART_TYPES)


def reasoning_texts(msg: Message) -> Iterator[str]:
    """Reasoning the model produced: plain strings or summary/thinking blocks."""
    for key in REASONING_KEYS:
        value = msg.get(key)
        if isinstance(value, str):
            yield value
        elif isinstance(value, list | dict):
            yield from _nested_texts(value)


def _nested_texts(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key in ("text", "thinking", "summary_text"):
            inner = value.get(key)
            if isinstance(inner, str):
                yield inner
        summary = value.get("summary")
        if isinstance(summary, list):
            yield from _nested_texts(summary)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, str):
                yield item
            else:
                yield from _nested_texts(item)


def has_visible_text(msg: Message) -> bool:
    return any(t.strip() for t in text_parts(msg))
