"""The middle as text for the summarizer: roles, tool calls, caps, bound, redaction."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from ctxpack import formats
from ctxpack import messages as m
from ctxpack.summarize.serialize import (
    HEAD_CHARS,
    MAX_CHARS_PER_MESSAGE,
    REDACT_MARGIN,
    TAIL_CHARS,
    serialize_blocks,
    serialize_middle,
)
from ctxpack.toolpairs import link_results
from tests.conftest import TAU_BENCH, TOOLBENCH


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def test_roles_tool_calls_and_labelled_results() -> None:
    middle: list[dict[str, Any]] = [
        {"role": "user", "content": "Why does the build fail?"},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [_call("c1", "bash", {"command": "make"})],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "error: missing header foo.h"},
        {"role": "assistant", "content": None, "tool_calls": [_call("c2", "read_file", {})]},
        {"role": "tool", "tool_call_id": "c2", "content": ""},
    ]
    assert serialize_middle(middle) == (
        "[USER]: Why does the build fail?\n\n"
        "[ASSISTANT]: Let me look.\n"
        "→ bash(command: make)\n\n"
        "[TOOL RESULT: bash]: error: missing header foo.h\n\n"
        "[ASSISTANT]: → read_file()\n\n"
        "[TOOL RESULT: read_file]: (no output)"
    )


def test_reasoning_and_think_blocks_never_go_out() -> None:
    middle = [
        {
            "role": "assistant",
            "content": "<think>secret plan A</think>Visible answer.<thinking>plan B</thinking>",
            "reasoning_content": "hidden chain of thought",
            "thinking": [{"type": "thinking", "thinking": "more hidden"}],
        },
        {"role": "assistant", "content": [{"type": "reasoning", "text": "also hidden"}]},
    ]
    # Only the amount of reasoning is said, never its text.
    assert serialize_middle(middle) == (
        "[ASSISTANT]: Visible answer.\n[reasoning omitted: 89 characters]\n\n"
        "[ASSISTANT]: [reasoning omitted: 11 characters]"
    )


def test_long_message_keeps_head_and_tail_with_omitted_count() -> None:
    body = "".join(chr(ord("a") + i % 26) for i in range(10_000))
    (block,) = serialize_blocks([{"role": "tool", "content": body, "name": "cat"}])
    full = f"[TOOL RESULT: cat]: {body}"
    omitted = len(full) - HEAD_CHARS - TAIL_CHARS
    assert block == (f"{full[:HEAD_CHARS]}\n…[{omitted} chars omitted]…\n{full[-TAIL_CHARS:]}")
    assert len(block) < MAX_CHARS_PER_MESSAGE


def test_secret_is_masked_before_the_cut_so_no_fragment_leaks() -> None:
    key = "sk-proj-" + "Q1w2E3r4T5" * 3
    # The key straddles the head boundary of the cap.
    content = "x" * (HEAD_CHARS - 30) + " " + key + " " + "y" * 8000
    text = serialize_middle([{"role": "user", "content": content}])
    assert "Q1w2E3r4T5" not in text
    assert "sk-proj" not in text


def test_planted_secrets_in_text_and_arguments_are_redacted() -> None:
    middle: list[dict[str, Any]] = [
        {"role": "user", "content": "use token ghp_" + "Z" * 36 + " please"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [_call("c1", "bash", {"command": "ls", "api_key": "abcd1234efgh"})],
        },
    ]
    text = serialize_middle(middle)
    assert "ZZZZ" not in text and "abcd1234efgh" not in text
    assert "[REDACTED:github-token]" in text
    assert "api_key: [REDACTED:secret]" in text


def test_whole_input_is_bounded_oldest_first_with_a_note() -> None:
    middle = [{"role": "user", "content": f"turn {i}\n" + "z" * 900} for i in range(40)]
    text = serialize_middle(middle, max_total_chars=12_000)
    assert len(text) <= 12_000
    assert text.startswith("[NOTE]: to fit the summarizer input, ")
    # The newest turns keep their full text; the oldest are cut to a line or left out.
    assert f"[USER]: turn 39\n{'z' * 900}" in text
    assert f"[USER]: turn 0\n{'z' * 900}" not in text
    assert "[USER]: turn 0 …[abbreviated]" in text or "oldest messages were left out" in text


def test_when_abbreviating_is_not_enough_the_oldest_are_dropped() -> None:
    middle = [{"role": "user", "content": f"turn {i} " + "w" * 300} for i in range(100)]
    text = serialize_middle(middle, max_total_chars=3_000)
    assert len(text) <= 3_000
    first_line = text.split("\n", 1)[0]
    assert "oldest messages were left out" in first_line
    assert text.endswith("[USER]: turn 99 " + "w" * 300)
    assert "turn 0 " not in text


def test_short_input_is_not_touched_by_the_bound() -> None:
    middle = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    assert serialize_middle(middle) == "[USER]: hello\n\n[ASSISTANT]: hi"


def test_real_tau_bench_session_serializes_every_turn() -> None:
    transcript = formats.read(TAU_BENCH.read_bytes(), path=str(TAU_BENCH))
    session = max(transcript.sessions[:20], key=lambda s: len(s.messages))
    middle = session.messages[1:]
    links = link_results(middle)
    assert len(links) == sum(1 for msg in middle if m.is_tool_result(msg)) > 5
    blocks = serialize_blocks(middle)
    labels = [b.split("]: ", 1)[0] + "]" for b in blocks if b.startswith("[TOOL RESULT")]
    assert labels == [f"[TOOL RESULT: {links[i].name}]" for i in sorted(links)]
    called = [m.call_name(c) for msg in middle for c in m.tool_calls(msg)]
    assert re.findall(r"→ (\w+)\(", "\n\n".join(blocks)) == called
    assert all(len(b) <= MAX_CHARS_PER_MESSAGE for b in blocks)


def test_real_toolbench_legacy_function_calls() -> None:
    transcript = formats.read(TOOLBENCH.read_bytes(), path=str(TOOLBENCH))
    middle = transcript.sessions[0].messages[1:]
    text = serialize_middle(middle)
    assert "[FUNCTION" not in text
    assert "[TOOL RESULT: get_track_info_for_pridnestrovie_post]: " in text
    assert "→ get_track_info_for_pridnestrovie_post(" in text


def test_huge_output_is_cut_with_secrets_masked_on_both_sides() -> None:
    head_key = "ghp_" + "H" * 36
    tail_key = "AKIA" + "T" * 16
    content = (
        "a" * (HEAD_CHARS - 40) + f" {head_key} " + "b" * 2_000_000 + f" {tail_key} " + "c" * 50
    )
    start = time.perf_counter()
    (block,) = serialize_blocks([{"role": "tool", "content": content}])
    assert time.perf_counter() - start < 1.0
    assert "HHHH" not in block and "TTTT" not in block
    omitted = len(f"[TOOL RESULT]: {content}") - HEAD_CHARS - TAIL_CHARS
    assert f"\n…[{omitted} chars omitted]…\n" in block
    assert block.endswith("[REDACTED:aws-key] " + "c" * 50)


def test_masking_that_shrinks_the_head_never_pulls_a_key_fragment_in() -> None:
    # A long key block early on shrinks the masked head by more than the margin,
    # and an API key crosses the point where a fixed-size slice would end.
    pem = "-----BEGIN PRIVATE KEY-----\n" + "QUJD\n" * 500 + "-----END PRIVATE KEY-----"
    key = "sk-proj-" + "F9r8A7g6M5" * 4
    before_key = len("[USER]: ") + len(pem) + 2
    filler = "x" * (HEAD_CHARS + REDACT_MARGIN - 10 - before_key)
    content = f"{pem} {filler} {key} " + "z" * 50_000
    (block,) = serialize_blocks([{"role": "user", "content": content}])
    assert "F9r8A7g6M5" not in block and "sk-proj" not in block
    assert block.startswith("[USER]: [REDACTED:private-key] xxx")
    assert "[REDACTED:openai-key] zzz" in block
