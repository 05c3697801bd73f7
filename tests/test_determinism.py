"""The same input and options give the same bytes.

Every fixture, in every format, is compacted twice: once in this process
(one file after another) and once in a fresh process with another hash seed
and two worker processes. Any dependence on set or dict order that hashing
changes, on timing, or on which worker took which file shows up as a
difference. Read-only formats are written as openai in both runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxpack.cli import app
from tests.conftest import FIXTURES

runner = CliRunner()
# The batch's outputs: read-only formats are written as OpenAI JSONL, named .jsonl.
READ_ONLY = {"openhands", "swe-agent"}
INPUTS = sorted(
    p.relative_to(FIXTURES).with_suffix(".jsonl")
    if p.relative_to(FIXTURES).parts[0] in READ_ONLY
    else p.relative_to(FIXTURES)
    for p in FIXTURES.rglob("*")
    if p.is_file() and p.suffix != ".md"
)
SETTINGS = {
    "defaults": [],
    # A small tail, so that the short transcripts compact too.
    "small-tail": ["--tail-tokens", "2000", "--protect-last", "3"],
}


def _outputs(root: Path) -> dict[Path, bytes]:
    return {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("options", list(SETTINGS.values()), ids=list(SETTINGS))
def test_offline_compaction_is_byte_for_byte_repeatable(tmp_path: Path, options: list[str]) -> None:
    command = ["compress", "--offline", "--force", "--no-archive", *options, str(FIXTURES)]
    here, there = tmp_path / "here", tmp_path / "there"
    first = runner.invoke(app, [*command, "-o", str(here), "--jobs", "1"])
    assert first.exit_code == 0, first.output
    env = {**os.environ, "PYTHONHASHSEED": "4242"}
    second = subprocess.run(
        [sys.executable, "-m", "ctxpack", *command, "-o", str(there), "--jobs", "2"],
        capture_output=True,
        env=env,
        check=False,
    )
    assert second.returncode == 0, second.stderr.decode()[-2000:]

    ours, theirs = _outputs(here), _outputs(there)
    assert sorted(ours) == sorted(theirs) == INPUTS
    differing = [str(name) for name in INPUTS if ours[name] != theirs[name]]
    assert differing == []
    # The runs did compact: equal outputs that were all copies would prove little.
    changed = [
        name
        for name in INPUTS
        if not (FIXTURES / name).exists() or ours[name] != (FIXTURES / name).read_bytes()
    ]
    assert len(changed) >= len(INPUTS) // 2, changed
