"""The `pi` adapter: pi coding agent sessions, version 3 and the older layout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ctxpack import formats, markers, toolpairs
from ctxpack import messages as m
from ctxpack.cli import app
from ctxpack.cli.app import SKIP_INVALID_HINT
from ctxpack.errors import InputError, MalformedRecord
from ctxpack.formats.base import ReadOptions
from ctxpack.tokens.counter import KINDS, TokenCounter
from tests.conftest import COUNTER, FIXTURES, SHARED
from tests.test_formats_support import assert_counted, compact, tok

V3 = FIXTURES / "pi" / "pi-0.73.1__stub-tally.jsonl"
OLD = SHARED / "pi-agent" / "pi-mono__session.jsonl"
LARGE = SHARED / "pi-agent" / "pi-mono__test__fixtures__large-session.jsonl"
needs_shared = pytest.mark.skipif(not OLD.is_file(), reason=f"{SHARED} is absent")
runner = CliRunner()


def _lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.split(b"\n") if line.strip()]


def _expected_kinds(entries: list[dict[str, Any]]) -> dict[str, int]:
    """Tokens by kind straight from the entries, by the counter's rules."""
    kinds = dict.fromkeys(KINDS, 0)
    messages = 0
    for entry in entries:
        msg = entry.get("message")
        if entry["type"] != "message":
            continue
        messages += 1
        parts = msg["content"]
        texts = [p["text"] for p in parts if p["type"] == "text"]
        if msg["role"] == "assistant":
            kinds["assistant_text"] += sum(tok(t) for t in texts)
            kinds["reasoning"] += tok(
                "\n".join(p["thinking"] for p in parts if p["type"] == "thinking")
            )
            for call in (p for p in parts if p["type"] == "toolCall"):
                kinds["tool_calls"] += tok(call["name"]) + tok(compact(call["arguments"]))
        else:
            kind = "tool_results" if msg["role"] == "toolResult" else "user_text"
            kinds[kind] += sum(tok(t) for t in texts)
    kinds["overhead"] = 4 * messages
    return kinds


def test_a_v3_session_is_detected_and_round_trips() -> None:
    data = V3.read_bytes()
    assert formats.detect(data, path="session.jsonl").name == "pi"
    transcript = formats.read(data, path=str(V3))
    msgs = transcript.sessions[0].messages
    assert [m.role(x) for x in msgs[:4]] == ["user", "assistant", "tool", "assistant"]
    assert toolpairs.orphans(msgs) == ([], [])
    assert formats.write(transcript, counter=COUNTER) == data


def test_count_matches_a_direct_tiktoken_count(counter: TokenCounter) -> None:
    expected = _expected_kinds(_lines(V3.read_bytes()))
    assert expected["tool_calls"] and expected["tool_results"] and expected["user_text"]
    assert_counted(V3, expected, counter)


def _compress(source: Path, out: Path, *, extra: tuple[str, ...] = ()) -> bytes:
    args = ["compress", "--offline", "--force", "--context-length", "3000", "--no-archive"]
    result = runner.invoke(app, [*args, *extra, str(source), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out.read_bytes()


def test_a_v3_compaction_is_a_record_message_between_head_and_tail(tmp_path: Path) -> None:
    out = _compress(V3, tmp_path / "out.jsonl")
    entries = _lines(out)
    assert not [e for e in entries if e["type"] == "compaction"]
    [record] = [
        e
        for e in entries
        if e["type"] == "message" and markers.is_summary(e["message"])  # type: ignore[arg-type]
    ]
    by_id = {e["id"]: e for e in entries[1:]}
    # One chain from the last entry back to the root, through the record.
    chain, entry = [], entries[-1]
    while entry is not None:
        chain.append(entry["id"])
        entry = by_id.get(entry["parentId"])
    assert len(chain) == len(entries) - 1 and record["id"] in chain
    original = formats.read(V3.read_bytes(), path="x").sessions[0].messages
    msgs = formats.read(out, path="out.jsonl").sessions[0].messages
    # The user's first task comes first, then the record, then the tail.
    first_user = next(msg for msg in original if msg["role"] == "user")
    assert msgs.index(first_user) < next(i for i, msg in enumerate(msgs) if markers.is_summary(msg))
    assert len(msgs) < len(original)
    assert toolpairs.orphans(msgs) == ([], [])


@needs_shared
def test_an_old_layout_session_reports_its_malformed_line() -> None:
    with pytest.raises(InputError) as caught:
        formats.read(OLD.read_bytes(), path=str(OLD))
    assert caught.value.describe().startswith(f"{OLD}:440:")
    assert isinstance(caught.value, MalformedRecord)
    result = runner.invoke(app, ["count", str(OLD)])
    assert result.exit_code != 0 and f"{OLD}:440" in result.stderr
    # A new user learns how to read the rest of the file.
    assert SKIP_INVALID_HINT in " ".join(result.stderr.split())


@needs_shared
def test_skip_invalid_keeps_the_malformed_line_and_reads_the_compaction(tmp_path: Path) -> None:
    data = OLD.read_bytes()
    transcript = formats.read(data, path=str(OLD), options=ReadOptions(skip_invalid=True))
    assert transcript.skipped_lines == 1
    msgs = transcript.sessions[0].messages
    # pi shows the compaction's summary first, then entries from index 355 on.
    assert markers.is_summary(msgs[0])
    assert formats.write(transcript, counter=COUNTER) == data
    out = _compress(OLD, tmp_path / "out.jsonl", extra=("--skip-invalid",))
    bad = data.split(b"\n")[439]
    assert bad in out.split(b"\n")


@needs_shared
def test_an_old_layout_compaction_is_a_plain_summary_message(tmp_path: Path) -> None:
    out = _compress(LARGE, tmp_path / "out.jsonl")
    entries = _lines(out)
    assert not any(e["type"] == "compaction" for e in entries)
    assert not any("id" in e for e in entries[1:])
    msgs = formats.read(out, path="out.jsonl").sessions[0].messages
    assert len([x for x in msgs if markers.is_summary(x)]) == 1
    assert toolpairs.orphans(msgs) == ([], [])


@pytest.mark.skipif(not LARGE.is_file(), reason=f"{SHARED} is absent")
def test_a_result_pi_marked_as_an_error_reads_flagged_and_writes_back_as_it_was(
    tmp_path: Path,
) -> None:
    """The large real session holds 19 results pi marked `isError`: a build
    that failed, a command the user aborted. Each reads as a failed result;
    the compacted file keeps every result's own isError."""
    data = LARGE.read_bytes()
    flagged = [
        e["message"]["toolCallId"]
        for e in _lines(data)
        if e.get("type") == "message" and e["message"].get("isError") is True
    ]
    messages = formats.read(data, path=LARGE.name).sessions[0].messages
    read = [x["tool_call_id"] for x in messages if x.get("is_error") is True]
    assert len(flagged) == 19 and read == flagged
    assert all(m.role(x) == "tool" for x in messages if "is_error" in x)
    out = tmp_path / "out.jsonl"
    args = ["compress", "--offline", "--force", "--no-archive", str(LARGE), "-o", str(out)]
    done = runner.invoke(app, args)
    assert done.exit_code == 0, done.output
    written = {
        e["message"]["toolCallId"]: e["message"].get("isError")
        for e in _lines(out.read_bytes())
        if e.get("type") == "message" and e["message"].get("role") == "toolResult"
    }
    assert {i for i, error in written.items() if error is True} == set(flagged) & set(written)
    assert not any("is_error" in e.get("message", {}) for e in _lines(out.read_bytes()))
