"""The conversation a client sent, flattened to one list of items.

Both wire formats (Anthropic Messages, OpenAI Responses) reduce to text,
tool-call and tool-result items in request order, so the assertions in
check.py are written once for every client.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["text", "call", "result"]


@dataclass(frozen=True)
class Item:
    role: str
    kind: Kind
    text: str = ""
    call_id: str = ""
    # A tool result's content blocks as sent, and whether it was marked an
    # error (Anthropic Messages only).
    parts: tuple[str, ...] = ()
    error: bool = False


def _flatten(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_flatten(part) for part in content)
    if isinstance(content, dict):
        for key in ("text", "content", "output"):
            if key in content:
                return _flatten(content[key])
    return "" if content is None else json.dumps(content)


def anthropic_items(body: dict[str, Any]) -> list[Item]:
    items: list[Item] = []
    for msg in body.get("messages") or []:
        role = str(msg.get("role", ""))
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks or []:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text":
                items.append(Item(role, "text", str(block.get("text", ""))))
            elif kind == "tool_use":
                items.append(Item(role, "call", json.dumps(block.get("input")), str(block["id"])))
            elif kind == "tool_result":
                result = block.get("content")
                parts = tuple(_flatten(p) for p in result) if isinstance(result, list) else ()
                items.append(
                    Item(
                        role,
                        "result",
                        _flatten(result),
                        str(block["tool_use_id"]),
                        parts=parts or (_flatten(result),),
                        error=bool(block.get("is_error")),
                    )
                )
    return items


_CALLS = {"function_call", "custom_tool_call", "local_shell_call"}
_RESULTS = {"function_call_output", "custom_tool_call_output"}


def responses_items(body: dict[str, Any]) -> list[Item]:
    items: list[Item] = []
    for entry in body.get("input") or []:
        kind = entry.get("type", "message") if isinstance(entry, dict) else None
        if kind == "message":
            role = str(entry.get("role", ""))
            content = entry.get("content")
            parts = [content] if isinstance(content, str) else content or []
            for part in parts:
                items.append(Item(role, "text", _flatten(part)))
        elif kind in _CALLS:
            args = _flatten(entry.get("arguments") or entry.get("input") or entry.get("action"))
            items.append(Item("assistant", "call", args, str(entry.get("call_id", ""))))
        elif kind in _RESULTS:
            items.append(
                Item("tool", "result", _flatten(entry.get("output")), str(entry.get("call_id", "")))
            )
    return items


def file_strings(path: str) -> str:
    """Every string in a JSONL session file, joined: what the file itself holds."""
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)

    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                try:
                    walk(json.loads(line))
                except ValueError:
                    continue
    return "\n".join(out)
