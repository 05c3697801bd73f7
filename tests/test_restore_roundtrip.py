"""Every compaction can be undone: compress -> restore gives the original bytes."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxpack import formats
from ctxpack import messages as m
from ctxpack.archive.store import Archive
from ctxpack.cli import app
from tests.conftest import COUNTER, FIXTURES

runner = CliRunner()
WRITABLE = [
    p
    for p in sorted(FIXTURES.glob("*/*"))
    if p.suffix in (".json", ".jsonl")
    and formats.get(formats.detect(p.read_bytes()[:65536], path=str(p)).name).writable
]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("path", WRITABLE, ids=lambda p: p.name)
def test_compress_then_restore_is_byte_identical(path: Path, tmp_path: Path) -> None:
    out, back = tmp_path / f"c{path.suffix}", tmp_path / f"r{path.suffix}"
    archive = tmp_path / "a.db"
    result = runner.invoke(
        app,
        [
            "compress",
            "--force",
            "--offline",
            "--tail-tokens",
            "2000",
            "--protect-first",
            "1",
            "--protect-last",
            "3",
            str(path),
            "-o",
            str(out),
            "--archive",
            str(archive),
        ],
    )
    assert result.exit_code == 0, result.output
    if out.read_bytes() == path.read_bytes():
        # Too short to compact: the output is the original already, nothing was archived.
        assert "nothing-to-compress" in result.stderr
        return
    restored = runner.invoke(app, ["restore", str(out), "-o", str(back), "--archive", str(archive)])
    assert restored.exit_code == 0, restored.output
    assert _sha(back) == _sha(path)


def _compacted_openai_session(tmp_path: Path) -> tuple[Path, Path]:
    """The demo session as OpenAI JSONL, and its compaction (archived by default)."""
    source = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"
    session = tmp_path / "s.jsonl"
    session.write_bytes(
        formats.write(formats.read(source.read_bytes(), path="s"), fmt="openai", counter=COUNTER)
    )
    out = tmp_path / "c.jsonl"
    runner.invoke(app, ["compress", "--force", "--offline", str(session), "-o", str(out)])
    return session, out


def test_expand_keeps_turns_added_after_compaction(tmp_path: Path) -> None:
    session, out = _compacted_openai_session(tmp_path)
    extra = b'{"role":"user","content":"and now?"}\n{"role":"assistant","content":"done"}\n'
    out.write_bytes(out.read_bytes() + extra)
    plain = runner.invoke(app, ["restore", str(out), "-o", str(tmp_path / "x.jsonl")])
    assert plain.exit_code == 1 and "--expand" in plain.stderr
    back = tmp_path / "r.jsonl"
    result = runner.invoke(app, ["restore", "--expand", str(out), "-o", str(back)])
    assert result.exit_code == 0, result.output
    assert back.read_bytes() == session.read_bytes() + extra


def test_placeholders_resolve_with_show(tmp_path: Path) -> None:
    session, out = _compacted_openai_session(tmp_path)
    texts = [json.loads(line).get("content") or "" for line in out.read_bytes().splitlines()]
    refs = [t.rsplit("full: ", 1)[1] for t in texts if isinstance(t, str) and "full: ctxpack:" in t]
    assert refs
    originals = [m.text(json.loads(line)) for line in session.read_bytes().splitlines()]
    for ref in refs:
        shown = runner.invoke(app, ["show", ref])
        assert shown.exit_code == 0, shown.output
        assert shown.stdout_bytes.decode() in originals
    summary = next(t for t in texts if isinstance(t, str) and "Source turns: ctxpack:" in t)
    ref = summary.split("Source turns: ", 1)[1].split()[0]
    turns = runner.invoke(app, ["show", ref]).stdout_bytes.splitlines()
    assert turns and all(json.loads(line)["role"] for line in turns)


def test_batch_with_jobs_shares_one_archive(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    for p in WRITABLE[:4]:
        shutil.copy(p, src / p.name)
    archive = tmp_path / "shared.db"
    result = runner.invoke(
        app,
        [
            "compress",
            str(src),
            "-o",
            str(tmp_path / "out"),
            "--jobs",
            "4",
            "--force",
            "--offline",
            "--tail-tokens",
            "2000",
            "--archive",
            str(archive),
        ],
    )
    assert result.exit_code == 0, result.output
    for p in sorted(src.iterdir()):
        if (tmp_path / "out" / p.name).read_bytes() == p.read_bytes():
            continue
        back = tmp_path / f"back-{p.name}"
        restored = runner.invoke(
            app,
            ["restore", str(tmp_path / "out" / p.name), "-o", str(back), "--archive", str(archive)],
        )
        assert restored.exit_code == 0, restored.output
        assert back.read_bytes() == p.read_bytes()
    with Archive.open(str(archive)) as opened:
        assert opened.check() == []


def test_no_archive_writes_nothing(tmp_path: Path) -> None:
    archive = tmp_path / "never.db"
    path = WRITABLE[0]
    result = runner.invoke(
        app,
        [
            "compress",
            "--force",
            "--offline",
            str(path),
            "-o",
            str(tmp_path / "o"),
            "--no-archive",
            "--archive",
            str(archive),
        ],
    )
    assert result.exit_code == 0
    assert not archive.exists()
