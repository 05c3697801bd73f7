"""Which tool result answers which tool call.

Modern messages link by id (`tool_calls[].id` == `tool_call_id`). Legacy
function calling (`function_call` on the assistant, `role: "function"` result)
has no id: a result answers the nearest earlier assistant function_call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from ctxpack import messages as m
from ctxpack.transcript import Message


@dataclass(frozen=True)
class ToolUse:
    """One call an assistant message made."""

    index: int  # position of the assistant message in the list
    call_id: str  # "" for legacy function_call
    name: str
    arguments: str  # raw JSON text as the model wrote it

    def args(self) -> dict[str, Any]:
        return parse_arguments(self.arguments)


def parse_arguments(arguments: str) -> dict[str, Any]:
    """Arguments as a dict; {} when they are not a JSON object."""
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def calls_of(msg: Message, index: int) -> list[ToolUse]:
    uses = [
        ToolUse(index, m.call_id(call), m.call_name(call), m.call_arguments(call))
        for call in m.tool_calls(msg)
    ]
    legacy = m.legacy_function_call(msg)
    if legacy is not None:
        name, arguments = legacy.get("name"), legacy.get("arguments")
        uses.append(
            ToolUse(
                index,
                "",
                name if isinstance(name, str) else "",
                arguments if isinstance(arguments, str) else "",
            )
        )
    return uses


def link_results(messages: list[Message]) -> dict[int, ToolUse]:
    """Map the index of each tool/function result to the call it answers."""
    by_id: dict[str, ToolUse] = {}
    last_legacy: ToolUse | None = None
    links: dict[int, ToolUse] = {}
    for index, msg in enumerate(messages):
        if m.role(msg) == "assistant":
            for use in calls_of(msg, index):
                if use.call_id:
                    by_id[use.call_id] = use
                else:
                    last_legacy = use
        elif m.is_tool_result(msg):
            tcid = m.result_call_id(msg)
            if tcid and tcid in by_id:
                links[index] = by_id[tcid]
            elif not tcid and m.role(msg) == "function" and last_legacy is not None:
                links[index] = last_legacy
    return links


def results_of(messages: list[Message]) -> dict[str, list[int]]:
    """Map each call id to the indexes of the results that answer it."""
    out: dict[str, list[int]] = {}
    for index, msg in enumerate(messages):
        tcid = m.result_call_id(msg)
        if tcid and m.is_tool_result(msg):
            out.setdefault(tcid, []).append(index)
    return out


def orphans(messages: list[Message]) -> tuple[list[int], list[str]]:
    """(indexes of results with no call, ids of calls with no result)."""
    call_ids = {
        m.call_id(call)
        for msg in messages
        if m.role(msg) == "assistant"
        for call in m.tool_calls(msg)
        if m.call_id(call)
    }
    answered = results_of(messages)
    lonely_results = [
        i for ids in answered.values() for i in ids if m.result_call_id(messages[i]) not in call_ids
    ]
    lonely_calls = sorted(call_ids - answered.keys())
    return sorted(lonely_results), lonely_calls
