"""The archive makes every compaction reversible: exact restore, expand after the
session went on, refs, concurrency, corruption detection, permissions, gc."""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import os
import sqlite3
import stat
import time
import zlib
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from ctxpack.archive import db as archive_db
from ctxpack.archive import packing
from ctxpack.archive import store as archive_store
from ctxpack.archive.compaction import OpenCompaction
from ctxpack.archive.db import (
    SCHEMA_VERSION,
    ArchiveCorrupt,
    ArchiveError,
    ArchiveMissing,
    InvalidRef,
    default_path,
    resolve_path,
)
from ctxpack.archive.store import Archive
from ctxpack.archive.types import join_appended, parse_age
from ctxpack.errors import CtxpackError, UsageError
from ctxpack.evaluate.checks import strings_in
from ctxpack.refs import ref_for
from ctxpack.tokens import forked
from tests.conftest import FIXTURES

HAIKU = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"

FIXTURE_FILES = sorted(p for p in FIXTURES.rglob("*") if p.is_file())
MARKER = b'{"role":"user","content":"[ctxpack] earlier turns were compacted: %s"}\n'


def simulate_compaction(data: bytes) -> tuple[bytes, list[bytes]]:
    """Stand-in for the pipeline: keep the first half of the lines, then a marker
    citing the summarized middle; a few middle lines play pruned outputs."""
    lines = data.splitlines(keepends=True)
    half = len(lines) // 2
    middle = b"".join(lines[half:])
    output = b"".join(lines[:half]) + MARKER % ref_for(middle).encode()
    return output, [middle, *lines[half : half + 3]]


def record(store: Archive, data: bytes, source: str = "session.jsonl") -> tuple[str, bytes]:
    output, blobs = simulate_compaction(data)
    cid = store.record_compaction(
        source_path=source,
        input_bytes=data,
        output_bytes=output,
        blobs=blobs,
        settings={"threshold": 0.5, "force": True},
        report={"tokens_before": 1000, "tokens_after": 200},
    )
    return cid, output


def put(
    store: Archive, original: bytes, output: bytes, blobs: list[bytes], source: str = "s"
) -> str:
    return store.record_compaction(
        source_path=source,
        input_bytes=original,
        output_bytes=output,
        blobs=blobs,
        settings={},
        report={},
    )


def sql(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(str(path), isolation_level=None)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.name)
def test_round_trip_every_fixture(tmp_path: Path, path: Path) -> None:
    original = path.read_bytes()
    db = tmp_path / "archive.db"
    with Archive.open(str(db)) as store:
        cid, output = record(store, original, source=str(path))
    assert output != original
    # A fresh process would reopen the file: nothing may live only in memory.
    with Archive.open(str(db), create=False) as store:
        restored = store.restore(output)
        found = store.find_by_output(output)
        middle = store.get_blob(ref_for(simulate_compaction(original)[1][0]))
    assert sha(restored) == sha(original) and restored == original
    assert found is not None and found.id == cid and found.source_path == str(path)
    assert found.input_sha256 == sha(original) and found.input_size == len(original)
    assert middle == b"".join(original.splitlines(keepends=True)[len(original.splitlines()) // 2 :])


def test_ref_is_a_pure_function_of_the_bytes(tmp_path: Path) -> None:
    data = b'{"role":"tool","content":"PASSED 12 tests"}'
    assert ref_for(data) == "ctxpack:" + sha(data)[:10]
    with Archive.open(str(tmp_path / "a.db")) as store:
        stored = store.put_blob(data)
        assert stored == sha(data)
        for spelling in (ref_for(data), ref_for(data)[8:], sha(data)[:6], sha(data).upper()):
            assert store.get_blob(spelling) == data


def _colliding_pair() -> tuple[bytes, bytes]:
    seen: dict[str, bytes] = {}
    for i in range(1_000_000):
        data = b"output %d" % i
        prefix = sha(data)[:6]
        if prefix in seen:
            return seen[prefix], data
        seen[prefix] = data
    raise AssertionError("no 6-hex collision found")


def test_ambiguous_short_and_unknown_refs(tmp_path: Path) -> None:
    a, b = _colliding_pair()
    with Archive.open(str(tmp_path / "a.db")) as store:
        store.put_blob(a)
        store.put_blob(b)
        with pytest.raises(InvalidRef, match=r"ambiguous.*give more hex digits") as exc:
            store.get_blob(sha(a)[:6])
        assert exc.value.exit_code == 2 and isinstance(exc.value, UsageError)
        assert store.get_blob(ref_for(a)) == a and store.get_blob(ref_for(b)) == b
        with pytest.raises(InvalidRef, match="at least 6"):
            store.get_blob("ctxpack:" + sha(a)[:5])
        with pytest.raises(InvalidRef, match="not a ctxpack ref"):
            store.get_blob("ctxpack:xyz123")
        with pytest.raises(ArchiveMissing, match="no archived blob"):
            store.get_blob(ref_for(b"never stored"))


@pytest.mark.parametrize("output_nl", [True, False], ids=["output-nl", "output-no-nl"])
def test_expand_appends_two_lines(tmp_path: Path, output_nl: bool) -> None:
    original = (FIXTURES / "claude-code" / "openagents__regex-log__opus-raw.jsonl").read_bytes()
    added = b'{"type":"user","n":1}\n{"type":"assistant","n":2}\n'
    with Archive.open(str(tmp_path / "a.db")) as store:
        output, blobs = simulate_compaction(original)
        if not output_nl:
            output = output.rstrip(b"\n")
        put(store, original, output, blobs, source="s.jsonl")
        # An appender that finds no final newline writes one before its lines.
        grown = output + (b"" if output_nl else b"\n") + added
        assert store.expand(grown) == original + added
        assert store.expand(output) == original
        with pytest.raises(ArchiveMissing, match="--expand"):
            store.restore(grown)


@pytest.mark.parametrize(
    ("original", "output", "appended", "expected"),
    [
        (b"a\nb\n", b"S\n", b"c\n", b"a\nb\nc\n"),
        (b"a\nb", b"S\n", b"c\nd\n", b"a\nb\nc\nd\n"),  # original without final newline
        (b"a\nb\n", b"S", b"\nc\n", b"a\nb\nc\n"),  # output without final newline
        (b"a\nb", b"S", b"\nc", b"a\nb\nc"),  # neither
        (b"a\nb", b"S", b"c\n", b"a\nb\nc\n"),  # line glued to the last one: kept apart
        (b"a\n", b"S\n", b"", b"a\n"),
    ],
)
def test_join_appended_keeps_lines_apart(
    original: bytes, output: bytes, appended: bytes, expected: bytes
) -> None:
    joined = join_appended(original, appended, output_ended_with_newline=output.endswith(b"\n"))
    assert joined == expected


def test_expand_picks_the_longest_matching_output(tmp_path: Path) -> None:
    with Archive.open(str(tmp_path / "a.db")) as store:
        for original, output in ((b"one\n", b"x\n"), (b"two\n", b"x\ny\n")):
            put(store, original, output, [], source="s")
        assert store.expand(b"x\ny\nz\n") == b"two\nz\n"
        assert store.expand(b"x\nq\n") == b"one\nq\n"
        with pytest.raises(ArchiveMissing, match="no archived compaction output is a prefix"):
            store.expand(b"edited\n")


def test_restore_of_a_changed_file_suggests_expand(tmp_path: Path) -> None:
    with Archive.open(str(tmp_path / "a.db")) as store:
        record(store, b"a\nb\nc\nd\n")
        with pytest.raises(
            ArchiveMissing, match=r"no archived compaction produced this file.*--expand"
        ):
            store.restore(b"something else\n")


def _writer(path: str, files: list[str], worker: int, barrier: Any) -> None:
    barrier.wait()
    with Archive.open(path) as store:
        for name in files:
            record(store, Path(name).read_bytes(), source=name)
        for i in range(20):
            shared = b"the same tool output in every process\n" * 20
            session = b"session %d of worker %d\n" % (i, worker) + shared
            put(store, session, b"compacted %d of worker %d\n" % (i, worker), [shared])


def test_four_processes_write_at_once_and_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "shared" / "archive.db"  # created by the racing writers themselves
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(4)
    groups = [[str(p) for p in FIXTURE_FILES[i::4]] for i in range(4)]
    procs = [
        ctx.Process(target=_writer, args=(str(db), group, n, barrier))
        for n, group in enumerate(groups)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
    assert [proc.exitcode for proc in procs] == [0, 0, 0, 0]
    with Archive.open(str(db), create=False) as store:
        for path in FIXTURE_FILES:
            original = path.read_bytes()
            assert store.restore(simulate_compaction(original)[0]) == original
        for worker in range(4):
            for i in range(20):
                assert store.restore(b"compacted %d of worker %d\n" % (i, worker)).startswith(
                    b"session %d of worker %d\n" % (i, worker)
                )
        assert store.check() == []
        assert len(store.log(None)) == len(FIXTURE_FILES) + 80


def _flip_byte(db: Path, blob_sha: str) -> None:
    with sql(db) as conn:
        (data,) = conn.execute("SELECT data FROM blobs WHERE sha256 = ?", (blob_sha,)).fetchone()
        damaged = bytearray(data)
        damaged[len(damaged) // 2] ^= 0x40
        conn.execute("UPDATE blobs SET data = ? WHERE sha256 = ?", (bytes(damaged), blob_sha))


@pytest.mark.parametrize(
    "original",
    [
        (
            FIXTURES / "swe-agent" / "SWE-agent__demonstrations__function_calling_simple.traj"
        ).read_bytes(),  # stored zlib-compressed
        hashlib.sha512(b"incompressible").digest(),  # stored raw
    ],
    ids=["zlib", "raw"],
)
def test_a_flipped_byte_is_caught_by_check_and_restore(tmp_path: Path, original: bytes) -> None:
    db = tmp_path / "a.db"
    with Archive.open(str(db)) as store:
        _, output = record(store, original)
        assert store.check() == []
    _flip_byte(db, sha(original))
    with Archive.open(str(db)) as store:
        problems = store.check()
        assert len(problems) == 1
        assert ref_for(original) in problems[0] and "damaged" in problems[0]
        with pytest.raises(ArchiveCorrupt, match=f"blob {ref_for(original)} is damaged") as exc:
            store.restore(output)
        assert isinstance(exc.value, CtxpackError) and exc.value.exit_code == 1


def test_check_reports_a_missing_blob(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    data = b"line one\nline two\nline three\nline four\n"
    with Archive.open(str(db)) as store:
        cid, _ = record(store, data)
    middle = simulate_compaction(data)[1][0]
    with sql(db) as conn:
        conn.execute("DELETE FROM blobs WHERE sha256 = ?", (sha(middle),))
    with Archive.open(str(db)) as store:
        assert store.check() == [f"compaction {cid}: blob #0 {ref_for(middle)} is missing"]


def test_new_archive_is_private_whatever_the_umask(tmp_path: Path) -> None:
    db = tmp_path / "fresh" / "ctxpack" / "archive.db"
    old = os.umask(0)
    try:
        with Archive.open(str(db)) as store:
            store.put_blob(b"secret token sk-123")
            assert stat.S_IMODE(db.stat().st_mode) == 0o600
            for side in ("archive.db-wal", "archive.db-shm"):
                assert stat.S_IMODE((db.parent / side).stat().st_mode) == 0o600
    finally:
        os.umask(old)
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(db.parent.parent.stat().st_mode) == 0o700


def test_where_the_archive_lives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CTXPACK_ARCHIVE", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_path() == tmp_path / "home/.local/share/ctxpack/archive.db"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert resolve_path(None) == tmp_path / "data/ctxpack/archive.db"
    monkeypatch.setenv("CTXPACK_ARCHIVE", str(tmp_path / "env.db"))
    assert resolve_path(None) == tmp_path / "env.db"
    assert resolve_path(str(tmp_path / "flag.db")) == tmp_path / "flag.db"
    with Archive.open() as store:
        assert store.path == tmp_path / "env.db"
    with pytest.raises(ArchiveMissing, match="no archive here"):
        Archive.open(str(tmp_path / "absent.db"), create=False)
    assert not (tmp_path / "absent.db").exists()


def test_schema_is_versioned_and_migrates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "a.db"
    with Archive.open(str(db)) as store:
        _, output = record(store, b"a\nb\nc\nd\n")
    with sql(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION

    def add_tags(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE tags (compaction_id TEXT, tag TEXT)")

    monkeypatch.setattr(archive_db, "MIGRATIONS", (*archive_db.MIGRATIONS, add_tags))
    monkeypatch.setattr(archive_db, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with Archive.open(str(db)) as store:
        assert store.restore(output) == b"a\nb\nc\nd\n"
    with sql(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
        assert conn.execute("SELECT count(*) FROM tags").fetchone()[0] == 0
    monkeypatch.undo()
    with pytest.raises(ArchiveError, match="newer than this ctxpack understands"):
        Archive.open(str(db))


def test_a_file_that_is_not_an_archive(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.db"
    bogus.write_bytes(b"these are my notes, not a database" * 100)
    with pytest.raises(ArchiveCorrupt, match="damaged"):
        Archive.open(str(bogus))
    assert bogus.read_bytes().startswith(b"these are my notes")


def test_recording_the_same_compaction_twice_keeps_one_entry(tmp_path: Path) -> None:
    with Archive.open(str(tmp_path / "a.db")) as store:
        first, _ = record(store, b"a\nb\nc\nd\n")
        second, _ = record(store, b"a\nb\nc\nd\n", source="moved.jsonl")
        other, _ = record(store, b"w\nx\ny\nz\n")
        entries = store.log(None)
    assert first == second != other
    assert [e.id for e in entries] == [other, first]
    assert entries[1].source_path == "moved.jsonl"
    assert entries[1].tokens_before == 1000 and entries[1].tokens_after == 200
    assert entries[1].settings == {"force": True, "threshold": 0.5}


def test_log_is_newest_first_and_limited(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    with Archive.open(str(db)) as store:
        ids = [record(store, b"%d\n%d\n" % (i, i))[0] for i in range(5)]
    with sql(db) as conn:
        for age, cid in enumerate(reversed(ids)):
            conn.execute("UPDATE compactions SET created = ? WHERE id = ?", (1e9 - age, cid))
    with Archive.open(str(db)) as store:
        assert [e.id for e in store.log(3)] == ids[::-1][:3]
        assert len(store.log(None)) == 5


def test_gc_removes_old_compactions_and_keeps_recent_ones(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    shared = b"a tool output both sessions pruned\n" * 10
    with Archive.open(str(db)) as store:
        old_input, new_input = b"old session\n" + shared, b"new session\n" + shared
        old = put(
            store,
            old_input,
            b"old compacted\n",
            [shared, b"only the old one\n"],
            source="old.jsonl",
        )
        new = put(store, new_input, b"new compacted\n", [shared], source="new.jsonl")
        store.put_blob(b"stray, old")
        store.put_blob(b"stray, just stored")
    forty_days_ago = time.time() - 40 * 86400
    with sql(db) as conn:
        conn.execute("UPDATE compactions SET created = ? WHERE id = ?", (forty_days_ago, old))
        conn.execute("UPDATE blobs SET touched = ?", (forty_days_ago,))
        conn.execute(
            "UPDATE blobs SET touched = ? WHERE sha256 = ?",
            (time.time(), sha(b"stray, just stored")),
        )
    with Archive.open(str(db)) as store:
        assert store.gc(timedelta(days=30)) == 1
        assert [e.id for e in store.log(None)] == [new]
        assert store.restore(b"new compacted\n") == new_input
        assert store.get_blob(ref_for(shared)) == shared
        assert store.get_blob(ref_for(b"stray, just stored")) == b"stray, just stored"
        for gone in (old_input, b"only the old one\n", b"stray, old"):
            with pytest.raises(ArchiveMissing):
                store.get_blob(sha(gone))
        with pytest.raises(ArchiveMissing):
            store.restore(b"old compacted\n")
        assert store.check() == []
        assert store.gc(timedelta(days=30)) == 0


# Over LARGE_BLOB even packed: hex digits pack to about half their size.
LARGE = b"".join(hashlib.sha256(b"%d" % n).hexdigest().encode() for n in range(40_000))


@pytest.mark.parametrize("data", [b"pruned output", LARGE], ids=["small", "large"])
def test_a_blob_gc_dropped_after_the_presence_check_is_stored_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes
) -> None:
    with Archive.open(str(tmp_path / "a.db")) as store:
        real = Archive._present
        calls: list[int] = []

        def stale(self: Archive, shas: list[str]) -> set[str]:
            calls.append(1)  # the first look, before the transaction, sees a gc'd blob
            return set(shas) if len(calls) == 1 else real(self, shas)

        with monkeypatch.context() as patched:
            patched.setattr(Archive, "_present", stale)
            assert store.put_blob(data) == sha(data)
        assert store.get_blob(ref_for(data)) == data


@pytest.mark.parametrize(
    ("data", "codec"),
    [(LARGE, "zlib"), (os.urandom(packing.LARGE_BLOB + 1), "raw")],
    ids=["packed", "incompressible"],
)
def test_a_large_blob_is_stored_a_stretch_at_a_time_as_the_same_bytes(
    tmp_path: Path, data: bytes, codec: str
) -> None:
    expected = zlib.compress(data, 3) if codec == "zlib" else data
    assert len(expected) >= packing.LARGE_BLOB
    assert packing.pack(data) == (codec, expected)
    with Archive.open(str(tmp_path / "a.db")) as store:
        assert store.put_blob(data) == store.put_blob(data) == sha(data)
        assert store.get_blob(sha(data)) == data
    with contextlib.closing(sqlite3.connect(tmp_path / "a.db")) as conn:
        rows = conn.execute("SELECT codec, data, size FROM blobs").fetchall()
    assert rows == [(codec, expected, len(data))]


@pytest.mark.parametrize(
    ("text", "expected"),
    [("30d", timedelta(days=30)), ("12h", timedelta(hours=12)), ("2W", timedelta(weeks=2))],
)
def test_parse_age(text: str, expected: timedelta) -> None:
    assert parse_age(text) == expected


@pytest.mark.parametrize("text", ["30", "d", "-1d", "3m", "1.5d", ""])
def test_parse_age_rejects(text: str) -> None:
    with pytest.raises(UsageError, match="use a number and h, d or w"):
        parse_age(text)


def _count(db: Path, table: str) -> int:
    with contextlib.closing(sql(db)) as conn:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def test_records_stored_in_a_group_are_committed_together_at_its_end(tmp_path: Path) -> None:
    db = tmp_path / "archive.db"
    originals = [p.read_bytes() for p in FIXTURE_FILES[:3]]
    with Archive.open(str(db)) as store:
        with store.grouped():
            outputs = [record(store, data, source=f"s{i}")[1] for i, data in enumerate(originals)]
            # Another process sees nothing of the group before its commit.
            assert _count(db, "compactions") == 0
        assert _count(db, "compactions") == 3
    with Archive.open(str(db), create=False) as store:
        assert [store.restore(output) for output in outputs] == originals


def test_a_group_that_fails_stores_none_of_its_records(tmp_path: Path) -> None:
    db = tmp_path / "archive.db"
    with Archive.open(str(db)) as store:
        with pytest.raises(OSError), store.grouped():
            record(store, FIXTURE_FILES[0].read_bytes())
            raise OSError("the disk went away")
        assert _count(db, "compactions") == 0 and _count(db, "blobs") == 0
        # The archive goes on as before: the next record commits on its own.
        _, output = record(store, FIXTURE_FILES[1].read_bytes())
        assert store.restore(output) == FIXTURE_FILES[1].read_bytes()


def _begin(store: Archive, data: bytes) -> tuple[OpenCompaction, bytes]:
    output, blobs = simulate_compaction(data)
    opened = store.begin_compaction(
        source_path="s", input_bytes=data, output_bytes=output, blobs=blobs, settings={}
    )
    return opened, output


def _texts_of(data: bytes) -> list[bytes]:
    """Strings of a JSONL transcript long enough to be stored as its parts."""
    return [
        text.encode()
        for line in data.splitlines()
        for text in strings_in(orjson.loads(line))
        if len(text) >= 200
    ]


@pytest.mark.parametrize("beside", [False, True], ids=["packed-here", "packed-in-a-child"])
def test_an_open_compaction_is_stored_with_its_report_when_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, beside: bool
) -> None:
    db = tmp_path / "archive.db"
    data = HAIKU.read_bytes()
    output, simulated = simulate_compaction(data)
    # Texts of the input come first, in its order, as a run's replaced texts do.
    blobs = [*list(dict.fromkeys(_texts_of(data)))[:30], *simulated]
    # Where the new blobs were packed: the pid that packed them, when a child did.
    packers: list[int] = []
    real = forked.started

    @contextlib.contextmanager
    def started(func: Callable[[], Any], **kwargs: Any) -> Iterator[Callable[[], Any]]:
        with real(lambda: (os.getpid(), func()), **kwargs) as result:

            def value() -> Any:
                pid, found = result()
                packers.append(pid)
                return found

            yield value

    monkeypatch.setattr(forked, "started", started)
    if beside:
        monkeypatch.setattr(archive_store, "PACK_BESIDE_MIN_BYTES", len(data))
    parts = {"source_path": "s", "input_bytes": data, "output_bytes": output, "settings": {}}
    with Archive.open(str(db)) as store:
        opened = store.begin_compaction(blobs=blobs, **parts)  # type: ignore[arg-type]
        # Another process sees nothing of it before the commit.
        assert _count(db, "compactions") == 0
        opened.commit({"tokens_after": 200})
        assert store.restore(output) == data
        (found,) = store.log()
        assert found.id == opened.id and found.report == {"tokens_after": 200}
        assert all(store.get_blob(sha(blob)) == blob for blob in blobs)
    assert len(packers) == beside and os.getpid() not in packers
    # Stored as record_compaction stores it, to the byte.
    twin = tmp_path / "twin.db"
    with Archive.open(str(twin)) as store:
        put_report = store.record_compaction(
            blobs=blobs,
            report={"tokens_after": 200},
            **parts,  # type: ignore[arg-type]
        )
    assert put_report == opened.id
    for rows in (
        "SELECT id, cited, origins, labels FROM compactions",
        "SELECT blob, compaction FROM cites",
        "SELECT sha256, codec, data, size, base FROM blobs ORDER BY sha256",
    ):
        assert sql(db).execute(rows).fetchall() == sql(twin).execute(rows).fetchall()
    # Its middle is stored as slices of the input, its texts as the input's strings.
    codecs = "SELECT codec, count(*) FROM blobs GROUP BY codec ORDER BY codec"
    assert dict(sql(db).execute(codecs).fetchall()) == {"slices": 1, "string": 30, "zlib": 4}


def test_an_open_compaction_rolled_back_stores_nothing(tmp_path: Path) -> None:
    db = tmp_path / "archive.db"
    with Archive.open(str(db)) as store:
        opened, _ = _begin(store, FIXTURE_FILES[0].read_bytes())
        opened.rollback()
        assert _count(db, "compactions") == 0 and _count(db, "blobs") == 0
        opened.rollback()  # twice is harmless
        # The archive goes on as before.
        _, output = record(store, FIXTURE_FILES[1].read_bytes())
        assert store.restore(output) == FIXTURE_FILES[1].read_bytes()
        with store.grouped(), pytest.raises(RuntimeError, match="group"):
            _begin(store, FIXTURE_FILES[2].read_bytes())


def test_storing_a_compaction_again_cites_the_blobs_of_the_latest(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    data = b"a\nb\nc\nd\n"
    output, blobs = simulate_compaction(data)
    with Archive.open(str(db)) as store:

        def cited() -> tuple[tuple[str, ...], list[str]]:
            """The compaction's blobs in order, and the blobs `cites` pairs with it."""
            (entry,) = store.log()
            pairs = sql(db).execute(
                "SELECT b.sha256 FROM cites t JOIN blobs b ON b.id = t.blob"
                " WHERE t.compaction = ? ORDER BY 1",
                (entry.id,),
            )
            return entry.blobs, [row[0] for row in pairs]

        first = put(store, data, output, blobs)
        before = cited()
        assert before == (tuple(sha(b) for b in blobs), sorted({sha(b) for b in blobs}))
        # The same again: the same rows.
        assert put(store, data, output, blobs) == first
        assert cited() == before
        # The same output from other blobs (other settings): the latest's rows.
        assert put(store, data, output, blobs[:1]) == first
        assert cited() == (before[0][:1], [sha(blobs[0])])
        assert put(store, data, output, [*blobs, b"more"]) == first
        assert cited()[0] == (*before[0], sha(b"more"))
        assert cited()[1] == sorted({*before[1], sha(b"more")})


def test_only_blobs_no_compaction_cites_have_their_time_refreshed(tmp_path: Path) -> None:
    """gc drops only uncited blobs, so a compaction's own need no refresh (it
    would rewrite each row whole, a large input's too); a stray blob does."""
    db = tmp_path / "a.db"
    data = FIXTURE_FILES[0].read_bytes()
    with Archive.open(str(db)) as store:
        _, output = record(store, data)
        store.put_blob(b"stray")
    with sql(db) as conn:
        conn.execute("UPDATE blobs SET touched = 1")
    with Archive.open(str(db)) as store:
        record(store, data)
        store.put_blob(b"stray")
    times = dict(sql(db).execute("SELECT sha256, touched FROM blobs"))
    assert times.pop(sha(b"stray")) > 1
    assert set(times.values()) == {1}
    with Archive.open(str(db)) as store:
        assert store.gc(timedelta(days=30)) == 0
        assert store.restore(output) == data


def _blob_rows(path: Path) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return conn.execute(
            "SELECT sha256, codec, data, size, base FROM blobs ORDER BY sha256"
        ).fetchall()


@pytest.mark.parametrize(
    ("data", "codec"),
    [(LARGE + b"\n", "zlib"), (os.urandom(packing.LARGE_BLOB + 1), "raw")],
    ids=["packed", "incompressible"],
)
def test_an_input_packed_ahead_is_stored_as_it_is_packed_when_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, codec: str
) -> None:
    output, blobs = simulate_compaction(data)
    parts: dict[str, Any] = {
        "source_path": "session.jsonl",
        "input_bytes": data,
        "output_bytes": output,
        "blobs": blobs,
        "settings": {},
    }
    with Archive.open(str(tmp_path / "here.db")) as store:
        here = store.record_compaction(report={}, **parts)
    packed = packing.packed_ahead(data)
    assert packed[:2] == (sha(data), codec)
    real = packing.pack_all

    def pack_all(items: list[Any]) -> Any:
        assert all(item is not data for item in items), "the input is packed already"
        return real(items)

    with monkeypatch.context() as patched:
        patched.setattr("ctxpack.archive.writing.pack_all", pack_all)
        with Archive.open(str(tmp_path / "ahead.db")) as store:
            ahead = store.record_compaction(report={}, input_packed=packed, **parts)
            assert store.restore(output) == data
    assert ahead == here
    assert _blob_rows(tmp_path / "ahead.db") == _blob_rows(tmp_path / "here.db")
