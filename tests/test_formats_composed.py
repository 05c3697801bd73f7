"""The stages compose: `ctxpack prune F | ctxpack summarize --offline -` writes
the very bytes `ctxpack compress --offline --force F` writes, for every
writable format; and a compacted agent log keeps only the compacted
conversation, so it is much smaller than the log it came from."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ctxpack import formats, markers, toolpairs
from ctxpack import messages as m
from ctxpack.cli import app
from ctxpack.transcript import Message
from tests.conftest import COUNTER, FIXTURES
from tests.test_formats_support import chain_of, normal, sanitize, summaries, summary_message

runner = CliRunner()
# Small enough that even the short fixtures have a middle to summarize.
SMALL = ("--tail-tokens", "2000", "--protect-first", "1", "--protect-last", "3")
SETTINGS = {"defaults": (), "small": SMALL}


def _writable() -> list[Path]:
    out = []
    for path in sorted(FIXTURES.glob("*/*")):
        if path.suffix not in (".json", ".jsonl", ".traj"):
            continue
        if formats.detect(path.read_bytes(), path=str(path)).writable:
            out.append(path)
    return out


WRITABLE = _writable()
CLAUDE_CODE = sorted((FIXTURES / "claude-code").glob("*.jsonl"))
CODEX = FIXTURES / "codex" / "Trezo-Ai__codex-session.jsonl"
STREAM = next((FIXTURES / "claude-stream-json").glob("*.jsonl"))
# Fixtures whose middle is too small for a summary to pay off.
NOT_SUMMARIZED = {
    "openagents__regex-log__opus-raw.jsonl",
    "openagents__regex-log__subagents__agent-a028728.jsonl",
    "ToolBench__G2_answer__52_ChatGPT_DFS_woFilter_w2.json",
    "codex-cli-0.171__stub-tally.jsonl",
    "opencode-1.18.33__stub-numbers.json",
    "pi-0.73.1__stub-tally.jsonl",
}


def _cli(*args: str, stdin: bytes | None = None) -> bytes:
    result = runner.invoke(app, list(args), input=stdin)
    assert result.exit_code == 0, result.stderr
    return result.stdout_bytes


def _compress(source: Path | bytes, settings: tuple[str, ...]) -> bytes:
    command = ("compress", "--offline", "--force", "--no-archive", *settings)
    if isinstance(source, Path):
        return _cli(*command, str(source))
    return _cli(*command, "-", stdin=source)


def _prune(path: Path, settings: tuple[str, ...]) -> bytes:
    return _cli("prune", str(path), "--no-archive", *settings)


def _summarize(data: bytes, settings: tuple[str, ...]) -> bytes:
    return _cli("summarize", "--offline", "-", "--no-archive", *settings, stdin=data)


@pytest.fixture(scope="module")
def runs() -> dict[tuple[str, str], tuple[bytes, bytes, bytes]]:
    """(compressed, pruned, pruned then summarized) per fixture and settings, run once."""
    return {}


def _run(
    cache: dict[tuple[str, str], tuple[bytes, bytes, bytes]], path: Path, name: str
) -> tuple[bytes, bytes, bytes]:
    key = (str(path), name)
    if key not in cache:
        settings = SETTINGS[name]
        pruned = _prune(path, settings)
        cache[key] = (_compress(path, settings), pruned, _summarize(pruned, settings))
    return cache[key]


def test_every_writable_format_is_covered() -> None:
    assert {formats.read(p.read_bytes(), path=str(p)).format for p in WRITABLE} == {
        "claude-code",
        "claude-stream-json",
        "codex",
        "openai",
        "sharegpt",
        "pi",
        "opencode",
    }
    assert len(WRITABLE) == 11


@pytest.mark.parametrize("name", SETTINGS)
@pytest.mark.parametrize("path", WRITABLE, ids=lambda p: p.name)
def test_prune_then_summarize_writes_what_compress_writes(
    path: Path, name: str, runs: dict[tuple[str, str], tuple[bytes, bytes, bytes]]
) -> None:
    compressed, _, piped = _run(runs, path, name)
    assert _without_tokens_before(piped) == _without_tokens_before(compressed)


def _without_tokens_before(data: bytes) -> bytes:
    """A pi compaction records the size of the session it compacted
    (`tokensBefore`): after a separate prune that session is smaller."""
    return re.sub(rb'"tokensBefore":\d+', b'"tokensBefore":0', data)


@pytest.mark.parametrize("path", WRITABLE, ids=lambda p: p.name)
def test_the_small_settings_summarize_each_fixture(
    path: Path, runs: dict[tuple[str, str], tuple[bytes, bytes, bytes]]
) -> None:
    """The equality above is not vacuous: a summary was written, or (for a
    middle too small to pay off) the output is exactly the pruned file."""
    compressed, pruned, _ = _run(runs, path, "small")
    sessions = formats.read(compressed, path="out").sessions
    summarized = [s for s in sessions if any(markers.is_summary(x) for x in s.messages)]
    if path.name in NOT_SUMMARIZED:
        assert not summarized and compressed == pruned
    else:
        assert summarized and compressed != pruned
        assert all(toolpairs.orphans(s.messages)[0] == [] for s in sessions)


def test_a_shell_pipe_gives_the_same_bytes(tmp_path: Path) -> None:
    path = CLAUDE_CODE[0]
    command = [sys.executable, "-m", "ctxpack"]
    prune = subprocess.run(
        [*command, "prune", str(path), "--no-archive", *SMALL], capture_output=True, check=True
    )
    piped = subprocess.run(
        [*command, "summarize", "--offline", "-", "--no-archive", *SMALL],
        input=prune.stdout,
        capture_output=True,
        check=True,
    )
    compressed = subprocess.run(
        [*command, "compress", "--offline", "--force", str(path), "--no-archive", *SMALL],
        capture_output=True,
        check=True,
    )
    assert piped.stdout == compressed.stdout
    assert b'"isCompactSummary":true' in piped.stdout


# -- what a compacted agent log holds ------------------------------------------


def _objs(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def _blocks(objs: list[dict[str, Any]], kind: str, key: str) -> list[str]:
    return [
        b[key]
        for o in objs
        if isinstance(o.get("message"), dict) and isinstance(o["message"].get("content"), list)
        for b in o["message"]["content"]
        if b.get("type") == kind
    ]


def _pending(data: bytes) -> set[str]:
    """Ids of the calls a log itself has no result for yet."""
    messages = formats.read(data, path="in").sessions[0].messages
    return {use.call_id for use in toolpairs.orphans(messages)[1]}


def _check_claude_code(data: bytes) -> list[dict[str, Any]]:
    objs = _objs(data)
    chain = chain_of(objs)
    assert chain[0]["subtype"] == "compact_boundary" and chain[0]["parentUuid"] is None
    # The kept head follows the boundary, then the one record, then the tail.
    (record,) = [o for o in chain if o.get("isCompactSummary")]
    assert chain.index(record) > 1
    assert markers.is_summary({"role": "user", "content": record["message"]["content"]})
    # Nothing but the compacted conversation is left on any chain.
    assert [o["uuid"] for o in objs if "uuid" in o] == [o["uuid"] for o in chain]
    assert sorted(_blocks(chain, "tool_use", "id")) == sorted(
        _blocks(chain, "tool_result", "tool_use_id")
    )
    return chain


@pytest.mark.parametrize(
    "path", [p for p in CLAUDE_CODE if p.name not in NOT_SUMMARIZED], ids=lambda p: p.name
)
def test_a_compacted_claude_code_log_holds_only_the_newchain_of(
    path: Path, runs: dict[tuple[str, str], tuple[bytes, bytes, bytes]]
) -> None:
    data = path.read_bytes()
    out, _, _ = _run(runs, path, "small")
    _check_claude_code(out)
    # Lines outside the conversation (queue operations here) stay, in order.
    assert [x for x in out.splitlines() if b'"uuid"' not in x] == [
        x for x in data.splitlines() if b'"uuid"' not in x
    ]
    assert len(out) < len(data) / 2
    again = _compress(out, SMALL)
    chain = _check_claude_code(again)
    assert [o.get("subtype") for o in _objs(again)].count("compact_boundary") == 1
    back = formats.read(again, path="again.jsonl").sessions[0].messages
    once = formats.read(out, path="out.jsonl").sessions[0].messages
    # One record, after the same head as the first time.
    (at,) = [k for k, x in enumerate(back) if markers.is_summary(x)]
    assert at > 0 and back[:at] == once[:at] and markers.is_summary(once[at])
    assert len(chain) < len(chain_of(_objs(out))) + 2


def _replay(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = []
    for obj in objs:
        if obj["type"] == "response_item":
            history.append(obj["payload"])
        elif obj["type"] == "compacted":
            history = list(obj["payload"]["replacement_history"])
    return history


@pytest.mark.parametrize("name", SETTINGS)
def test_a_compacted_codex_rollout_replays_to_the_new_history(
    name: str, runs: dict[tuple[str, str], tuple[bytes, bytes, bytes]]
) -> None:
    data = CODEX.read_bytes()
    out, _, _ = _run(runs, CODEX, name)
    objs = _objs(out)
    at = [i for i, o in enumerate(objs) if o["type"] == "compacted"]
    assert len(at) == 1
    # Before the compacted line: no history, no copies of removed calls.
    assert not [o for o in objs[: at[0]] if o["type"] == "response_item"]
    history = _replay(objs)
    calls = {i["call_id"] for i in history if i["type"] == "function_call"}
    outputs = {i["call_id"] for i in history if i["type"] == "function_call_output"}
    # Every call is answered but those the session ends on, still waiting.
    assert outputs <= calls and calls - outputs == _pending(data)
    ended = [o["payload"] for o in objs if o["payload"].get("type") == "exec_command_end"]
    assert ended and {e["call_id"] for e in ended} <= calls
    summary = objs[at[0]]["payload"]["replacement_history"][-1]
    assert markers.is_summary({"role": "user", "content": summary["content"][0]["text"]})
    session = formats.read(out, path="out.jsonl").sessions[0]
    found = [x for x in session.messages if markers.is_summary(x)]
    assert [m.text(x) for x in found] == [objs[at[0]]["payload"]["message"]]
    assert len(out) < len(data) * (0.85 if name == "defaults" else 0.5)
    again = _objs(_compress(out, SETTINGS[name]))
    assert sum(o["type"] == "compacted" for o in again) == 1


def test_a_compacted_stream_log_starts_its_context_at_the_new_boundary(
    runs: dict[tuple[str, str], tuple[bytes, bytes, bytes]],
) -> None:
    data = STREAM.read_bytes()
    out, _, _ = _run(runs, STREAM, "small")
    objs = _objs(out)
    kinds = [(o["type"], o["message"].get("subtype")) for o in objs]
    assert kinds[:3] == [("system", "init"), ("system", "compact_boundary"), ("user", None)]
    assert kinds.count(("system", "compact_boundary")) == 1
    assert markers.is_summary({"role": "user", "content": objs[2]["message"]["content"]})
    uses = set(_blocks(objs, "tool_use", "id"))
    assert set(_blocks(objs, "tool_result", "tool_use_id")) <= uses
    assert uses - set(_blocks(objs, "tool_result", "tool_use_id")) == _pending(data)
    assert len(out) < len(data) / 10


# -- the same at the adapter level, for any mix of stage edits -------------------

AGENT_LOGS = [*CLAUDE_CODE, CODEX, STREAM]


def _edited(msgs: list[Message], seed: int) -> list[Message]:
    """Edits a stage makes while keeping every turn: outputs replaced by short
    placeholders, arguments shrunk, texts rewritten (which takes new lines
    when a turn had no text block), pending calls stripped."""
    rnd = random.Random(seed)
    out: list[Message] = []
    for index, msg in enumerate(msgs):
        if m.role(msg) == "tool" and rnd.random() < 0.5:
            msg = {**msg, "content": f"[output {index} pruned]"}
        elif m.tool_calls(msg) and rnd.random() < 0.3:
            calls = [
                {**c, "function": {**c["function"], "arguments": '{"shrunk":true}'}}
                for c in m.tool_calls(msg)
            ]
            msg = {**msg, "tool_calls": calls}
        elif m.role(msg) in ("user", "assistant") and rnd.random() < 0.2:
            msg = {**msg, "content": f"[turn {index} rewritten]"}
        out.append(msg)
    return sanitize(out)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    which=st.sampled_from(AGENT_LOGS),
    head=st.integers(1, 3),
    tail=st.integers(2, 12),
)
# A rewritten head turn: read back from the edited file it is found by its
# text, so its offset must find the same line when the edit is not written.
@example(seed=2, which=STREAM, head=2, tail=2)
def test_compacting_a_written_edit_equals_compacting_in_one_write(
    seed: int, which: Path, head: int, tail: int
) -> None:
    """Edits written by one command and a compaction by the next give the file
    one command doing both writes."""
    transcript = formats.read(which.read_bytes(), path=str(which))
    session = transcript.sessions[0]
    edited = _edited(session.messages, seed)
    once = formats.write(transcript.with_sessions([session.with_messages(edited)]), counter=COUNTER)
    again = formats.read(once, path="once.jsonl")
    reread = again.sessions[0].messages
    assume(normal(reread) == normal(edited) and len(reread) == len(edited))

    def compact(msgs: list[Message]) -> list[Message]:
        # A summary already in the head is replaced, as the pipeline updates it.
        first = [x for x in msgs[:head] if not markers.is_summary(x)]
        return sanitize([*first, summary_message(), *msgs[max(head, len(msgs) - tail) :]])

    direct = formats.write(
        transcript.with_sessions([session.with_messages(compact(edited))]), counter=COUNTER
    )
    piped = formats.write(
        again.with_sessions([again.sessions[0].with_messages(compact(reread))]), counter=COUNTER
    )
    assert piped == direct
    assert len(summaries(formats.read(direct, path="out.jsonl").sessions[0].messages)) == 1
