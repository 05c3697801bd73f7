"""What one compaction cites, as its own row holds it: the blobs in order (their
sha256 digests, 32 bytes each), where each came from (one JSON line each,
compressed together), and the session labels among those origins. A long
session's compaction cites a blob for every message it replaced: one row per
citation, each with its own keys and indexes, outweighed the data stored.
The `cites` table keeps only (blob id, compaction id) pairs, for the lookups
that go from a blob to the compactions citing it."""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import orjson

from ctxpack.archive.types import Origin, dump_json

DIGEST = 32
# Origins are text read back rarely (recall, search): packed fast, not small.
_LEVEL = 1
_STRETCH = 1 << 20


def pack_shas(shas: Iterable[str]) -> bytes:
    packed = bytearray()
    for sha in shas:
        packed += bytes.fromhex(sha)
    return bytes(packed)


def unpack_shas(packed: bytes) -> tuple[str, ...]:
    view = memoryview(packed)
    return tuple(view[i : i + DIGEST].hex() for i in range(0, len(packed), DIGEST))


def positions_of(packed: bytes, sha: str) -> list[int]:
    """Where `sha` stands among the packed digests (a blob cited twice: both)."""
    digest = bytes.fromhex(sha)
    found = []
    at = packed.find(digest)
    while at >= 0:
        if at % DIGEST == 0:
            found.append(at // DIGEST)
        at = packed.find(digest, at + 1)
    return found


def pack_origins(origins: Sequence[Origin | None], count: int) -> bytes:
    """One JSON line per cited blob (`null` where unknown), compressed."""
    texts = (None if o is None else dump_json(o.to_dict()) for o in origins[:count])
    return pack_lines(itertools.chain(texts, itertools.repeat(None, count - len(origins))))


def pack_lines(lines: Iterable[str | None]) -> bytes:
    """Origins stored as JSON texts (None: unknown), packed a line at a time:
    a long session's record has one for each of its messages."""
    packer = zlib.compressobj(_LEVEL)
    packed = bytearray()
    # Handed to zlib a stretch at a time: a call per line cost more than the packing.
    stretch: list[bytes] = []
    size = 0
    for line in lines:
        data = b"null" if line is None else line.encode()
        stretch.append(data)
        size += len(data) + 1
        if size >= _STRETCH:
            # The line break before the next stretch's first line opens it.
            packed += packer.compress(b"\n".join(stretch))
            stretch = [b""]
            size = 0
    if stretch != [b""]:
        packed += packer.compress(b"\n".join(stretch))
    packed += packer.flush()
    return bytes(packed)


def labels_of(origins: Iterable[Origin | None]) -> str:
    """The session labels the origins name, as labels_json stores them."""
    return labels_json(origin.session_label for origin in origins if origin)


def labels_json(labels: Iterable[str]) -> str:
    """Session labels as a JSON array, sorted and distinct, none empty."""
    return orjson.dumps(sorted({label for label in labels if label})).decode()


@dataclass(frozen=True)
class Origins:
    """A compaction's packed origins, read back a position at a time."""

    lines: list[bytes]

    @classmethod
    def of(cls, packed: bytes | None) -> Origins:
        if not packed:
            return cls([])
        try:
            return cls(zlib.decompress(packed).split(b"\n"))
        except zlib.error:
            return cls([])

    @staticmethod
    def readable(packed: bytes | None, count: int) -> bool:
        """Whether packed origins (if any) read back as one line per cited blob."""
        if packed is None:
            return True
        try:
            lines = zlib.decompress(packed)
        except zlib.error:
            return False
        return lines.count(b"\n") + 1 == count if lines else count == 0

    def text(self, position: int) -> str | None:
        """The origin's stored JSON (None where unknown)."""
        if position >= len(self.lines) or self.lines[position] == b"null":
            return None
        return self.lines[position].decode()
