"""Which archived compaction a file is: the one whose output it is exactly, or
the one whose output it starts with (a session that went on after compaction)."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from ctxpack.archive.citations import unpack_shas
from ctxpack.archive.types import Compaction, load_json
from ctxpack.refs import sha256_hex

CHUNK = 500  # stays far below SQLite's bound-parameter limit
COLUMNS = (
    "id, created, source_path, input_sha256, input_size, output_sha256, output_size,"
    " settings, report"
)


def chunks(items: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


def compactions(conn: sqlite3.Connection, where: str, params: tuple[Any, ...]) -> list[Compaction]:
    """The compactions a clause after FROM selects, each with its blobs in order."""
    out = []
    rows = conn.execute(f"SELECT {COLUMNS}, cited FROM compactions {where}", params).fetchall()
    for row in rows:
        out.append(
            Compaction(
                id=row[0],
                created=datetime.fromtimestamp(row[1], tz=UTC),
                source_path=row[2],
                input_sha256=row[3],
                input_size=row[4],
                output_sha256=row[5],
                output_size=row[6],
                blobs=unpack_shas(row[9]),
                settings=load_json(row[7]),
                report=load_json(row[8]),
            )
        )
    return out


def by_output(conn: sqlite3.Connection, output_bytes: bytes) -> Compaction | None:
    """The (latest) compaction that produced exactly these bytes."""
    found = compactions(
        conn, "WHERE output_sha256 = ? ORDER BY created DESC LIMIT 1", (sha256_hex(output_bytes),)
    )
    return found[0] if found else None


def by_prefix(conn: sqlite3.Connection, data: bytes) -> Compaction | None:
    """The compaction with the longest output that `data` starts with."""
    sizes = [
        int(r[0])
        for r in conn.execute(
            "SELECT DISTINCT output_size FROM compactions"
            " WHERE output_size > 0 AND output_size <= ? ORDER BY output_size",
            (len(data),),
        )
    ]
    # One pass over the data: extend a running hash to each stored size.
    running = hashlib.sha256()
    done = 0
    digests: list[str] = []
    for size in sizes:
        running.update(data[done:size])
        done = size
        digests.append(running.copy().hexdigest())
    best: Compaction | None = None
    for chunk in chunks(digests):
        marks = ",".join("?" * len(chunk))
        for found in compactions(
            conn,
            f"WHERE output_sha256 IN ({marks}) ORDER BY output_size DESC, created DESC LIMIT 1",
            tuple(chunk),
        ):
            if best is None or found.output_size > best.output_size:
                best = found
    return best
