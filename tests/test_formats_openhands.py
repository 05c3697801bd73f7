"""The `openhands` adapter (read only): V0 event lists and V1 SDK events."""

from __future__ import annotations

import json
from typing import Any

from ctxpack import formats, markers, toolpairs
from ctxpack import messages as m
from tests.conftest import COUNTER, FIXTURES

GUI = FIXTURES / "openhands" / "OpenHands__tests__runtime__trajs__basic_gui_mode.json"


def test_v0_events_convert_to_openai_with_consistent_tool_pairs() -> None:
    events = json.loads(GUI.read_bytes())
    transcript = formats.read(GUI.read_bytes(), path=str(GUI))
    assert transcript.format == "openhands"
    assert transcript.last_timestamp == events[-1]["timestamp"]
    out = formats.write(transcript, fmt="openai", counter=COUNTER)
    msgs = formats.read(out, path="out.jsonl").sessions[0].messages
    assert toolpairs.orphans(msgs) == ([], [])
    metas = [
        e["tool_call_metadata"] for e in events if "action" in e and e.get("tool_call_metadata")
    ]
    assert [m.call_id(c) for x in msgs for c in m.tool_calls(x)] == [
        t["tool_call_id"] for t in metas
    ]
    observed = [e for e in events if "observation" in e and e.get("tool_call_metadata")]
    results = [x for x in msgs if m.role(x) == "tool"]
    assert len(results) == len(observed) == len(metas)
    assert msgs[0] == {"role": "user", "content": events[4]["args"]["content"]}
    assert m.role(msgs[-1]) == "assistant" and m.text(msgs[-1]) == events[15]["args"]["content"]
    # The command that produced no output still says how it ended.
    assert results[0]["content"] == "\n[The command completed with exit code 0.]"
    first_call = m.tool_calls(msgs[1])[0]
    assert json.loads(m.call_arguments(first_call)) == {"command": "mkdir -p /workspace/todo-app"}


def _event(kind: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": fields.pop("id"),
        "timestamp": "2026-02-09T19:28:44",
        "source": "agent",
        "kind": kind,
        **fields,
    }


def _action(
    event_id: str, call_id: str, response: str, call: dict[str, Any], thought: str = ""
) -> dict[str, Any]:
    """An agent's terminal call, as a V1 ActionEvent."""
    return _event(
        "ActionEvent",
        id=event_id,
        thought=[{"type": "text", "text": thought}] if thought else [],
        tool_call={**call, "id": call_id},
        tool_call_id=call_id,
        tool_name="terminal",
        llm_response_id=response,
        action={},
    )


def _observation(event_id: str, call_id: str, text: str, *, action: str) -> dict[str, Any]:
    """What the terminal answered `action`, as a V1 ObservationEvent."""
    return _event(
        "ObservationEvent",
        id=event_id,
        tool_call_id=call_id,
        tool_name="terminal",
        observation={"content": [{"type": "text", "text": text}]},
        action_id=action,
    )


def test_v1_events_apply_the_condensation() -> None:
    call = {"id": "tc1", "name": "terminal", "arguments": '{"command": "ls"}'}
    events = [
        _event(
            "SystemPromptEvent",
            id="e0",
            source="agent",
            system_prompt={"type": "text", "text": "You are OpenHands."},
            tools=[],
        ),
        _event(
            "MessageEvent",
            id="e1",
            source="user",
            llm_message={
                "role": "user",
                "content": [{"type": "text", "text": "Why is it loading?"}],
            },
        ),
        _action("e2", "tc1", "r1", call, thought="Listing."),
        _observation("e3", "tc1", "a.py", action="e2"),
        _event(
            "Condensation",
            id="e4",
            forgotten_event_ids=["e2", "e3"],
            summary="USER_CONTEXT: loading bug",
            summary_offset=2,
        ),
        _action("e5", "tc2", "r2", call, thought="Reading both."),
        _action("e6", "tc3", "r2", call),
        _observation("e7", "tc2", "x", action="e5"),
        _observation("e8", "tc3", "y", action="e6"),
    ]
    msgs = formats.read(json.dumps(events).encode(), path="events.json").sessions[0].messages
    assert [m.role(x) for x in msgs] == ["system", "user", "user", "assistant", "tool", "tool"]
    assert (
        markers.is_summary(msgs[2]) and markers.summary_body(msgs[2]) == "USER_CONTEXT: loading bug"
    )
    assert [m.call_id(c) for c in m.tool_calls(msgs[3])] == ["tc2", "tc3"]
    assert msgs[3]["content"] == "Reading both."
    assert toolpairs.orphans(msgs) == ([], [])
