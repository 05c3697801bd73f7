"""Short content references (`ctxpack:1a2b3c4d5e`) that placeholders and
summaries embed; computable without the archive, resolvable with it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

REF_PREFIX = "ctxpack:"
REF_HEX = 10
# A LineBlob's bytes are made again in stretches of whole lines of about this size.
STRETCH = 4 << 20


class LineBlob:
    """Content-addressed bytes made of many lines (the JSONL of a long middle)
    that are never held whole: their sha256 and size are found in one pass
    as the lines are made, and whoever stores them makes the lines again, a
    stretch at a time. `lines` must make the same lines each time."""

    __slots__ = ("_lines", "sha", "size")

    def __init__(self, lines: Callable[[], Iterable[bytes]]) -> None:
        import hashlib

        self._lines = lines
        digest = hashlib.sha256()
        size = 0
        for stretch in self.stretches():
            digest.update(stretch)
            size += len(stretch)
        self.sha, self.size = digest.hexdigest(), size

    def __len__(self) -> int:
        return self.size

    def stretches(self) -> Iterator[bytes]:
        """The bytes in order, in stretches of whole lines (the last may be
        shorter, or end without a line break)."""
        stretch = bytearray()
        for line in self._lines():
            stretch += line
            if len(stretch) >= STRETCH:
                yield bytes(stretch)
                stretch.clear()
        if stretch:
            yield bytes(stretch)

    def __bytes__(self) -> bytes:
        return b"".join(self.stretches())

    def __eq__(self, other: object) -> bool:
        # Equal to the same bytes, however held.
        if isinstance(other, LineBlob):
            return (self.size, self.sha) == (other.size, other.sha)
        if isinstance(other, bytes | bytearray):
            return len(other) == self.size and sha256_hex(other) == self.sha
        return NotImplemented

    # Like a bytearray, it is no key: it equals bytes whose hash it cannot give.
    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        # Sent to another process (a batch's worker, a Ray task) as its bytes.
        return bytes, (bytes(self),)


# Content-addressed data: bytes, a bytearray built in place when large, or
# the lines of a long middle, made when stored.
Blob = bytes | bytearray | LineBlob


def stretches_of(data: Blob) -> Iterable[bytes | bytearray]:
    """The bytes of `data` in order: held ones as they are, in one piece."""
    return data.stretches() if isinstance(data, LineBlob) else (data,)


def sha256_hex(data: Blob) -> str:
    if isinstance(data, LineBlob):
        return data.sha
    # Imported here: hashlib loads OpenSSL, which a command that only reads the
    # prefixes above (count) does not need.
    import hashlib

    return hashlib.sha256(data).hexdigest()


def ref_for(data: Blob) -> str:
    """`ctxpack:` + the first 10 hex digits of the sha256 of the exact bytes."""
    return REF_PREFIX + sha256_hex(data)[:REF_HEX]


def ref_for_text(text: str) -> str:
    return ref_for(text.encode("utf-8", "surrogatepass"))
