"""`Archive.check()`: prove that every compaction can still be undone."""

from __future__ import annotations

import sqlite3

import orjson

from ctxpack.archive import slices
from ctxpack.archive.citations import DIGEST, Origins, unpack_shas
from ctxpack.archive.db import ArchiveCorrupt, ref_of_sha
from ctxpack.archive.packing import unpack


def find_problems(conn: sqlite3.Connection) -> list[str]:
    """Every problem, one readable line each; an empty list means the archive is sound."""
    problems: list[str] = []
    # One read transaction: a consistent snapshot even while others write (WAL).
    conn.execute("BEGIN")
    try:
        for (line,) in conn.execute("PRAGMA quick_check"):
            if line != "ok":
                problems.append(f"sqlite: {line}")
        problems += _blob_problems(conn)
        problems += _reference_problems(conn)
    finally:
        conn.execute("COMMIT")
    return problems


def _blob_problems(conn: sqlite3.Connection) -> list[str]:
    problems = []
    # Row by row: blobs can be large, never hold them all at once. Sliced blobs
    # come by their base, so that each base is decompressed once.
    base_sha, base, why = None, None, ""
    for sha, codec, size, packed, of in conn.execute(
        "SELECT b.sha256, b.codec, b.size, b.data, s.sha256 FROM blobs b"
        " LEFT JOIN bases s ON s.id = b.base ORDER BY b.base IS NOT NULL, b.base"
    ):
        if of is not None and of != base_sha:
            base_sha, (base, why) = of, _whole(conn, of)
        if of is not None and base is None:
            cut = "sliced from" if codec == slices.CODEC else "a string of"
            problems.append(f"blob {ref_of_sha(sha)} is {cut} {ref_of_sha(of)}, which {why}")
            continue
        try:
            data = unpack(codec, packed, sha=sha, base=base if of is not None else None)
        except ArchiveCorrupt as exc:
            problems.append(exc.message)
            continue
        if len(data) != size:
            problems.append(f"blob {ref_of_sha(sha)}: stored size {size} but holds {len(data)}")
    return problems


def _whole(conn: sqlite3.Connection, sha: str) -> tuple[bytes | None, str]:
    """A base blob's bytes, or None and why not (its own problem is reported with it)."""
    row = conn.execute("SELECT codec, data FROM blobs WHERE sha256 = ?", (sha,)).fetchone()
    if row is None:
        return None, "is missing"
    try:
        return unpack(row[0], row[1], sha=sha), ""
    except ArchiveCorrupt:
        return None, "is damaged"


def _reference_problems(conn: sqlite3.Connection) -> list[str]:
    problems = []
    for cid, source, sha in conn.execute(
        "SELECT c.id, c.source_path, c.input_sha256 FROM compactions c"
        " WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE b.sha256 = c.input_sha256)"
    ):
        problems.append(
            f"compaction {cid} ({source}): the original input {ref_of_sha(sha)} is missing"
        )
    rows = conn.execute("SELECT id, cited, origins FROM compactions ORDER BY id").fetchall()
    for cid, cited, origins in rows:
        if len(cited) % DIGEST or not Origins.readable(origins, len(cited) // DIGEST):
            problems.append(f"compaction {cid}: its list of cited blobs is damaged")
            continue
        shas = unpack_shas(cited)
        present = {
            row[0]
            for row in conn.execute(
                "SELECT sha256 FROM blobs WHERE sha256 IN (SELECT value FROM json_each(?))",
                (orjson.dumps(list(set(shas))).decode(),),
            )
        }
        problems += [
            f"compaction {cid}: blob #{position} {ref_of_sha(sha)} is missing"
            for position, sha in enumerate(shas)
            if sha not in present
        ]
    for cid, settings, report in conn.execute("SELECT id, settings, report FROM compactions"):
        for name, text in (("settings", settings), ("report", report)):
            try:
                orjson.loads(text)
            except orjson.JSONDecodeError:
                problems.append(f"compaction {cid}: its {name} are not valid JSON")
    return problems
