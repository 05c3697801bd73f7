"""Make tool calls and tool results pair up again after messages were cut out.

A cut can leave a result whose call was summarized away, or a call whose
results were. Chat APIs reject both, so: results without their call are
dropped, calls without any result are stripped from their assistant message,
and nothing is ever invented in their place (a made-up result would put words
in a tool's mouth).

Linking follows the transcript order. An id-linked result answers the latest
earlier call with its id (ids do get reused within one transcript). A result
without an id (legacy `role: "function"`, or a tool message missing its
`tool_call_id`) answers the id-less calls (`function_call`, or tool_calls
entries without an id) of the assistant message its result group follows.
"""

from __future__ import annotations

from typing import Any

from ctxpack import messages as m
from ctxpack.transcript import Message

EMPTIED_NOTE = "[ctxpack: tool calls removed with the compacted history]"


def sanitize_tool_pairs(messages: list[Message]) -> tuple[list[Message], list[str]]:
    """(messages with every call answered and every result called for, what changed).

    Unchanged messages are returned as the very same objects.
    """
    answered, orphan_results = _link(messages)
    notes: list[str] = []
    out: list[Message] = []
    for index, msg in enumerate(messages):
        if index in orphan_results:
            notes.append(f"#{index}: dropped a {m.role(msg)} result whose call is gone")
            continue
        if m.role(msg) == "assistant":
            msg = _strip_unanswered(msg, index, answered.get(index, set()), notes)
        out.append(msg)
    return out, notes


# A call is keyed by its position in the assistant message: tool_calls entries
# by their list index, the legacy function_call by -1.
_LEGACY = -1


def _calls(msg: Message) -> list[tuple[int, str]]:
    """(key, id) of every call of an assistant message; id "" when it has none."""
    calls = [(k, m.call_id(call)) for k, call in enumerate(m.tool_calls(msg))]
    if m.legacy_function_call(msg) is not None:
        calls.append((_LEGACY, ""))
    return calls


def _link(messages: list[Message]) -> tuple[dict[int, set[int]], set[int]]:
    """(answered call keys per assistant index, indexes of results with no call)."""
    latest_by_id: dict[str, tuple[int, int]] = {}
    answered: dict[int, set[int]] = {}
    orphan_results: set[int] = set()
    # The assistant message the current run of results follows, if any.
    owner: int | None = None
    for index, msg in enumerate(messages):
        if m.is_tool_result(msg):
            tcid = m.result_call_id(msg)
            if tcid:
                target = latest_by_id.get(tcid)
            else:
                idless = [] if owner is None else [k for k, i in _calls(messages[owner]) if not i]
                target = (owner, idless[0]) if owner is not None and idless else None
                if target is not None:
                    # One id-less result answers every id-less call of its owner:
                    # positional results cannot say which one they belong to.
                    answered.setdefault(target[0], set()).update(idless)
            if target is None:
                orphan_results.add(index)
            else:
                answered.setdefault(target[0], set()).add(target[1])
            continue
        owner = index if m.role(msg) == "assistant" else None
        if owner is not None:
            for key, cid in _calls(msg):
                if cid:
                    latest_by_id[cid] = (index, key)
    return answered, orphan_results


def _strip_unanswered(msg: Message, index: int, keep: set[int], notes: list[str]) -> Message:
    calls = m.tool_calls(msg)
    raw_calls = msg.get("tool_calls")
    legacy = m.legacy_function_call(msg)
    lost_tool_calls = [k for k in range(len(calls)) if k not in keep]
    lost_legacy = legacy is not None and _LEGACY not in keep
    if not lost_tool_calls and not lost_legacy:
        return msg
    new: Message = dict(msg)
    for k in lost_tool_calls:
        call = calls[k]
        label = m.call_name(call) or "?"
        notes.append(f"#{index}: removed call {m.call_id(call) or '(no id)'} ({label}): no result")
    if isinstance(raw_calls, list) and lost_tool_calls:
        kept = [c for k, c in enumerate(calls) if k in keep]
        if kept:
            new["tool_calls"] = kept
        else:
            del new["tool_calls"]
    if lost_legacy and legacy is not None:
        name = legacy.get("name")
        notes.append(f"#{index}: removed function_call {name or '?'}: no result")
        del new["function_call"]
    if (
        not m.tool_calls(new)
        and m.legacy_function_call(new) is None
        and not m.has_visible_text(new)
    ):
        new["content"] = _with_note(new.get("content"))
        notes.append(f"#{index}: assistant message left empty; added a note")
    return new


def _with_note(content: Any) -> Any:
    if isinstance(content, list):
        return [*content, {"type": "text", "text": EMPTIED_NOTE}]
    return EMPTIED_NOTE
