"""Every command that writes a transcript runs one path: read-only formats,
the archive and the output follow the same rules in compress, prune,
summarize, update and convert."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxpack.cli import app
from tests.conftest import FIXTURES, TAU_BENCH
from tests.llm_server import (
    FakeLLM,
    llm_server_fixture,  # noqa: F401
    ok,
)

runner = CliRunner()
HAIKU = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"
SWE_AGENT = FIXTURES / "swe-agent" / "SWE-agent__demonstrations__function_calling_simple.traj"
OPENHANDS = FIXTURES / "openhands" / "OpenHands__tests__runtime__trajs__basic_gui_mode.json"
READ_ONLY_WARNING = "warning: {} is read-only; the output is written as openai"
# A path no archive can be opened at, on any Linux machine.
UNWRITABLE_ARCHIVE = "/proc/a.db"
ARCHIVE_ERROR = (
    f"error: not archived, so nothing was written ({UNWRITABLE_ARCHIVE}: cannot open archive:"
    " No such file or directory); --no-archive skips the archive"
)

WRITERS = {
    "compress": ["compress", "--offline", "--force"],
    "prune": ["prune"],
    "summarize": ["summarize", "--offline"],
}


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning:")]


def _openai_messages(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


@pytest.mark.parametrize("command", list(WRITERS))
@pytest.mark.parametrize(("fixture", "fmt"), [(SWE_AGENT, "swe-agent"), (OPENHANDS, "openhands")])
def test_a_read_only_input_is_written_as_openai_by_every_command(
    command: str, fixture: Path, fmt: str, tmp_path: Path
) -> None:
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, [*WRITERS[command], str(fixture), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert READ_ONLY_WARNING.format(fmt) in _warnings(result.stderr)
    messages = _openai_messages(out)
    assert messages and all("role" in msg for msg in messages)


def test_a_read_only_input_under_the_threshold_still_says_how_to_compact_it(
    tmp_path: Path,
) -> None:
    """Written as openai unchanged, a session keeps the note a user acts on."""
    out, report_path = tmp_path / "out.jsonl", tmp_path / "report.json"
    args = ["compress", "--offline", str(SWE_AGENT), "-o", str(out), "--report", str(report_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert (
        "under the threshold of 100,000 tokens: unchanged; --force compacts anyway\n"
        "messages written as openai"
    ) in result.stderr
    report = json.loads(report_path.read_text())
    assert report["sessions"][0]["status"] == "converted"
    assert report["sessions"][0]["notes"] == [
        "under the threshold of 100,000 tokens: unchanged; --force compacts anyway",
        "messages written as openai",
    ]


@pytest.mark.parametrize("command", list(WRITERS))
def test_an_archive_that_cannot_be_opened_is_the_same_error_in_every_command(
    command: str, tmp_path: Path
) -> None:
    # Without its archive a run cannot be restored: exit 1 and write nothing.
    out = tmp_path / "out.jsonl"
    args = [*WRITERS[command], str(HAIKU), "-o", str(out), "--archive", UNWRITABLE_ARCHIVE]
    result = runner.invoke(app, args, terminal_width=400)
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[-1] == ARCHIVE_ERROR
    assert not out.exists()


def _llm(server: FakeLLM) -> list[str]:
    return ["--model", "m", "--base-url", server.base_url, "--no-cache", "--no-archive"]


def test_summarize_a_read_only_input_with_an_llm_writes_openai(
    llm_server: FakeLLM, tmp_path: Path
) -> None:
    llm_server.responder = lambda _body: ok()
    out = tmp_path / "out.jsonl"
    args = ["summarize", *_llm(llm_server), str(SWE_AGENT), "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert READ_ONLY_WARNING.format("swe-agent") in _warnings(result.stderr)
    assert len(llm_server.received) == 1
    # The trajectory is too short for a summary to pay: its turns are written as they were.
    assert _openai_messages(out) == _openai_messages(_prune_output(tmp_path))


@pytest.mark.parametrize("command", ["summarize", "compress"])
def test_an_output_format_that_cannot_be_written_costs_no_llm_call(
    command: str, llm_server: FakeLLM, tmp_path: Path
) -> None:
    llm_server.responder = lambda _body: ok()
    out = tmp_path / "out.jsonl"
    args = [command, "--force"] if command == "compress" else [command]
    args += [*_llm(llm_server), str(TAU_BENCH), "--to", "swe-agent", "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert "'swe-agent' can be read but not written" in result.stderr
    assert llm_server.received == []
    assert not out.exists()


def test_convert_runs_the_same_path(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, ["convert", str(SWE_AGENT), "--to", "openai", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert f"-> openai, written to {out}" in " ".join(result.stderr.split())
    assert _openai_messages(out) == _openai_messages(_prune_output(tmp_path))
    refused = runner.invoke(app, ["convert", str(TAU_BENCH), "--to", "openhands"])
    assert refused.exit_code == 2
    assert "'openhands' can be read but not written" in refused.stderr


def _prune_output(tmp_path: Path) -> Path:
    """Nothing to prune in this small trajectory: prune writes exactly what convert does."""
    out = tmp_path / "pruned.jsonl"
    result = runner.invoke(app, ["prune", str(SWE_AGENT), "-o", str(out), "--no-archive"])
    assert result.exit_code == 0, result.output
    assert "0 messages changed" in result.stderr
    return out
