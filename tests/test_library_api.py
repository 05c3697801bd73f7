"""The public library API: a handful of names on `ctxpack`, loaded on first use."""

from __future__ import annotations

import subprocess
import sys

import ctxpack
from ctxpack import formats, pipeline, tokens
from tests.conftest import FIXTURES

CODEX = FIXTURES / "codex" / "Trezo-Ai__codex-session.jsonl"


def test_importing_ctxpack_loads_no_stage() -> None:
    code = "import sys, ctxpack; print(sorted(m for m in sys.modules if m.startswith('ctxpack')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['ctxpack']"


def test_ray_is_loaded_only_when_the_distributed_package_is_used() -> None:
    code = (
        "import sys, ctxpack.distributed.corpus;"
        " print(sorted({m.split('.')[0] for m in sys.modules} & {'ray', 'pyarrow'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_public_name_is_its_defining_object() -> None:
    assert ctxpack.read is formats.read
    assert ctxpack.write is formats.write
    assert ctxpack.compress_transcript is pipeline.compaction.compress_transcript
    assert ctxpack.run_file is pipeline.run.run_file
    assert ctxpack.TokenCounter is tokens.counter.TokenCounter
    assert sorted([*ctxpack._PUBLIC, "__version__"]) == sorted(ctxpack.__all__)
    assert set(ctxpack._PUBLIC) <= set(dir(ctxpack))


def test_compress_through_the_public_names_matches_the_cli(tmp_path: object) -> None:
    from pathlib import Path

    from typer.testing import CliRunner

    from ctxpack.cli import app

    out = Path(str(tmp_path)) / "out.jsonl"
    args = ["compress", "--offline", "--force", "--context-length", "60000", "--no-archive"]
    result = CliRunner().invoke(app, [*args, str(CODEX), "-o", str(out)])
    assert result.exit_code == 0, result.output

    transcript = ctxpack.read(CODEX.read_bytes(), path=str(CODEX))
    counter = ctxpack.TokenCounter()
    budget = ctxpack.CompressSettings().budget.__class__(context_length=60000)
    settings = ctxpack.CompressSettings(force=True, budget=budget)
    compacted, report = ctxpack.compress_transcript(transcript, counter=counter, settings=settings)
    assert ctxpack.write(compacted, counter=counter) == out.read_bytes()
    assert report.after.tokens < report.before.tokens


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        ctxpack.compress  # noqa: B018
    except AttributeError as exc:
        assert "compress" in str(exc)
    else:
        raise AssertionError("ctxpack.compress should not exist")
