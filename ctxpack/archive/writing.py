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

# Each new blob packed, in the order of BlobWrites.new: (codec, packed bytes,
# whether it is a part of the base), or None for one packed already. By place,
# not by sha: from a child, a long session's 146,000 shas would come back as
# new strings beside the ones held here.
NewBlobs = list[tuple[str, bytes | bytearray, bool] | None]
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
    # The shas of the items not stored yet, in order.
    new: list[str]
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
        new = [sha for sha in items if sha not in known]
        whole = usable_base(conn, items, new, base=base)
        return cls(items=items, known=known, base=base, packed=packed, new=new, whole=whole)

    def coding(self) -> NewBlobs:
        """The new blobs packed. It reads no archive: it may run in a child process."""
        items, new, packed = self.items, self.new, self.packed
        parts = parts_of_base(self.whole, items, new, base=self.base, packed=packed)
        rest = [sha for sha in new if sha not in parts and sha not in packed]
        made = dict(zip(rest, pack_all([items[sha] for sha in rest]), strict=True))
        return [
            (*parts[sha], True) if sha in parts else None if sha in packed else (*made[sha], False)
            for sha in new
        ]

    def inserts(self, coded: NewBlobs, *, cited: bool, then: Write | None = None) -> Write:
        """The inserts of the new blobs as `coded` (what coding made), then
        `then`. `cited`: a compaction written in the same transaction cites
        every item."""
        items, known, packed = self.items, self.known, self.packed
        fresh: list[BlobRow] = []
        parts: list[BlobRow] = []
        for sha, made in zip(self.new, coded, strict=True):
            if made is None:
                fresh.append((sha, *packed[sha], len(items[sha])))
            elif made[2]:
                parts.append((sha, made[0], made[1], len(items[sha])))
            else:
                fresh.append((sha, made[0], made[1], len(items[sha])))

        def write(tx: sqlite3.Connection, now: float) -> None:
            # The parts after their base: they name it by its row.
            insert_blobs(tx, fresh, now=now)
            insert_blobs(tx, parts, now=now, base=self.base)
            # A gc may have dropped a blob seen above; store it again (rare).
            # Only those can be missing: every other one was inserted just now.
            gone: list[BlobRow] = []
            for sha in known - stored_shas(tx, list(known)):
                codec, data = pack(items[sha])
                gone.append((sha, codec, data, len(items[sha])))
            insert_blobs(tx, gone, now=now, replace=True)
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
