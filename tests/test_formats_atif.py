"""The `atif` adapter (read only): Harbor Agent Trajectory Interchange Format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ctxpack import formats, toolpairs
from ctxpack import messages as m
from ctxpack.cli import app
from ctxpack.errors import InputError
from ctxpack.tokens.counter import KINDS, TokenCounter
from tests.conftest import SHARED
from tests.test_formats_support import assert_counted, compress_read_only, tok

NEMO = SHARED / "atif" / "NeMo-Relay__examples__trajectory.json"
needs_shared = pytest.mark.skipif(not NEMO.is_file(), reason=f"{SHARED} is absent")
runner = CliRunner()


def _steps() -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = json.loads(NEMO.read_bytes())["steps"]
    return steps


@needs_shared
def test_a_trajectory_is_detected_without_from() -> None:
    assert formats.detect(NEMO.read_bytes(), path="no-extension").name == "atif"
    result = runner.invoke(app, ["count", str(NEMO), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["format"] == "atif"


@needs_shared
def test_the_steps_become_paired_openai_messages() -> None:
    steps = _steps()
    transcript = formats.read(NEMO.read_bytes(), path=str(NEMO))
    assert transcript.sessions[0].label == "example-session"
    assert transcript.layout == {"last_timestamp": steps[-1]["timestamp"]}
    msgs = transcript.sessions[0].messages
    assert [m.role(x) for x in msgs] == ["user", "assistant", "tool", "tool", "assistant"]
    assert toolpairs.orphans(msgs) == ([], [])
    # Step 1 logs the LLM request: its user turn is the input.
    assert msgs[0]["content"] == steps[0]["message"]["messages"][0]["content"]
    # Step 2 logs the LLM response; its ATIF tool calls are the calls.
    assert msgs[1]["content"] is None
    assert msgs[1]["reasoning_content"] == steps[1]["message"]["reasoning"]
    assert [(m.call_id(c), m.call_name(c), m.call_arguments(c)) for c in m.tool_calls(msgs[1])] == [
        (c["tool_call_id"], c["function_name"], c["arguments"]) for c in steps[1]["tool_calls"]
    ]
    # Steps 3 and 4 log the two executions (population first) under new ids;
    # steps 5 and 6 hold their results, in that order, without source_call_id.
    assert [c["function_name"] for s in steps[2:4] for c in s["tool_calls"]] == [
        "get_population",
        "get_weather",
    ]
    assert [(x["name"], x["content"]) for x in msgs[2:4]] == [
        ("get_population", steps[4]["observation"]["results"][0]["content"]),
        ("get_weather", steps[5]["observation"]["results"][0]["content"]),
    ]
    # The request logged at step 7 pairs the results the same way.
    replayed = [x for x in steps[6]["message"]["messages"] if x["role"] == "tool"]
    assert sorted((x["tool_call_id"], x["content"]) for x in replayed) == sorted(
        (x["tool_call_id"], x["content"]) for x in msgs[2:4]
    )
    assert msgs[4] == {"role": "assistant", "content": steps[7]["message"]}


@needs_shared
def test_count_matches_a_direct_tiktoken_count(counter: TokenCounter) -> None:
    steps = _steps()
    expected = dict.fromkeys(KINDS, 0)
    expected["user_text"] = tok(steps[0]["message"]["messages"][0]["content"])
    expected["reasoning"] = tok(steps[1]["message"]["reasoning"])
    expected["tool_calls"] = sum(
        tok(c["function_name"]) + tok(c["arguments"]) for c in steps[1]["tool_calls"]
    )
    expected["tool_results"] = sum(
        tok(s["observation"]["results"][0]["content"]) for s in steps[4:6]
    )
    expected["assistant_text"] = tok(steps[7]["message"])
    expected["overhead"] = 4 * 5
    assert_counted(NEMO, expected, counter)


@needs_shared
def test_compress_writes_openai_with_the_read_only_warning(tmp_path: Path) -> None:
    # Five messages leave nothing to compact: the output is the openai conversion.
    report, msgs = compress_read_only(NEMO, tmp_path / "out.jsonl")
    assert report["format"] == "atif"
    assert report["sessions"][0]["status"] == "nothing-to-compress"
    assert msgs == formats.read(NEMO.read_bytes(), path=str(NEMO)).sessions[0].messages


@needs_shared
def test_a_longer_trajectory_of_the_real_steps_is_compacted(tmp_path: Path) -> None:
    doc = json.loads(NEMO.read_bytes())
    text = json.dumps(doc["steps"])
    doc["steps"] = [
        step
        for n in range(12)
        for step in json.loads(text.replace("chatcmpl-tool-", f"round-{n}-"))
    ]
    source = tmp_path / "long.json"
    source.write_text(json.dumps(doc, indent=2))
    assert len(formats.read(source.read_bytes(), path=str(source)).sessions[0].messages) == 60
    report, msgs = compress_read_only(source, tmp_path / "out.jsonl")
    session = report["sessions"][0]
    assert session["status"] == "compacted"
    assert len(msgs) == session["messages_after"] < 60


def _trajectory(*steps: dict[str, Any]) -> bytes:
    numbered = [{"step_id": n + 1, **step} for n, step in enumerate(steps)]
    doc = {
        "schema_version": "ATIF-v1.4",
        "session_id": "s1",
        "agent": {"name": "harbor-agent", "version": "1.0.0"},
        "steps": numbered,
    }
    return json.dumps(doc, indent=2).encode()


def test_results_pair_by_source_call_id_then_by_order() -> None:
    calls = [
        {"tool_call_id": "call_price_1", "function_name": "financial_search", "arguments": {}},
        {"tool_call_id": "call_volume_2", "function_name": "financial_search", "arguments": {}},
    ]
    data = _trajectory(
        {"source": "system", "message": "You are a financial agent."},
        {"source": "user", "message": [{"type": "text", "text": "Price of GOOGL?"}]},
        {
            "source": "agent",
            "message": "Searching.",
            "reasoning_content": "Two lookups.",
            "tool_calls": calls,
            "observation": {
                "results": [
                    {"source_call_id": "call_volume_2", "content": "1.5M shares"},
                    {"content": "$185.35"},
                ]
            },
        },
        {"source": "system", "message": "", "observation": {"results": [{"content": "reset"}]}},
        {"source": "agent", "message": "GOOGL trades at $185.35."},
    )
    msgs = formats.read(data, path="t.json").sessions[0].messages
    roles = ["system", "user", "assistant", "tool", "tool", "user", "assistant"]
    assert [m.role(x) for x in msgs] == roles
    assert msgs[1]["content"] == [{"type": "text", "text": "Price of GOOGL?"}]
    assert msgs[2]["reasoning_content"] == "Two lookups."
    assert [m.call_arguments(c) for c in m.tool_calls(msgs[2])] == ["{}", "{}"]
    assert [(x["tool_call_id"], x["content"]) for x in msgs[3:5]] == [
        ("call_volume_2", "1.5M shares"),
        ("call_price_1", "$185.35"),
    ]
    # A result with no call left to answer is environment feedback.
    assert msgs[5] == {"role": "user", "content": "reset"}
    assert toolpairs.orphans(msgs) == ([], [])


def _error(data: bytes) -> str:
    with pytest.raises(InputError) as caught:
        formats.read(data, path="t.json", fmt="atif")
    return caught.value.describe()


def test_malformed_trajectories_name_the_file_and_line(tmp_path: Path) -> None:
    bad = _trajectory({"source": "user", "message": "hi"}, {"source": "robot", "message": "x"})
    line = bad.count(b"\n", 0, bad.index(b'{\n      "step_id": 2')) + 1
    wrong = "step 2: source must be system, user or agent, not 'robot'"
    assert _error(bad) == f"t.json:{line}: {wrong}"
    no_name = _trajectory({"source": "agent", "message": "", "tool_calls": [{"arguments": {}}]})
    assert "step 1: each tool call must be an object with a function_name" in _error(no_name)
    assert (
        _error(b'{"schema_version": "ATIF-v1.6"}')
        == "t.json: not an ATIF trajectory (no steps list)"
    )
    assert _error(bad[:-3]).startswith("t.json:")
    path = tmp_path / "t.json"
    path.write_bytes(bad)
    result = runner.invoke(app, ["count", str(path)])
    assert result.exit_code == 1
    assert f"{path}:{line}: {wrong}" in " ".join(result.stderr.split())
