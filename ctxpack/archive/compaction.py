"""The row of one compaction: its id, the blobs it cites and where each came
from (citations.py), written with its report; and a compaction written in a
transaction left open until its report is known."""

from __future__ import annotations

import contextlib
import functools
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ctxpack.archive import citations
from ctxpack.archive.db import translate
from ctxpack.archive.lookup import COLUMNS
from ctxpack.archive.packing import Coded, Packed
from ctxpack.archive.types import Origin, compaction_id, dump_json
from ctxpack.refs import Blob, sha256_hex

CITES_AT_ONCE = 8192


@dataclass(frozen=True)
class CompactionWrites:
    """What storing one compaction writes besides its new blobs."""

    id: str
    input_sha: str
    # Its blobs by sha (the input's too), and those packed already (the input).
    items: dict[str, Blob]
    packed: dict[str, Coded]
    # The compaction's row with a report's JSON, once its blobs are stored.
    insert: Callable[[sqlite3.Connection, float, str], None]
    # Makes what the row holds (insert makes it if not made yet): a long
    # session's record has an origin for each of its messages, and the
    # caller may have a moment to spare while its blobs are packed.
    prepare: Callable[[], object]


def compaction_writes(
    *,
    source_path: str,
    input_bytes: bytes,
    output_bytes: bytes,
    blobs: list[Blob],
    settings: dict[str, Any],
    origins: Sequence[Origin | None] = (),
    input_packed: Packed | None = None,
) -> CompactionWrites:
    """What Archive.record_compaction and Archive.begin_compaction write."""
    if len(origins) > len(blobs):
        raise ValueError("more origins than blobs")
    packed: dict[str, Coded] = {}
    if input_packed is not None:
        input_sha, codec, data = input_packed
        packed[input_sha] = (codec, input_bytes if codec == "raw" else data)
    else:
        input_sha = sha256_hex(input_bytes)
    output_sha = sha256_hex(output_bytes)
    # Equal blobs (a command's output each time it ran) share one string, and
    # are often one object (replaced texts share their bytes): hashed once.
    known: dict[str, str] = {}
    hashed: dict[int, str] = {}
    blob_shas: list[str] = []
    for blob in blobs:
        sha = hashed.get(id(blob))
        if sha is None:
            sha = hashed[id(blob)] = known.setdefault(digest := sha256_hex(blob), digest)
        blob_shas.append(sha)
    items: dict[str, Blob] = {input_sha: input_bytes}
    items.update(zip(blob_shas, blobs, strict=True))
    cid = compaction_id(input_sha, output_sha)
    settings_json = dump_json(settings)

    @functools.cache
    def prepared() -> tuple[bytes, bytes | None, str]:
        """What the row holds of the citations: digests, origins, labels."""
        return (
            citations.pack_shas(blob_shas),
            citations.pack_origins(origins, len(blob_shas)) if origins else None,
            citations.labels_of(origins),
        )

    def insert(tx: sqlite3.Connection, now: float, report_json: str) -> None:
        """The compaction's row and its pairs in `cites` (its blobs stored already)."""
        cited, origins_packed, labels = prepared()
        before = tx.execute("SELECT cited FROM compactions WHERE id = ?", (cid,)).fetchone()
        tx.execute(
            f"INSERT INTO compactions ({COLUMNS}, cited, origins, labels)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT(id) DO UPDATE SET created = excluded.created,"
            " source_path = excluded.source_path, settings = excluded.settings,"
            " report = excluded.report, cited = excluded.cited,"
            " origins = excluded.origins, labels = excluded.labels",
            (
                cid,
                now,
                source_path,
                input_sha,
                len(input_bytes),
                output_sha,
                len(output_bytes),
                settings_json,
                report_json,
                cited,
                origins_packed,
                labels,
            ),
        )
        if before is not None and before[0] == cited:
            return  # stored again: it cites what it cited
        if before is not None:
            tx.execute("DELETE FROM cites WHERE compaction = ?", (cid,))
        distinct = list(dict.fromkeys(blob_shas))
        # In stretches, each one JSON array that one statement reads: one
        # statement per blob costs more than twice as long.
        for start in range(0, len(distinct), CITES_AT_ONCE):
            tx.execute(
                "INSERT OR IGNORE INTO cites (blob, compaction)"
                " SELECT b.id, ? FROM json_each(?) j JOIN blobs b ON b.sha256 = j.value",
                (cid, orjson.dumps(distinct[start : start + CITES_AT_ONCE]).decode()),
            )

    return CompactionWrites(cid, input_sha, items, packed, insert, prepared)


class OpenCompaction:
    """A compaction written in a transaction still open (Archive.begin_compaction)."""

    def __init__(self, conn: sqlite3.Connection, path: Path, cid: str) -> None:
        self._conn, self._path, self.id = conn, path, cid

    def commit(self, report: dict[str, Any]) -> None:
        conn = self._conn
        with translate(self._path):
            try:
                conn.execute(
                    "UPDATE compactions SET report = ? WHERE id = ?", (dump_json(report), self.id)
                )
                conn.execute("COMMIT")
            except BaseException:
                self.rollback()
                raise

    def rollback(self) -> None:
        """Nothing of it stored; safe to call after a failed commit."""
        conn = self._conn
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
