"""Invariants of the whole pipeline on generated transcripts.

Every generated transcript goes in as OpenAI JSONL bytes, through
`compress_transcript` with the offline summarizer and a tiny tail budget (so
that almost every example compacts), and out through the writer. Whatever
the contents (roles, parallel tool calls, emoji, U+2028, empty and huge
texts, earlier summaries of ours or of another agent), the result must parse
back, pair every tool call with its result, keep the latest user request,
never cost tokens, and be undone exactly by the archive.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxpack import formats, markers, toolpairs
from ctxpack import messages as m
from ctxpack.align.boundaries import latest_user_index
from ctxpack.align.budget import Budget
from ctxpack.archive.store import Archive
from ctxpack.pipeline.archiving import Kept, record_run
from ctxpack.pipeline.compaction import CompressSettings, compress_transcript
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message, Transcript
from tests.conftest import COUNTER

EXAMPLES = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Words, paths, JSON-significant punctuation, emoji (4-byte UTF-8, a ZWJ
# sequence), line separators JSON allows raw but JavaScript does not, NUL.
PIECES = st.sampled_from(
    [
        *["fix", "the", "tests", " ", " ", "\n", "\t", "/src/app.py", "Error: boom", "exit 1"],
        *['"', "\\", "{", "}", "[", "]", ":", ",", "é", "ß", "中文", "😀", "🧪", "👩\u200d💻"],
        *["\u2028", "\u2029", "\x00", "\r\n"],
        "\ud83d",  # half an emoji, as a JavaScript string cut may leave it
    ]
)
SHORT = st.lists(PIECES, max_size=20).map("".join)
# Large texts are built by repetition: drawing 20k pieces one by one is slow.
# Each line starts with a word, so that no huge text is one deeply nested JSON
# document (test_faults covers those).
HUGE = st.builds(
    lambda line, n: f"out {line}\n" * n,
    st.lists(PIECES, min_size=1, max_size=8).map("".join),
    st.integers(300, 2500),
)
TEXT = st.one_of(st.just(""), SHORT, SHORT, SHORT, HUGE)
TOOL_NAMES = st.sampled_from(["bash", "read_file", "edit", "search", "run_tests"])


IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


def _content(text: str, shape: int) -> Any:
    """A plain string, a list of text parts, or text beside an image."""
    if shape == 0:
        return text
    if shape == 1:
        return [{"type": "text", "text": text}]
    return [{"type": "text", "text": text}, IMAGE]


@st.composite
def transcripts(draw: st.DrawFn) -> list[Message]:
    """A plausible agent conversation: optional system prompt, then turns."""
    out: list[Message] = []
    if draw(st.booleans()):
        out.append({"role": "system", "content": draw(SHORT) or "You are a coding agent."})
    calls = 0
    for _ in range(draw(st.integers(0, 24))):
        kind = draw(
            st.sampled_from(
                ["user", "user", "assistant", "tools", "tools", "tools", "ours", "hermes"]
            )
        )
        if kind == "user":
            out.append({"role": "user", "content": _content(draw(TEXT), draw(st.integers(0, 2)))})
        elif kind == "assistant":
            reply: Message = {"role": "assistant", "content": draw(TEXT)}
            if draw(st.booleans()):
                reply["reasoning_content"] = draw(TEXT)
            out.append(reply)
        elif kind == "tools":
            width = draw(st.integers(1, 3))
            ids = [f"call_{calls + k}" for k in range(width)]
            calls += width
            tool_calls = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {
                        "name": draw(TOOL_NAMES),
                        "arguments": json.dumps(
                            {"path": draw(SHORT), "n": draw(st.integers(-(2**70), 2**70))},
                            ensure_ascii=draw(st.booleans()),
                        ),
                    },
                }
                for call_id in ids
            ]
            said = draw(st.one_of(st.none(), SHORT))
            out.append({"role": "assistant", "content": said, "tool_calls": tool_calls})
            # Parallel results may come back in any order.
            for call_id in draw(st.permutations(ids)):
                out.append({"role": "tool", "tool_call_id": call_id, "content": draw(TEXT)})
        elif kind == "ours":
            body = draw(SHORT).strip() or "Fixed the parser; tests pass."
            block = f"{markers.SUMMARY_PREFIX}\n\n{body}\n\n{markers.SUMMARY_END}"
            out.append({"role": "user", "content": block})
        else:
            body = draw(SHORT) or "the agent was refactoring the CLI"
            out.append({"role": "user", "content": f"[CONTEXT SUMMARY]: {body}"})
    return out


def _line(msg: Message) -> bytes:
    text = json.dumps(msg, ensure_ascii=False)
    try:
        return text.encode() + b"\n"
    except UnicodeEncodeError:  # a lone surrogate can only be written escaped
        return json.dumps(msg).encode() + b"\n"


def _jsonl(messages: list[Message]) -> bytes:
    return b"".join(_line(msg) for msg in messages)


def _read(data: bytes) -> Transcript:
    return formats.read(data, path="gen.jsonl", fmt="openai")


def _forced(tail_tokens: int, protect_last: int) -> CompressSettings:
    budget = Budget(tail_tokens=tail_tokens, protect_first=1, protect_last=protect_last)
    return CompressSettings(force=True, budget=budget)


def _compress(
    data: bytes, counter: TokenCounter, settings: CompressSettings
) -> tuple[Transcript, Transcript, bytes]:
    original = _read(data)
    result, _report = compress_transcript(original, counter=counter, settings=settings)
    return original, result, formats.write(result, counter=COUNTER)


def _quoted(ask: str) -> str:
    return "> " + ask.strip().replace("\n", "\n> ")


@pytest.fixture(scope="module")
def archive_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("archive") / "archive.db"


@EXAMPLES
@given(transcripts(), st.integers(1, 400), st.integers(1, 6))
def test_forced_compaction_keeps_every_invariant(
    counter: TokenCounter, messages: list[Message], tail_tokens: int, protect_last: int
) -> None:
    data = _jsonl(messages)
    original, result, written = _compress(data, counter, _forced(tail_tokens, protect_last))
    out = result.sessions[0].messages

    # The written bytes are a valid transcript holding exactly the result.
    assert _read(written).sessions[0].messages == out
    assert toolpairs.orphans(out) == ([], [])
    assert counter.messages(out) <= counter.messages(original.sessions[0].messages)
    assert sum(markers.is_summary(msg) for msg in out) <= max(
        1, sum(markers.is_summary(msg) for msg in messages)
    )

    latest = latest_user_index(messages)
    ask = m.text(messages[latest]) if latest is not None else ""
    if ask.strip():  # a blank turn (U+2028 alone is blank too) has nothing to keep
        texts = [m.text(msg) for msg in out]
        kept = any(ask in text for text in texts) or any(_quoted(ask) in text for text in texts)
        assert kept, f"latest user request lost: {ask[:80]!r}"


@EXAMPLES
@given(transcripts())
def test_under_threshold_is_the_identity(counter: TokenCounter, messages: list[Message]) -> None:
    data = _jsonl(messages)
    original = _read(data)
    settings = CompressSettings(budget=Budget(context_length=10**9))
    result, report = compress_transcript(original, counter=counter, settings=settings)
    assert result.sessions[0].messages is original.sessions[0].messages
    assert report.sessions[0].status == "under-threshold"
    assert formats.write(result, counter=COUNTER) == data


@EXAMPLES
@given(transcripts(), st.integers(1, 400))
def test_restore_gives_back_the_exact_input(
    counter: TokenCounter, archive_path: Path, messages: list[Message], tail_tokens: int
) -> None:
    data = _jsonl(messages)
    original, result, written = _compress(data, counter, _forced(tail_tokens, 3))
    ref = record_run(
        archive_path=str(archive_path),
        original=original,
        result=result,
        output=written,
        kept=Kept(),
    )
    if written == data:
        assert ref is None
        return
    with Archive.open(archive_path) as archive:
        assert archive.restore(written) == data


@EXAMPLES
@given(transcripts(), st.integers(1, 400))
def test_compressing_the_output_again_at_rest_changes_nothing(
    counter: TokenCounter, messages: list[Message], tail_tokens: int
) -> None:
    """Once compacted, an unforced run under the threshold leaves the bytes alone."""
    _original, _result, written = _compress(_jsonl(messages), counter, _forced(tail_tokens, 3))
    again, _again_result, rewritten = _compress(
        written, counter, CompressSettings(budget=Budget(context_length=10**9))
    )
    assert rewritten == written
    assert again.raw == written
