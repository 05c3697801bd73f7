"""`ctxpack count` agrees with a direct tiktoken count of the same texts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ctxpack import formats
from ctxpack.cli import app
from ctxpack.tokens.counter import MESSAGE_OVERHEAD, TokenCounter
from ctxpack.tokens.encodings import get_encoding
from ctxpack.tokens.tally import count_transcript
from tests.conftest import OPENAI_FIXTURES, TAU_BENCH, TOOLBENCH

runner = CliRunner()


def _expected_by_role(
    messages: list[dict[str, Any]], count: Callable[[str], int]
) -> dict[str, int]:
    """Independent count: every text the model sees, plus the per-message overhead."""
    out: dict[str, int] = {}
    for msg in messages:
        texts: list[str] = []
        if isinstance(msg.get("content"), str):
            texts.append(msg["content"])
        for call in msg.get("tool_calls") or []:
            texts += [call["function"]["name"], call["function"]["arguments"]]
        if msg.get("function_call"):
            texts += [msg["function_call"]["name"], msg["function_call"]["arguments"]]
        tokens = sum(count(t) for t in texts) + MESSAGE_OVERHEAD
        out[msg["role"]] = out.get(msg["role"], 0) + tokens
    return out


def _raw_sessions(path: Path) -> list[list[dict[str, Any]]]:
    doc = json.loads(path.read_bytes())
    if path == TAU_BENCH:
        return [run["traj"] for run in doc]
    assert path == TOOLBENCH
    return [doc["answer_generation"]["train_messages"][-1]]


@pytest.mark.parametrize("path", OPENAI_FIXTURES, ids=lambda p: p.name)
def test_cli_count_matches_direct_tiktoken(path: Path, no_network: None) -> None:
    enc = get_encoding("o200k_base")
    expected_total: dict[str, int] = {}
    for messages in _raw_sessions(path):
        for role, n in _expected_by_role(messages, lambda t: len(enc.encode_ordinary(t))).items():
            expected_total[role] = expected_total.get(role, 0) + n
    result = runner.invoke(app, ["count", str(path), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["total"]["tokens_by_role"] == dict(sorted(expected_total.items()))
    assert report["total"]["tokens"] == sum(expected_total.values())


def test_per_session_counts_and_kinds_add_up(counter: TokenCounter) -> None:
    transcript = formats.read(TAU_BENCH.read_bytes(), path=str(TAU_BENCH))
    report = count_transcript(transcript, counter=counter)
    assert len(report.sessions) == 200
    assert sum(t.tokens for _, t in report.sessions) == report.total.tokens
    assert sum(report.total.tokens_by_kind.values()) == report.total.tokens
    assert report.total.messages == sum(len(s.messages) for s in transcript.sessions)
    assert report.total.tokens_by_kind["tool_calls"] > 0
    assert report.total.tokens_by_kind["tool_results"] > 0


def test_count_reads_stdin_and_cl100k() -> None:
    data = b'{"role":"user","content":"hello there"}\n'
    result = runner.invoke(app, ["count", "-", "--json", "--encoding", "cl100k_base"], input=data)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    enc = get_encoding("cl100k_base")
    assert report["total"]["tokens"] == len(enc.encode_ordinary("hello there")) + MESSAGE_OVERHEAD
    assert report["path"] == "<stdin>"


def test_count_table_goes_to_stderr_only() -> None:
    result = runner.invoke(app, ["count", str(TOOLBENCH)])
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "assistant" in result.stderr and "total" in result.stderr


def test_bad_input_exit_1_with_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"role":"user","content":"a"}\n{"role":"user","content":42}\n')
    result = runner.invoke(app, ["count", str(bad)])
    assert result.exit_code == 1
    assert f"{bad}:2: content must be" in " ".join(result.stderr.split())
    assert result.stdout == ""


def test_unknown_encoding_exit_2() -> None:
    result = runner.invoke(app, ["count", str(TOOLBENCH), "--encoding", "nope"])
    assert result.exit_code == 2


def test_estimate_mode() -> None:
    result = runner.invoke(app, ["count", str(TOOLBENCH), "--json", "--estimate"])
    assert json.loads(result.stdout)["estimate"] is True


@pytest.mark.parametrize("path", OPENAI_FIXTURES, ids=lambda p: p.name)
def test_estimate_is_four_chars_a_token_of_every_text_through_library_and_cli(
    path: Path,
) -> None:
    expected: dict[str, int] = {}
    for messages in _raw_sessions(path):
        for role, n in _expected_by_role(messages, lambda t: -(-len(t) // 4)).items():
            expected[role] = expected.get(role, 0) + n
    transcript = formats.read(path.read_bytes(), path=str(path))
    library = count_transcript(transcript, counter=TokenCounter(estimate=True)).to_dict()
    result = runner.invoke(app, ["count", str(path), "--json", "--estimate"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == library["total"]
    assert library["total"]["tokens_by_role"] == dict(sorted(expected.items()))
    assert library["total"]["tokens"] == sum(expected.values())
