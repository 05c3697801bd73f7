"""Messages for tests that build a conversation by hand: one tool call, its result."""

from __future__ import annotations

import json
from typing import Any

from ctxpack.transcript import Message


def call(call_id: str, name: str, args: dict[str, Any] | str) -> Message:
    """An assistant message with one tool call; `args` as a dict or the JSON text itself."""
    arguments = args if isinstance(args, str) else json.dumps(args)
    function = {"name": name, "arguments": arguments}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def result(call_id: str, text: str = "ok", *, is_error: bool = False) -> Message:
    msg: Message = {"role": "tool", "tool_call_id": call_id, "content": text}
    if is_error:
        msg["is_error"] = True
    return msg
