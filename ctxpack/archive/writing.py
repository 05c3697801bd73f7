"""What storing blobs writes: which of them are new, each packed whole or as
a part of its base (parts.py), and then their inserts. The packing is done
before any transaction, so that other writers wait only for the inserts."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ctxpack.archive.lookup import chunks
from ctxpack.archive.packing import BlobRow, Coded, insert_blobs, pack, pack_all
from ctxpack.archive.parts import parts_of_base, usable_base
from ctxpack.refs import Blob

# The new blobs, packed: those stored as parts of the base, and the others
# packed whole, each (codec, packed bytes) by sha.
NewBlobs = tuple[dict[str, Coded], dict[str, Coded]]
Write = Callable[[sqlite3.Connection, float], None]


@dataclass(frozen=True)
class BlobWrites:
    """Storing `items` (blobs by sha) of which `known` are stored already;
    `base`: the one the others may be parts of; `packed`: (codec, packed
    bytes) of those packed already, by sha."""

    items: dict[str, Blob]
    known: set[str]
    base: str | None
    packed: dict[str, Coded]
    # The base's bytes when the new blobs may be its parts (usable_base).
    whole: bytes | None

    @classmethod
    def of(
        cls,
        conn: sqlite3.Connection,
        items: dict[str, Blob],
        known: set[str],
        *,
        base: str | None,
        packed: dict[str, Coded],
    ) -> BlobWrites:
        todo = [sha for sha in items if sha not in known]
        whole = usable_base(conn, items, todo, base=base)
        return cls(items=items, known=known, base=base, packed=packed, whole=whole)

    def coding(self) -> NewBlobs:
        """The new blobs packed. It reads no archive: it may run in a child process."""
        todo = [sha for sha in self.items if sha not in self.known]
        parts = parts_of_base(self.whole, self.items, todo, base=self.base, packed=self.packed)
        rest = [sha for sha in todo if sha not in parts and sha not in self.packed]
        made = dict(zip(rest, pack_all([self.items[sha] for sha in rest]), strict=True))
        return parts, made

    def inserts(self, coded: NewBlobs, *, cited: bool, then: Write | None = None) -> Write:
        """The inserts of the new blobs as `coded` (what coding made), then
        `then`. `cited`: a compaction written in the same transaction cites
        every item."""
        items, known, packed = self.items, self.known, self.packed
        parts, made = coded
        fresh: list[tuple[str, str, bytes | bytearray, int, str | None]] = [
            (sha, *(packed.get(sha) or made[sha]), len(items[sha]), None)
            for sha in items
            if sha not in known and sha not in parts
        ]
        fresh += [(sha, *part, len(items[sha]), self.base) for sha, part in parts.items()]

        def write(tx: sqlite3.Connection, now: float) -> None:
            insert_blobs(
                tx, [(sha, codec, data, size, now, of) for sha, codec, data, size, of in fresh]
            )
            # A gc may have dropped a blob seen above; store it again (rare).
            # Only those can be missing: every other one was inserted just now.
            gone: list[BlobRow] = []
            for sha in known - stored_shas(tx, list(known)):
                codec, data = pack(items[sha])
                gone.append((sha, codec, data, len(items[sha]), now, None))
            insert_blobs(tx, gone, replace=True)
            # Refreshing the time keeps a re-used blob safe from the next gc.
            # gc drops only blobs nothing cites: those of a compaction need no
            # refresh, which would rewrite each whole row (a large input's
            # packed bytes, on every run that cites it).
            if not cited:
                tx.executemany(
                    "UPDATE blobs SET touched = ? WHERE sha256 = ?", [(now, s) for s in items]
                )
            if then is not None:
                then(tx, now)

        return write


def stored_shas(conn: sqlite3.Connection, shas: Sequence[str]) -> set[str]:
    """Those of `shas` the archive holds."""
    found: set[str] = set()
    for chunk in chunks(shas):
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(f"SELECT sha256 FROM blobs WHERE sha256 IN ({marks})", tuple(chunk))
        found.update(r[0] for r in rows)
    return found
