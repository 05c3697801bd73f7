"""The lossless archive: every compaction can be undone.

Each compaction stores the original input, every pruned output and the
summarized middle as content-addressed blobs in one SQLite file (the middle,
where it is mostly the input's own lines, as slices of the input), plus the
settings, the report and the sha256 of the output it produced. Placeholders
cite blobs by `ref_for(data)`, computable without the archive.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Self, Unpack

from ctxpack.archive.check import find_problems
from ctxpack.archive.compaction import OpenCompaction, compaction_writes
from ctxpack.archive.db import (
    ArchiveCorrupt,
    ArchiveMissing,
    InvalidRef,
    connect,
    drop_unused,
    give_back_free_pages,
    normalize_ref,
    ref_of_sha,
    resolve_path,
    translate,
    write_tx,
)
from ctxpack.archive.fts import drop_all
from ctxpack.archive.lookup import by_output, by_prefix, compactions
from ctxpack.archive.packing import Coded, unpack
from ctxpack.archive.types import (
    ArchiveStats,
    Compaction,
    CompactionParts,
    dump_json,
    join_appended,
)
from ctxpack.archive.writing import BlobWrites, Write, stored_shas
from ctxpack.errors import UsageError
from ctxpack.refs import REF_PREFIX, Blob, sha256_hex
from ctxpack.tokens import forked

# From an input this large, begin_compaction packs the new blobs in a child
# process: below it, the fork costs more than the overlap saves.
PACK_BESIDE_MIN_BYTES = 8 << 20


class Archive:
    """One archive file. Open with `Archive.open()`; use as a context manager."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path
        self._last_base: tuple[str, bytes] = ("", b"")
        # Inside grouped(): the writes waiting for the group's one transaction,
        # and the blobs they store.
        self._waiting: list[Write] | None = None
        self._waiting_shas: set[str] = set()

    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None, *, create: bool = True) -> Self:
        """Open the archive at `path`, $CTXPACK_ARCHIVE or the XDG data dir.

        `create=False` raises ArchiveMissing instead of creating a new file
        (for commands that only read).
        """
        where = resolve_path(path)
        return cls(connect(where, create=create), where)

    def close(self) -> None:
        self._conn.close()

    @contextlib.contextmanager
    def grouped(self) -> Iterator[None]:
        """Every record stored inside is committed at the end, in one transaction:
        one commit (and its fsync) for a group of files instead of one each.
        Nothing stored inside is durable before the block ends; an error inside
        stores none of it."""
        if self._waiting is not None:
            raise RuntimeError("archive groups do not nest")
        self._waiting, self._waiting_shas = [], set()
        try:
            yield
            waiting = self._waiting
        finally:
            self._waiting, self._waiting_shas = None, set()
        if not waiting:
            return
        now = time.time()
        with translate(self.path), write_tx(self._conn) as tx:
            for write in waiting:
                write(tx, now)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # blobs

    def put_blob(self, data: bytes) -> str:
        """Store bytes (once, whoever else stores them too); return their sha256."""
        sha = sha256_hex(data)
        self._store({sha: data})
        return sha

    def get_blob(self, sha_or_ref: str) -> bytes:
        """The exact bytes, verified against their hash on the way out."""
        sha = self.resolve(sha_or_ref)
        with translate(self.path):
            row = self._conn.execute(
                "SELECT b.codec, b.data, s.sha256 FROM blobs b"
                " LEFT JOIN bases s ON s.id = b.base WHERE b.sha256 = ?",
                (sha,),
            ).fetchone()
        if row is None:
            raise ArchiveMissing(f"no archived blob {ref_of_sha(sha)}", path=str(self.path))
        codec, packed, base = row
        try:
            return unpack(codec, packed, sha=sha, base=self._base(base))
        except ArchiveCorrupt as exc:
            raise ArchiveCorrupt(exc.message, path=str(self.path)) from None

    def _base(self, sha: str | None) -> bytes | None:
        """The whole blob a sliced one is cut from; None for a blob stored whole
        or a base gone missing (which unpack reports). The last one is kept: the
        sessions of one file are all sliced from it, and an index pass reads them in turn."""
        if sha is None:
            return None
        if self._last_base[0] != sha:
            try:
                self._last_base = (sha, self.get_blob(sha))
            except ArchiveMissing:
                return None
        return self._last_base[1]

    def resolve(self, sha_or_ref: str) -> str:
        """Full sha256 for a ref, a full hash or any unique prefix of >= 6 hex digits."""
        text = normalize_ref(sha_or_ref)
        with translate(self.path):
            rows = self._conn.execute(
                "SELECT sha256 FROM blobs WHERE sha256 >= ? AND sha256 < ? ORDER BY sha256 LIMIT 6",
                (text, text + "g"),  # every hex digit sorts below "g"
            ).fetchall()
        if not rows:
            raise ArchiveMissing(f"no archived blob matches {sha_or_ref}", path=str(self.path))
        if len(rows) > 1:
            shown = ", ".join(REF_PREFIX + r[0][:16] for r in rows[:5])
            more = " and more" if len(rows) > 5 else ""
            raise InvalidRef(
                f"{sha_or_ref} is ambiguous: it matches {shown}{more}; give more hex digits"
            )
        return str(rows[0][0])

    def _present(self, shas: Sequence[str]) -> set[str]:
        """The shas stored, or to be stored by the group waiting to commit (such
        a blob is never taken as the base of slices: it may be stored as slices)."""
        return stored_shas(self._conn, shas) | self._waiting_shas.intersection(shas)

    def _store(
        self,
        items: dict[str, Blob],
        then: Write | None = None,
        *,
        base: str | None = None,
        cited: bool = False,
        packed: dict[str, Coded] | None = None,
    ) -> None:
        """Store what is new of `items`; those mostly made of `base`'s bytes
        (one of the items) as slices of it. `cited`, `packed`: as for _writes."""
        write = self._writes(items, then, base=base, cited=cited, packed=packed or {})
        if self._waiting is not None:
            self._waiting.append(write)
            self._waiting_shas.update(items)
            return
        with translate(self.path), write_tx(self._conn) as tx:
            write(tx, time.time())

    def _writes(
        self,
        items: dict[str, Blob],
        then: Write | None,
        *,
        base: str | None,
        cited: bool,
        packed: dict[str, Coded],
    ) -> Write:
        """What storing `items` writes, its blobs compressed (and sliced) here,
        outside any transaction, so that other writers wait only for the inserts.
        `cited`: a compaction written in the same transaction cites every item;
        `packed`: (codec, packed bytes) of items packed already, by sha."""
        writes = self._blob_writes(items, base=base, packed=packed)
        return writes.inserts(writes.coding(), cited=cited, then=then)

    def _blob_writes(
        self, items: dict[str, Blob], *, base: str | None, packed: dict[str, Coded]
    ) -> BlobWrites:
        with translate(self.path):
            known = self._present(list(items))
            return BlobWrites.of(self._conn, items, known, base=base, packed=packed)

    # compactions

    def record_compaction(self, *, report: dict[str, Any], **parts: Unpack[CompactionParts]) -> str:
        """Store everything needed to undo one compaction; return its id.

        `origins[i]`, where given, says where `blobs[i]` came from."""
        made = compaction_writes(**parts)
        report_json = dump_json(report)
        self._store(
            made.items,
            then=lambda tx, now: made.insert(tx, now, report_json),
            base=made.input_sha,
            cited=True,
            packed=made.packed,
        )
        return made.id

    def begin_compaction(self, **parts: Unpack[CompactionParts]) -> OpenCompaction:
        """record_compaction for a caller still finishing the report: all
        else is written now, in a transaction left open (other writers wait
        for it) until the caller commits it with the report, or rolls it back."""
        if self._waiting is not None:
            raise RuntimeError("an open compaction is not part of an archive group")
        made = compaction_writes(**parts)
        writes = self._blob_writes(made.items, base=made.input_sha, packed=made.packed)
        # A large input's new blobs are sliced and packed in a child while
        # this process makes the compaction's row (an origin per replaced message).
        beside = len(made.items[made.input_sha]) >= PACK_BESIDE_MIN_BYTES
        opened = OpenCompaction(self._conn, self.path, made.id)
        coding = writes.coding
        maker = forked.started(coding) if beside else contextlib.nullcontext(coding)
        with maker as coded, translate(self.path):
            made.prepare()
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                # The report is not known yet: the row holds none until the commit.
                insert = writes.inserts(
                    coded(), cited=True, then=lambda tx, now: made.insert(tx, now, "{}")
                )
                insert(self._conn, time.time())
            except BaseException:
                opened.rollback()
                raise
        return opened

    def find_by_output(self, output_bytes: bytes) -> Compaction | None:
        """The (latest) compaction that produced exactly these bytes."""
        with translate(self.path):
            return by_output(self._conn, output_bytes)

    def find_prefix(self, data: bytes) -> Compaction | None:
        """The compaction with the longest output that `data` starts with."""
        with translate(self.path):
            return by_prefix(self._conn, data)

    def restore(self, data: bytes) -> bytes:
        """The exact original of an unchanged compacted file."""
        found = self.find_by_output(data)
        if found is not None:
            return self.get_blob(found.input_sha256)
        grown = self.find_prefix(data)
        if grown is not None:
            extra = len(data) - grown.output_size
            raise ArchiveMissing(
                f"this file is the output of compaction {grown.id} plus {extra:,} byte(s)"
                " added since: use --expand to restore the original followed by the new lines",
                path=str(self.path),
            )
        raise ArchiveMissing(
            f"no archived compaction produced this file (sha256 {sha256_hex(data)[:16]}…):"
            " if the session went on after compaction try --expand, otherwise it was"
            " changed or compacted without the archive",
            path=str(self.path),
        )

    def expand(self, data: bytes) -> bytes:
        """Original input + whatever was appended to the compacted file since."""
        found = self.find_prefix(data)
        if found is None:
            raise ArchiveMissing(
                "no archived compaction output is a prefix of this file: it was edited,"
                " not only appended to, or compacted without the archive",
                path=str(self.path),
            )
        original = self.get_blob(found.input_sha256)
        cut = found.output_size
        return join_appended(
            original, data[cut:], output_ended_with_newline=data[cut - 1 : cut] == b"\n"
        )

    def log(self, limit: int | None = 20) -> list[Compaction]:
        """Compactions, newest first."""
        with translate(self.path):
            return compactions(
                self._conn, "ORDER BY created DESC, id LIMIT ?", (-1 if limit is None else limit,)
            )

    # maintenance

    def check(self) -> list[str]:
        """Every problem found: damaged blobs, missing blobs, a damaged file. [] = sound."""
        with translate(self.path):
            return find_problems(self._conn)

    def gc(self, older_than: timedelta, *, now: datetime | None = None) -> int:
        """Drop compactions older than `older_than` and blobs nothing references any more.

        Unreferenced blobs are kept until they too are that old, so a writer
        between put_blob() and record_compaction() never loses its blobs.
        Returns the number of compactions removed.
        """
        if older_than < timedelta(0):
            raise UsageError("the age for gc must not be negative")
        cutoff = (now or datetime.now(UTC)).timestamp() - older_than.total_seconds()
        with translate(self.path), write_tx(self._conn) as tx:
            removed = tx.execute("DELETE FROM compactions WHERE created < ?", (cutoff,)).rowcount
            tx.execute("DELETE FROM cites WHERE compaction NOT IN (SELECT id FROM compactions)")
            dropped = drop_unused(tx, cutoff=cutoff)
            if dropped:
                # The index cannot forget one blob without its text: start it over.
                drop_all(tx)
        # After the commit: give freed pages back and shrink the WAL.
        give_back_free_pages(self._conn)
        return int(removed)

    def stats(self) -> ArchiveStats:
        with translate(self.path):
            compactions = self._conn.execute("SELECT count(*) FROM compactions").fetchone()[0]
            blobs, raw, stored = self._conn.execute(
                "SELECT count(*), coalesce(sum(size), 0), coalesce(sum(length(data)), 0) FROM blobs"
            ).fetchone()
        return ArchiveStats(
            compactions=int(compactions),
            blobs=int(blobs),
            raw_bytes=int(raw),
            stored_bytes=int(stored),
        )
