"""Helpers shared by the format adapter tests (no tests of its own).

Token expectations are computed straight from the raw files with tiktoken,
following the counter's published rules (texts + tool-call names and
arguments + reasoning, 4 tokens per message, 1600 per image), so they do not
go through the adapters under test.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from ctxpack import formats, markers, toolpairs
from ctxpack import messages as m
from ctxpack.align.budget import Budget
from ctxpack.cli import app
from ctxpack.formats.base import ReadOptions
from ctxpack.pipeline.batch import compress_file
from ctxpack.pipeline.compaction import CompressSettings
from ctxpack.pipeline.run import FileJob
from ctxpack.pipeline.stages import Compress
from ctxpack.summarize.sanitize import sanitize_tool_pairs
from ctxpack.tokens.counter import TokenCounter
from ctxpack.tokens.encodings import get_encoding
from ctxpack.transcript import Message, Transcript
from tests.conftest import COUNTER

ENCODING = get_encoding("o200k_base")


def tok(text: str) -> int:
    return len(ENCODING.encode_ordinary(text)) if text else 0


def expected(texts: list[str], messages: int, images: int = 0) -> int:
    """Tokens of the given model-visible texts plus per-message and image costs."""
    return sum(tok(t) for t in texts) + 4 * messages + 1600 * images


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def summary_message(body: str = "1. Read the task.\n2. Wrote the regex.") -> Message:
    text = f"{markers.SUMMARY_PREFIX}\n\n{body}\n{markers.SUMMARY_END}"
    return {"role": "user", "content": text}


def sanitize(msgs: list[Message]) -> list[Message]:
    """Drop results whose call is gone and strip calls whose results are gone."""
    return sanitize_tool_pairs(msgs)[0]


def compacted(
    transcript: Transcript, *, head: int = 2, tail: int = 8, session: int = 0
) -> tuple[Transcript, list[Message]]:
    """Drop the middle, insert a summary, prune the first tail tool result."""
    sessions = list(transcript.sessions)
    msgs = sessions[session].messages
    kept = list(msgs[-tail:])
    while kept and m.role(kept[0]) == "tool":
        kept.pop(0)
    for index, msg in enumerate(kept):
        if m.role(msg) == "tool":
            kept[index] = {**msg, "content": "[output pruned]"}
            break
    new = sanitize([*msgs[:head], summary_message(), *kept])
    sessions[session] = sessions[session].with_messages(new)
    return transcript.with_sessions(sessions), new


def updated(transcript: Transcript, body: str) -> tuple[Transcript, list[Message]]:
    """Replace the summary of session 0 with a new one (a second compaction)."""
    session = transcript.sessions[0]
    new: list[Message] = []
    for msg in session.messages:
        new.append(summary_message(body) if markers.is_summary(msg) else msg)
    sessions = [session.with_messages(new), *transcript.sessions[1:]]
    return transcript.with_sessions(sessions), new


def mutated(msgs: list[Message], seed: int) -> list[Message]:
    """A random mix of the edits stages make: drop a middle run, prune results,
    rewrite arguments and user text; then sanitize the tool pairs."""
    rnd = random.Random(seed)
    n = len(msgs)
    start = rnd.randrange(1, max(2, n // 2))
    stop = start + rnd.randrange(0, max(1, n // 3))
    out: list[Message] = []
    for index, msg in enumerate(msgs):
        if start <= index < stop and rnd.random() < 0.8:
            continue
        if m.role(msg) == "tool" and rnd.random() < 0.3:
            msg = {**msg, "content": f"[pruned {index}]"}
        elif m.tool_calls(msg) and rnd.random() < 0.2:
            calls = [
                {**c, "function": {**c["function"], "arguments": '{"shrunk":true}'}}
                for c in m.tool_calls(msg)
            ]
            msg = {**msg, "tool_calls": calls}
        elif m.role(msg) == "user" and rnd.random() < 0.2:
            msg = {**msg, "content": "shortened"}
        out.append(msg)
    return sanitize(out)


def normal(msgs: list[Message], *, ids: bool = True) -> list[dict[str, Any]]:
    """What a model sees, with consecutive assistant messages merged (formats
    that store one item per block cannot tell them apart)."""
    out: list[dict[str, Any]] = []
    for msg in msgs:
        entry: dict[str, Any] = {
            "role": m.role(msg),
            "texts": [t for t in m.text_parts(msg) if t],
            "calls": [
                (m.call_id(c) if ids else "", m.call_name(c), m.call_arguments(c))
                for c in m.tool_calls(msg)
            ],
            "result": m.result_call_id(msg) if ids else "",
            "reasoning": [t for t in m.reasoning_texts(msg) if t],
            "images": m.image_count(msg),
        }
        if out and entry["role"] == "assistant" == out[-1]["role"]:
            for key in ("texts", "calls", "reasoning"):
                out[-1][key] += entry[key]
            continue
        out.append(entry)
    return out


def summaries(msgs: list[Message]) -> list[Message]:
    return [msg for msg in msgs if markers.is_summary(msg)]


def compress_read_only(source: Path, out: Path) -> tuple[dict[str, Any], list[Message]]:
    """`compress --offline --force --context-length 8000` of a read-only format,
    by the CLI and by the library: the same openai JSONL either way, with the
    read-only warning and no orphan tool pairs. The CLI's report and the
    messages written come back."""
    report_path = out.with_name(out.name + ".report.json")
    args = ["compress", "--offline", "--force", "--context-length", "8000", "--no-archive"]
    result = CliRunner().invoke(
        app, [*args, str(source), "-o", str(out), "--report", str(report_path)]
    )
    assert result.exit_code == 0, result.output
    settings = CompressSettings(force=True, budget=Budget(context_length=8000))
    job = FileJob(str(source), None, read_options=ReadOptions(), archive=False)
    outcome = compress_file(job, stage=Compress(settings))
    assert outcome.data == out.read_bytes()
    report = json.loads(report_path.read_text())
    warning = f"{report['format']} is read-only; the output is written as openai"
    assert warning in " ".join(result.stderr.split())
    assert report["sessions"][0]["warnings"] == [warning]
    assert outcome.report is not None and outcome.report.sessions[0].warnings == [warning]
    written = formats.read(out.read_bytes(), path=str(out))
    assert written.format == "openai"
    msgs = written.sessions[0].messages
    assert toolpairs.orphans(msgs) == ([], [])
    return report, msgs


def assert_counted(source: Path, expected: dict[str, int], counter: TokenCounter) -> None:
    """`count --json` and the library both report `expected` tokens by kind."""
    result = CliRunner().invoke(app, ["count", str(source), "--json"])
    assert result.exit_code == 0, result.output
    total = json.loads(result.stdout)["total"]
    assert total["tokens_by_kind"] == expected
    assert total["tokens"] == sum(expected.values())
    msgs = formats.read(source.read_bytes(), path=str(source)).sessions[0].messages
    assert counter.messages(msgs) == sum(expected.values())


def block_values(contents: list[Any], block_type: str, key: str) -> set[str]:
    """`key` of every content block of `block_type` in these message contents."""
    return {
        block[key]
        for content in contents
        if isinstance(content, list)
        for block in content
        if isinstance(block, dict) and block.get("type") == block_type
    }


def chain_of(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A Claude Code log's chain as the client reads it: parentUuid from the last
    entry of the file back to the root."""
    by_uuid = {o["uuid"]: o for o in objs if "uuid" in o}
    node: dict[str, Any] | None = [o for o in objs if "uuid" in o][-1]
    chain: list[dict[str, Any]] = []
    while node is not None:
        assert node not in chain, "parentUuid cycle"
        chain.append(node)
        node = by_uuid.get(node.get("parentUuid"))
    return chain[::-1]


def round_trip(path: Path, fmt: str) -> Transcript:
    """`path` read as `fmt` and written back unchanged: the very same bytes."""
    data = path.read_bytes()
    transcript = formats.read(data, path=str(path))
    assert transcript.format == fmt
    assert formats.write(transcript, counter=COUNTER) == data
    return transcript
