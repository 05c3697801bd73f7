"""The rows of one compaction: its id, the blobs it cites and where each came
from, written with its report; and a compaction written in a transaction left
open until its report is known."""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ctxpack.archive.db import translate
from ctxpack.archive.lookup import COLUMNS
from ctxpack.archive.packing import Coded, Packed
from ctxpack.archive.types import Origin, compaction_id, dump_json
from ctxpack.refs import Blob, sha256_hex


def compaction_writes(
    *,
    source_path: str,
    input_bytes: bytes,
    output_bytes: bytes,
    blobs: list[Blob],
    settings: dict[str, Any],
    origins: Sequence[Origin | None] = (),
    input_packed: Packed | None = None,
) -> tuple[
    str,
    str,
    dict[str, Blob],
    dict[str, Coded],
    Callable[[sqlite3.Connection, float, str], None],
]:
    """A compaction's id, its input's sha, its blobs by sha (the input's
    too), those packed already (`input_packed`: the input), and the insert
    of its rows with a report's JSON: what Archive.record_compaction and
    Archive.begin_compaction write."""
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

    def rows() -> Iterator[tuple[int, str, str | None]]:
        """Each blob's row (its place, sha and origin), made as it is read:
        a long session's record has one for each of its messages."""
        for i, sha in enumerate(blob_shas):
            origin = origins[i] if i < len(origins) else None
            yield i, sha, dump_json(origin.to_dict()) if origin else None

    def insert(tx: sqlite3.Connection, now: float, report_json: str) -> None:
        tx.execute(
            f"INSERT INTO compactions ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT(id) DO UPDATE SET created = excluded.created,"
            " source_path = excluded.source_path, settings = excluded.settings,"
            " report = excluded.report",
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
            ),
        )
        stored = tx.execute(
            "SELECT position, sha256, origin FROM compaction_blobs"
            " WHERE compaction_id = ? ORDER BY position",
            (cid,),
        )
        # The same compaction stored again cites the same blobs from the
        # same places: its rows stay (rewriting those of a long session's
        # every message costs seconds).
        try:
            same = all(a == b for a, b in itertools.zip_longest(stored, rows()))
        finally:
            stored.close()
        if not same:
            tx.execute("DELETE FROM compaction_blobs WHERE compaction_id = ?", (cid,))
            tx.executemany(
                "INSERT INTO compaction_blobs (compaction_id, position, sha256, origin)"
                " VALUES (?, ?, ?, ?)",
                ((cid, *row) for row in rows()),
            )

    return cid, input_sha, items, packed, insert


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
