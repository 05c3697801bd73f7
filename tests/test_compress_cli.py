"""`ctxpack compress`: the whole pipeline as users and CI run it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxpack import formats, markers, toolpairs
from ctxpack.archive.store import Archive
from ctxpack.cli import app
from tests.conftest import COUNTER, FIXTURES, SHARED, TAU_BENCH

runner = CliRunner()
HAIKU = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"
PI_LARGE = SHARED / "pi-agent" / "pi-mono__test__fixtures__large-session.jsonl"

# The documented keys of `--report FILE` (README "Report JSON").
FILE_KEYS = {
    "path",
    "format",
    "output",
    "skipped_lines",
    "tokens_before",
    "tokens_after",
    "ratio",
    "cache_prefix_tokens",
    "sessions",
}
SESSION_KEYS = {
    "session",
    "status",
    "tokens_before",
    "tokens_after",
    "messages_before",
    "messages_after",
    "ratio",
    "pruned",
    "deduplicated",
    "args_shrunk",
    "savings",
    "summary_tokens",
    "summary_source",
    "summary_model",
    "updated_previous_summary",
    "before",
    "after",
    "warnings",
    "notes",
    "sanitized",
    "retention",
    "cache_prefix",
}
TALLY_KEYS = {"messages", "tokens", "messages_by_role", "tokens_by_role", "tokens_by_kind"}


@pytest.fixture(scope="module")
def session_jsonl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real Claude Code session (64 messages, ~50k tokens) as OpenAI JSONL."""
    transcript = formats.read(HAIKU.read_bytes(), path=str(HAIKU))
    path = tmp_path_factory.mktemp("s") / "session.jsonl"
    path.write_bytes(formats.write(transcript, fmt="openai", counter=COUNTER))
    return path


def _ctxpack(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "ctxpack", *args], input=stdin, capture_output=True, check=False
    )


def test_pipe_compress_then_count(session_jsonl: Path) -> None:
    compressed = _ctxpack("compress", "--force", "--offline", "-", stdin=session_jsonl.read_bytes())
    assert compressed.returncode == 0, compressed.stderr.decode()
    assert b"compacted" in compressed.stderr
    counted = _ctxpack("count", "-", "--json", stdin=compressed.stdout)
    assert counted.returncode == 0
    after = json.loads(counted.stdout)["total"]["tokens"]
    before = json.loads(_ctxpack("count", str(session_jsonl), "--json").stdout)["total"]["tokens"]
    assert after < before / 2


def test_under_threshold_is_byte_identical(session_jsonl: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, ["compress", str(session_jsonl), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == session_jsonl.read_bytes()
    assert "under the threshold" in result.stderr


def test_force_compacts_with_one_summary_and_no_orphans(
    session_jsonl: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out.jsonl"
    result = runner.invoke(
        app, ["compress", "--force", "--offline", str(session_jsonl), "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    messages = [json.loads(line) for line in out.read_bytes().splitlines()]
    assert sum(markers.is_summary(m) for m in messages) == 1
    assert toolpairs.orphans(messages) == ([], [])
    original = [json.loads(line) for line in session_jsonl.read_bytes().splitlines()]
    last_user = [m for m in original if m["role"] == "user" and isinstance(m.get("content"), str)][
        -1
    ]
    real_users = [m for m in messages if m["role"] == "user" and not markers.is_summary(m)]
    assert real_users[-1]["content"] == last_user["content"]


def test_report_json_has_the_documented_keys(session_jsonl: Path, tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    result = runner.invoke(
        app,
        [
            "compress",
            "--force",
            "--offline",
            str(session_jsonl),
            "-o",
            str(tmp_path / "o.jsonl"),
            "--report",
            str(report_path),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(report_path.read_bytes())
    assert set(report) == FILE_KEYS
    session = report["sessions"][0]
    assert set(session) == SESSION_KEYS
    assert set(session["before"]) == TALLY_KEYS == set(session["after"])
    assert set(session["savings"]) == {"prune", "summarize"}
    assert session["status"] == "compacted"
    assert session["summary_source"] == "offline"
    assert report["tokens_after"] == session["tokens_after"] < report["tokens_before"]
    saved = session["savings"]["prune"] + session["savings"]["summarize"]
    assert report["tokens_before"] - report["tokens_after"] == saved


def test_composed_stages_equal_the_pipeline(session_jsonl: Path) -> None:
    whole = _ctxpack("compress", "--offline", "--force", str(session_jsonl))
    pruned = _ctxpack("prune", str(session_jsonl))
    composed = _ctxpack("summarize", "--offline", "-", stdin=pruned.stdout)
    assert whole.returncode == pruned.returncode == composed.returncode == 0
    assert whole.stdout == composed.stdout
    assert len(whole.stdout) < len(session_jsonl.read_bytes()) / 2


def test_batch_mirrors_the_tree_and_survives_a_corrupt_file(tmp_path: Path) -> None:
    src = tmp_path / "in"
    shutil.copytree(FIXTURES, src)
    (src / "openai-chat" / "corrupt.jsonl").write_bytes(
        b'{"role":"user","content":"a"}\n{"role": bad\n'
    )
    out = tmp_path / "out"
    report_path = tmp_path / "batch.json"
    result = runner.invoke(
        app,
        [
            "compress",
            str(src),
            "-o",
            str(out),
            "--jobs",
            "2",
            "--force",
            "--offline",
            "--report",
            str(report_path),
        ],
    )
    assert result.exit_code == 1
    inputs = sorted(p.relative_to(src) for p in src.rglob("*") if p.is_file() and p.suffix != ".md")
    outputs = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    # Read-only formats are written as OpenAI JSONL, and named so.
    read_only = {"openhands", "swe-agent"}
    assert outputs == sorted(
        p.with_suffix(".jsonl") if p.parts[0] in read_only else p
        for p in inputs
        if p.name != "corrupt.jsonl"
    )
    report = json.loads(report_path.read_bytes())
    assert [e["path"] for e in report["errors"]] == [str(src / "openai-chat" / "corrupt.jsonl")]
    assert "corrupt.jsonl:2:invalidJSON" in "".join(result.stderr.split())
    assert "batch" in result.stderr and f"{len(outputs)} file(s), 1 failed" in result.stderr
    # The file that failed has its row, without tokens; the totals are the others'.
    [row] = [line for line in result.stderr.splitlines() if "corrupt.jsonl" in line and "│" in line]
    assert [cell.strip() for cell in row.split("│")[1:]] == ["-", "-", "-", "error"]
    # Its line is malformed: the option that reads past it is named, once.
    assert result.stderr.count("--skip-invalid reads past a malformed line") == 1


@pytest.mark.parametrize(
    ("command", "source", "name"),
    [
        (
            ["compress", "--offline", "--force", "--no-archive"],
            HAIKU,
            "openagents__regex-log__haiku-testgen-v2.ctxpack.jsonl",
        ),
        (["prune", "--no-archive"], HAIKU, "openagents__regex-log__haiku-testgen-v2.ctxpack.jsonl"),
        # A read-only format is written as OpenAI JSONL, and named so.
        (
            ["compress", "--offline", "--force", "--no-archive"],
            FIXTURES / "swe-agent" / "SWE-agent__demonstrations__function_calling_simple.traj",
            "SWE-agent__demonstrations__function_calling_simple.ctxpack.jsonl",
        ),
        (
            ["convert", "--to", "openai"],
            HAIKU,
            "openagents__regex-log__haiku-testgen-v2.ctxpack.jsonl",
        ),
    ],
)
def test_one_file_into_a_directory_takes_the_name_ctxpack_gives_it(
    command: list[str], source: Path, name: str, tmp_path: Path
) -> None:
    """`-o DIR` for one file writes into DIR, as cp does, under the name the
    output would have beside the input: `-o .` beside the input is no clash."""
    result = runner.invoke(app, [*command, str(source), "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_fail_fast_stops_the_batch(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.jsonl").write_bytes(b'{"role": bad\n')
    shutil.copy(TAU_BENCH, src / "b.json")
    result = runner.invoke(app, ["compress", str(src), "-o", str(tmp_path / "out"), "--fail-fast"])
    assert result.exit_code == 1
    assert not (tmp_path / "out" / "b.json").exists()


def test_config_precedence_shown_by_config_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ctxpack.toml").write_text("threshold = 0.6\nprotect_last = 9\nprotect_first = 2\n")
    monkeypatch.setenv("CTXPACK_PROTECT_LAST", "7")
    monkeypatch.setenv("CTXPACK_PROTECT_FIRST", "4")
    result = runner.invoke(app, ["config", "--json", "--protect-first", "5"])
    assert result.exit_code == 0, result.output
    settings = json.loads(result.stdout)["settings"]
    assert settings["threshold"] == {"value": 0.6, "source": f"file {tmp_path / 'ctxpack.toml'}"}
    assert settings["protect_last"] == {"value": 7, "source": "env CTXPACK_PROTECT_LAST"}
    assert settings["protect_first"] == {"value": 5, "source": "flag"}
    assert settings["context_length"] == {"value": 200000, "source": "default"}
    table = runner.invoke(app, ["config"])
    assert ["protect_last", "7", "env", "CTXPACK_PROTECT_LAST"] in [
        line.split() for line in table.stdout.splitlines()
    ]


def test_config_file_changes_compress_behaviour(
    session_jsonl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ctxpack.toml").write_text("context_length = 60000\nthreshold = 0.5\n")
    out = tmp_path / "o.jsonl"
    result = runner.invoke(app, ["compress", "--offline", str(session_jsonl), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "compacted" in result.stderr
    assert out.read_bytes() != session_jsonl.read_bytes()


def test_second_compaction_updates_the_summary(session_jsonl: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "1.jsonl", tmp_path / "2.jsonl"
    runner.invoke(app, ["compress", "--force", "--offline", str(session_jsonl), "-o", str(first)])
    result = runner.invoke(
        app, ["update", "--offline", str(first), "-o", str(second), "--tail-tokens", "500"]
    )
    assert result.exit_code == 0, result.output
    messages = [json.loads(line) for line in second.read_bytes().splitlines()]
    assert sum(markers.is_summary(m) for m in messages) == 1
    body = markers.summary_body(next(m for m in messages if markers.is_summary(m)))
    assert markers.SUMMARY_PREFIX not in body


def test_update_without_summary_is_a_usage_error(session_jsonl: Path) -> None:
    result = runner.invoke(app, ["update", "--offline", str(session_jsonl)])
    assert result.exit_code == 2
    assert "no previous summary" in result.stderr


def test_report_says_which_pending_call_was_kept(tmp_path: Path) -> None:
    # The stream ends on a Bash call that never got its result: the agent is
    # still waiting on it, so it stays where it was, and the report says so.
    stream = (
        FIXTURES
        / "claude-stream-json"
        / ("openagents__logs__20251222_175115-call-issue-ready-now-to.jsonl")
    )
    report_path, out = tmp_path / "r.json", tmp_path / "o.jsonl"
    args = ["compress", "--force", "--offline", "--no-archive", str(stream), "-o", str(out)]
    result = runner.invoke(app, [*args, "--report", str(report_path)])
    assert result.exit_code == 0, result.output
    (session,) = json.loads(report_path.read_bytes())["sessions"]
    assert session["status"] == "compacted"
    assert session["sanitized"] == [
        "#11: kept call toolu_01PDdptSvE6G8q6iyPtQwMtT (Bash): no result yet"
    ]
    written = formats.read(out.read_bytes(), path=str(out)).sessions[0].messages
    results, calls = toolpairs.orphans(written)
    assert results == [] and [use.call_id for use in calls] == ["toolu_01PDdptSvE6G8q6iyPtQwMtT"]
    assert calls[0].index == len(written) - 1


def test_report_carries_retention_and_the_gate_refuses(session_jsonl: Path, tmp_path: Path) -> None:
    report_path, out = tmp_path / "r.json", tmp_path / "o.jsonl"
    args = ["compress", "--force", "--offline", str(session_jsonl), "-o", str(out)]
    result = runner.invoke(app, [*args, "--report", str(report_path)])
    assert result.exit_code == 0, result.output
    retention = json.loads(report_path.read_bytes())["sessions"][0]["retention"]
    assert retention["region"]["paths"] == 1.0
    assert retention["region"]["commands"] == 1.0
    assert retention["failed_checks"] == []
    # The archive's record holds the report as it ended, retention included.
    with Archive.open(create=False) as archive:
        (stored,) = archive.log()
    assert stored.report["sessions"][0]["retention"] == retention
    out.unlink()
    # At a 32,000-token window the large pi session's record names 82 of its 90 paths.
    small = ["compress", "--force", "--offline", str(PI_LARGE), "-o", str(out)]
    refused = runner.invoke(
        app, [*small, "--context-length", "32000", "--min-retention", "paths=1"]
    )
    assert refused.exit_code == 4
    assert "compaction refused" in refused.stderr
    assert not out.exists()
    # Nothing of a refused compaction is archived either.
    with Archive.open(create=False) as archive:
        assert [c.id for c in archive.log()] == [stored.id]
    passed = runner.invoke(app, [*args, "--min-retention", "paths=1,commands=1"])
    assert passed.exit_code == 0, passed.output
    assert out.exists()


def test_an_interrupt_while_the_record_is_open_stores_and_writes_nothing(
    session_jsonl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file run alone writes its record while the retention check runs and
    commits it after; Ctrl-C in between leaves the archive as it was."""
    out = tmp_path / "o.jsonl"
    args = ["compress", "--force", "--offline", str(session_jsonl), "-o", str(out)]

    def interrupted() -> None:
        with Archive.open() as archive:  # the record is written, not committed
            assert archive.log() == []
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr("ctxpack.pipeline.run.files.raise_if_interrupted", interrupted)
        result = runner.invoke(app, args)
    assert result.exit_code == 130
    assert not out.exists()
    with Archive.open() as archive:
        assert archive.log() == []
    assert runner.invoke(app, args).exit_code == 0
    with Archive.open() as archive:
        assert len(archive.log()) == 1
        assert archive.restore(out.read_bytes()) == session_jsonl.read_bytes()


def test_prune_only_stops_when_pruning_is_enough(session_jsonl: Path, tmp_path: Path) -> None:
    # 50k tokens against a 30k threshold: pruning alone gets it to about 26k.
    small = ["--context-length", "60000", "--offline", str(session_jsonl)]
    out = tmp_path / "pruned.jsonl"
    result = runner.invoke(app, ["compress", "--prune-only", *small, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "pruning alone brought it under the threshold" in result.stderr
    messages = [json.loads(line) for line in out.read_bytes().splitlines()]
    assert not any(markers.is_summary(m) for m in messages)
    assert len(messages) == len(session_jsonl.read_bytes().splitlines())
    full = tmp_path / "full.jsonl"
    result = runner.invoke(app, ["compress", *small, "-o", str(full)])
    assert result.exit_code == 0, result.output
    assert any(markers.is_summary(json.loads(line)) for line in full.read_bytes().splitlines())


def test_the_ray_runner_without_ray_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # None in sys.modules makes `import ray` fail as it does where Ray is not installed.
    monkeypatch.setitem(sys.modules, "ray", None)
    result = runner.invoke(
        app, ["compress", str(FIXTURES / "codex"), "--runner", "ray", "-o", str(tmp_path / "out")]
    )
    assert result.exit_code == 2
    assert "--runner ray needs Ray Data: pip install 'ctxpack[ray]'" in result.stderr
    assert not (tmp_path / "out").exists()
