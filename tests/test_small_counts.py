"""Small inputs are counted in Python, exactly as tiktoken counts them, and
without building tiktoken's encoder; --estimate never imports tiktoken."""

from __future__ import annotations

import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack import formats
from ctxpack.tokens import bpe, encodings
from ctxpack.tokens import counter as tokens
from ctxpack.tokens.bpe import LONG_PIECE
from ctxpack.tokens.counter import SMALL_INPUT_CHARS, TokenCounter

from .conftest import FIXTURES, SHARED

ENCODINGS = sorted(encodings.ENCODINGS)


def _transcripts(root: Path) -> list[Path]:
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and p.suffix in (".json", ".jsonl", ".traj") and p.name != "PROVENANCE.md"
    )


def _messages(path: Path) -> list[dict[str, object]]:
    transcript = formats.read(path.read_bytes(), path=str(path))
    return [msg for session in transcript.sessions for msg in session.messages]


def _exact(name: str, text: str) -> int:
    return len(encodings.get_encoding(name).encode_ordinary(text))


@pytest.mark.parametrize("path", _transcripts(FIXTURES), ids=lambda p: p.name)
def test_every_fixture_counts_as_tiktoken_counts(path: Path) -> None:
    msgs = _messages(path)
    small = TokenCounter()
    large = TokenCounter()
    large._encoder()  # what a large input uses from the start
    assert [small.counts(msg) for msg in msgs] == [large.counts(msg) for msg in msgs]


@pytest.mark.skipif(not SHARED.is_dir(), reason="no shared real transcripts beside the checkout")
def test_shared_transcripts_count_as_tiktoken_counts() -> None:
    for path in _transcripts(SHARED):
        try:
            msgs = _messages(path)
        except Exception:  # a shape no reader takes yet is not a counting case
            continue
        small = TokenCounter(encoding="cl100k_base")
        large = TokenCounter(encoding="cl100k_base")
        large._encoder()
        assert [small.counts(msg) for msg in msgs] == [large.counts(msg) for msg in msgs], path


# Letters, digits, marks, case-folding oddities (long s, Kelvin sign), CJK,
# emoji, lone surrogates, apostrophe contractions and whitespace runs: what
# the split pattern treats differently.
PIECES = st.sampled_from(
    [
        *("'s", "'S", "'ll", "'ſ", "\u212a", " ", "  ", "\n", "\r\n", "\t", "123456", "é"),
        *("e\u0301", "日本語", "😀", "\ud800", "<|endoftext|>", "Hello", " world", "ÅÆØ", "ǅ"),
        *("//", "=="),
        # Symbols split without `regex` (bpe._SYMBOLS), and letters next to them.
        *("→", "’", "✓", "—", "🎉", "│", "×", "½", "❶"),
    ]
)
TEXTS = st.lists(st.one_of(PIECES, st.text(max_size=12)), max_size=30).map("".join)


# The first example may build an encoding's token table (about a second).
@settings(deadline=None)
@given(text=TEXTS)
def test_generated_text_counts_as_tiktoken_counts(text: str) -> None:
    # A character newer than this Python's Unicode database is left to tiktoken.
    unknown = any(unicodedata.category(char) == "Cn" for char in text)
    for name in ENCODINGS:
        counted = encodings.small_counter(name).count(text)
        assert counted == _exact(name, text) or (counted is None and unknown)
        assert TokenCounter(encoding=name).text(text) == _exact(name, text)


@pytest.mark.parametrize("text", ["\U000323b0's", "a \U0002ebf0 b", "\U00031350's"])
def test_a_character_this_python_does_not_know_is_left_to_tiktoken(text: str) -> None:
    """Python 3.11 knows Unicode 14; tiktoken and the regex module class some
    later letters differently from each other (U+323B0 splits apart)."""
    for name in ENCODINGS:
        assert encodings.small_counter(name).count(text) is None
        assert TokenCounter(encoding=name).text(text) == _exact(name, text)


def test_a_piece_too_long_to_merge_here_is_left_to_tiktoken() -> None:
    text = "x" + "-=" * LONG_PIECE
    assert encodings.small_counter().count(text) is None
    assert TokenCounter().text(text) == _exact("o200k_base", text)


def test_a_small_session_never_builds_tiktokens_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encodings, "_loaded", {})
    monkeypatch.setattr(tokens, "_python_chars", {"left": SMALL_INPUT_CHARS})
    path = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"
    TokenCounter().messages(_messages(path))
    assert encodings._loaded == {}


def test_an_input_past_the_small_size_is_counted_by_tiktoken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(encodings, "_loaded", {})
    monkeypatch.setattr(tokens, "_python_chars", {"left": SMALL_INPUT_CHARS})
    msgs = [{"role": "user", "content": "word " * 1000} for _ in range(SMALL_INPUT_CHARS // 4000)]
    counter = TokenCounter()
    total = counter.messages(msgs)
    assert list(encodings._loaded) == ["o200k_base"]
    assert total == len(msgs) * (_exact("o200k_base", "word " * 1000) + tokens.MESSAGE_OVERHEAD)


def test_many_small_files_in_one_process_soon_pay_for_tiktokens_encoder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(encodings, "_loaded", {})
    monkeypatch.setattr(tokens, "_python_chars", {"left": SMALL_INPUT_CHARS})
    # 70,000 characters a file: four fit the allowance, the fifth goes past it.
    file = [{"role": "user", "content": "word " * 1400} for _ in range(10)]
    files = 0
    while not encodings._loaded:
        TokenCounter().messages(file)
        files += 1
    assert SMALL_INPUT_CHARS == 300_000
    assert files == 5


@pytest.mark.parametrize(
    "argv",
    [["count", "--estimate"], ["prune", "--dry-run", "--estimate"], ["align", "--estimate"]],
    ids=" ".join,
)
def test_estimate_never_imports_tiktoken(argv: list[str]) -> None:
    path = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ctxpack", *argv, str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "ctxpack.tokens.counter" in imported
    assert not {name for name in imported if name.startswith("tiktoken")}


def test_a_torn_token_table_is_built_again(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CTXPACK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(encodings, "_small", {})
    text = "Token tables load by mapping: ctxpack counts /usr/lib/python3.11 once."
    expected = _exact("o200k_base", text)
    assert encodings.small_counter().count(text) == expected
    (table,) = (tmp_path / "tiktoken").glob("o200k_base-*.table")
    whole = table.read_bytes()
    for torn in (whole[: len(whole) // 2], b"", b"x" * len(whole)):
        table.write_bytes(torn)
        monkeypatch.setattr(encodings, "_small", {})
        assert encodings.small_counter().count(text) == expected
        assert table.read_bytes() == whole


def _plain_symbols() -> list[str]:
    """Every character beyond ASCII that the plain split takes."""
    beyond = (chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c <= 0xDFFF)
    return [c for c in beyond if bpe._BEYOND_PLAIN(c) is None]


def test_the_ascii_members_of_each_class_are_those_regex_matches() -> None:
    ascii_chars = [chr(c) for c in range(128)]
    for name, members in bpe._ASCII_CLASSES.items():
        unicode_class = regex.compile(rf"\p{{{name}}}")
        plain_class = re.compile(f"[{members}]") if members else re.compile("(?!)")
        assert [c for c in ascii_chars if unicode_class.fullmatch(c)] == [
            c for c in ascii_chars if plain_class.fullmatch(c)
        ], name
    spaces = [c for c in ascii_chars if regex.fullmatch(r"\s", c)]
    assert spaces == [c for c in ascii_chars if re.fullmatch(f"[{bpe._ASCII_SPACE}]", c)]
    assert spaces == ["\t", "\n", "\x0b", "\x0c", "\r", " "]


def test_the_plain_symbols_are_no_letter_digit_mark_or_space() -> None:
    symbols = _plain_symbols()
    assert len(symbols) == 2625
    assert {"→", "’", "✓", "—", "🎉", "│"} <= set(symbols)
    assert not {"é", "½", "❶", "\u00a0", "\u2028", "\ufe0f"} & set(symbols)
    classes = regex.compile(r"[\p{L}\p{N}\p{M}\s]")
    assert [c for c in symbols if classes.fullmatch(c)] == []


@pytest.mark.parametrize("name", ENCODINGS)
def test_plain_text_splits_and_counts_as_with_the_unicode_pattern(name: str) -> None:
    counter = encodings.small_counter(name)
    unicode_split = regex.compile(counter._ranks.pattern).findall
    # Every symbol between letters, digits, spaces, newlines and contractions.
    text = "".join(f"a{c}B {c}'s\n{c}{c}1{c}2 \t{c}\r\n" for c in _plain_symbols())
    assert counter._plain_split(text) == unicode_split(text)
    assert counter.count(text) == _exact(name, text)


def test_plain_text_is_counted_without_importing_regex() -> None:
    code = (
        "import sys\n"
        "from ctxpack.tokens.encodings import small_counter\n"
        "n = small_counter().count('  1→import os\\n  2→print(’done’) ✓ 🎉 — │ ×\\n')\n"
        "print(n, 'regex' in sys.modules)\n"
        "small_counter().count('café')\n"
        "print('regex' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    text = "  1→import os\n  2→print(’done’) ✓ 🎉 — │ ×\n"
    assert done.stdout.split() == [str(_exact("o200k_base", text)), "False", "True"]
