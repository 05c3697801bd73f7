"""Whatever a stage makes of a session's messages, a format written in place
reads back as exactly those messages: none lost, none moved, none retyped.
The edits are random mixes of what stages do (tests/test_formats_support.py),
on real files, read as they are or first converted to another format (a
Claude Code session carries reasoning that the stub files do not). Codex and
Claude Code files run the same check in their own tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack import formats
from tests.conftest import COUNTER, FIXTURES, SHARED
from tests.test_formats_support import mutated, normal

PI_LARGE = SHARED / "pi-agent" / "pi-mono__test__fixtures__large-session.jsonl"
PI_STUB = FIXTURES / "pi" / "pi-0.73.1__stub-tally.jsonl"
OPENCODE = FIXTURES / "opencode" / "opencode-1.18.33__stub-numbers.json"
HAIKU = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"
FILES = [
    PI_LARGE,
    PI_STUB,
    OPENCODE,
    FIXTURES
    / "claude-stream-json"
    / "openagents__logs__20251222_175115-call-issue-ready-now-to.jsonl",
    FIXTURES / "sharegpt" / "LLaMA-Factory__data__glaive_toolcall_en_demo.json",
    FIXTURES / "openai-chat" / "ToolBench__G2_answer__52_ChatGPT_DFS_woFilter_w2.json",
]
WRITTEN_IN_PLACE = ["anthropic", "codex", "opencode", "pi", "sharegpt"]


def _written_and_read(
    path: Path, seed: int, *, to: str | None = None
) -> tuple[list[object], list[object]]:
    """(the edited sessions as a model sees them, the same read back from the
    file written); `to`: the file converted to this format first."""
    transcript = formats.read(path.read_bytes(), path=path.name)
    if to is not None:
        data = formats.write(transcript, counter=COUNTER, fmt=to)
        transcript = formats.read(data, path=path.name, fmt=to)
    edited = [s.with_messages(mutated(s.messages, seed)) for s in transcript.sessions]
    data = formats.write(transcript.with_sessions(edited), counter=COUNTER)
    back = formats.read(data, path=path.name, fmt=transcript.format)
    return (
        [normal(s.messages, ids=False) for s in edited],
        [normal(s.messages, ids=False) for s in back.sessions],
    )


@pytest.mark.parametrize(
    ("path", "to", "seed"),
    [
        # A user message between two dropped runs matched no original: pi
        # left it out of the file, and the user's words with it.
        (PI_LARGE, None, 0),
        # A sanitizer note on a turn no original matched: pi left it out too.
        (PI_STUB, None, 17),
        # A note on a turn that had no text part: opencode dropped the text.
        (OPENCODE, None, 14),
        # An assistant note with no original: opencode wrote it as a user message.
        (OPENCODE, None, 142),
        # A turn holding reasoning from lines outside its own: Codex dropped it.
        (HAIKU, "codex", 1),
        # A turn whose reasoning is not its original's: opencode kept the old one.
        (HAIKU, "opencode", 1),
    ],
    ids=[
        "pi-lost-user-message",
        "pi-lost-note",
        "opencode-textless-turn",
        "opencode-new-turn",
        "codex-moved-reasoning",
        "opencode-other-reasoning",
    ],
)
def test_edits_that_once_went_astray_read_back_as_written(
    path: Path, to: str | None, seed: int
) -> None:
    edited, back = _written_and_read(path, seed, to=to)
    assert back == edited


@pytest.mark.parametrize("path", FILES, ids=[p.parent.name for p in FILES])
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_any_stage_edit_reads_back_as_written(path: Path, seed: int) -> None:
    edited, back = _written_and_read(path, seed)
    assert back == edited


@pytest.mark.parametrize("to", WRITTEN_IN_PLACE)
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_any_stage_edit_of_a_converted_session_reads_back_as_written(to: str, seed: int) -> None:
    edited, back = _written_and_read(HAIKU, seed, to=to)
    assert back == edited
