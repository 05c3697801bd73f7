"""A tool output that quotes a compacted transcript (an agent ran `cat` on one,
or tested this tool) is what its call returned, not a record of this session:
no stage takes it out of the turns or updates it as the previous summary, and
the note it quotes does not make this session's first compaction look like a
later one."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import orjson
from typer.testing import CliRunner

from ctxpack import formats, markers
from ctxpack import messages as m
from ctxpack.align.budget import Budget
from ctxpack.cli import app
from ctxpack.pipeline.compaction import CompressSettings, compress_messages
from ctxpack.summarize.llm.prompts import effective_request
from ctxpack.summarize.protocol import SummaryRequest
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message
from tests.conftest import FIXTURES

HAIKU = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"
# Another real session, compacted: what the agent reads back.
CODEX = FIXTURES / "codex" / "Trezo-Ai__codex-session.jsonl"
CAT = "cat /tmp/earlier-run/compacted.jsonl"
# The call of the haiku session's first full test run, and its output.
CALL, OUTPUT = 23, 24
# The Codex session's first command output, and a head that runs past it (the
# system and developer messages, both user turns, the first calls and it).
FIRST_OUTPUT, PROTECT_FIRST = 5, 4


def _messages(path: Path) -> list[Message]:
    return formats.read(path.read_bytes(), path=str(path)).sessions[0].messages


def _compacted_jsonl(counter: TokenCounter) -> str:
    out, _ = compress_messages(
        _messages(CODEX), counter=counter, settings=CompressSettings(force=True)
    )
    assert sum(markers.is_summary(msg) for msg in out) == 1
    return b"\n".join(orjson.dumps(msg) for msg in out).decode()


def _session_that_cats_a_record(counter: TokenCounter) -> list[Message]:
    """The haiku session with its first full test run replaced by a `cat` of
    the other session's compacted transcript."""
    messages = copy.deepcopy(_messages(HAIKU))
    (call,) = m.tool_calls(messages[CALL])
    call["function"]["arguments"] = json.dumps({"command": CAT})
    assert m.result_call_id(messages[OUTPUT]) == m.call_id(call)
    messages[OUTPUT]["content"] = _compacted_jsonl(counter)
    return messages


def _record_line(record: str) -> str:
    return next(line for line in record.splitlines() if CAT in line)


def test_a_tool_output_holding_our_markers_is_no_record(counter: TokenCounter) -> None:
    messages = _session_that_cats_a_record(counter)
    output = messages[OUTPUT]
    text = m.text(output)
    assert markers.SUMMARY_END in text and markers.SUMMARY_PREFIX.split("\n")[0] in text
    assert not markers.is_summary(output)
    # The same text as a user's message is one (pasted back by a person).
    assert markers.is_summary({"role": "user", "content": text})
    assert markers.summary_indexes(messages) == []


def test_the_summarizer_keeps_such_an_output_among_the_turns(counter: TokenCounter) -> None:
    messages = _session_that_cats_a_record(counter)
    middle = messages[CALL : OUTPUT + 1]
    request = effective_request(SummaryRequest(middle=middle, budget_tokens=1_000))
    assert request.middle == middle
    assert request.previous_summary is None


def test_compress_summarizes_the_call_and_updates_no_record(counter: TokenCounter) -> None:
    messages = _session_that_cats_a_record(counter)
    settings = CompressSettings(force=True, prune="no-prune")
    out, report = compress_messages(messages, counter=counter, settings=settings)
    (record,) = [markers.summary_body(msg) for msg in out if markers.is_summary(msg)]
    assert report.updated_previous_summary is False
    # The call ran and returned: an action of its own, not one left without a result.
    line = _record_line(record)
    assert "no result recorded" not in line
    # The other session's record is not carried into this one.
    assert record.count("Historical Task Snapshot") == 1


def test_compress_on_the_command_line_says_the_same(counter: TokenCounter, tmp_path: Path) -> None:
    source = tmp_path / "session.jsonl"
    lines = [orjson.dumps(msg) for msg in _session_that_cats_a_record(counter)]
    source.write_bytes(b"\n".join(lines) + b"\n")
    target, report = tmp_path / "out.jsonl", tmp_path / "report.json"
    argv = ["compress", "--offline", "--force", "--no-prune", str(source), "-o", str(target)]
    result = CliRunner().invoke(app, [*argv, "--report", str(report)])
    assert result.exit_code == 0, result.output
    (session,) = json.loads(report.read_text())["sessions"]
    assert session["updated_previous_summary"] is False
    out = [orjson.loads(line) for line in target.read_bytes().splitlines()]
    (record,) = [markers.summary_body(msg) for msg in out if markers.is_summary(msg)]
    assert "no result recorded" not in _record_line(record)
    assert record.count("Historical Task Snapshot") == 1


def _session_that_cats_at_its_start(counter: TokenCounter) -> list[Message]:
    """The Codex session with the output of its first command replaced by a
    `cat` of the haiku session's compacted transcript (whose system message
    carries our note): the output sits in the head, which is kept verbatim."""
    haiku, _ = compress_messages(
        _messages(HAIKU), counter=counter, settings=CompressSettings(force=True)
    )
    # A Claude Code session has no system message to note: the quoted
    # transcript gets the one a chat log of it would have.
    noted = [{"role": "system", "content": f"You are a coding agent.\n\n{markers.SYSTEM_NOTE}"}]
    messages = copy.deepcopy(_messages(CODEX))
    assert m.is_tool_result(messages[FIRST_OUTPUT])
    messages[FIRST_OUTPUT]["content"] = b"\n".join(
        orjson.dumps(msg) for msg in [*noted, *haiku]
    ).decode()
    return messages


def test_a_quoted_note_in_the_head_is_no_sign_of_an_earlier_compaction(
    counter: TokenCounter,
) -> None:
    messages = _session_that_cats_at_its_start(counter)
    assert not any(markers.has_system_note(msg) for msg in messages)
    settings = CompressSettings(budget=Budget(protect_first=PROTECT_FIRST), force=True)
    out, _ = compress_messages(messages, counter=counter, settings=settings)
    assert out[FIRST_OUTPUT] == messages[FIRST_OUTPUT]
    assert m.text(out[0]).endswith(f"\n\n{markers.SYSTEM_NOTE}")
    assert [markers.has_system_note(msg) for msg in out].count(True) == 1


def test_the_command_line_notes_the_system_message_too(
    counter: TokenCounter, tmp_path: Path
) -> None:
    source, target = tmp_path / "session.jsonl", tmp_path / "out.jsonl"
    lines = [orjson.dumps(msg) for msg in _session_that_cats_at_its_start(counter)]
    source.write_bytes(b"\n".join(lines) + b"\n")
    argv = ["compress", "--offline", "--force", "--protect-first", str(PROTECT_FIRST)]
    result = CliRunner().invoke(app, [*argv, str(source), "-o", str(target)])
    assert result.exit_code == 0, result.output
    first = orjson.loads(target.read_bytes().splitlines()[0])
    assert m.text(first).endswith(f"\n\n{markers.SYSTEM_NOTE}")
