"""`ctxpack restore`, `show`, `log`, `archive check` and `archive gc` on tmp archives."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

import ctxpack.cli.archive  # noqa: F401  (registers the commands)
from ctxpack.archive.store import Archive
from ctxpack.cli import app
from ctxpack.refs import ref_for
from tests.conftest import FIXTURES
from tests.test_archive import record, sha, simulate_compaction

runner = CliRunner()


def said(result: Result) -> str:
    """stderr with rich's line wrapping undone."""
    return " ".join(result.stderr.split())


SESSION = FIXTURES / "codex" / "Trezo-Ai__codex-session.jsonl"


@pytest.fixture
def archived(tmp_path: Path) -> tuple[Path, Path, str]:
    """An archive holding one compaction of a real session, and the compacted file."""
    db = tmp_path / "archive.db"
    with Archive.open(str(db)) as store:
        cid, output = record(store, SESSION.read_bytes(), source=str(SESSION))
    compacted = tmp_path / "session.ctxpack.jsonl"
    compacted.write_bytes(output)
    return db, compacted, cid


def test_restore_writes_the_exact_original(
    archived: tuple[Path, Path, str], tmp_path: Path
) -> None:
    db, compacted, cid = archived
    target = tmp_path / "restored.jsonl"
    result = runner.invoke(
        app, ["restore", str(compacted), "-o", str(target), "--archive", str(db)]
    )
    assert result.exit_code == 0, result.output
    assert sha(target.read_bytes()) == sha(SESSION.read_bytes())
    assert cid in said(result) and result.stdout == ""


def test_restore_to_stdout_when_piped(archived: tuple[Path, Path, str]) -> None:
    db, compacted, _ = archived
    result = runner.invoke(
        app, ["restore", "-", "--archive", str(db)], input=compacted.read_bytes()
    )
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == SESSION.read_bytes()


def test_restore_expand_keeps_the_appended_lines(
    archived: tuple[Path, Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, compacted, _ = archived
    added = b'{"type":"response_item","n":1}\n{"type":"response_item","n":2}\n'
    with compacted.open("ab") as handle:
        handle.write(added)
    monkeypatch.setenv("CTXPACK_ARCHIVE", str(db))  # no --archive: the environment decides
    plain = runner.invoke(app, ["restore", str(compacted), "-o", str(tmp_path / "x.jsonl")])
    assert plain.exit_code == 1 and "--expand" in said(plain)
    assert not (tmp_path / "x.jsonl").exists()
    target = tmp_path / "grown.jsonl"
    result = runner.invoke(app, ["restore", str(compacted), "--expand", "-o", str(target)])
    assert result.exit_code == 0, result.output
    assert target.read_bytes() == SESSION.read_bytes() + added
    assert f"plus {len(added)} appended byte(s)" in said(result)


def test_a_file_compacted_twice_restores_a_round_at_a_time(tmp_path: Path) -> None:
    """The second round's archive holds the first round's output: restoring
    gives that, says so, and restoring again gives the original."""
    db, session = tmp_path / "archive.db", FIXTURES / "codex" / "codex-cli-0.171__stub-tally.jsonl"
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    for source, out in ((session, first), (first, second)):
        args = ["compress", "--offline", "--force", str(source), "-o", str(out)]
        assert runner.invoke(app, [*args, "--archive", str(db)]).exit_code == 0
    back = tmp_path / "back.jsonl"
    once = runner.invoke(app, ["restore", str(second), "-o", str(back), "--archive", str(db)])
    assert once.exit_code == 0 and back.read_bytes() == first.read_bytes()
    assert "is itself compacted (compaction" in said(once)
    assert f"of {session}): restore it too" in said(once)
    again = runner.invoke(
        app, ["restore", str(back), "-o", str(tmp_path / "orig.jsonl"), "--archive", str(db)]
    )
    assert again.exit_code == 0 and "itself compacted" not in said(again)
    assert (tmp_path / "orig.jsonl").read_bytes() == session.read_bytes()


def test_restore_of_an_unknown_file(archived: tuple[Path, Path, str], tmp_path: Path) -> None:
    db, _, _ = archived
    other = tmp_path / "other.jsonl"
    other.write_bytes(b'{"role":"user","content":"hi"}\n')
    result = runner.invoke(app, ["restore", str(other), "--archive", str(db)])
    assert result.exit_code == 1
    assert "no archived compaction produced this file" in said(result)
    missing = runner.invoke(app, ["restore", str(other), "--archive", str(tmp_path / "none.db")])
    assert missing.exit_code == 1 and "no archive here" in said(missing)
    assert not (tmp_path / "none.db").exists()


def test_show_prints_the_blob_raw(archived: tuple[Path, Path, str]) -> None:
    db, _, _ = archived
    middle = simulate_compaction(SESSION.read_bytes())[1][0]
    for ref in (ref_for(middle), ref_for(middle).removeprefix("ctxpack:"), sha(middle)[:7]):
        result = runner.invoke(app, ["show", ref, "--archive", str(db)])
        assert result.exit_code == 0, result.output
        assert result.stdout_bytes == middle


def test_show_errors(archived: tuple[Path, Path, str]) -> None:
    db, _, _ = archived
    unknown = runner.invoke(app, ["show", "ctxpack:0000000000", "--archive", str(db)])
    assert unknown.exit_code == 1 and "no archived blob matches" in said(unknown)
    short = runner.invoke(app, ["show", "abc", "--archive", str(db)])
    assert short.exit_code == 2 and "at least 6 hex digits" in said(short)


def test_log_json_and_table(archived: tuple[Path, Path, str]) -> None:
    db, _, cid = archived
    result = runner.invoke(app, ["log", "--json", "--archive", str(db)])
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)
    middle = simulate_compaction(SESSION.read_bytes())[1][0]
    assert entry["id"] == cid and entry["source_path"] == str(SESSION)
    assert (entry["tokens_before"], entry["tokens_after"]) == (1000, 200)
    assert entry["input_ref"] == ref_for(SESSION.read_bytes())
    assert entry["blob_refs"][0] == ref_for(middle)
    # Piped, the log is plain lines on stdout: one compaction each, every ref in it.
    table = runner.invoke(app, ["log", "--archive", str(db)])
    assert table.exit_code == 0 and table.stderr == ""
    header, row = table.stdout.splitlines()
    assert header.split() == ["time", "id", "tokens_before", "tokens_after", "source", "refs"]
    assert row.split()[1:5] == [cid, "1000", "200", str(SESSION)]
    assert ref_for(middle) in row.split()[5:]


def test_log_lists_each_ref_once(tmp_path: Path) -> None:
    """The pi session's tool ran the same command to the same output eight
    times: its archive cites that blob from each place, its log lists it once."""
    db, session = tmp_path / "archive.db", FIXTURES / "pi" / "pi-0.73.1__stub-tally.jsonl"
    out = tmp_path / "out.jsonl"
    args = ["compress", "--offline", "--force", str(session), "-o", str(out), "--archive", str(db)]
    assert runner.invoke(app, args).exit_code == 0
    (entry,) = json.loads(runner.invoke(app, ["log", "--json", "--archive", str(db)]).stdout)
    cited = [entry["input_ref"], *entry["blob_refs"]]
    assert len(set(cited)) < len(cited)
    _, row = runner.invoke(app, ["log", "--archive", str(db)]).stdout.splitlines()
    assert row.split()[5:] == list(dict.fromkeys(cited))


def test_log_of_an_absent_archive_is_empty(tmp_path: Path) -> None:
    result = runner.invoke(app, ["log", "--json", "--archive", str(tmp_path / "none.db")])
    assert result.exit_code == 0 and json.loads(result.stdout) == []
    assert not (tmp_path / "none.db").exists()


def test_check_passes_then_catches_a_flipped_byte(archived: tuple[Path, Path, str]) -> None:
    db, compacted, _ = archived
    ok = runner.invoke(app, ["archive", "check", "--archive", str(db)])
    assert ok.exit_code == 0 and "no problems" in said(ok)
    original_sha = sha(SESSION.read_bytes())
    with sqlite3.connect(str(db), isolation_level=None) as conn:
        (data,) = conn.execute(
            "SELECT data FROM blobs WHERE sha256 = ?", (original_sha,)
        ).fetchone()
        damaged = bytearray(data)
        damaged[100] ^= 0x01
        conn.execute("UPDATE blobs SET data = ? WHERE sha256 = ?", (bytes(damaged), original_sha))
    bad = runner.invoke(app, ["archive", "check", "--archive", str(db)])
    assert bad.exit_code == 1
    original = ref_for(SESSION.read_bytes())
    assert f"blob {original} is damaged" in said(bad)
    # The middle is stored as slices of the original: it is lost with it.
    middle = ref_for(simulate_compaction(SESSION.read_bytes())[1][0])
    assert f"blob {middle} is sliced from {original}, which is damaged" in said(bad)
    assert "2 problem(s)" in said(bad)
    restore = runner.invoke(app, ["restore", str(compacted), "--archive", str(db)])
    assert restore.exit_code == 1 and "is damaged" in said(restore)
    assert restore.stdout_bytes == b""


def test_gc_removes_only_old_compactions(archived: tuple[Path, Path, str]) -> None:
    db, compacted, cid = archived
    with Archive.open(str(db)) as store:
        recent, _ = record(store, b"recent\nsession\nwith\nlines\n")
    with sqlite3.connect(str(db), isolation_level=None) as conn:
        old = time.time() - 8 * 86400
        conn.execute("UPDATE compactions SET created = ? WHERE id = ?", (old, cid))
        conn.execute("UPDATE blobs SET touched = ?", (old,))
    result = runner.invoke(app, ["archive", "gc", "--older-than", "1w", "--archive", str(db)])
    assert result.exit_code == 0, result.output
    assert "removed 1 compaction(s)" in said(result)
    log = json.loads(runner.invoke(app, ["log", "--json", "--archive", str(db)]).stdout)
    assert [e["id"] for e in log] == [recent]
    gone = runner.invoke(app, ["restore", str(compacted), "--archive", str(db)])
    assert gone.exit_code == 1
    bad_age = runner.invoke(app, ["archive", "gc", "--older-than", "30x", "--archive", str(db)])
    assert bad_age.exit_code == 2 and "use a number and h, d or w" in said(bad_age)


@pytest.mark.parametrize("command", [["restore"], ["show"], ["log"], ["archive", "gc"]])
def test_help_has_examples(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0 and "Examples:" in result.stdout
