"""The format registry: detection, conversion between formats, and the
`formats` / `convert` commands."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ctxpack import formats, markers, toolpairs
from ctxpack import messages as m
from ctxpack.cli import app
from ctxpack.errors import UsageError
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message
from tests.conftest import COUNTER, FIXTURES

DETECTED = {
    "claude-code": "claude-code",
    "claude-stream-json": "claude-stream-json",
    "codex": "codex",
    "openai-chat": "openai",
    "openhands": "openhands",
    "sharegpt": "sharegpt",
    "swe-agent": "swe-agent",
}
ALL = sorted(p for p in FIXTURES.glob("*/*") if p.parent.name in DETECTED)
SOURCES = [
    FIXTURES / "claude-code" / "openagents__regex-log__opus-raw.jsonl",
    FIXTURES
    / "claude-stream-json"
    / "openagents__logs__20251222_175115-call-issue-ready-now-to.jsonl",
    FIXTURES / "codex" / "Trezo-Ai__codex-session.jsonl",
    FIXTURES / "swe-agent" / "SWE-agent__demonstrations__function_calling_simple.traj",
    FIXTURES / "openhands" / "OpenHands__tests__runtime__trajs__basic_gui_mode.json",
]
WRITABLE = [name for name, adapter in formats.REGISTRY.items() if adapter.writable]


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_formats_are_detected_from_content(path: Path) -> None:
    data = path.read_bytes()
    assert formats.detect(data, path=str(path)).name == DETECTED[path.parent.name]
    assert formats.read(data, path="no-extension").format == DETECTED[path.parent.name]


def test_a_first_line_longer_than_the_detection_head_still_detects() -> None:
    lines = (
        (FIXTURES / "claude-code" / "openagents__regex-log__opus-raw.jsonl")
        .read_bytes()
        .split(b"\n")
    )
    first = json.loads(lines[1])
    first["message"]["content"] = "x" * 100_000
    data = b"\n".join([json.dumps(first).encode(), *lines[2:]])
    assert formats.detect(data, path="big.jsonl").name == "claude-code"


def _view(msgs: list[Message]) -> list[Any]:
    """What survives any conversion: texts, calls (parsed arguments), reasoning."""
    out: list[Any] = []
    for msg in msgs:
        role = m.role(msg)
        out.append(
            (
                role if role in ("assistant", "tool") else "other",
                m.text(msg),  # formats with one string per turn join the parts
                [
                    (m.call_name(c), toolpairs.parse_arguments(m.call_arguments(c)))
                    for c in m.tool_calls(msg)
                ],
                [t for t in m.reasoning_texts(msg) if t],
            )
        )
    return out


@pytest.mark.parametrize("target", WRITABLE)
@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.parent.name)
def test_conversion_keeps_what_the_model_sees(path: Path, target: str) -> None:
    transcript = formats.read(path.read_bytes(), path=str(path))
    out = formats.write(transcript, fmt=target, counter=COUNTER)
    back = formats.read(out, path="converted")
    assert back.format == target
    before, after = transcript.sessions[0].messages, back.sessions[0].messages
    assert _view(after) == _view(before)
    assert len(toolpairs.orphans(after)[1]) == len(toolpairs.orphans(before)[1])
    assert toolpairs.orphans(after)[0] == []


def test_conversion_from_claude_code_keeps_the_token_count(counter: TokenCounter) -> None:
    path = SOURCES[0]
    transcript = formats.read(path.read_bytes(), path=str(path))
    tokens = counter.messages(transcript.sessions[0].messages)
    for target in WRITABLE:
        back = formats.read(formats.convert(transcript, target, counter=COUNTER), path="x")
        assert counter.messages(back.sessions[0].messages) == tokens, target


def test_codex_reasoning_items_become_plain_reasoning_in_openai() -> None:
    path = SOURCES[2]
    transcript = formats.read(path.read_bytes(), path=str(path))
    lines = formats.convert(transcript, "openai", counter=COUNTER).split(b"\n")
    assert b"encrypted_content" not in b"".join(lines)
    assert all("reasoning" not in json.loads(line) for line in lines if line)


def test_read_only_and_unknown_targets_are_usage_errors() -> None:
    transcript = formats.read(SOURCES[0].read_bytes(), path="x")
    with pytest.raises(UsageError, match="read but not written"):
        formats.write(transcript, fmt="openhands", counter=COUNTER)
    with pytest.raises(UsageError, match="unknown format"):
        formats.write(transcript, fmt="yaml", counter=COUNTER)


def test_converting_into_the_format_read_writes_the_messages_alone() -> None:
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    source = json.dumps({"messages": msgs, "meta": {"k": 1}}, indent=2).encode()
    transcript = formats.read(source, path="t.json")
    assert formats.write(transcript, counter=COUNTER) == source
    assert formats.convert(transcript, "openai", counter=COUNTER) == (
        b'{"role":"user","content":"hi"}\n{"role":"assistant","content":"yo"}\n'
    )


def test_a_writer_refuses_the_layout_another_format_read() -> None:
    codex = formats.read(SOURCES[2].read_bytes(), path="x")
    posing = dataclasses.replace(codex, format="claude-code")
    with pytest.raises(TypeError, match="'claude-code' transcript carries CodexLayout, not the Cl"):
        formats.write(posing, counter=COUNTER)


def test_a_writer_refuses_a_session_another_format_read() -> None:
    claude = formats.read(SOURCES[0].read_bytes(), path="x")
    codex = formats.read(SOURCES[2].read_bytes(), path="x").sessions[0]
    edited = codex.with_messages(codex.messages[:-1])
    with pytest.raises(TypeError, match="a session carries CodexContext, not the ClaudeCodeCont"):
        formats.write(claude.with_sessions([edited]), counter=COUNTER)


def test_formats_command_lists_every_adapter() -> None:
    result = CliRunner().invoke(app, ["formats", "--json"])
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    assert [r["name"] for r in rows] == list(formats.REGISTRY)
    read_only = {"swe-agent", "openhands", "gemini", "atif"}
    assert {r["name"] for r in rows if not r["writable"]} == read_only
    assert all(r["readable"] and r["description"] for r in rows)


def test_convert_command_writes_the_target_format(tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    source = SOURCES[3]
    result = CliRunner().invoke(app, ["convert", str(source), "--to", "openai", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "swe-agent (detected)" in result.stderr
    msgs = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(msgs) == len(json.loads(source.read_bytes())["history"])
    refused = CliRunner().invoke(app, ["convert", str(source), "--to", "swe-agent"])
    assert refused.exit_code == 2


def test_a_summary_converted_to_claude_code_or_codex_uses_their_markers() -> None:
    summary = {
        "role": "user",
        "content": f"{markers.SUMMARY_PREFIX}\n\nFixed the parser.\n{markers.SUMMARY_END}",
    }
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "bash", "arguments": '{"cmd":"ls"}'},
    }
    msgs = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Fix the parser."},
        summary,
        {"role": "assistant", "content": "Checking.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "parser.py"},
        {"role": "assistant", "content": "Done."},
    ]
    transcript = formats.read(b"".join(json.dumps(x).encode() + b"\n" for x in msgs), path="x")
    claude = formats.convert(transcript, "claude-code", counter=COUNTER)
    objs = [json.loads(line) for line in claude.splitlines()]
    by_uuid = {o["uuid"]: o for o in objs}
    chain = [objs[-1]]
    while chain[-1]["parentUuid"] is not None:
        chain.append(by_uuid[chain[-1]["parentUuid"]])
    chain.reverse()
    # The boundary, then the turns in order: system note, request, record, tail.
    assert chain[0]["subtype"] == "compact_boundary" and chain[3]["isCompactSummary"]
    assert chain[2]["message"]["content"] == "Fix the parser."
    read = formats.read(claude, path="c").sessions[0].messages
    assert [x["content"] for x in read[:3]] == [
        msgs[0]["content"],
        msgs[1]["content"],
        summary["content"],
    ]
    codex = formats.convert(transcript, "codex", counter=COUNTER)
    kinds = [json.loads(line)["type"] for line in codex.splitlines()]
    assert kinds[:3] == ["session_meta", "compacted", "event_msg"]
    back = formats.read(codex, path="x").sessions[0].messages
    assert [m.role(x) for x in back] == ["system", "user", "user", "assistant", "tool", "assistant"]
    assert back[2]["content"] == summary["content"]
