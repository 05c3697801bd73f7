"""Malformed and odd inputs, each with its expected outcome (tests/malformed/expected.json).

A broken file fails with `file:line: what is wrong`, exit 1, and no output
file; `--skip-invalid` salvages a JSONL file by keeping the bad lines aside,
untouched. Odd but valid files (BOM, CRLF, big integers, lone surrogates, no
final newline, a 50 MB line) are read, and written back byte for byte where
nothing changes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ctxpack import formats
from ctxpack.align.budget import Budget
from ctxpack.cli import app
from ctxpack.formats import jsoncodec
from ctxpack.pipeline.compaction import CompressSettings, compress_transcript
from ctxpack.redact import redact_messages
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message
from tests.conftest import COUNTER

runner = CliRunner()
CORPUS = Path(__file__).resolve().parent / "malformed"
EXPECTED: dict[str, dict[str, Any]] = {
    name: case
    for name, case in json.loads((CORPUS / "expected.json").read_bytes()).items()
    if not name.startswith("_")
}
ERRORS = sorted(name for name, case in EXPECTED.items() if not case.get("ok"))
VALID = sorted(name for name, case in EXPECTED.items() if case.get("ok"))


def _stderr(result: Any) -> str:
    return " ".join(str(result.stderr).split())


def _where(name: str, case: dict[str, Any]) -> str:
    line = case["line"]
    return f"{name}:{line}: " if line is not None else f"{name}: "


@pytest.fixture(autouse=True)
def in_corpus(monkeypatch: pytest.MonkeyPatch) -> None:
    # Relative input paths keep the messages short and exactly predictable.
    monkeypatch.chdir(CORPUS)


def test_every_file_has_an_expectation() -> None:
    files = sorted(p.name for p in CORPUS.iterdir() if p.name != "expected.json")
    assert files == sorted(EXPECTED)


@pytest.mark.parametrize("name", ERRORS)
def test_count_names_the_file_line_and_problem(name: str) -> None:
    case = EXPECTED[name]
    result = runner.invoke(app, ["count", name])
    assert result.exit_code == 1, result.output
    assert f"error: {_where(name, case)}{case['error']}" in _stderr(result)


@pytest.mark.parametrize("name", ERRORS)
def test_prune_writes_nothing_for_a_broken_file(name: str, tmp_path: Path) -> None:
    case = EXPECTED[name]
    result = runner.invoke(app, ["prune", "--no-archive", name, "-o", str(tmp_path / name)])
    assert result.exit_code == 1, result.output
    assert f"{_where(name, case)}{case['error']}" in _stderr(result)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ERRORS)
def test_skip_invalid_keeps_bad_lines_untouched(name: str, tmp_path: Path) -> None:
    case = EXPECTED[name]
    out = tmp_path / name
    pruned = runner.invoke(app, ["prune", "--no-archive", "--skip-invalid", name, "-o", str(out)])
    if case["skipped"] is None:
        # A broken document has no lines to set aside.
        assert pruned.exit_code == 1, pruned.output
        assert not out.exists()
        return
    assert pruned.exit_code == 0, pruned.output
    assert out.read_bytes() == (CORPUS / name).read_bytes()
    counted = runner.invoke(app, ["count", "--json", "--skip-invalid", name])
    assert counted.exit_code == 0, counted.output
    assert json.loads(counted.stdout)["skipped_lines"] == case["skipped"]


@pytest.mark.parametrize("name", VALID)
def test_odd_but_valid_files_are_read_and_written_back(name: str, tmp_path: Path) -> None:
    case = EXPECTED[name]
    counted = runner.invoke(app, ["count", "--json", name])
    assert counted.exit_code == 0, counted.output
    assert json.loads(counted.stdout)["total"]["messages"] == case["messages"]
    out = tmp_path / name
    pruned = runner.invoke(
        app, ["prune", "--no-archive", *case.get("args", []), name, "-o", str(out)]
    )
    assert pruned.exit_code == 0, pruned.output
    written, original = out.read_bytes(), (CORPUS / name).read_bytes()
    assert (written == original) is case["identical"]
    for text in case.get("keeps", []):
        assert text.encode() in written, text
    again = runner.invoke(app, ["count", "--json", str(out)])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["total"]["messages"] == case["messages"]


# --- a 50 MB line, made at test time ------------------------------------------

LOG_LINE = "ERROR 2025-01-01 worker-7 retrying job 1234: connection reset by peer\n"


@pytest.fixture(scope="module")
def huge_line() -> bytes:
    """One tool result of 50 MB on a single JSONL line."""
    content = LOG_LINE * (50_000_000 // len(LOG_LINE))
    message = {"role": "tool", "tool_call_id": "call_1", "content": content}
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def test_a_50_mb_line_is_read_and_written_back(huge_line: bytes, tmp_path: Path) -> None:
    source, out = tmp_path / "huge.jsonl", tmp_path / "out.jsonl"
    source.write_bytes(huge_line)
    counted = runner.invoke(app, ["count", "--estimate", "--json", str(source)])
    assert counted.exit_code == 0, counted.output
    assert json.loads(counted.stdout)["total"]["messages"] == 1
    pruned = runner.invoke(
        app, ["prune", "--estimate", "--no-archive", str(source), "-o", str(out)]
    )
    assert pruned.exit_code == 0, pruned.output
    assert out.read_bytes() == huge_line


def test_a_truncated_50_mb_line_is_an_error_at_line_1(
    huge_line: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("huge.jsonl").write_bytes(huge_line[: len(huge_line) // 2])
    result = runner.invoke(
        app, ["prune", "--estimate", "--no-archive", "huge.jsonl", "-o", "out.jsonl"]
    )
    assert result.exit_code == 1, result.output
    stderr = _stderr(result)
    assert "huge.jsonl:1: invalid JSON: unexpected end of data" in stderr
    assert "(the last line looks truncated)" in stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["huge.jsonl"]


def test_only_a_line_that_can_be_skipped_suggests_skip_invalid(tmp_path: Path) -> None:
    lines = tmp_path / "lines.jsonl"
    lines.write_text('{"role": "user", "content": "hi"}\n{"role": "assistant", "content": \n')
    document = tmp_path / "document.json"
    document.write_text('[{"role": "user", "content": "hi"},')
    for source, skippable in ((lines, True), (document, False)):
        result = runner.invoke(app, ["count", str(source)])
        assert result.exit_code == 1, result.output
        assert ("--skip-invalid" in _stderr(result)) is skippable, _stderr(result)


# --- valid JSON nested deeper than Python's recursion limit --------------------

DEEP = "[" * 5000 + "]" * 5000


def _deep_session(output: str, arguments: str) -> list[Message]:
    messages: list[Message] = [{"role": "user", "content": "inspect the payloads"}]
    for n in range(6):
        call = {
            "id": f"c{n}",
            "type": "function",
            "function": {"name": "probe", "arguments": arguments},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": output + " pad" * 300})
        messages.append({"role": "assistant", "content": f"payload {n} looks odd " * 20})
    messages.append({"role": "user", "content": "so what is wrong?"})
    return messages


def test_a_deeply_nested_tool_output_compacts(counter: TokenCounter) -> None:
    data = b"".join(jsoncodec.dumps(msg) + b"\n" for msg in _deep_session(DEEP, "{}"))
    transcript = formats.read(data, path="deep.jsonl", fmt="openai")
    settings = CompressSettings(force=True, budget=Budget(tail_tokens=50, protect_last=2))
    result, report = compress_transcript(transcript, counter=counter, settings=settings)
    assert report.sessions[0].status == "compacted"
    written = formats.read(formats.write(result, counter=COUNTER), path="out.jsonl", fmt="openai")
    assert written.sessions[0].messages == result.sessions[0].messages


def test_deeply_nested_tool_arguments_can_be_redacted() -> None:
    messages = _deep_session("ok", '{"a": ' + DEEP + "}")
    masked, count = redact_messages(messages)
    assert count == 0
    assert all(a is b for a, b in zip(masked, messages, strict=True))
