"""Exact token counts in pure Python, for inputs too small to pay for
tiktoken's encoder.

Building tiktoken's encoder (its Rust core compiles the split pattern and
copies every rank) takes a few tenths of a second: more than counting a
100 KB session in Python once the ranks are loaded. This is tiktoken's
algorithm: split with its own pattern through the `regex` module that tiktoken
itself uses, then the same byte-pair merge (the lowest rank first, the
leftmost among equal ranks) over the same ranks, so the counts are the same
(tests compare the two on every fixture and on generated text).
"""

from __future__ import annotations

import array
import itertools
import mmap
import struct
import zlib

import regex

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


class PieceCounter:
    """Counts the tokens of a text as tiktoken's encode_ordinary would."""

    def __init__(self, *, ranks: HashedRanks) -> None:
        self._split = regex.compile(ranks.pattern).findall
        self._ranks = ranks
        # Pieces recur (words, identifiers, paths): each is looked up once.
        self._pieces: dict[str, int] = {}

    def count(self, text: str) -> int | None:
        """The token count, or None when a piece is too long to merge here."""
        try:
            return self._count(text)
        except UnicodeEncodeError:
            # What tiktoken does with lone surrogates before it encodes.
            return self._count(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))

    def _count(self, text: str) -> int | None:
        known = self._pieces
        total = 0
        for piece in self._split(text):
            tokens = known.get(piece)
            if tokens is None:
                data = piece.encode()
                if self._ranks.get(data, _NO_MERGE) != _NO_MERGE:
                    tokens = 1
                elif len(data) > LONG_PIECE:
                    return None
                else:
                    tokens = _merged_length(data, self._ranks)
                known[piece] = tokens
            total += tokens
        return total


def _merged_length(piece: bytes, ranks: HashedRanks) -> int:
    """How many tokens the byte-pair merge leaves of piece."""
    get = ranks.get
    # starts[i]: where part i begins (the last entry is the end); pairs[i]: the
    # rank of part i joined with part i + 1.
    starts = list(range(len(piece) + 1))
    pairs = [get(piece[i : i + 2], _NO_MERGE) for i in range(len(piece) - 1)]
    while pairs:
        best = min(pairs)
        if best == _NO_MERGE:
            break
        at = pairs.index(best)
        del starts[at + 1]
        del pairs[at]
        if at < len(pairs):
            pairs[at] = get(piece[starts[at] : starts[at + 2]], _NO_MERGE)
        if at > 0:
            pairs[at - 1] = get(piece[starts[at - 1] : starts[at + 1]], _NO_MERGE)
    return len(starts) - 1
