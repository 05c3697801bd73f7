"""Prompt-cache awareness: the prefix a compacted transcript shares with its
input (what a provider's cache still serves), --no-system-note, and where a
Claude request's cache breakpoints fall."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from ctxpack import formats, markers
from ctxpack import messages as m
from ctxpack.cli import app
from ctxpack.evaluate.cache import Breakpoint, breakpoints, cache_prefix
from ctxpack.pipeline.compaction import CompressSettings
from ctxpack.pipeline.run import FileJob, run_file
from ctxpack.pipeline.stages import Compress
from ctxpack.report import Status
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message
from tests.conftest import TAU_BENCH
from tests.golden import record

runner = CliRunner()
FIXTURES = record.fixtures()


def _direct(original: list[Message], written: list[Message], counter: TokenCounter) -> int:
    """Tokens of the leading messages whose JSON is the same in both files."""
    tokens = 0
    for before, after in zip(original, written, strict=False):
        if orjson.dumps(before, option=orjson.OPT_SORT_KEYS) != orjson.dumps(
            after, option=orjson.OPT_SORT_KEYS
        ):
            break
        tokens += counter.message(after)
    return tokens


@pytest.mark.parametrize("note", [True, False], ids=["system-note", "no-system-note"])
@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.name for f in FIXTURES])
def test_the_reported_prefix_is_what_the_files_share(
    fixture: Path, note: bool, tmp_path: Path, counter: TokenCounter
) -> None:
    out = tmp_path / ("out" + fixture.suffix)
    settings = CompressSettings(force=True, system_note=note)
    job = FileJob(source=str(fixture), output=str(out), archive=False)
    report = run_file(job, stage=Compress(settings)).report
    assert report is not None
    original = formats.read(fixture.read_bytes(), path=str(fixture))
    written = formats.read(out.read_bytes(), path=str(out))
    assert [s.cache_prefix_tokens for s in report.sessions] == [
        _direct(before.messages, after.messages, counter)
        for before, after in zip(original.sessions, written.sessions, strict=True)
    ]
    for before, after, session in zip(
        original.sessions, written.sessions, report.sessions, strict=True
    ):
        if session.status == Status.UNDER_THRESHOLD:
            assert session.cache_prefix_messages == len(before.messages)
        system = next((i for i, msg in enumerate(before.messages) if m.is_system(msg)), None)
        if system is None or session.status != Status.COMPACTED:
            continue
        if note:
            assert markers.has_system_note(after.messages[system])
        else:
            assert after.messages[system] == before.messages[system]
            assert session.cache_prefix_messages > system


def test_without_the_note_the_system_message_is_the_same_object_and_bytes(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out.json"
    settings = CompressSettings(force=True, system_note=False, prune="no-prune")
    report = run_file(
        FileJob(source=str(TAU_BENCH), output=str(out), archive=False), stage=Compress(settings)
    ).report
    assert report is not None
    original = formats.read(TAU_BENCH.read_bytes(), path=str(TAU_BENCH))
    written = json.loads(out.read_bytes())
    source = json.loads(TAU_BENCH.read_bytes())
    compacted = [s for s in report.sessions if s.status == Status.COMPACTED]
    assert compacted
    for number, session in enumerate(report.sessions):
        # The very record of the input, byte for byte in the JSON it was read from.
        assert written[number]["traj"][0] == source[number]["traj"][0]
        assert written[number]["traj"][0]["role"] == "system"
        if session.status == Status.COMPACTED:
            # Nothing before the summary changed: the cache keeps the whole head.
            assert session.summarized is not None
            head_end = session.summarized[0]
            assert session.cache_prefix_messages == head_end
            head = original.sessions[number].messages[:head_end]
            assert session.cache_prefix_tokens == TokenCounter().messages(head)


def test_the_cli_reports_the_prefix_in_json_and_the_table(tmp_path: Path) -> None:
    out, report = tmp_path / "out.json", tmp_path / "report.json"
    args = ["compress", str(TAU_BENCH), "--offline", "--force", "--no-system-note"]
    result = runner.invoke(app, [*args, "-o", str(out), "--report", str(report), "--no-archive"])
    assert result.exit_code == 0, result.output
    document = json.loads(report.read_text())
    total = sum(s["cache_prefix"]["tokens"] for s in document["sessions"])
    assert document["cache_prefix_tokens"] == total > 0
    share = f"{100 * total / document['tokens_before']:.1f}%"
    assert f"cache prefix     │ {total:,} tokens unchanged ({share} of the input)" in (
        result.stderr
    )


def test_the_prefix_ends_at_the_first_changed_message(counter: TokenCounter) -> None:
    original: list[Message] = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "content": "a.py b.py"},
    ]
    changed = [original[0], {"role": "user", "content": "List the files. "}, original[2]]
    prefix = cache_prefix(original, changed, counter=counter)
    assert (prefix.messages, prefix.tokens) == (1, counter.message(original[0]))
    copies = [dict(msg) for msg in original]
    same = cache_prefix(original, copies, counter=counter)
    assert (same.messages, same.tokens) == (3, counter.messages(original))
    # A tool call id is seen by the model: a different one breaks the prefix.
    call = {"role": "tool", "tool_call_id": "a", "content": "ok"}
    assert cache_prefix([call], [{**call, "tool_call_id": "b"}], counter=counter).messages == 0


def _conversation() -> list[Message]:
    return [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "system", "content": "Repository: example/app."},
        {"role": "user", "content": "Run the tests."},
        {"role": "assistant", "content": "Running pytest -q now."},
        {"role": "user", "content": "And the linter."},
        {"role": "assistant", "content": "ruff check . passed."},
        {"role": "user", "content": "Thanks, commit it."},
    ]


def test_breakpoints_fall_after_the_system_prompt_and_the_last_three_messages(
    counter: TokenCounter,
) -> None:
    messages = _conversation()
    through = [counter.messages(messages[: i + 1]) for i in range(len(messages))]
    assert breakpoints(messages, counter=counter) == [
        Breakpoint(1, "system", through[1], True),
        Breakpoint(4, "user", through[4], False),
        Breakpoint(5, "assistant", through[5], False),
        Breakpoint(6, "user", through[6], False),
    ]
    # No system prompt: the last three messages alone; fewer messages, fewer breakpoints.
    assert [b.index for b in breakpoints(messages[2:], counter=counter)] == [2, 3, 4]
    assert [b.index for b in breakpoints(messages[:3], counter=counter)] == [1, 2]
    assert breakpoints([], counter=counter) == []


def test_count_shows_the_breakpoints(tmp_path: Path, counter: TokenCounter) -> None:
    path = tmp_path / "s.jsonl"
    messages = _conversation()
    path.write_bytes(b"".join(orjson.dumps(msg) + b"\n" for msg in messages))
    result = runner.invoke(app, ["count", str(path), "--json", "--cache-breakpoints"])
    assert result.exit_code == 0, result.output
    (session,) = json.loads(result.stdout)["cache_breakpoints"]
    assert [b["index"] for b in session["breakpoints"]] == [1, 4, 5, 6]
    assert session["breakpoints"][-1] == {
        "index": 6,
        "role": "user",
        "position": counter.messages(messages),
        "system": False,
    }
    plain = runner.invoke(app, ["count", str(path), "--json"])
    assert "cache_breakpoints" not in json.loads(plain.stdout)
    table = runner.invoke(app, ["count", str(path), "--cache-breakpoints"])
    assert table.exit_code == 0
    rows = [
        [cell.strip() for cell in line.split("│")]
        for line in table.stderr.splitlines()
        if line.startswith(" #0")
    ]
    assert [row[1:] for row in rows] == [
        [where, b["role"], f"{b['position']:,}"]
        for where, b in zip(
            ["system prompt", "message #4", "message #5", "message #6"],
            session["breakpoints"],
            strict=True,
        )
    ]
