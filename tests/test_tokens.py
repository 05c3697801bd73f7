"""Exact, offline token counts."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import tiktoken
from hypothesis import given
from hypothesis import strategies as st
from tiktoken_ext import openai_public

from ctxpack import formats
from ctxpack import messages as m
from ctxpack.errors import UsageError
from ctxpack.formats.base import ReadOptions
from ctxpack.tokens import encodings
from ctxpack.tokens.counter import (
    IMAGE_TOKENS,
    KINDS,
    MESSAGE_OVERHEAD,
    RECALL_CHARS,
    RECALL_MIN_CHARS,
    RECALL_TEXTS,
    TokenCounter,
    stretches,
)
from ctxpack.tokens.tally import tally
from tests.conftest import FIXTURES, SHARED


@pytest.mark.parametrize("name", sorted(encodings.ENCODINGS))
def test_bundled_files_match_tiktokens_own_hashes(name: str, tmp_path: Path) -> None:
    url, sha256 = encodings.ENCODINGS[name]
    source = Path(openai_public.__file__).read_text()
    assert url in source and sha256 in source
    seeded = encodings.seed_tiktoken_cache(name, tmp_path)
    assert seeded.name == hashlib.sha1(url.encode()).hexdigest()
    assert hashlib.sha256(seeded.read_bytes()).hexdigest() == sha256


def test_corrupt_cache_file_is_reseeded(tmp_path: Path) -> None:
    seeded = encodings.seed_tiktoken_cache("cl100k_base", tmp_path)
    seeded.write_bytes(b"garbage")
    again = encodings.seed_tiktoken_cache("cl100k_base", tmp_path)
    assert hashlib.sha256(again.read_bytes()).hexdigest() == encodings.ENCODINGS["cl100k_base"][1]


def test_encodings_load_without_network(
    no_network: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXPACK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(encodings, "_loaded", {})
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    for name in encodings.ENCODINGS:
        enc = encodings.get_encoding(name)
        assert enc.name == name
    assert (tmp_path / "tiktoken").is_dir()
    assert encodings.get_encoding("o200k_base").encode_ordinary("hello world") == [24912, 2375]


def test_unknown_encoding_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown encoding"):
        TokenCounter(encoding="p50k_whatever")


def test_special_token_text_counts_as_ordinary_text(counter: TokenCounter) -> None:
    assert counter.text("<|endoftext|>") > 1


def test_message_cost_parts(counter: TokenCounter) -> None:
    enc = encodings.get_encoding("o200k_base")
    msg = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Looking at the file."},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ],
        "reasoning_content": "think first",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "Read", "arguments": '{"a":1}'}}
        ],
    }
    n = len
    expected = {
        "assistant_text": n(enc.encode_ordinary("Looking at the file.")),
        "images": IMAGE_TOKENS,
        "reasoning": n(enc.encode_ordinary("think first")),
        "tool_calls": n(enc.encode_ordinary("Read")) + n(enc.encode_ordinary('{"a":1}')),
        "overhead": MESSAGE_OVERHEAD,
    }
    assert counter.breakdown(msg) == expected
    assert counter.message(msg) == sum(expected.values())


def _tokenized(counter: TokenCounter, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text `counter` tokenizes from now on, in order."""
    tokenized: list[str] = []

    def count(text: str) -> int:
        tokenized.append(text)
        return len(encodings.get_encoding(counter.encoding_name).encode_ordinary(text))

    monkeypatch.setattr(counter, "_count", count)
    return tokenized


def test_a_long_text_counted_again_is_recalled_not_tokenized_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counter = TokenCounter(encoding="o200k_base")
    tokenized = _tokenized(counter, monkeypatch)
    summary = "## Goal\n" + "Keep the user's wording of every constraint. " * 20
    expected = len(encodings.get_encoding("o200k_base").encode_ordinary(summary))
    short = "x" * (RECALL_MIN_CHARS - 1)
    assert counter.text(summary) == expected
    # An equal text built anew (a summary read back from its message) is the same text.
    assert counter.text("".join(list(summary))) == expected
    assert counter.text(short) == counter.text(short)
    assert tokenized == [summary, short, short]
    # Only the last few long texts are kept: the memo never grows with a session.
    others = [f"{n} {summary}" for n in range(RECALL_TEXTS)]
    for text in others:
        counter.text(text)
    assert len(counter._recent) == RECALL_TEXTS
    tokenized.clear()
    counter.text(summary)
    counter.text(others[-1])
    assert tokenized == [summary]
    # A stretch recalled outlives the file: the next record repeats the template's.
    counter.forget()
    tokenized.clear()
    counter.text(others[-1])
    assert tokenized == []


def test_estimate_is_four_chars_per_token() -> None:
    est = TokenCounter(estimate=True)
    assert est.text("abcdefghi") == 3
    assert est.message({"role": "user", "content": "abcd"}) == 1 + MESSAGE_OVERHEAD


def test_an_estimate_keeps_no_memo_and_needs_no_priming() -> None:
    est = TokenCounter(estimate=True)
    msgs = [{"role": "user", "content": "abcd" * 3}, {"role": "tool", "content": "x"}]
    est.prime(msgs)
    with est.counting(msgs):
        assert est.messages(msgs) == 3 + 1 + 2 * MESSAGE_OVERHEAD
    assert est.breakdown(msgs[1]) == {"tool_results": 1, "overhead": MESSAGE_OVERHEAD}
    assert est._memo == {} and est._alive == []


# Pieces that meet at a blank line in every way the split patterns treat
# differently: newlines in runs, spaces and tabs before them, punctuation that
# takes the newlines after it, "/" that o200k's takes too, letters, digits,
# contractions, non-ASCII letters and marks, and a blank line's "\r".
_AT_BLANK_LINES = st.lists(
    st.sampled_from(
        [
            *("\n\n", "\n", "\n\n\n", " ", "\t", "\r\n\r\n", "\xa0", "\u2028"),
            *(".", ":", "##", "- ", "1.", "/", "//", "`", "'s", "'", '"', "(", "*", "[x]"),
            *("word", "Word", " word", "WORD", "7", "123456", "é", "e\u0301", "中文", "🙂"),
            *("## Goal\n- None recorded.", "Source turns: ctxpack:192e99cc8f", "http://a.b/c"),
        ]
    ),
    max_size=30,
).map("".join)


@pytest.mark.parametrize("name", sorted(encodings.ENCODINGS))
@given(text=_AT_BLANK_LINES)
def test_a_text_counts_as_the_sum_of_its_stretches(name: str, text: str) -> None:
    enc = encodings.get_encoding(name)
    assert "".join(stretches(text)) == text
    whole = len(enc.encode_ordinary(text))
    assert sum(len(enc.encode_ordinary(part)) for part in stretches(text)) == whole
    assert TokenCounter(encoding=name).text(text * 8) == len(enc.encode_ordinary(text * 8))


def test_the_stretches_recalled_hold_a_bounded_number_of_characters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counter = TokenCounter(encoding="o200k_base")
    monkeypatch.setattr(counter, "_count", len)
    outputs = [f"{n} " + "x" * (RECALL_CHARS // 3) for n in range(5)]
    for text in outputs:
        assert counter.text(text) == len(text)
    # Long tool outputs do not stay alive for the rest of a run: the oldest go.
    assert list(counter._recent) == outputs[-2:]
    assert counter._recent_chars == sum(map(len, outputs[-2:])) <= RECALL_CHARS
    # A text longer than the whole allowance is counted, never kept.
    assert counter.text("y" * (RECALL_CHARS + 1)) == RECALL_CHARS + 1
    assert list(counter._recent) == outputs[-2:]


def test_a_record_counted_again_tokenizes_only_the_sections_that_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counter = TokenCounter(encoding="o200k_base")
    tokenized = _tokenized(counter, monkeypatch)
    goal = "## Goal\n- The user asked to keep every constraint they gave in their own words." * 3
    files = "## Relevant Files\n- src/app.py — edited, read\n- tests/test_app.py — created"
    record = f"{goal}\n\n{files}"
    facts = "## Preserved Facts\n- Paths: src/app.py, tests/test_app.py, /etc/app.conf"
    expected = len(encodings.get_encoding("o200k_base").encode_ordinary(f"{record}\n\n{facts}"))
    counter.text(record)
    tokenized.clear()
    assert counter.text(f"{record}\n\n{facts}") == expected
    # The goal's stretch is recalled; the files' one now ends with a blank line.
    assert tokenized == [f"{files}\n\n", facts]


@given(
    role=st.one_of(
        st.sampled_from(["system", "developer", "user", "assistant", "tool"]), st.text()
    ),
    text=st.text(),
)
def test_a_plain_messages_estimate_is_what_the_full_rule_gives(role: str, text: str) -> None:
    # An empty reasoning text adds nothing, but sends the message through the
    # rule for every part of a message instead of the plain-text path.
    est = TokenCounter(estimate=True)
    plain = {"role": role, "content": text}
    assert est.counts(plain) == est.counts({**plain, "reasoning_content": ""})
    assert est.message(plain) == -(-len(text) // 4) + MESSAGE_OVERHEAD


def test_rank_snapshot_is_verified_and_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXPACK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(encodings, "_loaded", {})
    first = encodings.get_encoding("cl100k_base").encode_ordinary("snapshot check")
    snapshots = list((tmp_path / "tiktoken").glob("cl100k_base-*.marshal"))
    assert len(snapshots) == 1
    snapshots[0].write_bytes(b"\x00corrupt")
    monkeypatch.setattr(encodings, "_loaded", {})
    assert encodings.get_encoding("cl100k_base").encode_ordinary("snapshot check") == first
    assert snapshots[0].read_bytes() != b"\x00corrupt"


def _real_transcripts() -> list[Path]:
    roots = [FIXTURES, *([SHARED] if SHARED.is_dir() else [])]
    return sorted(p for r in roots for p in r.rglob("*") if p.is_file() and p.suffix != ".md")


@pytest.mark.parametrize("path", _real_transcripts(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_estimate_tally_is_the_sum_of_each_messages_row(path: Path) -> None:
    # The one-pass tally sums plain messages per role without a row each; it
    # must give what adding up every message's own row, role by role, gives.
    est = TokenCounter(estimate=True)
    read = formats.read(path.read_bytes(), path=str(path), options=ReadOptions(skip_invalid=True))
    for session in read.sessions:
        msgs = session.messages
        by_role: dict[str, list[tuple[int, ...]]] = {}
        for msg in msgs:
            by_role.setdefault(m.role(msg) or "?", []).append(est.counts(msg))
        result = tally(msgs, counter=est)
        assert list(result.messages_by_role) == list(by_role)
        assert result.messages_by_role == {role: len(rows) for role, rows in by_role.items()}
        assert result.tokens_by_role == {
            role: sum(r[0] for r in rows) for role, rows in by_role.items()
        }
        columns = [
            sum(col) for col in zip(*[r for rows in by_role.values() for r in rows], strict=True)
        ]
        assert list(result.tokens_by_kind.values()) == (columns[1:] or [0] * len(KINDS))
        assert est.messages(msgs) == result.tokens == sum(est.message(msg) for msg in msgs)
