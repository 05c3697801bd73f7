"""The full-text index of archived blobs, line by line, in the archive's own
SQLite file (FTS5).

It is derived data: two side tables that nothing else reads, built from the
blobs incrementally (every blob a compaction cites and the index lacks is
added before a search) and dropped whole when gc removes blobs, to be built
again. The originals compactions started from are not indexed: every line a
reader could want from them is also in the pruned outputs and summarized
turns that the compacted transcript cites. The table is contentless (the text
stays only in the compressed blobs), so each row's rowid says where its line
is: the document number shifted left 32 bits, plus the 1-based line number.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import orjson

from ctxpack.archive.citations import unpack_shas
from ctxpack.archive.db import write_tx
from ctxpack.errors import UsageError

LINE_BITS = 32
# Text inserted per write transaction: big enough that a large archive is not
# one fsync per blob, small enough that a writer waiting on the lock waits briefly.
BATCH_CHARS = 8 << 20
_TERM = re.compile(r'"[^"]*"?|\S+')


@dataclass(frozen=True)
class IndexRun:
    """What one incremental indexing pass did."""

    blobs: int
    lines: int
    seconds: float


def lines_of(text: str) -> list[str]:
    """The lines of `text`, each with its newline: joined they are `text` again.
    Only "\\n" ends a line, so line numbers agree with `sed -n` and editors."""
    pieces = text.split("\n")
    lines = [piece + "\n" for piece in pieces[:-1]]
    if pieces[-1]:
        lines.append(pieces[-1])
    return lines


def ensure_tables(conn: sqlite3.Connection) -> None:
    if _has_tables(conn):
        return
    with write_tx(conn):
        conn.execute(
            "CREATE TABLE IF NOT EXISTS fts_docs ("
            " doc INTEGER PRIMARY KEY, sha256 TEXT NOT NULL UNIQUE,"
            " redacted INTEGER NOT NULL, lines INTEGER NOT NULL)"
        )
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS fts_lines USING fts5("
            "text, content='', tokenize='unicode61 remove_diacritics 2')"
        )


def _has_tables(conn: sqlite3.Connection) -> bool:
    rows = conn.execute(
        "SELECT count(*) FROM sqlite_master WHERE name IN ('fts_docs', 'fts_lines')"
    ).fetchone()
    return bool(rows[0] == 2)


def drop_all(conn: sqlite3.Connection) -> None:
    """Forget the whole index (inside the caller's write transaction)."""
    if _has_tables(conn):
        conn.execute("INSERT INTO fts_lines(fts_lines) VALUES ('delete-all')")
        conn.execute("DELETE FROM fts_docs")


def _redacted_shas(conn: sqlite3.Connection) -> set[str]:
    """Blobs cited by a compaction made with --redact: indexed as recall shows them."""
    rows = conn.execute(
        "SELECT cited FROM compactions WHERE json_extract(settings, '$.redact') = 1"
    ).fetchall()
    return {sha for (cited,) in rows for sha in unpack_shas(cited)}


def index_pending(conn: sqlite3.Connection, *, view: Callable[[str, bool], str]) -> IndexRun:
    """Index every cited blob the index lacks, and re-index those indexed
    unredacted that a --redact compaction cites since. `view(sha, redacted)`
    is the blob's text as recall returns it."""
    started = time.perf_counter()
    ensure_tables(conn)
    redacted = _redacted_shas(conn)
    todo = [
        row[0]
        for row in conn.execute(
            "SELECT b.sha256 FROM blobs b"
            " WHERE EXISTS (SELECT 1 FROM cites t WHERE t.blob = b.id)"
            " AND NOT EXISTS (SELECT 1 FROM fts_docs d WHERE d.sha256 = b.sha256)"
        )
    ]
    stale = [
        (int(doc), sha)
        for doc, sha in conn.execute("SELECT doc, sha256 FROM fts_docs WHERE redacted = 0")
        if sha in redacted
    ]
    total_lines = 0
    batch: list[tuple[int | None, str, list[str], bool]] = []
    size = 0
    for doc, sha in stale:
        batch.append((doc, sha, lines_of(view(sha, False)), sha in redacted))
    for sha in todo:
        lines = lines_of(view(sha, sha in redacted))
        batch.append((None, sha, lines, sha in redacted))
        size += sum(len(line) for line in lines)
        if size >= BATCH_CHARS:
            total_lines += _write(conn, batch)
            batch, size = [], 0
    if batch:
        total_lines += _write(conn, batch)
    return IndexRun(
        blobs=len(todo) + len(stale), lines=total_lines, seconds=time.perf_counter() - started
    )


def _write(conn: sqlite3.Connection, batch: list[tuple[int | None, str, list[str], bool]]) -> int:
    """Insert (or, for a known doc, replace: its old text is its unredacted view)."""
    written = 0
    with write_tx(conn):
        for doc, sha, lines, redacted in batch:
            if doc is not None:
                conn.executemany(
                    "INSERT INTO fts_lines(fts_lines, rowid, text) VALUES ('delete', ?, ?)",
                    _rows(doc, lines),
                )
                conn.execute("DELETE FROM fts_docs WHERE doc = ?", (doc,))
            # Another process may have indexed it meanwhile: then keep theirs.
            cursor = conn.execute(
                "INSERT OR IGNORE INTO fts_docs (sha256, redacted, lines) VALUES (?, ?, ?)",
                (sha, int(redacted), len(lines)),
            )
            if not cursor.rowcount:
                continue
            new_doc = int(conn.execute("SELECT last_insert_rowid()").fetchone()[0])
            rows = _rows(new_doc, lines)
            conn.executemany("INSERT INTO fts_lines(rowid, text) VALUES (?, ?)", rows)
            written += len(rows)
    return written


def _rows(doc: int, lines: list[str]) -> list[tuple[int, str]]:
    # Blank lines hold no token: no row.
    return [
        ((doc << LINE_BITS) | number, line) for number, line in enumerate(lines, 1) if line.strip()
    ]


def expression(query: str) -> tuple[str, list[str]]:
    """An FTS5 expression for a query typed as words, and the words.

    Every word must appear on the line; "several words" in double quotes must
    appear together, in that order; a word ending in * matches as a prefix.
    Everything else is literal text: punctuation never makes a syntax error.
    """
    parts: list[str] = []
    words: list[str] = []
    for match in _TERM.finditer(query):
        term = match.group(0)
        prefix = term.endswith("*") and not term.startswith('"')
        text = term.strip('"').rstrip("*") if prefix else term.strip('"')
        if not re.search(r"\w", text):
            continue
        words.append(text)
        parts.append('"' + text.replace('"', '""') + '"' + ("*" if prefix else ""))
    if not parts:
        raise UsageError(f"nothing to search for in {query!r}: give a word or two")
    return " AND ".join(parts), words


def find(
    conn: sqlite3.Connection, *, query: str, limit: int, within: set[str] | None = None
) -> list[tuple[str, int]]:
    """(sha256, line number) of the best-ranked lines matching `query`, at most
    `limit`, only in the blobs `within` when given."""
    ensure_tables(conn)
    match, _ = expression(query)
    if within is not None and not within:
        return []
    sql = (
        "SELECT d.sha256, l.rowid & ? FROM fts_lines l"
        " JOIN fts_docs d ON d.doc = (l.rowid >> ?)"
        " JOIN blobs b ON b.sha256 = d.sha256"
        " WHERE fts_lines MATCH ?"
    )
    params: list[object] = [(1 << LINE_BITS) - 1, LINE_BITS, match]
    if within is not None:
        sql += " AND d.sha256 IN (SELECT value FROM json_each(?))"
        params.append(json_array(within))
    sql += " ORDER BY l.rank LIMIT ?"
    params.append(limit)
    return [(str(sha), int(line)) for sha, line in conn.execute(sql, params)]


def json_array(items: Iterable[str]) -> str:
    """Strings as one JSON array: a bound parameter that json_each() reads, however many."""
    return orjson.dumps(sorted(items)).decode()
