"""Blobs stored as slices of another blob: the summarized turns of a JSONL
transcript are, line for line, mostly the very bytes of the input archived
beside them, so the archive keeps where those lines are instead of a second
compressed copy.

A sliced blob is a list of pieces, each either a byte range of its base (the
compaction's input, stored whole) or literal bytes of its own (a pruned line,
a line the input spells differently). Whatever the pieces, the joined bytes
are checked against the blob's sha256 on the way out, like any other blob.
"""

from __future__ import annotations

import sys
import zlib
from array import array

from ctxpack.refs import Blob, stretches_of

CODEC = "slices"
# Smaller blobs are packed whole: their slices would save next to nothing.
MIN_SIZE = 64 << 10
# A sliced blob must take at least this share of its bytes from the base;
# otherwise it is packed whole.
MIN_SHARE = 0.5
# After a line that is not where the last one ended, look this far ahead for it.
WINDOW = 1 << 20
# Base lines a run of unmatched lines may have replaced, looked past at most.
MAX_SKIPPED = 64
_LITERAL = -1


def find_pieces(base: bytes, data: Blob) -> list[tuple[int, int]]:
    """(start, length) of each piece of `data`: a range of `base`, or for
    start -1, that many literal bytes of `data` at this point."""
    return _Pieces.of(base, data, LineIndex(base)).pieces


class LineIndex:
    """Where each line of a base starts, by the line's hash: made on first use
    and shared by the blobs sliced from one base."""

    def __init__(self, base: bytes) -> None:
        self.base = base
        self._starts: dict[int, int] | None = None

    def find(self, line: memoryview) -> int:
        """Where a whole line equal to `line` starts in the base (the first
        such); -1: nowhere."""
        if self._starts is None:
            self._starts = _line_starts(self.base)
        at = self._starts.get(hash(bytes(line)), -1)
        return at if at >= 0 and self.base.startswith(line, at) else -1


def _line_starts(base: bytes) -> dict[int, int]:
    view, size = memoryview(base), len(base)
    starts: dict[int, int] = {}
    start = 0
    while start < size:
        end = base.find(b"\n", start)
        end = size if end < 0 else end + 1
        starts.setdefault(hash(view[start:end]), start)
        start = end
    return starts


class _Pieces:
    """The pieces of data fed a stretch of whole lines at a time.

    Line by line: a line is looked for where the previous one ended in the
    base, then as many base lines further as lines have just failed to match
    (those lines replaced base lines: pruned outputs), then by a search around
    that point, bounded in all to a few passes over the base, then among the
    base's lines by their hashes. The cost stays linear whatever the data,
    and a blob whose lines jump across the base (an earlier summary's turns
    first, then the turns after it) finds every line it shares with it. The
    literal lines are kept as they come.
    """

    def __init__(self, base: bytes, size: int, index: LineIndex) -> None:
        self.base = base
        self.index = index
        self.pieces: list[tuple[int, int]] = []
        self.literals = bytearray()
        self._budget = 2 * len(base) + size
        self._anchored = False
        self._pos = self._misses = 0
        self._previous = -1  # where the last line matched: an earlier summary is archived twice

    @classmethod
    def of(cls, base: bytes, data: Blob, index: LineIndex) -> _Pieces:
        found = cls(base, len(data), index)
        for stretch in stretches_of(data):
            found.feed(stretch)
        return found

    def feed(self, data: bytes | bytearray) -> None:
        base, pieces = self.base, self.pieces
        view = memoryview(data)
        start, size = 0, len(data)
        while start < size:
            end = data.find(b"\n", start)
            end = size if end < 0 else end + 1
            line = view[start:end]
            pos, misses, previous = self._pos, self._misses, self._previous
            at = _locate(base, line, pos, misses)
            if at < 0 and previous >= 0 and base.startswith(line, previous):
                at = previous
            # One line that is not there is a pruned one; search only after two.
            if at < 0 and self._budget > 0 and (misses or not self._anchored):
                low = max(pos - WINDOW, 0) if self._anchored else 0
                high = min(pos + WINDOW, len(base)) if self._anchored else len(base)
                at = base.find(line, low, high)
                self._budget -= high - low if at < 0 else at - low + len(line)
            if at < 0 and (misses or not self._anchored):
                at = self.index.find(line)
            if at < 0:
                _add(pieces, _LITERAL, len(line))
                self.literals += line
                self._misses = min(misses + 1, MAX_SKIPPED)
            else:
                # Then as many whole lines as go on matching, compared in bulk.
                same = _common_lines(data, end, base, at + len(line))
                _add(pieces, at, len(line) + same)
                self._anchored = True
                self._pos, self._misses, self._previous = at + len(line) + same, 0, at
                end += same
            start = end


def _common_lines(data: bytes | bytearray, start: int, base: bytes, pos: int) -> int:
    """How many bytes of whole lines `data` from `start` and `base` from `pos`
    share: blocks of doubling size compared at C speed, then halving ones."""
    view = memoryview(data)
    room = min(len(data) - start, len(base) - pos)
    same, step = 0, 2048
    while step >= 512 and same < room:
        size = min(step, room - same)
        if base.startswith(view[start + same : start + same + size], pos + same):
            same += size
            step *= 2
        else:
            step //= 2
    cut = data.rfind(b"\n", start, start + same)
    return cut + 1 - start if cut >= 0 else 0


def _locate(base: bytes, line: memoryview, pos: int, skipped: int) -> int:
    """Where `line` starts at `pos` or up to `skipped` base lines after it; -1: nowhere."""
    at = pos
    for _ in range(skipped + 1):
        if base.startswith(line, at):
            return at
        at = base.find(b"\n", at) + 1
        if at <= 0:
            break
    return -1


def _add(pieces: list[tuple[int, int]], start: int, length: int) -> None:
    if pieces:
        last, last_length = pieces[-1]
        contiguous = start == _LITERAL or last + last_length == start
        if (last == _LITERAL) == (start == _LITERAL) and contiguous:
            pieces[-1] = (last, last_length + length)
            return
    pieces.append((start, length))


def encode(base: bytes, data: Blob, index: LineIndex | None = None) -> bytes | None:
    """`data` as slices of `base`, compressed; None when too little of it is
    in the base for slices to pay. `index`: the base's LineIndex, when the
    caller slices other blobs from it too."""
    if len(data) < MIN_SIZE:
        return None
    found = _Pieces.of(base, data, index or LineIndex(base))
    shared = sum(length for start, length in found.pieces if start != _LITERAL)
    if shared < MIN_SHARE * len(data):
        return None
    table = array("q", [len(found.pieces)])
    for start, length in found.pieces:
        table.extend((start, length))
    if sys.byteorder != "little":
        table.byteswap()
    packer = zlib.compressobj(3)
    return packer.compress(table.tobytes()) + packer.compress(found.literals) + packer.flush()


def sliced_items(items: dict[str, Blob], todo: list[str], *, base: bytes) -> dict[str, bytes]:
    """encode() against `base` (a base parts.py found usable) of each new item it pays for."""
    large = [sha for sha in todo if len(items[sha]) >= MIN_SIZE]
    if not large:
        return {}
    index = LineIndex(base)
    out: dict[str, bytes] = {}
    for sha in large:
        packed = encode(base, items[sha], index)
        if packed is not None:
            out[sha] = packed
    return out


def decode(packed: bytes, base: bytes) -> bytes:
    """The bytes the slices stand for; ValueError or zlib.error when damaged."""
    body = zlib.decompress(packed)
    count = array("q", body[:8])
    if sys.byteorder != "little":
        count.byteswap()
    if not count or count[0] < 0 or 8 + 16 * count[0] > len(body):
        raise ValueError("the slice table is truncated")
    table = array("q", body[8 : 8 + 16 * count[0]])
    if sys.byteorder != "little":
        table.byteswap()
    literals = memoryview(body)[8 + 16 * count[0] :]
    whole = memoryview(base)
    out = bytearray()
    taken = 0
    for i in range(0, len(table), 2):
        start, length = table[i], table[i + 1]
        if length < 0:
            raise ValueError("a slice has a negative length")
        if start == _LITERAL:
            out += literals[taken : taken + length]
            taken += length
        elif start < 0 or start + length > len(base):
            raise ValueError("a slice lies outside its base")
        else:
            out += whole[start : start + length]
    return bytes(out)
