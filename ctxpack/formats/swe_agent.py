"""The `swe-agent` format (read only): SWE-agent `.traj` files.

The model conversation is `history`. In the function-calling variant the
assistant carries OpenAI `tool_calls` and each result is a `tool` message
with a `tool_call_ids` list; a result without ids answers the oldest open
call. The non-function-calling variant is plain user/assistant messages (the
observation is the next user message) and passes through as is. SWE-agent's
own keys (agent, message_type, thought, action, is_demo) are carried along.
"""

from __future__ import annotations

from typing import Any

from ctxpack import messages as m
from ctxpack.errors import InputError
from ctxpack.formats import jsoncodec
from ctxpack.formats.base import BOM, Format, ReadOptions
from ctxpack.transcript import Message, Session, Transcript


def history_messages(history: list[Any]) -> list[Message]:
    out: list[Message] = []
    open_calls: list[str] = []
    for number, item in enumerate(history):
        if not isinstance(item, dict) or not isinstance(item.get("role"), str):
            raise ValueError(f"history item {number} has no role")
        msg = {k: v for k, v in item.items() if k != "tool_call_ids"}
        if m.role(msg) == "assistant":
            open_calls += [m.call_id(c) for c in m.tool_calls(msg) if m.call_id(c)]
            out.append(msg)
            continue
        if m.role(msg) != "tool" or isinstance(msg.get("tool_call_id"), str):
            if m.role(msg) == "tool":
                _close(open_calls, msg["tool_call_id"])
            out.append(msg)
            continue
        ids = [i for i in item.get("tool_call_ids") or [] if isinstance(i, str)]
        if not ids and open_calls:
            ids = [open_calls[0]]
        if not ids:
            out.append(msg)
            continue
        for n, call_id in enumerate(ids):
            _close(open_calls, call_id)
            # One observation answers every call it lists; it is counted once.
            out.append(
                {**msg, "tool_call_id": call_id, "content": msg.get("content") if n == 0 else ""}
            )
    return out


def _close(open_calls: list[str], call_id: str) -> None:
    if call_id in open_calls:
        open_calls.remove(call_id)


class SWEAgentFormat(Format, name="swe-agent", writable=False):
    """SWE-agent trajectory (.traj history; read only)"""

    def read(self, data: bytes, *, path: str, options: ReadOptions) -> Transcript:
        try:
            doc = jsoncodec.loads(data.removeprefix(BOM))
        except jsoncodec.JSONError as exc:
            raise InputError(str(exc), path=path, line=exc.line) from None
        if not isinstance(doc, dict) or not isinstance(doc.get("history"), list):
            raise InputError("not a SWE-agent trajectory (no history list)", path=path)
        try:
            messages = history_messages(doc["history"])
        except ValueError as exc:
            raise InputError(str(exc), path=path) from None
        info = doc.get("info")
        label = str(info.get("exit_status", "")) if isinstance(info, dict) else ""
        session = Session(
            messages=messages, originals=[(msg, b"") for msg in messages], label=label
        )
        return Transcript(self.name, [session], path=path, raw=data)
