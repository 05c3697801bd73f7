"""The archive's storage layer: where the file lives, how it is created (owner
only: transcripts hold secrets), how it is opened for many writers at once,
and its schema and migrations. How blob bytes are packed is `packing`."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ctxpack.errors import CtxpackError, UsageError
from ctxpack.refs import REF_HEX, REF_PREFIX

ENV_VAR = "CTXPACK_ARCHIVE"
MIN_REF_HEX = 6
# Long enough for a busy CI runner with many workers; short transactions keep waits small.
BUSY_TIMEOUT_S = 60.0
SQLITE_BUSY, SQLITE_LOCKED = 5, 6


class ArchiveError(CtxpackError):
    """The archive cannot be opened, read or written, or lacks what was asked for."""


class ArchiveCorrupt(ArchiveError):
    """Stored bytes no longer match their hash, or the file is not an archive."""


class ArchiveMissing(ArchiveError):
    """No blob or compaction matches what was asked for."""


class InvalidRef(ArchiveError, UsageError):
    """A ref that is malformed, too short or matches several blobs (a usage error)."""


def ref_of_sha(sha: str) -> str:
    return REF_PREFIX + sha[:REF_HEX]


def normalize_ref(ref: str) -> str:
    """Lower-case hex digits of a ref given with or without the `ctxpack:` prefix."""
    text = ref.strip()
    if text.lower().startswith(REF_PREFIX):
        text = text[len(REF_PREFIX) :]
    text = text.lower()
    if not text or any(c not in "0123456789abcdef" for c in text) or len(text) > 64:
        raise InvalidRef(f"{ref!r} is not a ctxpack ref (expected ctxpack:<hex digits>)")
    if len(text) < MIN_REF_HEX:
        raise InvalidRef(f"ref {ref!r} is too short: give at least {MIN_REF_HEX} hex digits")
    return text


def default_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "ctxpack" / "archive.db"


def resolve_path(path: str | os.PathLike[str] | None) -> Path:
    """Explicit path, else $CTXPACK_ARCHIVE, else the XDG data directory."""
    if path is not None and str(path):
        return Path(path).expanduser()
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    return default_path()


def _create_private(path: Path) -> None:
    """Create missing parent directories 0700 and the file 0600 whatever the umask."""
    missing: list[Path] = []
    parent = path.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=0o700)
            os.chmod(directory, 0o700)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return  # another process won the race; it applies the same mode
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


# A connection's page cache in KiB, taken as used. A long session's record adds
# a row per replaced message, in random order of the sha index: in SQLite's
# default 2 MiB its pages are written out and read back again and again.
CACHE_KIB = 16 << 10


def connect(path: Path, *, create: bool) -> sqlite3.Connection:
    """Open (and if asked, create) the archive in WAL mode with the schema current."""
    try:
        if not path.exists():
            if not create:
                raise ArchiveMissing(
                    "no archive here yet (nothing was archived, or use --archive PATH)",
                    path=str(path),
                )
            _create_private(path)
        # Autocommit mode: every write below opens its own BEGIN IMMEDIATE, so
        # concurrent writers queue on the lock instead of failing on an upgrade.
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except OSError as exc:
        raise ArchiveError(f"cannot open archive: {exc.strerror or exc}", path=str(path)) from None
    except sqlite3.Error as exc:
        raise ArchiveError(f"cannot open archive: {exc}", path=str(path)) from None
    try:
        with translate(path):
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            _retry_busy(lambda: _enable_wal(conn))
            # The archive is the only copy of what compaction removed: pay the fsync.
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            migrate(conn, path)
    except BaseException:
        conn.close()
        raise
    return conn


def _enable_wal(conn: sqlite3.Connection) -> None:
    if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal":
        return
    if conn.execute("PRAGMA page_count").fetchone()[0] == 0:
        # Only takes on a new file, and must precede WAL (which writes page 1):
        # lets gc hand freed pages back to the disk.
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
    conn.execute("PRAGMA journal_mode = WAL").fetchall()


def _retry_busy(step: Callable[[], None]) -> None:
    """Run `step`, retrying while another process holds the lock.

    Switching to WAL needs an exclusive lock and SQLite reports a conflict at
    once instead of waiting on busy_timeout, so several processes creating the
    same archive at once must retry here.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    delay = 0.002
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
            busy = code in (SQLITE_BUSY, SQLITE_LOCKED) or "locked" in str(exc)
            if not busy or time.monotonic() > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


@contextlib.contextmanager
def translate(path: Path) -> Iterator[None]:
    """Report SQLite failures as ctxpack errors that name the archive."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        text = str(exc)
        if "not a database" in text or "malformed" in text:
            raise ArchiveCorrupt(f"the archive file is damaged: {text}", path=str(path)) from None
        raise ArchiveError(f"archive: {text}", path=str(path)) from None
    except sqlite3.Error as exc:
        raise ArchiveError(f"archive: {exc}", path=str(path)) from None


@contextlib.contextmanager
def write_tx(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One short write transaction that takes the write lock up front."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise


# Schema. Each migration takes the archive from version i to i + 1; never edit
# a released one, append a new one. PRAGMA user_version records the version.
def _v1(conn: sqlite3.Connection) -> None:
    conn.execute(
        """CREATE TABLE blobs (
            sha256 TEXT PRIMARY KEY,
            codec TEXT NOT NULL,
            size INTEGER NOT NULL,
            touched REAL NOT NULL,
            data BLOB NOT NULL
        )"""
    )
    conn.execute(
        """CREATE TABLE compactions (
            id TEXT PRIMARY KEY,
            created REAL NOT NULL,
            source_path TEXT NOT NULL,
            input_sha256 TEXT NOT NULL,
            input_size INTEGER NOT NULL,
            output_sha256 TEXT NOT NULL,
            output_size INTEGER NOT NULL,
            settings TEXT NOT NULL,
            report TEXT NOT NULL
        )"""
    )
    conn.execute(
        """CREATE TABLE compaction_blobs (
            compaction_id TEXT NOT NULL REFERENCES compactions(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            sha256 TEXT NOT NULL,
            PRIMARY KEY (compaction_id, position)
        )"""
    )
    conn.execute("CREATE INDEX compactions_output ON compactions(output_sha256)")
    conn.execute("CREATE INDEX compactions_output_size ON compactions(output_size)")
    conn.execute("CREATE INDEX compactions_created ON compactions(created)")
    conn.execute("CREATE INDEX compactions_input ON compactions(input_sha256)")
    conn.execute("CREATE INDEX compaction_blobs_sha ON compaction_blobs(sha256)")


def _v2(conn: sqlite3.Connection) -> None:
    # Where each blob came from (session, message, tool, command), as JSON;
    # NULL for blobs recorded before origins were kept.
    conn.execute("ALTER TABLE compaction_blobs ADD COLUMN origin TEXT")


def _v3(conn: sqlite3.Connection) -> None:
    # A blob stored as slices of another (codec "slices") names that one here;
    # NULL for a blob stored whole. Older blobs stay whole: nothing to rewrite.
    conn.execute("ALTER TABLE blobs ADD COLUMN base TEXT")
    conn.execute("CREATE INDEX blobs_base ON blobs(base) WHERE base IS NOT NULL")


def _v4(conn: sqlite3.Connection) -> None:
    # Blobs may be stored as a JSON string of their base (codec "string"): no
    # table changes, but a ctxpack that cannot read them must not open the archive.
    del conn


def _v5(conn: sqlite3.Connection) -> None:
    # A long session's compaction cites a blob per replaced message: a row
    # each, keyed by texts of 64 hex digits and indexed twice, came to more
    # than the bytes stored. Now a compaction's row holds what it cites
    # (citations.py), blobs have integer ids, `cites` pairs ids for the way
    # back from a blob, and a part names its base by the id of a `bases` row,
    # which outlives the base's blob so that a check can still name it.
    from ctxpack.archive import citations  # it imports the archive's types, which import this

    conn.execute("CREATE TABLE bases (id INTEGER PRIMARY KEY, sha256 TEXT NOT NULL UNIQUE)")
    conn.execute(
        "INSERT INTO bases (sha256) SELECT DISTINCT base FROM blobs WHERE base IS NOT NULL"
    )
    conn.execute(
        """CREATE TABLE blobs_v5 (
            id INTEGER PRIMARY KEY,
            sha256 TEXT NOT NULL UNIQUE,
            codec TEXT NOT NULL,
            size INTEGER NOT NULL,
            touched REAL NOT NULL,
            data BLOB NOT NULL,
            base INTEGER REFERENCES bases(id)
        )"""
    )
    conn.execute(
        "INSERT INTO blobs_v5 (sha256, codec, size, touched, data, base)"
        " SELECT b.sha256, b.codec, b.size, b.touched, b.data, s.id"
        " FROM blobs b LEFT JOIN bases s ON s.sha256 = b.base ORDER BY b.rowid"
    )
    conn.execute("DROP TABLE blobs")
    conn.execute("ALTER TABLE blobs_v5 RENAME TO blobs")
    conn.execute("CREATE INDEX blobs_base ON blobs(base) WHERE base IS NOT NULL")
    conn.execute("ALTER TABLE compactions ADD COLUMN cited BLOB NOT NULL DEFAULT x''")
    conn.execute("ALTER TABLE compactions ADD COLUMN origins BLOB")
    conn.execute("ALTER TABLE compactions ADD COLUMN labels TEXT NOT NULL DEFAULT '[]'")
    conn.execute(
        "CREATE TABLE cites (blob INTEGER NOT NULL, compaction TEXT NOT NULL,"
        " PRIMARY KEY (blob, compaction)) WITHOUT ROWID"
    )
    for (cid,) in conn.execute("SELECT id FROM compactions").fetchall():
        rows = conn.execute(
            "SELECT sha256, origin, json_extract(origin, '$.session_label')"
            " FROM compaction_blobs WHERE compaction_id = ? ORDER BY position",
            (cid,),
        ).fetchall()
        labels = sorted({label for *_, label in rows if isinstance(label, str) and label})
        conn.execute(
            "UPDATE compactions SET cited = ?, origins = ?, labels = ? WHERE id = ?",
            (
                citations.pack_shas([sha for sha, *_ in rows]),
                citations.pack_lines([origin for _, origin, _ in rows]),
                citations.labels_json(labels),
                cid,
            ),
        )
    conn.execute(
        "INSERT OR IGNORE INTO cites (blob, compaction)"
        " SELECT b.id, cb.compaction_id FROM compaction_blobs cb"
        " JOIN blobs b ON b.sha256 = cb.sha256"
    )
    conn.execute("DROP TABLE compaction_blobs")


MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (_v1, _v2, _v3, _v4, _v5)
SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, path: Path) -> None:
    if schema_version(conn) == SCHEMA_VERSION:
        return
    with write_tx(conn):
        # Re-read under the lock: another process may have migrated meanwhile.
        version = schema_version(conn)
        if version > SCHEMA_VERSION:
            raise ArchiveError(
                f"the archive has schema version {version}, newer than this ctxpack "
                f"understands ({SCHEMA_VERSION}); upgrade ctxpack",
                path=str(path),
            )
        for step in MIGRATIONS[version:]:
            step(conn)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    # A migration that rebuilt tables gives their old pages back.
    give_back_free_pages(conn, checkpoint=False)


def give_back_free_pages(conn: sqlite3.Connection, *, checkpoint: bool = True) -> None:
    """Best effort, outside any transaction: hand the file's free pages back to
    the disk and (`checkpoint`, which waits for other writers) shrink the WAL.
    (The pragma frees one page per step of its statement: run as a script, it
    runs to the end.)"""
    with contextlib.suppress(sqlite3.Error):
        conn.executescript("PRAGMA incremental_vacuum;")
        if checkpoint:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


def drop_unused(tx: sqlite3.Connection, *, cutoff: float) -> int:
    """Delete the blobs untouched since `cutoff` that no compaction cites (in
    the caller's write transaction); return how many went."""
    dropped = 0
    while True:
        # A blob others are parts of (slices, strings) goes once they have gone: the next round.
        count = tx.execute(
            "DELETE FROM blobs WHERE touched < ?"
            " AND NOT EXISTS (SELECT 1 FROM compactions c WHERE c.input_sha256 = blobs.sha256)"
            " AND NOT EXISTS (SELECT 1 FROM cites t WHERE t.blob = blobs.id)"
            " AND NOT EXISTS (SELECT 1 FROM bases s JOIN blobs d ON d.base = s.id"
            " WHERE s.sha256 = blobs.sha256)",
            (cutoff,),
        ).rowcount
        if not count:
            tx.execute(
                "DELETE FROM bases WHERE NOT EXISTS (SELECT 1 FROM blobs d WHERE d.base = bases.id)"
            )
            return dropped
        dropped += count
