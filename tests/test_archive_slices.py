"""The summarized turns of a compact JSONL session are stored as slices of the
archived input, not a second copy: restore, show, log, check, recall, search
and the MCP server read them exactly as before; gc keeps an input while a blob
is sliced from it; damage is reported; archives written before slices (schema
2) still restore and recall, and take slices from their next compaction on."""

from __future__ import annotations

import json
import os
import pickle
import re
import sqlite3
import zlib
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

import ctxpack.cli.archive  # noqa: F401  (registers the commands)
from bench.run import build_input
from ctxpack import refs
from ctxpack.archive import db, packing, slices
from ctxpack.archive.db import ref_of_sha
from ctxpack.archive.recall import Recall
from ctxpack.archive.store import Archive
from ctxpack.archive.types import SUMMARIZED_TURNS, Origin, dump_json
from ctxpack.cli import app
from ctxpack.refs import LineBlob, ref_for, sha256_hex
from tests.conftest import TAU_BENCH, assert_restores_and_checks
from tests.test_mcp import call, server, texts

runner = CliRunner()


@pytest.fixture(scope="module")
def compacted(archived_session: dict[str, Path]) -> dict[str, Path | str]:
    """The archived session (conftest) and the ref of its summarized turns."""
    with Recall.open(archived_session["archive"]) as store:
        [entry] = store.compactions()
    [turns] = [blob["ref"] for blob in entry["blobs"] if blob["kind"] == SUMMARIZED_TURNS]
    return {**archived_session, "turns": turns}


def _row(archive: Path, ref: str) -> tuple[str, int, int, str | None]:
    with sqlite3.connect(archive) as conn:
        row = conn.execute(
            "SELECT b.codec, b.size, length(b.data), s.sha256 FROM blobs b"
            " LEFT JOIN bases s ON s.id = b.base WHERE b.sha256 LIKE ?",
            (ref.removeprefix("ctxpack:") + "%",),
        ).fetchone()
    return row[0], row[1], row[2], row[3]


def test_the_summarized_turns_are_slices_of_the_archived_input(compacted: dict) -> None:
    source, archive, turns = compacted["source"], compacted["archive"], compacted["turns"]
    codec, size, stored, base = _row(archive, turns)
    assert codec == slices.CODEC and base == sha256_hex(source.read_bytes())
    # Only the pruned lines are kept of their own: far below a compressed copy.
    shown = runner.invoke(app, ["show", turns, "--archive", str(archive)])
    assert shown.exit_code == 0, shown.output
    assert len(shown.stdout_bytes) == size and ref_for(shown.stdout_bytes) == turns
    assert stored * 4 < len(zlib.compress(shown.stdout_bytes, 3))
    assert turns in compacted["out"].read_text(encoding="utf-8")
    assert_restores_and_checks(compacted)
    log = runner.invoke(app, ["log", "--json", "--archive", str(archive)])
    assert turns in json.loads(log.stdout)[0]["blob_refs"]


def test_recall_and_search_read_the_sliced_turns(compacted: dict) -> None:
    archive, turns = compacted["archive"], compacted["turns"]
    with Archive.open(archive, create=False) as store:
        whole = store.get_blob(turns).decode()
    # The longest word of the summarized turns: rare enough to rank in the first hits.
    word = max(re.findall(r"(?<![A-Za-z0-9])[A-Za-z]{4,}(?![A-Za-z0-9])", whole), key=len)
    with Recall.open(archive) as store:
        page = store.page(ref=turns, max_lines=5000)
        pages = [page]
        while pages[-1].next_start_line is not None:
            following = pages[-1].next_start_line
            pages.append(store.page(ref=turns, start_line=following, max_lines=5000))
        hits = store.search(query=word, limit=100)
    assert "".join(p.text for p in pages) == whole
    assert page.sources[0].kind == SUMMARIZED_TURNS and page.size == len(whole.encode())
    assert any(hit.ref == turns for hit in hits)


@pytest.mark.anyio
async def test_the_mcp_server_recalls_the_sliced_turns(compacted: dict) -> None:
    async with server(compacted["archive"]) as session:
        result = await call(session, "recall", ref=compacted["turns"], max_lines=3)
    header, text = texts(result)
    assert not result.is_error and "summarized turns" in header
    with Archive.open(compacted["archive"], create=False) as store:
        lines = store.get_blob(compacted["turns"]).decode().splitlines(keepends=True)
    assert text == "".join(lines[:3])


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _v2_archive(path: Path, original: bytes, output: bytes, middle: bytes) -> None:
    """An archive as ctxpack wrote it at schema 2: every blob whole."""
    conn = sqlite3.connect(path, isolation_level=None)
    for step in db.MIGRATIONS[:2]:
        step(conn)
    conn.execute("PRAGMA user_version = 2")
    for data in (original, middle):
        conn.execute(
            "INSERT INTO blobs VALUES (?, 'zlib', ?, 0, ?)",
            (sha256_hex(data), len(data), zlib.compress(data)),
        )
    conn.execute(
        "INSERT INTO compactions VALUES ('c1', 0, 'old.jsonl', ?, ?, ?, ?, '{}', '{}')",
        (sha256_hex(original), len(original), sha256_hex(output), len(output)),
    )
    origin = Origin(kind=SUMMARIZED_TURNS, session=0, message=1, end=3).to_dict()
    conn.execute(
        "INSERT INTO compaction_blobs VALUES ('c1', 0, ?, ?)",
        (sha256_hex(middle), dump_json(origin)),
    )
    conn.close()


def test_an_archive_from_before_slices_restores_and_recalls(tmp_path: Path) -> None:
    build_input(200_000, tmp_path / "s.jsonl")
    original = (tmp_path / "s.jsonl").read_bytes()
    lines = original.splitlines(keepends=True)
    middle = b"".join(lines[1:-20])
    output = lines[0] + b'{"role":"user","content":"summary"}\n' + b"".join(lines[-20:])
    path = tmp_path / "old.db"
    _v2_archive(path, original, output, middle)
    compacted = tmp_path / "c.jsonl"
    compacted.write_bytes(output)
    done = runner.invoke(app, ["restore", str(compacted), "--archive", str(path)])
    assert done.exit_code == 0 and done.stdout_bytes == original
    shown = runner.invoke(app, ["show", ref_for(middle), "--archive", str(path)])
    assert shown.exit_code == 0 and shown.stdout_bytes == middle
    check = runner.invoke(app, ["archive", "check", "--archive", str(path)])
    assert check.exit_code == 0, check.output
    word = json.loads(lines[5])["role"]
    with Recall.open(path) as store:
        assert db.schema_version(store._conn) == db.SCHEMA_VERSION
        assert store.page(ref=ref_for(middle), max_lines=5000).text.startswith(
            middle[:100].decode()
        )
        assert any(hit.ref == ref_for(middle) for hit in store.search(query=word, limit=100))
        [entry] = store.log()
        assert entry.blobs == (sha256_hex(middle),)
        # The migrated archive slices what it stores from now on.
        store.record_compaction(
            source_path="new.jsonl",
            input_bytes=original + b"\n",
            output_bytes=b"new output",
            blobs=[middle + b"more\n"],
            settings={},
            report={},
        )
    assert _row(path, ref_for(middle))[0] == "zlib"
    assert _row(path, ref_for(middle + b"more\n"))[0] == slices.CODEC


def test_gc_keeps_an_input_while_a_blob_is_sliced_from_it(tmp_path: Path) -> None:
    build_input(200_000, tmp_path / "s.jsonl")
    first = (tmp_path / "s.jsonl").read_bytes()
    middle = b"".join(first.splitlines(keepends=True)[1:-5])
    path = tmp_path / "a.db"
    with Archive.open(path) as store:
        store.record_compaction(
            source_path="a",
            input_bytes=first,
            output_bytes=b"a",
            blobs=[middle],
            settings={},
            report={},
        )
        # Another input's compaction cites the same turns: stored once, sliced from `first`.
        store.record_compaction(
            source_path="b",
            input_bytes=b"another input",
            output_bytes=b"b",
            blobs=[middle],
            settings={},
            report={},
        )
    assert _row(path, ref_for(middle))[3] == sha256_hex(first)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE compactions SET created = 0 WHERE source_path = 'a'")
        conn.execute("UPDATE blobs SET touched = 0")
    with Archive.open(path) as store:
        assert store.gc(timedelta(days=1)) == 1
        assert store.get_blob(ref_for(middle)) == middle
        assert store.check() == []
        assert store.gc(timedelta(0)) == 1
        assert store.stats().blobs == 0


def test_check_reports_a_damaged_slice_table_and_a_missing_base(
    compacted: dict, tmp_path: Path
) -> None:
    path = tmp_path / "a.db"
    path.write_bytes(Path(compacted["archive"]).read_bytes())
    turns = compacted["turns"]
    sha = turns.removeprefix("ctxpack:")
    with sqlite3.connect(path) as conn:
        [(data, base)] = conn.execute(
            "SELECT b.data, s.sha256 FROM blobs b JOIN bases s ON s.id = b.base"
            " WHERE b.sha256 LIKE ?",
            (sha + "%",),
        ).fetchall()
        body = bytearray(zlib.decompress(data))
        body[8] ^= 0x01  # the first piece now starts elsewhere in the input
        conn.execute(
            "UPDATE blobs SET data = ? WHERE base = (SELECT id FROM bases WHERE sha256 = ?)",
            (zlib.compress(bytes(body)), base),
        )
    with Archive.open(path) as store:
        assert any(f"blob {turns} is damaged" in problem for problem in store.check())
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM blobs WHERE sha256 = ?", (base,))
    shown = runner.invoke(app, ["show", turns, "--archive", str(path)])
    assert shown.exit_code == 1 and "slices of a missing blob" in " ".join(shown.stderr.split())
    with Archive.open(path) as store:
        assert f"blob {turns} is sliced from {ref_of_sha(base)}, which is missing" in store.check()


BASE_LINES = TAU_BENCH.read_bytes().splitlines(keepends=True)[:400]


@given(
    st.lists(
        st.one_of(
            st.integers(0, len(BASE_LINES) - 1).map(BASE_LINES.__getitem__), st.binary(max_size=60)
        ),
        max_size=40,
    )
)
def test_pieces_always_join_to_the_data(parts: list[bytes]) -> None:
    base, data = b"".join(BASE_LINES), b"".join(parts)
    pieces = slices.find_pieces(base, data)
    joined, literal = bytearray(), 0
    for start, length in pieces:
        if start < 0:
            joined += data[len(joined) : len(joined) + length]
            literal += length
        else:
            assert start + length <= len(base)
            joined += base[start : start + length]
    assert bytes(joined) == data


def test_the_base_lines_in_order_are_one_range() -> None:
    base, in_order = b"".join(BASE_LINES), b"".join(BASE_LINES[3:40])
    assert slices.find_pieces(base, in_order) == [(len(b"".join(BASE_LINES[:3])), len(in_order))]


def test_slices_round_trip_a_session_with_pruned_lines() -> None:
    base = b"".join(BASE_LINES) * 8
    lines = base.splitlines(keepends=True)
    edited = [
        b'{"role":"tool","content":"[pruned]"}\n' if i % 7 == 3 else x for i, x in enumerate(lines)
    ]
    data = b"".join(edited[2:])
    packed = slices.encode(base, data)
    assert packed is not None and slices.decode(packed, base) == data
    assert len(packed) < len(zlib.compress(data, 3)) // 4
    assert slices.encode(base, b"x" * len(data)) is None  # nothing shared: packed whole


def _line_blob(lines: list[bytes]) -> LineBlob:
    made: list[int] = []

    def make() -> Iterator[bytes]:
        made.append(1)
        return iter(lines)

    blob = LineBlob(make)
    assert made == [1]  # its sha and size: one pass
    return blob


def test_a_line_blob_is_its_lines_never_held_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = b"".join(BASE_LINES).splitlines(keepends=True)
    data = b"".join(lines)
    with monkeypatch.context() as patched:
        patched.setattr(refs, "STRETCH", 1024)
        blob = _line_blob(lines)
        stretches = list(blob.stretches())
    assert (sha256_hex(blob), len(blob), ref_for(blob)) == (
        sha256_hex(data),
        len(data),
        ref_for(data),
    )
    assert len(stretches) > 10 and b"".join(stretches) == bytes(blob) == data
    assert all(stretch.endswith(b"\n") for stretch in stretches)
    assert blob == data == blob and blob == _line_blob(lines) and blob != data + b"\n"
    # Sent to another process (a batch's worker), it is its bytes.
    assert pickle.loads(pickle.dumps(blob)) == data


def test_a_line_blob_is_sliced_and_packed_as_its_bytes_are(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = b"".join(BASE_LINES) * 8
    lines = [
        b'{"role":"tool","content":"[pruned]"}\n' if i % 7 == 3 else x
        for i, x in enumerate(base.splitlines(keepends=True))
    ][2:]
    data = b"".join(lines)
    with monkeypatch.context() as patched:
        # Many stretches: a run of matching lines crosses from one to the next.
        patched.setattr(refs, "STRETCH", 1 << 14)
        patched.setattr(packing, "LARGE_BLOB", 1 << 15)
        blob = _line_blob(lines)
        assert len(list(blob.stretches())) > 10
        assert slices.find_pieces(base, blob) == slices.find_pieces(base, data)
        packed = slices.encode(base, blob)
        assert packed is not None and packed == slices.encode(base, data)
        assert slices.decode(packed, base) == data
        assert packing.pack(blob) == packing.pack(data) == ("zlib", zlib.compress(data, 3))
        noise = _line_blob([os.urandom(1 << 12) + b"\n" for _ in range(16)])
        assert packing.pack(noise) == ("raw", bytes(noise))


def test_a_blob_that_jumps_across_its_base_finds_every_line_it_shares() -> None:
    # Unique lines over more than twice the search window: a summary's turns
    # archived again start far from the turns that follow them.
    base_lines = [
        b'{"role":"tool","content":"line %05d %s"}\n' % (i, b"x" * 600) for i in range(5000)
    ]
    base = b"".join(base_lines)
    assert len(base) > 2 * slices.WINDOW
    pruned = b'{"role":"tool","content":"[pruned]"}\n'
    after = [pruned if i % 7 == 3 else line for i, line in enumerate(base_lines[10:3000])]
    data = b"".join([base_lines[-1], *after])
    pieces = slices.find_pieces(base, data)
    literal = sum(length for start, length in pieces if start < 0)
    # The first line after the jump reads as a pruned one; every other base line is found.
    assert literal == len(base_lines[10]) + len(pruned) * sum(1 for x in after if x is pruned)
    packed = slices.encode(base, data)
    assert packed is not None and slices.decode(packed, base) == data
