"""Exact token counts in pure Python, for inputs too small to pay for
tiktoken's encoder.

Building tiktoken's encoder (its Rust core compiles the split pattern and
copies every rank) takes a few tenths of a second: more than counting a
100 KB session in Python once the ranks are loaded. This is tiktoken's
algorithm: split with its own pattern through the `regex` module that tiktoken
itself uses, then the same byte-pair merge (the lowest rank first, the
leftmost among equal ranks) over the same ranks, so the counts are the same
(tests compare the two on every fixture and on generated text).

Most texts are ASCII, or ASCII and a few symbols, where the pattern's Unicode
classes are plain ranges: those are split by the standard `re` module (faster
than `regex`, and needing no import of it), with the pattern rewritten to
exactly those ranges.
"""

from __future__ import annotations

import array
import collections
import itertools
import mmap
import re
import struct
import unicodedata
import zlib
from collections.abc import Callable

# The merge here is quadratic in the piece's length: a longer piece that is
# not itself a token is left to tiktoken.
LONG_PIECE = 2000
_NO_MERGE = 1 << 62


class HashedRanks:
    """Token bytes -> rank, from an open-addressing table over one blob.

    A dict of 200,000 tokens takes a few tenths of a second to build (every
    key hashed and inserted), and even unmarshalling a list of them costs tens
    of milliseconds of fresh memory. Here every token lies in one blob and the
    table is three arrays of integers (slots hashed with crc32, which is the
    same in every process), laid out in one file that is mapped, not read: a
    small input looks up a few thousand pieces and touches only their pages.
    """

    def __init__(self, data: bytes | mmap.mmap) -> None:
        view = memoryview(data)
        header = view[: _HEADER.size]
        if len(header) != _HEADER.size:
            raise ValueError("token table: truncated header")
        magic, pattern_len, blob_len, count, slot_count = _HEADER.unpack(header)
        sizes = (pattern_len, blob_len, 4 * (count + 1), 4 * count, 4 * slot_count)
        starts = list(itertools.accumulate(map(_aligned, sizes), initial=_HEADER.size))
        if magic != _MAGIC or starts[-1] != len(view) or slot_count & (slot_count - 1):
            raise ValueError("token table: not a table of this version")
        parts = [view[start : start + size] for start, size in zip(starts, sizes, strict=False)]
        self.pattern = bytes(parts[0]).decode()
        self._blob = parts[1]
        self._offsets = parts[2].cast("I")
        self._ranks = parts[3].cast("I")
        self._slots = parts[4].cast("i")
        self._mask = slot_count - 1

    @staticmethod
    def build(ranks: dict[bytes, int], *, pattern: str) -> bytes:
        """The table of `ranks` and the split pattern, as the file holds it."""
        tokens = list(ranks)
        offsets = array.array("I", [0])
        for token in tokens:
            offsets.append(offsets[-1] + len(token))
        size = 1 << (2 * len(tokens)).bit_length()  # at most half full
        slots = array.array("i", [-1]) * size
        mask = size - 1
        for index, token in enumerate(tokens):
            slot = zlib.crc32(token) & mask
            while slots[slot] >= 0:
                slot = (slot + 1) & mask
            slots[slot] = index
        values = array.array("I", map(ranks.__getitem__, tokens))
        parts = [pattern.encode(), b"".join(tokens), offsets, values, slots]
        header = _HEADER.pack(_MAGIC, len(parts[0]), len(parts[1]), len(tokens), size)
        out = bytearray(header)
        for part in parts:
            raw = bytes(part)
            out += raw + bytes(_aligned(len(raw)) - len(raw))
        return bytes(out)

    def get(self, piece: bytes, default: int) -> int:
        blob, offsets, slots, mask = self._blob, self._offsets, self._slots, self._mask
        slot = zlib.crc32(piece) & mask
        while (index := slots[slot]) >= 0:
            if blob[offsets[index] : offsets[index + 1]] == piece:
                rank: int = self._ranks[index]
                return rank
            slot = (slot + 1) & mask
        return default


_MAGIC = b"ctxpack-tokens-1"
_HEADER = struct.Struct("<16sQQQQ")


def _aligned(size: int) -> int:
    return -(-size // 8) * 8


# The ASCII members of each Unicode class the encodings' patterns name (a
# test checks them against `regex`). `re`'s own \s would also take \x1c-\x1f.
_ASCII_CLASSES = {
    "L": "A-Za-z",
    "Lu": "A-Z",
    "Ll": "a-z",
    "Lt": "",
    "Lm": "",
    "Lo": "",
    "M": "",
    "N": "0-9",
}
_ASCII_SPACE = "\\t\\n\\x0b\\x0c\\r "
# Characters beyond ASCII that are in none of those classes (no letter, digit,
# mark or space: punctuation, arrows, box drawing, check marks, emoji), as a
# test checks against `regex` and tiktoken. A text of ASCII and these splits
# the same with the ASCII classes, and agents' output is full of them (the
# arrow after each line number of a file read, quotes, dashes).
_SYMBOLS = (
    "\\xa1-\\xa9\\xab-\\xb1\\xb4\\xb6-\\xb8\\xbb\\xbf\\xd7\\xf7"
    "\\u2010-\\u2027\\u2030-\\u205e\\u2190-\\u23ff\\u2500-\\u2775\\u2794-\\u27bf"
    "\\U0001f300-\\U0001f64f\\U0001f680-\\U0001f6ff\\U0001f900-\\U0001f9ff"
)
_BEYOND_PLAIN = re.compile(f"[^\\x00-\\x7f{_SYMBOLS}]").search
# A class, an escape, or any other character of a pattern.
_PATTERN_PART = re.compile(r"\[\^?|\]|\\p\{(\w+)\}|\\.|.", re.DOTALL)


def plain_pattern(pattern: str) -> str:
    """`pattern` for plain text (ASCII and the symbols above) in `re`'s syntax:
    every Unicode class (\\p{..}, \\s, \\S) replaced by its ASCII members.
    ValueError for a class not in the table."""
    out: list[str] = []
    in_class = False
    for part in _PATTERN_PART.finditer(pattern):
        text, name = part.group(), part.group(1)
        if name is not None:
            if name not in _ASCII_CLASSES:
                raise ValueError(f"no ASCII members known for \\p{{{name}}}")
            members = _ASCII_CLASSES[name]
            # Outside a class an empty one matches nothing.
            text = members if in_class else f"[{members}]" if members else "(?!)"
        elif text == "\\s":
            text = _ASCII_SPACE if in_class else f"[{_ASCII_SPACE}]"
        elif text == "\\S":
            if in_class:
                raise ValueError("\\S inside a class")
            text = f"[^{_ASCII_SPACE}]"
        elif text.startswith("[") and not in_class:
            in_class = True
        elif text == "]" and in_class:
            in_class = False
        out.append(text)
    return "".join(out)


class PieceCounter:
    """Counts the tokens of a text as tiktoken's encode_ordinary would."""

    def __init__(self, *, ranks: HashedRanks) -> None:
        self._ranks = ranks
        self._unicode_split: Callable[[str], list[str]] | None = None
        self._plain_split = re.compile(plain_pattern(ranks.pattern)).findall
        # Pieces recur (words, identifiers, paths): each is looked up once;
        # so are the parts the merges of different pieces share.
        self._pieces: dict[str, int] = {}
        self._parts: dict[bytes, int] = {}

    def count(self, text: str) -> int | None:
        """The token count, or None when a piece is too long to merge here, or
        the text holds a character this Python's Unicode database does not
        know (the regex module and tiktoken may each class it otherwise)."""
        try:
            return self._count(text)
        except UnicodeEncodeError:
            # What tiktoken does with lone surrogates before it encodes.
            return self._count(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))

    def _split(self, text: str) -> list[str] | None:
        if text.isascii() or _BEYOND_PLAIN(text) is None:
            return self._plain_split(text)
        if any(unicodedata.category(char) == "Cn" for char in set(text)):
            return None
        if self._unicode_split is None:
            import regex

            self._unicode_split = regex.compile(self._ranks.pattern).findall
        return self._unicode_split(text)

    def _count(self, text: str) -> int | None:
        pieces = self._split(text)
        if pieces is None:
            return None
        known = self._pieces
        total = 0
        # Each distinct piece once: counting them is done in C.
        for piece, times in collections.Counter(pieces).items():
            tokens = known.get(piece)
            if tokens is None:
                data = piece.encode()
                if self._ranks.get(data, _NO_MERGE) != _NO_MERGE:
                    tokens = 1
                elif len(data) > LONG_PIECE:
                    return None
                else:
                    tokens = _merged_length(data, self._rank)
                known[piece] = tokens
            total += tokens * times
        return total

    def _rank(self, part: bytes) -> int:
        rank = self._parts.get(part)
        if rank is None:
            rank = self._parts[part] = self._ranks.get(part, _NO_MERGE)
        return rank


def _merged_length(piece: bytes, rank: Callable[[bytes], int]) -> int:
    """How many tokens the byte-pair merge leaves of piece (`rank`: a part's
    rank, _NO_MERGE for no token)."""
    # starts[i]: where part i begins (the last entry is the end); pairs[i]: the
    # rank of part i joined with part i + 1.
    starts = list(range(len(piece) + 1))
    pairs = [rank(piece[i : i + 2]) for i in range(len(piece) - 1)]
    while pairs:
        best = min(pairs)
        if best == _NO_MERGE:
            break
        at = pairs.index(best)
        del starts[at + 1]
        del pairs[at]
        if at < len(pairs):
            pairs[at] = rank(piece[starts[at] : starts[at + 2]])
        if at > 0:
            pairs[at - 1] = rank(piece[starts[at - 1] : starts[at + 1]])
    return len(starts) - 1
