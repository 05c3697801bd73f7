"""Format detection by content: every real transcript we hold is recognised
without --from, even when the keys that tell its format come late."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from ctxpack import files, formats
from ctxpack.cli import app
from ctxpack.errors import InputError
from ctxpack.formats import base, signs
from ctxpack.formats.base import BOM, ONE_PASS_MIN_BYTES, Clue, searching_whole, words_in
from tests.conftest import FIXTURES, SHARED

# Folder name -> the format its files are (the rest are named as the format).
FOLDER_FORMAT = {"openai-chat": "openai", "pi-agent": "pi"}
runner = CliRunner()


def _real_files() -> list[Path]:
    roots = [FIXTURES, *([SHARED] if SHARED.is_dir() else [])]
    return sorted(p for root in roots for p in root.rglob("*") if p.is_file() and p.suffix != ".md")


@pytest.mark.parametrize("path", _real_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_real_transcript_is_detected_as_its_folder(path: Path) -> None:
    wanted = FOLDER_FORMAT.get(path.parent.name, path.parent.name)
    assert formats.detect(path.read_bytes(), path=str(path)).name == wanted


def _told(data: formats.base.Data) -> str:
    try:
        return formats.detect(data, path="f").name
    except InputError as exc:
        return exc.message


@pytest.mark.parametrize("path", _real_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_mapped_file_is_told_as_its_bytes_are(path: Path, tmp_path: Path) -> None:
    """Counting maps a large file rather than reading it: every rule answers
    on the whole mapping as on the whole bytes, and detection with them, with
    a byte-order mark too."""
    for data in (path.read_bytes(), BOM + path.read_bytes()):
        copy = tmp_path / path.name
        copy.write_bytes(data)
        with files.mapped_input(str(copy)) as view:
            assert view is not None
            for name, rule in signs.RULES.items():
                assert bool(rule(view)) == bool(rule(data)), name
            assert _told(view) == _told(data)


def test_the_walk_covers_the_new_formats() -> None:
    folders = {p.parent.name for p in _real_files()}
    assert {"codex", "pi", "opencode", "swe-agent", "openhands"} <= folders


def test_a_trajectory_whose_history_comes_last_is_still_swe_agent(tmp_path: Path) -> None:
    source = FIXTURES / "swe-agent"
    source = (
        source / "SWE-agent__function_calling__install-1__marshmallow-code__marshmallow-1867.traj"
    )
    doc = json.loads(source.read_bytes())
    # A longer run (its steps twice) with `history` written last.
    doc["trajectory"] = doc["trajectory"] * 2
    order = ["environment", "trajectory", "info", "replay_config", "history"]
    data = json.dumps({k: doc[k] for k in order}, indent=2).encode()
    assert data.find(b'"history"') > formats.HEAD_BYTES
    assert not formats.REGISTRY["swe-agent"].detect(data[: formats.HEAD_BYTES])
    assert formats.detect(data, path="run.traj").name == "swe-agent"
    path = tmp_path / "run.traj"
    path.write_bytes(data)
    result = runner.invoke(app, ["count", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["format"] == "swe-agent"


def test_an_openhands_record_behind_a_large_instruction_is_openhands() -> None:
    events = json.loads((FIXTURES / "openhands").glob("*.json").__next__().read_bytes())
    record = {"instance_id": "astropy-1", "instruction": "Fix it.\n" * 9000, "history": events}
    data = json.dumps(record).encode()
    assert data.find(b'"history"') > formats.HEAD_BYTES
    assert formats.detect(data, path="output.jsonl").name == "openhands"


def test_a_v1_event_list_whose_first_kind_comes_late_is_openhands() -> None:
    prompt = {"type": "text", "text": "You are OpenHands. " * 5000}
    events = [
        {"id": "e0", "source": "agent", "system_prompt": prompt, "kind": "SystemPromptEvent"},
        {
            "id": "e1",
            "source": "user",
            "llm_message": {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
            "kind": "MessageEvent",
        },
    ]
    data = json.dumps(events).encode()
    assert data.find(b'"kind"') > formats.HEAD_BYTES
    assert formats.detect(data, path="events.json").name == "openhands"
    assert formats.read(data, path="events.json").sessions[0].messages[-1]["content"] == "Hi"


def test_an_unknown_document_names_the_formats_and_points_at_from(tmp_path: Path) -> None:
    path = tmp_path / "notes.json"
    path.write_text(json.dumps({"title": "shopping", "items": ["milk"]}))
    with pytest.raises(InputError) as caught:
        formats.detect(path.read_bytes(), path=str(path))
    text = caught.value.describe()
    assert "--from" in text and all(name in text for name in formats.REGISTRY)
    result = runner.invoke(app, ["count", str(path)])
    assert result.exit_code != 0
    assert "--from" in result.stderr and "--messages-key" not in result.stderr


def test_a_forced_format_that_finds_no_messages_is_an_error(tmp_path: Path) -> None:
    source = FIXTURES / "codex" / "Trezo-Ai__codex-session.jsonl"
    with pytest.raises(
        InputError, match="no messages read as --from pi; its content looks like codex"
    ):
        formats.read(source.read_bytes(), path=str(source), fmt="pi")
    result = runner.invoke(app, ["count", str(source), "--from", "pi"])
    assert result.exit_code != 0
    assert "no messages" in result.stderr and "codex" in result.stderr


@given(
    st.binary(max_size=80).map(lambda b: b.replace(b"a", b"\n").replace(b"b", b" ")),
    st.integers(min_value=1, max_value=6),
)
def test_line_starts_are_the_first_lines_stripped_and_cut(head: bytes, limit: int) -> None:
    # Found without splitting the whole head: a detector may be given a large file.
    expected = [line.strip()[:4096] for line in head.split(b"\n")[:limit] if line.strip()]
    assert signs.line_starts(head, limit=limit) == expected


@pytest.mark.parametrize(
    ("line", "claimed"),
    [
        (b'{"parentUuid": null, "type": "user"}', True),
        (b'{"type": "user", "sessionId": "s", "leafUuid" : "u"}', True),
        (b'{ "type": "file-history-snapshot", "messageId": "m"}', True),
        (b'{"message": "x", "type": "ai-title"}', False),  # a type tag only leads a line
        (b'{"parentUuid2": 1}', False),
    ],
)
def test_a_claude_code_line_is_told_by_its_keys_or_its_leading_type(
    line: bytes, claimed: bool
) -> None:
    head = b'{"role": "user", "content": "hi"}\n' + line + b"\n"
    assert signs.claude_code(head) is claimed
    assert (formats.detect(head, path="s.jsonl").name == "claude-code") is claimed


def _clues() -> list[tuple[str, Clue]]:
    return [(name, value) for name, value in vars(signs).items() if isinstance(value, Clue)]


def test_every_whole_file_rule_is_a_clue() -> None:
    # A rule may be given a whole large file: every pattern is a Clue but
    # those of the line formats, which search only each of the first lines' start.
    patterns = {name for name, value in vars(signs).items() if isinstance(value, re.Pattern)}
    assert patterns == {
        "_CODEX",
        "_CLAUDE_STREAM",
        "_CLAUDE_CODE_KEY",
        "_CLAUDE_CODE_TYPE",
        "_PI_HEADER",
    }
    assert len(_clues()) == 16


def test_every_format_has_a_rule_and_an_adapter_of_its_name() -> None:
    assert list(signs.RULES) == list(formats.REGISTRY)
    for name, adapter in formats.REGISTRY.items():
        assert adapter.name == name


def test_telling_a_format_imports_no_reader_but_its_own() -> None:
    code = (
        "import sys\n"
        "from ctxpack import formats\n"
        "path = sys.argv[1]\n"
        "formats.read(open(path, 'rb').read(), path=path)\n"
        "print(sorted(m for m in sys.modules if m.startswith('ctxpack.formats.')))"
    )
    import subprocess

    source = FIXTURES / "codex" / "Trezo-Ai__codex-session.jsonl"
    out = subprocess.run(
        [sys.executable, "-c", code, str(source)], capture_output=True, text=True, check=True
    ).stdout
    loaded = {
        name.strip("' ").removeprefix("ctxpack.formats.") for name in out.strip("[]\n").split(",")
    }
    assert "codex" in loaded
    others = {"anthropic", "atif", "claude_code", "claude_stream", "gemini", "opencode"}
    others |= {"openhands", "pi", "sharegpt", "swe_agent", "openai"}
    assert loaded.isdisjoint(others)


@pytest.mark.parametrize(("label", "clue"), _clues(), ids=[label for label, _ in _clues()])
@given(data=st.data())
def test_every_match_of_a_clue_holds_one_of_its_words(
    label: str, clue: Clue, data: st.DataObject
) -> None:
    match = data.draw(st.from_regex(clue.pattern, fullmatch=True), label="match")
    assert any(word in match for word in clue.words), label
    # Inside other text, the clue's answer is the pattern's own.
    around = data.draw(st.binary(max_size=40), label="around")
    text = around + match + around
    assert clue.search(text) is True
    assert clue.search(around) == (clue.pattern.search(around) is not None)


@given(
    st.lists(st.binary(min_size=1, max_size=4).map(lambda b: b.replace(b"\x00", b"a")), max_size=8),
    st.binary(max_size=60),
)
def test_words_in_finds_what_in_finds(words: list[bytes], data: bytes) -> None:
    # Overlapping and nested words included: the one pass answers as `in` does per word.
    text = data + b"".join(words[::2]) + data
    assert words_in(text, words) == {word for word in words if word in text}


def test_every_clue_answers_the_same_inside_the_one_pass() -> None:
    source = FIXTURES / "openhands" / "OpenHands__tests__runtime__trajs__basic_gui_mode.json"
    data = source.read_bytes() + b'\n{"conversations": [{"from": "human", "value": "hi"}]}\n'
    data += b" " * max(0, ONE_PASS_MIN_BYTES - len(data))
    alone = {label: clue.search(data) for label, clue in _clues()}
    head = data[:40]
    head_alone = {label: clue.search(head) for label, clue in _clues()}
    with searching_whole(data):
        assert base._held.get() is not None
        assert {label: clue.search(data) for label, clue in _clues()} == alone
        # Other data is searched word by word, whatever the whole file holds.
        assert {label: clue.search(head) for label, clue in _clues()} == head_alone
    assert any(alone.values()) and not all(alone.values())
    assert not all(head_alone.values()) and alone != head_alone
    # A small file is searched word by word: compiling the alternation would cost more.
    with searching_whole(data[: ONE_PASS_MIN_BYTES - 1]):
        assert base._held.get() is None


def test_the_words_of_a_file_are_those_of_its_stretches_of_lines() -> None:
    source = FIXTURES / "openhands" / "OpenHands__tests__runtime__trajs__basic_gui_mode.json"
    data = source.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    words = words_in(data[:cut], Clue.words_of_all) | words_in(data[cut:], Clue.words_of_all)
    assert words == words_in(data, Clue.words_of_all)
    alone = {label: clue.search(data) for label, clue in _clues()}
    with searching_whole(data, words=words):
        assert base._held.get() == (data, words)
        assert {label: clue.search(data) for label, clue in _clues()} == alone
    # So that it stays true, no word spans a line.
    with pytest.raises(ValueError, match="line break"):
        Clue(rb"a\nb", b"a\nb")


def test_a_large_chat_file_is_openai_and_its_late_document_keys_still_count() -> None:
    line = json.dumps({"role": "user", "content": "a" * 200}).encode() + b"\n"
    chat = line * (2 * formats.HEAD_BYTES // len(line))
    assert formats.detect(chat, path="chat.jsonl").name == "openai"
    late = chat + b'{"conversations": [{"from": "human", "value": "hi"}]}\n'
    assert formats.detect(late, path="chat.jsonl").name == "sharegpt"
