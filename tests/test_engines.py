"""Engines and summarizers: the built-in ones, plugins found through their entry
points (tests/plugins/ctxpack_testplugin), selection by name, and plugins refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxpack import formats
from ctxpack.cli import app
from ctxpack.engines import registry
from ctxpack.errors import PluginError, UsageError
from ctxpack.formats.base import ReadOptions
from ctxpack.pipeline.compaction import CompressSettings, compress_transcript
from ctxpack.pipeline.run import FileJob, read_transcript, run_file
from ctxpack.pipeline.stages import Compress, Summarize
from ctxpack.summarize.protocol import HEADINGS
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Transcript
from tests.conftest import FIXTURES, TAU_BENCH
from tests.llm_server import (
    FakeLLM,
    llm_server_fixture,  # noqa: F401
    ok,
)
from tests.plugins.ctxpack_testplugin.ctxpack_testplugin.house import HOUSE_PROMPT
from tests.plugins.ctxpack_testplugin.ctxpack_testplugin.summarizers import FIXED_LINE

runner = CliRunner()
HAIKU = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"
CODEX = FIXTURES / "codex" / "Trezo-Ai__codex-session.jsonl"
PACKAGE = "(ctxpack-testplugin 0.3.1)"


def _rows(stdout: str) -> list[list[str]]:
    return [line.split() for line in stdout.splitlines()]


def test_only_the_built_ins_without_a_plugin() -> None:
    result = runner.invoke(app, ["engines"])
    assert result.exit_code == 0, result.output
    assert _rows(result.stdout) == [
        ["kind", "name", "package", "version", "source"],
        ["engine", "builtin", "ctxpack", "0.1.0", "built-in"],
        ["summarizer", "llm", "ctxpack", "0.1.0", "built-in"],
        ["summarizer", "offline", "ctxpack", "0.1.0", "built-in"],
    ]


def test_engines_lists_every_plugin_with_its_package_and_version(plugin: str) -> None:
    result = runner.invoke(app, ["engines"])
    assert result.exit_code == 0, result.output
    rows = _rows(result.stdout)
    assert rows[1:4] == [
        ["engine", "builtin", "ctxpack", "0.1.0", "built-in"],
        [
            "engine",
            "builtin",
            "ctxpack-testplugin",
            "0.3.1",
            "ignored:",
            "a",
            "built-in",
            "has",
            "this",
            "name",
        ],
        [
            "engine",
            "forgets",
            "ctxpack-testplugin",
            "0.3.1",
            "plugin",
            "ctxpack_testplugin.engines:DropsLatestUser",
        ],
    ]
    names = [(row[0], row[1]) for row in rows[1:]]
    assert names == [
        ("engine", "builtin"),
        ("engine", "builtin"),
        ("engine", "forgets"),
        ("engine", "orphans"),
        ("engine", "prune-only"),
        ("engine", "raises"),
        ("summarizer", "llm"),
        ("summarizer", "offline"),
        ("summarizer", "broken"),
        ("summarizer", "fixed"),
        ("summarizer", "house"),
    ]
    listed = json.loads(runner.invoke(app, ["engines", "--json"]).stdout)
    assert {
        "kind": "summarizer",
        "name": "fixed",
        "package": "ctxpack-testplugin",
        "version": "0.3.1",
        "builtin": False,
        "entry_point": "ctxpack_testplugin.summarizers:Fixed",
        "problem": None,
    } in listed


def test_a_separate_process_finds_the_plugin_through_its_metadata(plugin: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([plugin, str(Path.cwd())])}
    done = subprocess.run(
        [sys.executable, "-m", "ctxpack", "engines", "--json"],
        capture_output=True,
        env=env,
        check=True,
    )
    found = {(p["kind"], p["name"], p["package"]) for p in json.loads(done.stdout)}
    assert ("engine", "prune-only", "ctxpack-testplugin") in found
    assert ("summarizer", "house", "ctxpack-testplugin") in found


def test_an_unknown_name_is_a_usage_error_that_lists_what_is_installed(
    plugin: str, tmp_path: Path
) -> None:
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, ["compress", str(HAIKU), "--engine", "nope", "-o", str(out)])
    assert result.exit_code == 2
    assert (
        "unknown engine 'nope'; installed: builtin, forgets, orphans, prune-only, raises"
        " (see `ctxpack engines`)" in result.stderr
    )
    result = runner.invoke(app, ["summarize", str(HAIKU), "--summarizer", "nope", "-o", str(out)])
    assert result.exit_code == 2
    assert "unknown summarizer 'nope'; installed: llm, offline, broken, fixed, house" in (
        result.stderr
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--offline", "--summarizer", "fixed"], "--offline contradicts --summarizer fixed"),
        (["--summarizer", "llm"], "summarizer 'llm' needs a model (--model), and not --offline"),
    ],
)
def test_contradictory_summarizer_choices(
    plugin: str, tmp_path: Path, args: list[str], message: str
) -> None:
    result = runner.invoke(app, ["compress", str(HAIKU), *args, "-o", str(tmp_path / "o.jsonl")])
    assert result.exit_code == 2
    assert message in result.stderr


def test_a_plugin_is_never_used_unless_named(plugin: str, tmp_path: Path) -> None:
    settings = CompressSettings(force=True)
    with_plugin = run_file(_job(HAIKU, tmp_path / "a.jsonl"), stage=Compress(settings))
    assert with_plugin.report is not None
    assert {s.summary_source for s in with_plugin.report.sessions} == {"offline"}
    counter = TokenCounter()
    direct, _ = compress_transcript(_read(HAIKU), counter=counter, settings=settings)
    written = formats.write(direct, counter=counter, fmt=direct.format)
    assert (tmp_path / "a.jsonl").read_bytes() == written


def _job(source: Path, output: Path) -> FileJob:
    return FileJob(source=str(source), output=str(output), archive=False)


def _read(path: Path) -> Transcript:
    return read_transcript(str(path), fmt=None, options=ReadOptions())


def test_the_plugin_engine_compresses_a_file_as_prune_alone_would(
    plugin: str, tmp_path: Path
) -> None:
    compressed, pruned = tmp_path / "compressed.jsonl", tmp_path / "pruned.jsonl"
    result = runner.invoke(
        app,
        [
            "compress",
            str(HAIKU),
            "--engine",
            "prune-only",
            "--force",
            "-o",
            str(compressed),
            "--report",
            str(tmp_path / "r.json"),
            "--no-archive",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (
        runner.invoke(app, ["prune", str(HAIKU), "-o", str(pruned), "--no-archive"]).exit_code == 0
    )
    assert compressed.read_bytes() == pruned.read_bytes() != HAIKU.read_bytes()
    report = json.loads((tmp_path / "r.json").read_text())
    assert [s["status"] for s in report["sessions"]] == ["pruned"]
    assert report["sessions"][0]["summary_source"] is None


def test_the_engine_and_summarizer_come_from_the_config_file(plugin: str, tmp_path: Path) -> None:
    config = tmp_path / "ctxpack.toml"
    config.write_text('engine = "prune-only"\n')
    out = tmp_path / "out.jsonl"
    args = ["compress", str(HAIKU), "--config", str(config), "--force", "-o", str(out)]
    assert runner.invoke(app, [*args, "--no-archive"]).exit_code == 0
    assert json.loads(runner.invoke(app, ["config", "--config", str(config), "--json"]).stdout)[
        "settings"
    ]["engine"] == {"value": "prune-only", "source": f"file {config}"}


def test_the_plugin_summarizer_writes_the_record_of_summarize(plugin: str, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    settings = CompressSettings(force=True, summarizer="fixed")
    outcome = run_file(_job(HAIKU, out), stage=Summarize(settings))
    assert outcome.report is not None
    (session,) = outcome.report.sessions
    assert session.summary_source == "fixed"
    assert session.summarized is not None
    start, end = session.summarized
    line = FIXED_LINE.format(turns=end - start)
    written = formats.read(out.read_bytes(), path=str(out))
    records = [msg for msg in written.sessions[0].messages if line in str(msg.get("content"))]
    assert len(records) == 1
    # The same through the command line.
    again = tmp_path / "again.jsonl"
    result = runner.invoke(
        app, ["summarize", str(HAIKU), "--summarizer", "fixed", "-o", str(again), "--no-archive"]
    )
    assert result.exit_code == 0, result.output
    assert again.read_bytes() == out.read_bytes()


def test_a_batch_uses_the_named_plugins_in_every_worker(plugin: str, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for source in (HAIKU, CODEX, TAU_BENCH):
        (logs / source.name).write_bytes(source.read_bytes())
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        [
            "compress",
            str(logs),
            "-o",
            str(out),
            "--summarizer",
            "fixed",
            "--force",
            "--jobs",
            "2",
            "--report",
            str(tmp_path / "batch.json"),
            "--no-archive",
        ],
    )
    assert result.exit_code == 0, result.output
    document = json.loads((tmp_path / "batch.json").read_text())
    sources = {
        s["summary_source"]
        for f in document["files"]
        for s in f["sessions"]
        if s["status"] == "compacted"
    }
    assert sources == {"fixed"}
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in logs.iterdir())
    for written in out.iterdir():
        assert b"fixed summary of" in written.read_bytes()


FAULTY = [
    (
        ["--engine", "raises"],
        f"engine 'raises' {PACKAGE} failed (RuntimeError: the strategy"
        " server is unreachable); nothing was written",
    ),
    (
        ["--engine", "orphans"],
        f"engine 'orphans' {PACKAGE} returned a broken session",
    ),
    (
        ["--engine", "forgets"],
        f"engine 'forgets' {PACKAGE} returned a broken session",
    ),
    (
        ["--summarizer", "broken"],
        f"summarizer 'broken' {PACKAGE} failed (ValueError: house model"
        " returned 418); nothing was written",
    ),
]


@pytest.mark.parametrize(
    ("args", "message"), FAULTY, ids=["raises", "orphans", "forgets", "broken"]
)
def test_a_faulty_plugin_is_refused_and_nothing_is_written(
    plugin: str, tmp_path: Path, args: list[str], message: str
) -> None:
    source = tmp_path / HAIKU.name
    source.write_bytes(HAIKU.read_bytes())
    out, archive = tmp_path / "out.jsonl", tmp_path / "archive.db"
    result = runner.invoke(
        app,
        ["compress", str(source), *args, "--force", "-o", str(out), "--archive", str(archive)],
    )
    assert result.exit_code == 1, result.output
    assert message in " ".join(result.stderr.split())
    assert not out.exists()
    assert not archive.exists()
    assert source.read_bytes() == HAIKU.read_bytes()


def test_the_broken_sessions_say_what_is_broken(plugin: str) -> None:
    counter = TokenCounter()
    orphans = Compress(CompressSettings(force=True, engine="orphans"))
    with pytest.raises(PluginError, match=r"no_orphan_tool_pairs: 0 result\(s\) without a call, "):
        orphans(_read(HAIKU), counter=counter)
    forgets = Compress(CompressSettings(force=True, engine="forgets"))
    with pytest.raises(PluginError, match=r"latest_user_message_kept: message #\d+ is not in"):
        forgets(_read(HAIKU), counter=counter)


def test_the_library_refuses_unknown_names_too() -> None:
    with pytest.raises(UsageError, match="unknown engine 'prune-only'; installed: builtin"):
        Compress(CompressSettings(engine="prune-only"))(_read(HAIKU), counter=TokenCounter())


def test_the_built_in_engine_is_the_pipeline_itself() -> None:
    engine = registry.engine("builtin")
    assert type(engine).__name__ == "BuiltinEngine"
    settings = CompressSettings()
    threshold = settings.budget.threshold_tokens
    assert engine.should_compact(tokens=threshold, budget=settings.budget)
    assert not engine.should_compact(tokens=threshold - 1, budget=settings.budget)


def test_the_house_summarizer_of_the_readme_sends_its_prompt(
    plugin: str, llm_server: FakeLLM, tmp_path: Path
) -> None:
    llm_server.script(ok("HOUSE-MARKER"))
    out = tmp_path / "out.jsonl"
    result = runner.invoke(
        app,
        [
            "summarize",
            str(HAIKU),
            "--summarizer",
            "house",
            "--model",
            "house-model",
            "--base-url",
            llm_server.base_url,
            "--api-key",
            "k",
            "-o",
            str(out),
            "--no-archive",
        ],
    )
    assert result.exit_code == 0, result.output
    (received,) = llm_server.received
    system = received.body["messages"][0]["content"]
    assert system == HOUSE_PROMPT.format(headings=", ".join(HEADINGS))
    assert received.body["model"] == "house-model"
    assert b"HOUSE-MARKER" in out.read_bytes()
