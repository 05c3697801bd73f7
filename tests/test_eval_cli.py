"""`ctxpack eval`: retention of a real compaction, tables and JSON, and the
--min-retention CI gate (exit 4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import ctxpack.cli.eval  # noqa: F401
from ctxpack import formats, markers
from ctxpack.cli import app
from ctxpack.summarize.protocol import HEADINGS
from tests.conftest import FIXTURES, TAU_BENCH

runner = CliRunner()
HAIKU = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"
OPENHANDS = FIXTURES / "openhands" / "OpenHands__tests__runtime__trajs__basic_gui_mode.json"


@pytest.fixture(scope="module")
def openhands_compacted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """OpenHands (a read-only format) compacted offline to OpenAI JSON."""
    out = tmp_path_factory.mktemp("eval") / "compacted.json"
    args = ["compress", "--force", "--offline", "--no-archive", "--to", "openai"]
    result = runner.invoke(app, [*args, str(OPENHANDS), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def lossy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Claude Code session with its middle dropped for a summary that says nothing."""
    messages = formats.read(HAIKU.read_bytes(), path=str(HAIKU)).sessions[0].messages
    body = "\n\n".join(f"## {h}\n- None recorded." for h in HEADINGS)
    useless = {
        "role": "user",
        "content": f"{markers.SUMMARY_PREFIX}\n\n{body}\n\n{markers.SUMMARY_END}",
    }
    # Head: the task and its first read; tail: the final test run and the wrap-up.
    kept = [*messages[:3], useless, *messages[59:]]
    path = tmp_path_factory.mktemp("eval") / "lossy.jsonl"
    path.write_text("".join(json.dumps(msg) + "\n" for msg in kept))
    return path


def eval_json(*args: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, ["eval", *args, "--json"])
    return result.exit_code, json.loads(result.stdout)


def test_eval_of_a_compress_output_in_another_format(openhands_compacted: Path) -> None:
    code, data = eval_json(str(OPENHANDS), str(openhands_compacted))
    assert code == 0
    assert set(data) == {"original", "compacted", "total", "sessions", "gate"}
    assert data["gate"] is None
    assert len(data["sessions"]) == 1
    total = data["total"]
    region = total["retention"]["region"]
    # The compacted turns named one path and two URLs; the summary kept them all.
    assert (region["paths"]["found"], region["paths"]["kept"]) == (1, 1)
    assert (region["urls"]["found"], region["urls"]["kept"]) == (2, 2)
    assert region["overall"] == {"found": 3, "kept": 3, "retention": 1.0}
    assert total["region_messages"] > 0
    assert total["tokens_after"] < total["tokens_before"]
    assert total["checks_passed"] is True
    assert [c["name"] for c in total["checks"]] == [
        "no_orphan_tool_pairs",
        "latest_user_message_kept",
        "summary_headings",
        "reference_prefix",
    ]


def test_tables_on_stderr_and_nothing_on_stdout(openhands_compacted: Path) -> None:
    result = runner.invoke(app, ["eval", str(OPENHANDS), str(openhands_compacted)])
    assert result.exit_code == 0
    assert result.stdout == ""
    for word in ("retention", "category", "paths", "directives", "checks", "latest user message"):
        assert word in result.stderr
    assert "tokens 3,515 →" in result.stderr


def test_region_tokens_are_the_librarys(openhands_compacted: Path) -> None:
    """eval's region ratio is the library's evaluate(), through the CLI."""
    from ctxpack.evaluate.retention import combine, evaluate_transcripts
    from ctxpack.tokens.counter import TokenCounter

    before = formats.read(OPENHANDS.read_bytes(), path=str(OPENHANDS))
    after = formats.read(openhands_compacted.read_bytes(), path=str(openhands_compacted))
    library = combine(evaluate_transcripts(before, after, counter=TokenCounter()))
    code, data = eval_json(str(OPENHANDS), str(openhands_compacted))
    assert code == 0
    total = data["total"]
    assert total["region_tokens_before"] == library.region_tokens_before > 0
    assert total["region_tokens_after"] == library.region_tokens_after > 0
    assert total["region_ratio"] == library.region_ratio < total["ratio"]
    result = runner.invoke(app, ["eval", str(OPENHANDS), str(openhands_compacted)])
    line = (
        f"region tokens {library.region_tokens_before:,} → {library.region_tokens_after:,} "
        f"({library.region_ratio:.1%}"
    )
    assert line in result.stderr


def test_per_category_gate_passes(openhands_compacted: Path) -> None:
    result = runner.invoke(
        app,
        [
            "eval",
            str(OPENHANDS),
            str(openhands_compacted),
            "--min-retention",
            "paths=1.0,commands=1.0,urls=1",
        ],
    )
    assert result.exit_code == 0, result.stderr
    assert "gate passed: paths ≥ 100%, commands ≥ 100%, urls ≥ 100%" in result.stderr


def test_lossy_compaction_fails_the_gate_with_exit_4(lossy: Path) -> None:
    reported = runner.invoke(app, ["eval", str(HAIKU), str(lossy)])
    assert reported.exit_code == 0  # without a gate eval only reports
    assert "missing paths:" in reported.stderr

    result = runner.invoke(app, ["eval", str(HAIKU), str(lossy), "--min-retention", "0.9"])
    assert result.exit_code == 4
    assert "gate: overall retention" in result.stderr
    assert "--min-retention not met" in result.stderr

    code, data = eval_json(str(HAIKU), str(lossy), "--min-retention", "paths=0.9")
    assert code == 4
    region = data["total"]["retention"]["region"]
    assert region["paths"]["retention"] < 0.9
    assert "/tmp/regex-log-test/app/testgen_tests.py" in region["paths"]["missing"]
    assert data["gate"]["passed"] is False
    assert data["gate"]["thresholds"] == {"paths": 0.9}
    assert data["gate"]["failures"][0].startswith("paths retention ")


def test_a_failed_check_fails_the_gate(tmp_path: Path) -> None:
    messages = formats.read(HAIKU.read_bytes(), path=str(HAIKU)).sessions[0].messages
    # Dropping the call of a kept result leaves an orphan; retention is untouched.
    broken = [msg for i, msg in enumerate(messages) if i != 61]
    path = tmp_path / "broken.jsonl"
    path.write_text("".join(json.dumps(msg) + "\n" for msg in broken))
    code, data = eval_json(str(HAIKU), str(path), "--min-retention", "0")
    assert code == 4
    assert data["gate"]["failures"] == [
        "#0: no_orphan_tool_pairs failed: 1 result(s) without a call, 0 call(s) without a result"
    ]
    assert runner.invoke(app, ["eval", str(HAIKU), str(path)]).exit_code == 0


def test_stdin_for_one_side(openhands_compacted: Path) -> None:
    result = runner.invoke(
        app,
        ["eval", "-", str(openhands_compacted), "--json"],
        input=OPENHANDS.read_bytes(),
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["original"] == "<stdin>"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--min-retention", "90"], "outside 0..1"),
        (["--min-retention", "files=1"], "unknown category"),
    ],
)
def test_usage_errors_exit_2(openhands_compacted: Path, args: list[str], message: str) -> None:
    result = runner.invoke(app, ["eval", str(OPENHANDS), str(openhands_compacted), *args])
    assert result.exit_code == 2
    assert message in result.stderr


def test_both_on_stdin_or_unpaired_sessions_exit_2(tmp_path: Path) -> None:
    assert runner.invoke(app, ["eval", "-", "-"], input=b"[]").exit_code == 2
    # The first session of tau-bench alone: derived, but the sessions do not pair.
    first = formats.read(TAU_BENCH.read_bytes(), path=str(TAU_BENCH)).sessions[0].messages
    one = tmp_path / "one.jsonl"
    one.write_bytes(b"".join(json.dumps(msg).encode() + b"\n" for msg in first))
    result = runner.invoke(app, ["eval", str(TAU_BENCH), str(one)])
    assert result.exit_code == 2
    assert "sessions are compared by position" in result.stderr


def test_help_has_examples() -> None:
    result = runner.invoke(app, ["eval", "--help"])
    assert result.exit_code == 0
    assert "--min-retention 0.9" in result.stdout
    assert "paths=1.0,commands=0.9" in " ".join(result.stdout.split())
