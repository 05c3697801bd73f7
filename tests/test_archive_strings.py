"""The text of each message a compaction replaced is stored as the place of
its JSON string in the archived input, not a compressed copy: show, restore,
check and recall read it exactly; a text the input spells otherwise is packed
whole; damage and a missing input are reported."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

import ctxpack.cli.archive  # noqa: F401  (registers the commands)
from ctxpack.archive import strings
from ctxpack.archive.db import ref_of_sha
from ctxpack.archive.recall import Recall
from ctxpack.archive.store import Archive
from ctxpack.archive.types import SUMMARIZED_TURNS
from ctxpack.cli import app
from ctxpack.refs import ref_for, sha256_hex
from tests.conftest import assert_restores_and_checks

runner = CliRunner()


def _rows(archive: Path) -> dict[str, tuple[str, int, int, str | None]]:
    with sqlite3.connect(archive) as conn:
        rows = conn.execute(
            "SELECT b.sha256, b.codec, b.size, length(b.data), s.sha256 FROM blobs b"
            " LEFT JOIN bases s ON s.id = b.base"
        )
        return {sha: (codec, size, stored, base) for sha, codec, size, stored, base in rows}


def test_replaced_texts_are_strings_of_the_archived_input(archived_session: dict) -> None:
    source, archive = archived_session["source"], archived_session["archive"]
    input_sha = sha256_hex(source.read_bytes())
    rows = _rows(archive)
    with Recall.open(archive) as store:
        [entry] = store.compactions()
    texts = [blob["ref"] for blob in entry["blobs"] if blob["kind"] != SUMMARIZED_TURNS]
    by_ref = {ref_of_sha(sha): row for sha, row in rows.items()}
    stored = [by_ref[ref] for ref in texts]
    located = [row for row in stored if row[0] == strings.CODEC]
    assert len(located) > 50
    assert all(row[2] == 16 and row[3] == input_sha for row in located)
    # A text long enough is a location exactly where the input holds it as
    # orjson spells it (not where it was joined from several parts).
    whole = source.read_bytes()
    with Archive.open(archive, create=False) as store:
        for ref in texts:
            text = store.get_blob(ref)
            spelled = len(text) >= strings.MIN_SIZE and orjson.dumps(text.decode()) in whole
            assert (by_ref[ref][0] == strings.CODEC) == spelled, ref
    ref = next(r for r in texts if by_ref[r][0] == strings.CODEC)
    shown = runner.invoke(app, ["show", ref, "--archive", str(archive)])
    assert shown.exit_code == 0 and ref_for(shown.stdout_bytes) == ref
    with Archive.open(archive, create=False) as store:
        assert store.get_blob(ref) == shown.stdout_bytes
    assert_restores_and_checks(archived_session)


def test_damage_and_a_missing_input_are_reported(archived_session: dict, tmp_path: Path) -> None:
    archive = tmp_path / "a.db"
    archive.write_bytes(archived_session["archive"].read_bytes())
    rows = _rows(archive)
    sha, (_, _, _, base) = next((s, r) for s, r in rows.items() if r[0] == strings.CODEC)
    with sqlite3.connect(archive) as conn:
        conn.execute("UPDATE blobs SET data = ? WHERE sha256 = ?", (bytes(16), sha))
    with Archive.open(archive) as store:
        assert any(ref_of_sha(sha) in p and "damaged" in p for p in store.check())
    with sqlite3.connect(archive) as conn:
        conn.execute("DELETE FROM blobs WHERE sha256 = ?", (base,))
    shown = runner.invoke(app, ["show", ref_of_sha(sha), "--archive", str(archive)])
    assert shown.exit_code == 1
    assert "stored as a string of a missing blob" in " ".join(shown.stderr.split())
    with Archive.open(archive) as store:
        assert any("is a string of" in p and "which is missing" in p for p in store.check())


def _line(text: str) -> bytes:
    return b'{"role":"tool","tool_call_id":"c1","content":' + orjson.dumps(text) + b"}\n"


@given(
    st.lists(st.text(min_size=0, max_size=200), min_size=1, max_size=8),
    st.lists(st.text(max_size=40), max_size=4),
)
def test_a_located_text_reads_back_as_it_was(found: list[str], others: list[str]) -> None:
    texts = [
        t + " padding it to the minimum size of a located text, in plain words." for t in found
    ]
    base = b"".join(_line(t) for t in [*others, *texts])
    items = {sha256_hex(t.encode()): t.encode() for t in texts}
    located = strings.located(base, dict(items), list(items))
    assert set(located) == set(items)  # each is in the base, in order
    for sha, packed in located.items():
        assert strings.decode(packed, base) == items[sha]


def test_a_text_spelled_otherwise_is_packed_whole() -> None:
    ascii_only = "the output of a command that printed only plain words " * 2
    accented = "la sortie d’une commande qui écrit des accents à chaque ligne " * 2
    # Python's json writes every non-ASCII character as a \\u escape, orjson as itself.
    base = b"".join(json.dumps({"content": t}).encode() + b"\n" for t in (ascii_only, accented))
    items = {sha256_hex(t.encode()): t.encode() for t in (ascii_only, accented)}
    assert list(strings.located(base, items, list(items))) == [sha256_hex(ascii_only.encode())]
    # Not a text at all (a lone surrogate, bytes that are no UTF-8), or too short: not looked for.
    odd = {"a": "\ud800 a lone surrogate".encode("utf-8", "surrogatepass") * 4, "b": b"\xff" * 80}
    assert strings.located(base, {**odd, "c": b"short"}, ["a", "b", "c"]) == {}


def test_a_location_outside_its_base_is_damage() -> None:
    base = _line("x" * 100)
    with pytest.raises(ValueError):
        strings.decode(bytes(16), base)  # 0..0: empty
    with pytest.raises(ValueError):
        strings.decode((5).to_bytes(8, "little") + (10**6).to_bytes(8, "little"), base)
    with pytest.raises(ValueError):
        strings.decode(b"\x00" * 8, base)  # truncated
