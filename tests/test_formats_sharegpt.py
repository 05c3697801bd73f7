"""The `sharegpt` adapter: glaive function calls and Hermes tool tags."""

from __future__ import annotations

import json
from typing import Any

from ctxpack import formats, markers, toolpairs
from ctxpack import messages as m
from ctxpack.tokens.counter import TokenCounter
from tests.conftest import COUNTER, FIXTURES
from tests.test_formats_support import compact, compacted, expected, normal, summaries, updated

GLAIVE = FIXTURES / "sharegpt" / "LLaMA-Factory__data__glaive_toolcall_en_demo.json"

# Shaped like a Hermes Agent trajectory export: two calls in one gpt turn,
# both answers in one tool turn, ids in the answers that the calls lack.
HERMES: dict[str, Any] = {
    "conversations": [
        {"from": "system", "value": 'You call tools. <tools>[{"name": "read_file"}]</tools>'},
        {"from": "human", "value": "Check both report templates."},
        {
            "from": "gpt",
            "value": "<think>\nI should read both files first.\n</think>\nReading them now.\n"
            '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.html"}}\n</tool_call>\n'
            '<tool_call>\n{"name": "read_file", "arguments": {"path": "b.html"}}\n</tool_call>',
        },
        {
            "from": "tool",
            "value": '<tool_response>\n{"tool_call_id": "qwen_tc_0", "name": "read_file", '
            '"content": "<html>report a</html>"}\n</tool_response>\n<tool_response>\n'
            '{"tool_call_id": "qwen_tc_1", "name": "read_file", "content": {"status": "ok", '
            '"size": 14}}\n</tool_response>',
        },
        {"from": "gpt", "value": "Both templates render; b.html is 14 bytes."},
    ],
    "timestamp": "2026-03-01T10:00:00",
    "model": "hermes-4",
    "completed": True,
}


def _hermes_file(records: int = 2) -> bytes:
    return b"".join(json.dumps(HERMES).encode() + b"\n" for _ in range(records))


def test_unchanged_write_is_byte_identical() -> None:
    for data in (GLAIVE.read_bytes(), _hermes_file()):
        transcript = formats.read(data, path="data")
        assert transcript.format == "sharegpt"
        assert formats.write(transcript, counter=COUNTER) == data


def test_glaive_token_count_matches_a_direct_count(counter: TokenCounter) -> None:
    records = json.loads(GLAIVE.read_bytes())
    texts: list[str] = []
    turns = 0
    for record in records:
        for turn in record["conversations"]:
            turns += 1
            if turn["from"] == "function_call":
                call = json.loads(turn["value"])
                texts += [call["name"], compact(call["arguments"])]
            else:
                texts.append(turn["value"])
    transcript = formats.read(GLAIVE.read_bytes(), path=str(GLAIVE))
    assert len(transcript.sessions) == len(records)
    msgs = [msg for s in transcript.sessions for msg in s.messages]
    assert len(msgs) == turns
    assert counter.messages(msgs) == expected(texts, turns)


def test_glaive_observations_answer_the_call_before_them() -> None:
    transcript = formats.read(GLAIVE.read_bytes(), path=str(GLAIVE))
    msgs = transcript.sessions[0].messages
    call = m.tool_calls(msgs[3])[0]
    assert m.call_id(call) == "call_3_0" and m.call_name(call) == "search_recipes"
    assert msgs[4]["tool_call_id"] == "call_3_0" and msgs[4]["name"] == "search_recipes"
    assert all(toolpairs.orphans(s.messages) == ([], []) for s in transcript.sessions)


def test_hermes_tags_become_calls_results_and_reasoning(counter: TokenCounter) -> None:
    msgs = formats.read(_hermes_file(1), path="h.jsonl").sessions[0].messages
    assert [m.role(x) for x in msgs] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    turn = msgs[2]
    assert turn["content"] == "Reading them now."
    assert turn["reasoning_content"] == "I should read both files first."
    assert [json.loads(m.call_arguments(c)) for c in m.tool_calls(turn)] == [
        {"path": "a.html"},
        {"path": "b.html"},
    ]
    assert [x["tool_call_id"] for x in msgs[3:5]] == ["call_2_0", "call_2_1"]
    assert msgs[4]["content"] == compact({"status": "ok", "size": 14})
    texts = [HERMES["conversations"][0]["value"], HERMES["conversations"][1]["value"]]
    texts += ["Reading them now.", "I should read both files first."]
    texts += ["read_file", compact({"path": "a.html"}), "read_file", compact({"path": "b.html"})]
    texts += ["<html>report a</html>", compact({"status": "ok", "size": 14})]
    texts.append(HERMES["conversations"][4]["value"])
    assert counter.messages(msgs) == expected(texts, 6)


def test_glaive_compaction_keeps_other_records_byte_identical() -> None:
    data = GLAIVE.read_bytes()
    transcript = formats.read(data, path=str(GLAIVE))
    small, new = compacted(transcript, head=1, tail=6)
    out = formats.write(small, counter=COUNTER)
    second = data.index(b'\n  {\n    "conversations"', 10)
    assert out.endswith(data[second:])
    record = json.loads(out)[0]
    froms = [t["from"] for t in record["conversations"]]
    for i, kind in enumerate(froms):
        if kind == "function_call":
            assert froms[i + 1] == "observation"
        if kind == "observation":
            assert froms[i - 1] == "function_call"
    assert record["conversations"][1]["value"] == new[1]["content"]
    back = formats.read(out, path="out.json").sessions[0].messages
    assert normal(back) == normal(new) and len(summaries(back)) == 1
    assert "[output pruned]" in json.dumps(record)


def test_hermes_compaction_and_update() -> None:
    data = _hermes_file()
    transcript = formats.read(data, path="h.jsonl")
    session = transcript.sessions[0]
    msgs = session.messages
    pruned = {**msgs[4], "content": "[output pruned]"}
    summary = {
        "role": "user",
        "content": f"{markers.SUMMARY_PREFIX}\n\nRead a.html.\n{markers.SUMMARY_END}",
    }
    new = [msgs[0], summary, msgs[2], msgs[3], pruned, msgs[5]]
    out = formats.write(
        transcript.with_sessions([session.with_messages(new), transcript.sessions[1]]),
        counter=COUNTER,
    )
    first, rest = out.split(b"\n", 1)
    assert rest == data.split(b"\n", 1)[1]
    record = json.loads(first)
    assert [t["from"] for t in record["conversations"]] == ["system", "human", "gpt", "tool", "gpt"]
    tool_value = record["conversations"][3]["value"]
    assert tool_value.startswith(HERMES["conversations"][3]["value"].split("\n</tool_response>")[0])
    assert tool_value.count("<tool_response>") == 2 and '"content": "[output pruned]"' in tool_value
    back = formats.read(out, path="out.jsonl")
    assert normal(back.sessions[0].messages) == normal(new)
    again, _ = updated(back, "Read both files.")
    twice = (
        formats.read(formats.write(again, counter=COUNTER), path="twice.jsonl").sessions[0].messages
    )
    assert [markers.summary_body(x) for x in summaries(twice)] == ["Read both files."]
