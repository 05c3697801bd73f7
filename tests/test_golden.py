"""A redesign changes no output: every command writes the bytes recorded before it."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

from tests.golden import record


def test_every_fixture_gives_the_recorded_bytes(tmp_path: object) -> None:
    expected = json.loads(record.RECORD.read_text())
    jobs = [
        (f"{name} {fixture.relative_to(record.FIXTURES)}", fixture, args, writes)
        for fixture in record.fixtures()
        for name, args, writes in record.COMMANDS
    ]

    def run(job: tuple[str, object, tuple[str, ...], bool]) -> tuple[str, dict[str, object]]:
        key, fixture, args, writes = job
        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory() as tmp:
            return key, record.run_one(fixture, args, writes, Path(tmp))  # type: ignore[arg-type]

    with ThreadPoolExecutor(max_workers=2) as pool:
        got = dict(pool.map(run, jobs))
    changed = sorted(key for key in expected if got.get(key) != expected[key])
    assert sorted(got) == sorted(expected)
    assert changed == []
