"""The `codex` adapter: Codex CLI rollouts."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack import formats, markers, toolpairs
from ctxpack import messages as m
from ctxpack.formats import origins
from ctxpack.summarize.sanitize import EMPTIED_NOTE
from ctxpack.tokens.counter import TokenCounter
from tests.conftest import COUNTER, FIXTURES
from tests.test_formats_support import (
    compact,
    compacted,
    expected,
    mutated,
    normal,
    sanitize,
    summaries,
    updated,
)

ROLLOUT = FIXTURES / "codex" / "Trezo-Ai__codex-session.jsonl"
ASSISTANT_SIDE = {"reasoning", "function_call", "custom_tool_call", "web_search_call"}


def _lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.split(b"\n") if line.strip()]


def _replay(data: bytes) -> list[dict[str, Any]]:
    """The model history as Codex rebuilds it on resume."""
    history: list[dict[str, Any]] = []
    for obj in _lines(data):
        if obj["type"] == "response_item":
            history.append(obj["payload"])
        elif obj["type"] == "compacted":
            history = list(obj["payload"]["replacement_history"])
    return history


def _read(data: bytes) -> formats.Transcript:  # type: ignore[name-defined]
    return formats.read(data, path="rollout.jsonl")


def test_unchanged_write_is_byte_identical() -> None:
    data = ROLLOUT.read_bytes()
    transcript = _read(data)
    assert transcript.format == "codex"
    assert formats.write(transcript, counter=COUNTER) == data


def test_token_count_matches_a_direct_count(counter: TokenCounter) -> None:
    objs = _lines(ROLLOUT.read_bytes())
    texts = [objs[0]["payload"]["base_instructions"]["text"]]
    messages = 1
    in_group = False
    for obj in objs:
        if obj["type"] != "response_item":
            continue
        item = obj["payload"]
        kind = item["type"]
        if kind == "message" and item["role"] != "assistant":
            in_group = False
            messages += 1
            texts += [part["text"] for part in item["content"]]
        elif kind == "function_call_output":
            in_group = False
            messages += 1
            texts.append(item["output"])
        elif kind in ASSISTANT_SIDE or kind == "message":
            if kind != "web_search_call" and not in_group:
                messages += 1
                in_group = True
            if kind == "message":
                texts += [part["text"] for part in item["content"]]
            elif kind == "function_call":
                texts += [item["name"], item["arguments"]]
            elif kind == "custom_tool_call":
                texts += [item["name"], compact({"input": item["input"]})]
            elif kind == "reasoning":
                texts += [s["text"] for s in item["summary"]]
    session = _read(ROLLOUT.read_bytes()).sessions[0]
    assert len(session.messages) == messages
    assert counter.messages(session.messages) == expected(texts, messages)


def test_items_map_to_chat_messages() -> None:
    transcript = _read(ROLLOUT.read_bytes())
    msgs = transcript.sessions[0].messages
    assert [m.role(x) for x in msgs[:5]] == ["system", "developer", "user", "user", "assistant"]
    assert msgs[0]["content"].startswith("You are Codex")
    first = msgs[4]
    assert [m.call_name(c) for c in m.tool_calls(first)] == ["exec_command"] * 4
    assert first["reasoning"][0]["encrypted_content"].startswith("gAAAA")
    assert transcript.last_timestamp == _lines(ROLLOUT.read_bytes())[-1]["timestamp"]
    # The rollout stops mid-turn: its last calls were never answered.
    assert toolpairs.orphans(msgs)[0] == []


def test_compaction_writes_a_compacted_line() -> None:
    data = ROLLOUT.read_bytes()
    small, new = compacted(_read(data), head=4, tail=10)
    out = formats.write(small, counter=COUNTER)
    found = [o for o in _lines(out) if o["type"] == "compacted"]
    assert len(found) == 1
    payload = found[0]["payload"]
    assert markers.summary_body(
        {"role": "user", "content": payload["message"]}
    ) == markers.summary_body(new[4])
    history = payload["replacement_history"]
    assert [i["role"] for i in history] == ["developer", "user", "user", "user"]
    assert history[-1]["content"][0]["text"] == new[4]["content"]
    replayed = _replay(out)
    calls = {i["call_id"] for i in replayed if i["type"] == "function_call"}
    outputs = {i["call_id"] for i in replayed if i["type"] == "function_call_output"}
    assert calls == outputs and calls
    back = _read(out).sessions[0].messages
    assert normal(back) == normal(new)
    assert len(summaries(back)) == 1
    # The history the compacted line replaces leaves the file; what stays
    # before it (session meta, turn contexts, telemetry, copies of kept items)
    # is byte for byte what the input had, in the same order.
    lines = out.split(b"\n")
    at = next(i for i, o in enumerate(_lines(out)) if o["type"] == "compacted")
    before = [json.loads(x) for x in lines[:at]]
    assert {o["type"] for o in before} == {"session_meta", "turn_context", "event_msg"}
    original = data.split(b"\n")
    assert [original.index(x) for x in lines[:at]] == sorted(original.index(x) for x in lines[:at])
    kept_texts = {m.text(x) for x in new}
    for o in before:
        payload = o["payload"]
        assert "call_id" not in payload
        if payload.get("type") in ("user_message", "agent_message"):
            assert payload["message"] in kept_texts
    assert [o["payload"].get("type") for o in before].count("user_message") == 1
    # UI copies of summarized calls are gone too.
    ended = {o["payload"]["call_id"] for o in _lines(out) if "call_id" in o["payload"]}
    assert ended <= {i["call_id"] for i in replayed if "call_id" in i}
    assert len(out) < len(data) / 2


def test_compacting_again_updates_the_summary_instead_of_nesting() -> None:
    once = formats.write(
        compacted(_read(ROLLOUT.read_bytes()), head=4, tail=10)[0], counter=COUNTER
    )
    again, _ = updated(_read(once), "3. Drafted the grant answers.")
    twice = formats.write(again, counter=COUNTER)
    back = _read(twice).sessions[0].messages
    assert [markers.summary_body(x) for x in summaries(back)] == ["3. Drafted the grant answers."]
    kinds = [(o["type"], o["payload"].get("type")) for o in _lines(twice)]
    assert kinds.count(("compacted", None)) == 1
    assert kinds.count(("event_msg", "context_compacted")) == 1


def test_an_edit_inside_an_earlier_compaction_rewrites_that_line_in_place() -> None:
    once = formats.write(
        compacted(_read(ROLLOUT.read_bytes()), head=4, tail=10)[0], counter=COUNTER
    )
    transcript = _read(once)
    session = transcript.sessions[0]
    msgs = list(session.messages)
    assert m.role(msgs[2]) == "user" and not markers.is_summary(msgs[2])
    msgs[2] = {**msgs[2], "content": "shortened"}
    out = formats.write(transcript.with_sessions([session.with_messages(msgs)]), counter=COUNTER)
    before, after = once.split(b"\n"), out.split(b"\n")
    assert len(before) == len(after)
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert len(changed) == 1
    line = json.loads(after[changed[0]])
    assert line["type"] == "compacted"
    assert line["payload"]["replacement_history"][1]["content"][0]["text"] == "shortened"
    assert normal(_read(out).sessions[0].messages) == normal(msgs)


def test_pruned_output_also_prunes_the_exec_command_end_copy() -> None:
    data = ROLLOUT.read_bytes()
    transcript = _read(data)
    session = transcript.sessions[0]
    msgs = list(session.messages)
    index = next(i for i, x in enumerate(msgs) if m.role(x) == "tool" and len(m.text(x)) > 2000)
    call_id = msgs[index]["tool_call_id"]
    msgs[index] = {**msgs[index], "content": "[output pruned]"}
    out = formats.write(transcript.with_sessions([session.with_messages(msgs)]), counter=COUNTER)
    before, after = _lines(data), _lines(out)
    assert len(before) == len(after)
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert {b["payload"]["type"] for _, b in changed} == {
        "function_call_output",
        "exec_command_end",
    }
    for old, new in changed:
        assert new["payload"]["call_id"] == call_id
        if new["payload"]["type"] == "exec_command_end":
            assert new["payload"]["aggregated_output"] == "[output pruned]"
            assert old["payload"]["command"] == new["payload"]["command"]


def test_an_opaque_server_side_compaction_reads_as_a_summary() -> None:
    raw = ROLLOUT.read_bytes().split(b"\n")
    marker = {
        "timestamp": "2026-04-20T10:21:00.000Z",
        "type": "compacted",
        "payload": {
            "message": "",
            "replacement_history": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "apply for the grant"}],
                },
                {"type": "compaction", "encrypted_content": "gAAAAABopaque"},
            ],
        },
    }
    data = b"\n".join([*raw[:100], json.dumps(marker).encode(), *raw[100:]])
    transcript = _read(data)
    msgs = transcript.sessions[0].messages
    assert [m.role(x) for x in msgs[:3]] == ["system", "user", "user"]
    assert markers.is_summary(msgs[2]) and "server-side" in markers.summary_body(msgs[2])
    assert formats.write(transcript, counter=COUNTER) == data
    # Dropping the opaque summary for a new one writes a fresh compacted line.
    again, _ = updated(transcript, "4. Replaced the opaque summary.")
    back = _read(formats.write(again, counter=COUNTER)).sessions[0].messages
    assert [markers.summary_body(x) for x in summaries(back)] == ["4. Replaced the opaque summary."]


def test_custom_tool_calls_carry_their_raw_input() -> None:
    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n*** End Patch"
    lines = [
        {
            "timestamp": "t0",
            "type": "session_meta",
            "payload": {"id": "s", "base_instructions": {"text": "Be careful."}},
        },
        {
            "timestamp": "t1",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "fix it"}],
            },
        },
        {
            "timestamp": "t2",
            "type": "response_item",
            "payload": {
                "type": "custom_tool_call",
                "status": "completed",
                "call_id": "c1",
                "name": "apply_patch",
                "input": patch,
            },
        },
        {
            "timestamp": "t3",
            "type": "response_item",
            "payload": {
                "type": "custom_tool_call_output",
                "call_id": "c1",
                "output": "Success. Updated a.py",
            },
        },
    ]
    data = b"".join(json.dumps(x).encode() + b"\n" for x in lines)
    transcript = _read(data)
    msgs = transcript.sessions[0].messages
    call = m.tool_calls(msgs[2])[0]
    assert json.loads(m.call_arguments(call)) == {"input": patch}
    assert msgs[3] == {"role": "tool", "tool_call_id": "c1", "content": "Success. Updated a.py"}
    shrunk = {
        **call,
        "function": {**call["function"], "arguments": compact({"input": "*** Begin Patch…"})},
    }
    edited = [*msgs[:2], {**msgs[2], "tool_calls": [shrunk]}, msgs[3]]
    out = formats.write(
        transcript.with_sessions([transcript.sessions[0].with_messages(edited)]), counter=COUNTER
    )
    assert _lines(out)[2]["payload"]["input"] == "*** Begin Patch…"


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_any_stage_edit_reads_back_as_written(seed: int) -> None:
    transcript = _read(ROLLOUT.read_bytes())
    session = transcript.sessions[0]
    new = mutated(session.messages, seed)
    out = formats.write(transcript.with_sessions([session.with_messages(new)]), counter=COUNTER)
    back = _read(out).sessions[0].messages
    assert normal(back) == normal(new)


def test_turns_stripped_of_their_calls_are_written_where_they_stood() -> None:
    # A middle run dropped without a record in its place: turn 40 (calls only)
    # and turn 42 (text and a call) lose their results, so the sanitizer
    # leaves 40 a note and 42 its text. Matched by offset alone, 40 took 44's
    # place and 42 took 31's, and the note was written after the text.
    transcript = _read(ROLLOUT.read_bytes())
    session = transcript.sessions[0]
    msgs = session.messages
    assert [m.role(msgs[i]) for i in (40, 41, 42, 43, 44)] == ["assistant", "tool"] * 2 + [
        "assistant"
    ]
    assert m.text(msgs[40]) == ""
    assert m.text(msgs[42]).startswith("The program crate inherits the broken workspace")
    new = sanitize([*msgs[:27], msgs[29], msgs[40], msgs[42], *msgs[46:]])
    assert m.text(new[28]) == EMPTIED_NOTE
    assert m.text(new[29]) == m.text(msgs[42]) and not m.tool_calls(new[29])
    edited = session.with_messages(new)
    origin = origins.resolve(edited).origin
    assert origin[29] is msgs[42]
    at = {id(msg): i for i, msg in enumerate(msgs)}
    placed = [at[id(orig)] for orig in origin if orig is not None]
    assert placed == sorted(placed)
    back = _read(formats.write(transcript.with_sessions([edited]), counter=COUNTER))
    assert normal(back.sessions[0].messages) == normal(new)


ROLLOUT_0171 = FIXTURES / "codex" / "codex-cli-0.171__stub-tally.jsonl"


def test_a_0171_rollout_with_ordinals_is_detected_and_round_trips() -> None:
    data = ROLLOUT_0171.read_bytes()
    assert _lines(data)[0]["ordinal"] == 0
    assert formats.detect(data, path="rollout.jsonl").name == "codex"
    transcript = _read(data)
    assert formats.write(transcript, counter=COUNTER) == data


def test_a_0171_compaction_numbers_every_line_contiguously() -> None:
    transcript, _ = compacted(_read(ROLLOUT_0171.read_bytes()))
    out = formats.write(transcript, counter=COUNTER)
    objs = _lines(out)
    assert [obj["ordinal"] for obj in objs] == list(range(len(objs)))
    assert {tuple(obj)[:4] for obj in objs} == {("timestamp", "ordinal", "type", "payload")}
    assert {"compacted", "event_msg"} <= {obj["type"] for obj in objs}
    assert len(summaries(_read(out).sessions[0].messages)) == 1


def test_a_rollout_without_ordinals_gets_none_written() -> None:
    transcript, _ = compacted(_read(ROLLOUT.read_bytes()))
    assert b'"ordinal"' not in formats.write(transcript, counter=COUNTER)
