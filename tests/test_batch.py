"""A batch of files through `compress DIR`: workers compact, the parent archives
and writes, each archive is opened once, and a worker told to stop never cuts
off the result it is sending."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ctxpack import files
from ctxpack.archive.store import Archive
from ctxpack.cli.app import app
from ctxpack.errors import INTERRUPTED
from ctxpack.pipeline import batch
from ctxpack.pipeline.compaction import CompressSettings
from ctxpack.pipeline.run import FileJob
from ctxpack.pipeline.stages import Compress
from ctxpack.tokens import counter as tokens
from ctxpack.tokens import encodings

from .conftest import FIXTURES

runner = CliRunner()

# Six real sessions in three formats; --force compacts most of them.
SOURCES = [
    *sorted((FIXTURES / "claude-code").glob("*.jsonl"))[1:],
    *sorted((FIXTURES / "codex").glob("*.jsonl")),
    FIXTURES / "openai-chat" / "tau-bench__historical_trajectories__gpt-4o-airline.json",
]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    src = tmp_path / "in"
    src.mkdir()
    for source in SOURCES:
        shutil.copy(source, src / source.name)
    return src


def _compress(src: Path, out: Path, archive: Path, jobs: int) -> Any:
    return runner.invoke(
        app,
        [
            *("compress", "--offline", "--force", str(src), "-o", str(out)),
            *("--jobs", str(jobs), "--archive", str(archive)),
        ],
    )


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_batch_opens_its_archive_once_and_the_parent_writes_every_file(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    opened: list[Path] = []
    real_open = Archive.open

    def counting_open(path: Any = None, **kwargs: Any) -> Archive:
        opened.append(Path(path))
        return real_open(path, **kwargs)

    # Forked workers inherit the spy: every process that writes names itself here.
    writers = tmp_path / "writers"
    real_write = files.write_atomic

    def noting_write(path: str, data: bytes, **kwargs: Any) -> None:
        with writers.open("a") as handle:
            handle.write(f"{os.getpid()}\n")
        real_write(path, data, **kwargs)

    monkeypatch.setattr(Archive, "open", staticmethod(counting_open))
    monkeypatch.setattr(files, "write_atomic", noting_write)
    archive, out = tmp_path / "archive.db", tmp_path / "out"
    result = _compress(folder, out, archive, jobs)
    assert result.exit_code == 0, result.output
    assert opened == [archive]
    assert writers.read_text().split() == [str(os.getpid())] * len(SOURCES)
    assert sorted(p.name for p in out.iterdir()) == sorted(s.name for s in SOURCES)
    # Closed at the end of the batch: its log checkpointed and gone.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["archive.db", "in", "out", "writers"]
    with contextlib.closing(sqlite3.connect(archive)) as db:
        stored = sorted(row[0] for row in db.execute("SELECT source_path FROM compactions"))
    # One compaction per file the batch changed (an unchanged one has nothing to undo).
    changed = [s for s in SOURCES if (out / s.name).read_bytes() != s.read_bytes()]
    assert stored == sorted(str(folder / s.name) for s in changed)
    assert len(changed) >= 2


def test_one_and_two_workers_write_the_same_bytes_and_table(folder: Path, tmp_path: Path) -> None:
    runs = {}
    for jobs in (1, 2):
        out = tmp_path / f"out{jobs}"
        result = _compress(folder, out, tmp_path / f"a{jobs}.db", jobs)
        assert result.exit_code == 0, result.output
        runs[jobs] = ({p.name: p.read_bytes() for p in out.iterdir()}, result.stderr)
    assert runs[1] == runs[2]
    assert "batch" in runs[2][1] and f"{len(SOURCES)} file(s)" in runs[2][1]


@pytest.mark.parametrize("shared", [True, False], ids=["built-before-fork", "built-in-workers"])
def test_workers_share_the_encoder_the_parent_built_for_a_large_batch(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared: bool
) -> None:
    """4.7 MB in five files, two workers: each would soon build tiktoken's
    encoder, so the parent builds it once before they fork. Where the
    Python counter's allowance covers a worker's share, nothing is built first."""
    monkeypatch.setattr(encodings, "_loaded", {})
    if not shared:
        monkeypatch.setattr(tokens, "SMALL_INPUT_CHARS", 10_000_000)
    seen = tmp_path / "seen"
    real = batch.compact_file

    def noting(job: FileJob, **kwargs: Any) -> Any:
        with seen.open("a") as handle:
            handle.write(f"{os.getpid()} {encodings.built('o200k_base') is not None}\n")
        return real(job, **kwargs)

    monkeypatch.setattr(batch, "compact_file", noting)
    result = _compress(folder, tmp_path / "out", tmp_path / "a.db", 2)
    assert result.exit_code == 0, result.output
    lines = [line.split() for line in seen.read_text().splitlines()]
    assert len(lines) == len(SOURCES)
    assert str(os.getpid()) not in {pid for pid, _ in lines}
    # A worker that built its own for an earlier file has it for its next.
    firsts = {pid: built for pid, built in reversed(lines)}
    assert set(firsts.values()) == {str(shared)}


def _sendback_result() -> None:
    """Stands where concurrent.futures sends a worker's result back."""
    batch._terminated(signal.SIGTERM, sys._getframe())


def test_a_worker_told_to_stop_finishes_sending_its_result() -> None:
    _sendback_result()  # returns: the result goes out whole


def test_a_worker_told_to_stop_mid_file_stops_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    def stopped_mid_file(job: FileJob, **_: Any) -> None:
        batch._terminated(signal.SIGTERM, sys._getframe())

    monkeypatch.setattr(batch, "compact_file", stopped_mid_file)
    job = FileJob(source="session.jsonl", output="out.jsonl")
    with pytest.raises(SystemExit) as stopped:
        batch._worker_job(job, Compress(CompressSettings()))
    assert stopped.value.code == INTERRUPTED


def test_a_worker_told_to_stop_while_it_waits_for_work_reads_on() -> None:
    # Stopped mid-read, it would leave the next reader of the queue a cut message.
    batch._terminated(signal.SIGTERM, sys._getframe())  # returns


def test_files_that_come_back_together_are_archived_in_one_commit_before_any_is_written(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib
    import time

    from ctxpack.archive import store as archive_store

    # Workers (forked with these patches) note each file they finish; the
    # parent's first write waits for all of them, so the rest come back together.
    finished = tmp_path / "finished"
    finished.mkdir()
    real_compact = batch.compact_file

    def noting_compact(job: Any, **kwargs: Any) -> Any:
        made = real_compact(job, **kwargs)
        (finished / Path(job.source).name).touch()
        return made

    commits: list[int] = []
    real_tx = archive_store.write_tx

    @contextlib.contextmanager
    def counting_tx(conn: sqlite3.Connection) -> Any:
        with real_tx(conn) as tx:
            yield tx
        commits.append(1)

    archive, out = tmp_path / "archive.db", tmp_path / "out"
    archived_first: list[bool] = []
    waited: list[bool] = []
    real_write = files.write_atomic

    def checking_write(path: str, data: bytes, **kwargs: Any) -> None:
        deadline = time.monotonic() + 60
        if not archived_first and not waited:
            while len(list(finished.iterdir())) < len(SOURCES) and time.monotonic() < deadline:
                time.sleep(0.02)
            # Then the time it takes their results to come back through the pipe.
            time.sleep(1)
            waited.append(True)
        if data not in {s.read_bytes() for s in SOURCES}:
            with contextlib.closing(sqlite3.connect(archive)) as db:
                sha = hashlib.sha256(data).hexdigest()
                row = db.execute("SELECT 1 FROM compactions WHERE output_sha256 = ?", (sha,))
                archived_first.append(row.fetchone() is not None)
        real_write(path, data, **kwargs)

    monkeypatch.setattr(batch, "compact_file", noting_compact)
    monkeypatch.setattr(archive_store, "write_tx", counting_tx)
    monkeypatch.setattr(files, "write_atomic", checking_write)
    result = _compress(folder, out, archive, 2)
    assert result.exit_code == 0, result.output
    changed = [s for s in SOURCES if (out / s.name).read_bytes() != s.read_bytes()]
    # Every changed file's record was committed before its output was written...
    assert archived_first == [True] * len(changed)
    # ...and the files behind the first one shared one commit.
    assert len(changed) >= 3 and len(commits) <= 2
    with Archive.open(str(archive), create=False) as store:
        assert all(store.restore((out / s.name).read_bytes()) == s.read_bytes() for s in changed)
