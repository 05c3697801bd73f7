"""One pattern for many literal words: found exactly where one of them is."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ctxpack.alternation import any_of, any_of_bytes

# Few letters, so that words share prefixes, hold each other and overlap.
WORDS = st.lists(st.text(alphabet="ab.(é\n", max_size=4), max_size=8)
TEXTS = st.text(alphabet="ab.(é\nc", max_size=30)


@given(WORDS, TEXTS)
def test_a_search_finds_a_word_exactly_when_one_occurs(words: list[str], text: str) -> None:
    assert (any_of(words).search(text) is not None) == any(word in text for word in words)


@given(WORDS, TEXTS)
def test_bytes_are_searched_as_their_text_is(words: list[str], text: str) -> None:
    raw = [word.encode() for word in words]
    data = text.encode()
    assert (any_of_bytes(raw).search(data) is not None) == any(word in data for word in raw)


def test_each_word_is_matched_whole_at_its_place() -> None:
    found = any_of(["port 80", "port 8080", "us-east-1"])
    assert [m.group() for m in found.finditer("port 8080 then us-east-1")] == [
        "port 8080",
        "us-east-1",
    ]
    assert found.pattern == r"(?:port\ 80(?:80)?|us\-east\-1)"
    assert any_of([]).search("anything") is None
