"""Schema 5: a compaction's row holds what it cites, blobs have integer ids,
and `cites` pairs them. An archive written at schema 4 (a row per cited blob,
parts naming their base by its sha) migrates to it and reads back exactly as
one written at schema 5 from the same compactions: history, pages and their
sources, sessions, search, check; and gc still drops what nothing cites."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson

from ctxpack.archive import citations, db, strings
from ctxpack.archive.citations import Origins
from ctxpack.archive.recall import Recall
from ctxpack.archive.store import Archive
from ctxpack.archive.types import MESSAGE, TOOL_OUTPUT, Origin
from ctxpack.refs import ref_for, sha256_hex

TEXTS = [f"the parser of module {n} fails on nested quotes: {'x' * 80} line {n}" for n in range(3)]
OUTPUT = b"cargo test\nerror[E0382]: borrow of moved value: `parser`\n" * 3


def _input(texts: list[str]) -> bytes:
    return b"".join(orjson.dumps({"role": "user", "content": t}) + b"\n" for t in texts)


def _record(store: Archive) -> list[str]:
    """Two compactions: one cites a text twice (two origins) and a shared
    output; the other, of another session, cites that output again."""
    first = store.record_compaction(
        source_path="/w/a.jsonl",
        input_bytes=_input(TEXTS),
        output_bytes=b"a",
        blobs=[TEXTS[0].encode(), TEXTS[1].encode(), TEXTS[0].encode(), OUTPUT],
        origins=[
            Origin(kind=MESSAGE, session=0, session_label="s-1", message=1, role="user"),
            Origin(kind=MESSAGE, session=0, session_label="s-1", message=2, role="user"),
            Origin(kind=MESSAGE, session=1, session_label="s-2", message=7, role="user"),
            Origin(kind=TOOL_OUTPUT, session=0, tool="Bash", call="Bash `cargo test`"),
        ],
        settings={"redact": False},
        report={"tokens_before": 900, "tokens_after": 100},
    )
    second = store.record_compaction(
        source_path="/w/b.jsonl",
        input_bytes=_input(TEXTS[2:]),
        output_bytes=b"b",
        blobs=[OUTPUT],
        settings={},
        report={},
    )
    return [first, second]


def _as_schema_4(current: Path, old: Path) -> None:
    """The rows of `current` (schema 5) as ctxpack wrote them at schema 4."""
    conn = sqlite3.connect(old, isolation_level=None)
    for step in db.MIGRATIONS[:4]:
        step(conn)
    conn.execute("PRAGMA user_version = 4")
    conn.execute("ATTACH ? AS new", (str(current),))
    conn.execute(
        "INSERT INTO blobs SELECT b.sha256, b.codec, b.size, b.touched, b.data, s.sha256"
        " FROM new.blobs b LEFT JOIN new.bases s ON s.id = b.base ORDER BY b.id"
    )
    conn.execute(f"INSERT INTO compactions SELECT {_COLUMNS} FROM new.compactions ORDER BY rowid")
    for cid, cited, packed in conn.execute("SELECT id, cited, origins FROM new.compactions"):
        origins = Origins.of(packed)
        for position in range(len(cited) // 32):
            sha = cited[position * 32 : (position + 1) * 32].hex()
            conn.execute(
                "INSERT INTO compaction_blobs VALUES (?, ?, ?, ?)",
                (cid, position, sha, origins.text(position)),
            )
    conn.execute("DETACH new")
    conn.close()


_COLUMNS = (
    "id, created, source_path, input_sha256, input_size, output_sha256, output_size,"
    " settings, report"
)


def _everything(path: Path) -> dict[str, Any]:
    """All a reader gets back from the archive."""
    with Recall.open(path) as store:
        log = [entry.to_dict() for entry in store.log(None)]
        refs = sorted({ref for entry in log for ref in [entry["input_ref"], *entry["blob_refs"]]})
        pages = {}
        for ref in refs:
            page = store.page(ref=ref)
            pages[ref] = (page.header(), page.text, [s.to_dict() for s in page.sources])
        return {
            "log": log,
            "pages": pages,
            "sessions": {
                name: store.compactions(session=name) for name in ("s-1", "s-2", "a", "b.jsonl")
            },
            "all": store.compactions(),
            "search": [hit.to_dict() for hit in store.search(query="nested quotes")],
            "borrow": [hit.to_dict() for hit in store.search(query="borrow", session="b")],
            "check": store.check(),
        }


def test_an_archive_of_schema_4_reads_as_one_written_now(tmp_path: Path) -> None:
    current, old = tmp_path / "current.db", tmp_path / "old.db"
    with Archive.open(current) as store:
        _record(store)
    _as_schema_4(current, old)
    expected = _everything(current)
    assert _everything(old) == expected
    # What the test compares says something: the text cited twice has both
    # origins, the shared output both compactions, and texts are strings of the input.
    sources = expected["pages"][ref_for(TEXTS[0].encode())][2]
    assert [(s["session_label"], s["message"]) for s in sources] == [("s-1", 1), ("s-2", 7)]
    assert len(expected["pages"][ref_for(OUTPUT)][2]) == 2
    assert [c["source_path"] for c in expected["sessions"]["s-2"]] == ["/w/a.jsonl"]
    assert [c["source_path"] for c in expected["sessions"]["b.jsonl"]] == ["/w/b.jsonl"]
    assert len(expected["search"]) == 2 and len(expected["borrow"]) == 3
    with sqlite3.connect(old) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        codecs = dict(conn.execute("SELECT sha256, codec FROM blobs"))
        assert conn.execute("PRAGMA user_version").fetchone()[0] == db.SCHEMA_VERSION == 5
    assert "compaction_blobs" not in tables and {"cites", "bases"} <= tables
    assert codecs[sha256_hex(TEXTS[0].encode())] == strings.CODEC


def test_a_missing_blob_is_reported_by_its_place_before_and_after_migration(
    tmp_path: Path,
) -> None:
    current, old = tmp_path / "current.db", tmp_path / "old.db"
    with Archive.open(current) as store:
        first, _ = _record(store)
    _as_schema_4(current, old)
    for path in (current, old):
        with sqlite3.connect(path) as conn:
            conn.execute("DELETE FROM blobs WHERE sha256 = ?", (sha256_hex(TEXTS[1].encode()),))
        with Archive.open(path) as store:
            assert store.check() == [
                f"compaction {first}: blob #1 {ref_for(TEXTS[1].encode())} is missing"
            ]


def test_gc_drops_the_blobs_their_bases_and_pairs_once_nothing_cites_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.db"
    with Archive.open(path) as store:
        _record(store)
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE compactions SET created = 0 WHERE source_path = '/w/a.jsonl'")
            conn.execute("UPDATE blobs SET touched = 0")
        assert store.gc(timedelta(days=1)) == 1
        # The shared output stays for the other compaction; a's texts and input go.
        assert store.get_blob(ref_for(OUTPUT)) == OUTPUT
        assert store.stats().blobs == 2
        assert store.gc(timedelta(0)) == 1
        assert store.stats().blobs == 0
    with sqlite3.connect(path) as conn:
        left = [conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("cites", "bases")]
    assert left == [0, 0]


def test_migration_and_gc_give_the_freed_pages_back(tmp_path: Path) -> None:
    current, old = tmp_path / "current.db", tmp_path / "old.db"
    with Archive.open(current) as store:
        _record(store)
    _as_schema_4(current, old)
    with sqlite3.connect(old) as conn:
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        conn.execute("VACUUM")  # as ctxpack creates its archives
    with Archive.open(old) as store:
        assert _free_pages(old) == 0  # the rebuilt tables' old pages
        store.gc(timedelta(0))
    assert _free_pages(old) == 0


def _free_pages(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("PRAGMA freelist_count").fetchone()[0])


def test_check_reports_a_damaged_list_of_citations(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    with Archive.open(path) as store:
        first, second = _record(store)
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE compactions SET cited = substr(cited, 2) WHERE id = ?", (first,))
            conn.execute("UPDATE compactions SET origins = x'00ff' WHERE id = ?", (second,))
        assert sorted(store.check()) == sorted(
            f"compaction {cid}: its list of cited blobs is damaged" for cid in (first, second)
        )


def test_origins_read_back_one_line_each_across_the_stretches_they_are_packed_in(
    monkeypatch: Any,
) -> None:
    # Stretches of a few bytes: a stretch ends at every line, some exactly at the last.
    monkeypatch.setattr(citations, "_STRETCH", 7)
    for lines in ([], ["ab"], ["ab", "cd"], [None, "abcdefgh", "", None], ["abc"] * 8, ["abc"] * 9):
        origins = Origins.of(citations.pack_lines(lines))
        assert [origins.text(i) for i in range(len(lines))] == [
            None if line is None else line for line in lines
        ]
        assert Origins.readable(citations.pack_lines(lines), len(lines))
