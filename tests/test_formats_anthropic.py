"""The `anthropic` adapter: Messages API records and Cline message lists.

The conversations come from the Claude Code fixture (its assistant lines are
Messages API responses), regrouped into Anthropic messages by the test.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ctxpack import formats, markers, toolpairs
from ctxpack import messages as m
from ctxpack.tokens.counter import TokenCounter
from tests.conftest import COUNTER, FIXTURES
from tests.test_formats_support import compact, compacted, expected, normal, summaries, updated

HAIKU = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"


def conversation() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    last_id = None
    for line in HAIKU.read_text().splitlines():
        obj = json.loads(line)
        if obj.get("type") == "assistant":
            if obj["message"]["id"] == last_id:
                out[-1]["content"].extend(obj["message"]["content"])
            else:
                out.append({"role": "assistant", "content": list(obj["message"]["content"])})
            last_id = obj["message"]["id"]
        elif obj.get("type") == "user":
            out.append({"role": "user", "content": obj["message"]["content"]})
            last_id = None
    return out


SYSTEM = "You write careful regular expressions."
# Two records: a prefix ending on a tool result, and the whole conversation.
CUTS = (
    next(k for k in range(20, 40) if conversation()[k - 1]["role"] == "user"),
    len(conversation()),
)
SHAPES = {
    "record-indented": json.dumps(
        {"system": SYSTEM, "messages": conversation()}, indent=2
    ).encode(),
    "message-list": json.dumps(conversation(), ensure_ascii=False).encode(),
    "records-jsonl": b"".join(
        json.dumps({"model": "claude", "system": SYSTEM, "messages": conversation()[:k]}).encode()
        + b"\n"
        for k in CUTS
    ),
}


def _expected(items: list[dict[str, Any]], system: str | None) -> tuple[int, int]:
    texts = [system] if system else []
    messages = 1 if system else 0
    for item in items:
        content = item["content"]
        if isinstance(content, str):
            texts.append(content)
            messages += 1
            continue
        if item["role"] == "assistant":
            messages += 1
            thinking = [b["thinking"] for b in content if b["type"] == "thinking" and b["thinking"]]
            texts += ["\n".join(thinking)] if thinking else []
            for block in content:
                if block["type"] == "text":
                    texts.append(block["text"])
                elif block["type"] == "tool_use":
                    texts += [block["name"], compact(block["input"])]
            continue
        for block in content:
            messages += 1  # every block of these user turns is a tool result
            inner = block["content"]
            texts += [inner] if isinstance(inner, str) else [b["text"] for b in inner]
    return expected(texts, messages), messages


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_unchanged_write_is_byte_identical(shape: str) -> None:
    transcript = formats.read(SHAPES[shape], path="conv.json")
    assert transcript.format == "anthropic"
    assert formats.write(transcript, counter=COUNTER) == SHAPES[shape]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_token_count_matches_a_direct_count(shape: str, counter: TokenCounter) -> None:
    transcript = formats.read(SHAPES[shape], path="conv.json")
    if shape == "message-list":
        wanted = [_expected(json.loads(SHAPES[shape]), None)]
    elif shape == "record-indented":
        wanted = [_expected(conversation(), SYSTEM)]
    else:
        wanted = [_expected(conversation()[:k], SYSTEM) for k in CUTS]
    for session, (tokens, messages) in zip(transcript.sessions, wanted, strict=True):
        assert len(session.messages) == messages
        assert counter.messages(session.messages) == tokens
        assert toolpairs.orphans(session.messages) == ([], [])


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_compaction_is_written_in_the_same_shape(shape: str) -> None:
    data = SHAPES[shape]
    transcript = formats.read(data, path="conv.json")
    small, new = compacted(transcript, head=3 if shape != "message-list" else 2, tail=8)
    out = formats.write(small, counter=COUNTER)
    if shape == "records-jsonl":
        first, second = out.split(b"\n")[:2]
        assert second == data.split(b"\n")[1]
        doc = json.loads(first)
    else:
        doc = json.loads(out)
    items = doc if isinstance(doc, list) else doc["messages"]
    uses = _block_values(items, "tool_use", "id")
    answers = _block_values(items, "tool_result", "tool_use_id")
    assert uses == answers and uses
    back = formats.read(out, path="out.json").sessions[0].messages
    assert normal(back) == normal(new)
    assert len(summaries(back)) == 1
    again, _ = updated(formats.read(out, path="out.json"), "Second summary.")
    twice = (
        formats.read(formats.write(again, counter=COUNTER), path="twice.json").sessions[0].messages
    )
    assert [markers.summary_body(x) for x in summaries(twice)] == ["Second summary."]


def test_unchanged_messages_keep_their_bytes_in_a_changed_list() -> None:
    data = SHAPES["record-indented"]
    transcript = formats.read(data, path="conv.json")
    session = transcript.sessions[0]
    msgs = list(session.messages)
    index = max(i for i, x in enumerate(msgs) if m.role(x) == "tool")
    msgs[index] = {**msgs[index], "content": "[output pruned]"}
    out = formats.write(transcript.with_sessions([session.with_messages(msgs)]), counter=COUNTER)
    assert json.loads(out)["system"] == SYSTEM
    before, after = data.split(b"\n"), out.split(b"\n")
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b]
    assert len(changed) == 1 and b"[output pruned]" in after[changed[0]]


def test_cline_text_results_answer_the_call_before_them() -> None:
    cline = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "<task>List the files</task>"}],
            "ts": 1777073173000,
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "tooluse_1",
                    "name": "list_files",
                    "input": {"path": "."},
                }
            ],
            "modelInfo": {"modelId": "claude_4_5_opus"},
            "ts": 1777073174000,
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[list_files] Result:\nREADME.md\nsrc/"},
                {"type": "text", "text": "<environment_details>cwd: /repo</environment_details>"},
            ],
            "ts": 1777073175000,
        },
    ]
    data = json.dumps(cline, indent=2).encode()
    transcript = formats.read(data, path="api_conversation_history.json")
    msgs = transcript.sessions[0].messages
    assert [m.role(x) for x in msgs] == ["user", "assistant", "tool", "user"]
    assert msgs[2] == {
        "role": "tool",
        "tool_call_id": "tooluse_1",
        "content": "[list_files] Result:\nREADME.md\nsrc/",
    }
    assert transcript.last_timestamp == "2026-04-24T23:26:15Z"
    edited = [*msgs[:2], {**msgs[2], "content": "[list_files] Result: (pruned)"}, msgs[3]]
    out = formats.write(
        transcript.with_sessions([transcript.sessions[0].with_messages(edited)]), counter=COUNTER
    )
    last = json.loads(out)[2]
    assert last["content"][0] == {"type": "text", "text": "[list_files] Result: (pruned)"}
    assert last["content"][1] == cline[2]["content"][1]  # type: ignore[index]
    assert last["ts"] == 1777073175000


def _block_values(items: list[Any], block_type: str, key: str) -> set[str]:
    """`key` of every content block of `block_type` in the messages."""
    return {
        b[key]
        for i in items
        if isinstance(i["content"], list)
        for b in i["content"]
        if b["type"] == block_type
    }
