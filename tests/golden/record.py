"""Record (or check) the bytes every command writes for every bundled fixture.

A refactor must not change a single output byte: `python tests/golden/record.py` writes
`outputs.json` (sha256 of stdout, the written file and the exit status per command and
fixture); `tests/test_golden.py` runs the same commands and compares.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
RECORD = Path(__file__).with_name("outputs.json")

# (name, arguments after the fixture path, writes a file with -o)
COMMANDS: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    ("compress", ("compress", "--offline", "--force"), True),
    ("prune", ("prune",), True),
    ("align", ("align", "--json"), False),
    ("count", ("count", "--json"), False),
)


def fixtures() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.name != "PROVENANCE.md")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def run_one(fixture: Path, args: tuple[str, ...], writes: bool, work: Path) -> dict[str, object]:
    # Inputs and outputs are named relative to the work folder, so that the paths that
    # reports print are the same wherever the checkout lives.
    rel = fixture.relative_to(ROOT)
    local = work / rel
    if not local.exists():
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(fixture.read_bytes())
    out = work / ("out" + fixture.suffix)
    out.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "ctxpack", *args, str(rel)]
    if writes:
        cmd += ["-o", out.name, "--archive", "archive.db"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXPACK_")}
    env["HOME"] = str(work)
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(cmd, capture_output=True, cwd=work, env=env, check=False)
    return {
        "rc": proc.returncode,
        "stdout": _digest(proc.stdout),
        "file": _digest(out.read_bytes()) if out.exists() else None,
    }


def run_all() -> dict[str, dict[str, object]]:
    results: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for fixture in fixtures():
            for name, args, writes in COMMANDS:
                key = f"{name} {fixture.relative_to(FIXTURES)}"
                results[key] = run_one(fixture, args, writes, work)
    return results


if __name__ == "__main__":
    RECORD.write_text(json.dumps(run_all(), indent=1, sort_keys=True) + "\n")
    print(f"recorded {RECORD}")
