"""Make tool calls and tool results pair up again after messages were cut out.

A cut can leave a result whose call was summarized away, or a call whose
results were. Chat APIs reject both, so: results without their call are
dropped, calls without any result are stripped from their assistant message,
and nothing is ever invented in their place (a made-up result would put words
in a tool's mouth).

Only what the cut broke is repaired. A call the transcript itself has no
result for yet (`pending`: typically the agent's last message, its tools
still running) is the live state of the session: it stays where it was, and
the notes say so.

Which result answers which call is ctxpack.toolpairs' pairing rule.
"""

from __future__ import annotations

from typing import Any

from ctxpack import messages as m
from ctxpack.toolpairs import LEGACY_SLOT, pair
from ctxpack.transcript import Message

EMPTIED_NOTE = "[ctxpack: tool calls removed with the compacted history]"


def sanitize_tool_pairs(
    messages: list[Message], *, pending: frozenset[str] = frozenset()
) -> tuple[list[Message], list[str]]:
    """(messages with every call answered and every result called for, what changed).

    Calls whose id is in `pending` stay unanswered. Unchanged messages are
    returned as the very same objects.
    """
    pairing = pair(messages)
    orphan_results = set(pairing.orphan_results)
    notes: list[str] = []
    out: list[Message] = []
    for index, msg in enumerate(messages):
        if index in orphan_results:
            notes.append(f"#{index}: dropped a {m.role(msg)} result whose call is gone")
            continue
        if m.role(msg) == "assistant":
            keep = pairing.answered_slots(index)
            for slot, call in enumerate(m.tool_calls(msg)):
                if slot not in keep and m.call_id(call) in pending:
                    keep = keep | {slot}
                    label = m.call_name(call) or "?"
                    notes.append(f"#{index}: kept call {m.call_id(call)} ({label}): no result yet")
            msg = _strip_unanswered(msg, index, keep, notes)
        out.append(msg)
    return out, notes


def _strip_unanswered(msg: Message, index: int, keep: set[int], notes: list[str]) -> Message:
    calls = m.tool_calls(msg)
    raw_calls = msg.get("tool_calls")
    legacy = m.legacy_function_call(msg)
    lost_tool_calls = [k for k in range(len(calls)) if k not in keep]
    lost_legacy = legacy is not None and LEGACY_SLOT not in keep
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
