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
        _event(
            "ActionEvent",
            id="e2",
            thought=[{"type": "text", "text": "Listing."}],
            tool_call=call,
            tool_call_id="tc1",
            tool_name="terminal",
            llm_response_id="r1",
            action={},
        ),
        _event(
            "ObservationEvent",
            id="e3",
            tool_call_id="tc1",
            tool_name="terminal",
            observation={"content": [{"type": "text", "text": "a.py"}], "is_error": False},
            action_id="e2",
        ),
        _event(
            "Condensation",
            id="e4",
            forgotten_event_ids=["e2", "e3"],
            summary="USER_CONTEXT: loading bug",
            summary_offset=2,
        ),
        _event(
            "ActionEvent",
            id="e5",
            thought=[{"type": "text", "text": "Reading both."}],
            tool_call={**call, "id": "tc2"},
            tool_call_id="tc2",
            tool_name="terminal",
            llm_response_id="r2",
            action={},
        ),
        _event(
            "ActionEvent",
            id="e6",
            thought=[],
            tool_call={**call, "id": "tc3"},
            tool_call_id="tc3",
            tool_name="terminal",
            llm_response_id="r2",
            action={},
        ),
        _event(
            "ObservationEvent",
            id="e7",
            tool_call_id="tc2",
            tool_name="terminal",
            observation={"content": [{"type": "text", "text": "x"}]},
            action_id="e5",
        ),
        _event(
            "ObservationEvent",
            id="e8",
            tool_call_id="tc3",
            tool_name="terminal",
            observation={"content": [{"type": "text", "text": "y"}]},
            action_id="e6",
        ),
    ]
    msgs = formats.read(json.dumps(events).encode(), path="events.json").sessions[0].messages
    assert [m.role(x) for x in msgs] == ["system", "user", "user", "assistant", "tool", "tool"]
    assert (
        markers.is_summary(msgs[2]) and markers.summary_body(msgs[2]) == "USER_CONTEXT: loading bug"
    )
    assert [m.call_id(c) for c in m.tool_calls(msgs[3])] == ["tc2", "tc3"]
    assert msgs[3]["content"] == "Reading both."
    assert toolpairs.orphans(msgs) == ([], [])
