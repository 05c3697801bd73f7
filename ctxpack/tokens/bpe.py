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
import bisect

import regex

# The merge here is quadratic in the piece's length: a longer piece that is
# not itself a token is left to tiktoken.
LONG_PIECE = 2000
_NO_MERGE = 1 << 62


class SortedRanks:
    """Token bytes -> rank, by binary search over the sorted tokens.

    A dict of 200,000 tokens takes a few tenths of a second to build (every
    key hashed and inserted); the sorted list loads from its snapshot in a
    tenth of that, and a small input looks up only a few thousand pieces.
    """

    def __init__(self, tokens: list[bytes], ranks: bytes) -> None:
        self._tokens = tokens
        self._ranks = array.array("I", ranks)

    def get(self, piece: bytes, default: int) -> int:
        at = bisect.bisect_left(self._tokens, piece)
        if at < len(self._tokens) and self._tokens[at] == piece:
            return self._ranks[at]
        return default


class PieceCounter:
    """Counts the tokens of a text as tiktoken's encode_ordinary would."""

    def __init__(self, *, pattern: str, ranks: SortedRanks) -> None:
        self._split = regex.compile(pattern).findall
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


def _merged_length(piece: bytes, ranks: SortedRanks) -> int:
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
