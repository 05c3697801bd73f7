"""A corpus compacted on Ray Data is the batch `compress DIR --jobs 2` makes:
the same bytes, the same report, every output restorable, the failing file
named. One local Ray (2 CPUs) serves the whole module: it is slow to start."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ctxpack.align.budget import Budget
from ctxpack.archive.store import Archive
from ctxpack.cli import app
from ctxpack.pipeline.archiving import store
from ctxpack.pipeline.batch import compress_file
from ctxpack.pipeline.compaction import CompressSettings
from ctxpack.pipeline.run import FileJob
from ctxpack.pipeline.stages import Compress
from tests.conftest import FIXTURES

ray = pytest.importorskip(
    "ray", reason="Ray is not installed: pip install -e '.[ray]' (.[dev] has it)"
)
ray_data = pytest.importorskip("ray.data", reason="Ray Data is not installed: ray[data]")

from ctxpack.distributed import compact_dataset, record_of  # noqa: E402

# Ray Data's context warns of its own deprecated fields whenever it is copied.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray")
runner = CliRunner()
CORRUPT = b'{"role":"user","content":"a"}\n{"role": bad\n'
# Small enough that most fixtures are compacted, so most outputs need the archive.
BUDGET = ["--tail-tokens", "2000", "--protect-first", "1", "--protect-last", "3"]
SETTINGS = CompressSettings(
    budget=Budget(tail_tokens=2000, protect_first=1, protect_last=3), force=True
)


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    yield
    ray.shutdown()


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """The bundled fixtures, plus a file that is not valid JSON."""
    src = tmp_path / "in"
    shutil.copytree(FIXTURES, src)
    (src / "openai-chat" / "corrupt.jsonl").write_bytes(CORRUPT)
    return src


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _compactions(archive: Path) -> list[tuple[str, str]]:
    with Archive.open(archive, create=False) as opened:
        return sorted((c.id, c.source_path) for c in opened.log(limit=None))


def test_the_ray_runner_writes_what_the_batch_writes(corpus: Path, tmp_path: Path) -> None:
    common = ["compress", str(corpus), "--force", "--offline", *BUDGET]
    to = ["--report", str(tmp_path / "batch.json"), "--archive", str(tmp_path / "batch.db")]
    batch = subprocess.run(
        [
            sys.executable,
            "-m",
            "ctxpack",
            *common,
            "--jobs",
            "2",
            "-o",
            str(tmp_path / "batch"),
            *to,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    out, archive = tmp_path / "ray", tmp_path / "ray.db"
    to = ["--report", str(tmp_path / "ray.json"), "--archive", str(archive)]
    result = runner.invoke(
        app,
        [*common, "--runner", "ray", "-o", str(out), *to],
        env={"COLUMNS": "200"},
    )
    assert batch.returncode == result.exit_code == 1, result.output
    assert _tree(out) == _tree(tmp_path / "batch")
    assert len(_tree(out)) == 14  # every fixture but PROVENANCE.md; not the corrupt file
    ray_report = json.loads((tmp_path / "ray.json").read_bytes())
    batch_report = json.loads((tmp_path / "batch.json").read_bytes())
    for row in ray_report["files"]:
        row["output"] = row["output"].replace(str(out), str(tmp_path / "batch"))
    assert ray_report == batch_report
    [failed] = ray_report["errors"]
    assert failed["path"] == str(corpus / "openai-chat" / "corrupt.jsonl")
    assert "corrupt.jsonl:2: invalid JSON" in failed["error"]
    # The same table, the same warnings, the same error, on stderr.
    assert result.stderr == batch.stderr
    assert _compactions(archive) == _compactions(tmp_path / "batch.db")
    check = runner.invoke(app, ["archive", "check", "--archive", str(archive)])
    assert check.exit_code == 0, check.output
    _assert_every_output_restores(out, corpus, archive, tmp_path / "restored")


def _assert_every_output_restores(out: Path, src: Path, archive: Path, back: Path) -> None:
    back.mkdir()
    by_stem = {p.with_suffix("").relative_to(src): p for p in src.rglob("*") if p.is_file()}
    restored = 0
    for output in sorted(p for p in out.rglob("*") if p.is_file()):
        original = by_stem[output.with_suffix("").relative_to(out)].read_bytes()
        if output.read_bytes() == original:
            continue  # too short to compact: nothing was archived, nothing is to restore
        target = back / output.name
        done = runner.invoke(
            app, ["restore", str(output), "-o", str(target), "--archive", str(archive)]
        )
        assert done.exit_code == 0, done.output
        assert target.read_bytes() == original
        restored += 1
    assert restored == len(_compactions(archive)) >= 10


def test_the_ray_runner_needs_a_destination_and_files(corpus: Path) -> None:
    for args, message in [
        ([str(corpus), "--runner", "ray"], "give -o DEST"),
        (["-", "--runner", "ray", "-o", "x"], "not stdin"),
        ([str(corpus), "--ray-address", "auto", "-o", "x"], "--ray-address goes with --runner ray"),
        ([str(corpus), "--runner", "spark", "-o", "x"], "runner must be local or ray"),
    ]:
        result = runner.invoke(app, ["compress", *args])
        assert result.exit_code == 2, result.output
        assert message in " ".join(result.stderr.split())


def _rows(src: Path) -> list[dict[str, Any]]:
    return [
        {"path": str(p), "bytes": p.read_bytes()}
        for p in sorted(src.rglob("*"))
        if p.is_file() and p.suffix != ".md"
    ]


def test_compact_dataset_is_the_batch_per_file(corpus: Path, tmp_path: Path) -> None:
    settings = CompressSettings(force=True)
    # Codex sessions, and SWE-agent trajectories (read-only: written as openai).
    rows = _rows(corpus / "codex") + _rows(corpus / "swe-agent")
    rows.append({"path": str(corpus / "openai-chat" / "corrupt.jsonl"), "bytes": CORRUPT})
    got = {
        row["path"]: row
        for row in compact_dataset(ray_data.from_items(rows), settings=settings).iter_rows()
    }
    assert sorted(got) == sorted(row["path"] for row in rows)
    for row in rows:
        done = got[row["path"]]
        target = tmp_path / "batch" / Path(row["path"]).name
        target.parent.mkdir(exist_ok=True)
        job = FileJob(source=row["path"], output=str(target), archive=False)
        expected = compress_file(job, stage=Compress(settings))
        assert done["bytes"] == row["bytes"]
        if expected.error is not None:
            # A malformed line: --skip-invalid would read past it.
            assert (done["status"], done["error"], done["exit_code"], done["skippable"]) == (
                "error",
                expected.error,
                1,
                True,
            )
            assert expected.skippable
            assert done["output"] is None and not done["archived"]
            continue
        report = expected.report
        assert report is not None
        assert done["output"] == target.read_bytes()
        assert (done["tokens_before"], done["tokens_after"]) == (
            report.before.tokens,
            report.after.tokens,
        )
        statuses = {s.status.value for s in report.sessions}
        assert done["status"] == ", ".join(sorted(statuses))
        assert done["ratio"] == report.to_dict()["ratio"]
        compacted = [s.retention["region"]["overall"] for s in report.sessions if s.retention]
        assert done["retention"] == (min(compacted) if compacted else None)
        assert done["archived"] == (done["output"] != row["bytes"])
    errors = [row["error"] for row in got.values() if row["status"] == "error"]
    assert len(errors) == 1 and "corrupt.jsonl:2: invalid JSON" in errors[0]


def _die_once(batch: dict[str, Any], *, marker: str) -> dict[str, Any]:
    """Kill the worker after it compacted its first batch, the first time only."""
    if not os.path.exists(marker):
        Path(marker).touch()
        os._exit(1)
    return batch


def test_a_worker_lost_mid_task_leaves_one_record_per_file(tmp_path: Path) -> None:
    rows = _rows(FIXTURES / "codex") + _rows(FIXTURES / "pi") + _rows(FIXTURES / "opencode")
    compacted = compact_dataset(ray_data.from_items(rows), settings=SETTINGS)
    # Fused into the compaction's own task: the worker dies with its work done.
    ds = compacted.map_batches(_die_once, fn_kwargs={"marker": str(tmp_path / "died")})
    archive_path = tmp_path / "a.db"
    seen, archived = [], []
    with Archive.open(archive_path) as archive:
        for row in ds.iter_rows():
            seen.append(row["path"])
            record = record_of(row)
            if record is not None:
                store(archive, record)
                # Stored again, as a retried task's row would be: still one compaction.
                store(archive, record)
                archived.append((row["output"], row["bytes"]))
    assert (tmp_path / "died").exists()
    assert sorted(seen) == sorted(row["path"] for row in rows)
    assert len(_compactions(archive_path)) == len(archived) >= 3
    with Archive.open(archive_path) as archive:
        assert archive.check() == []
        for output, original in archived:
            assert archive.restore(output) == original
