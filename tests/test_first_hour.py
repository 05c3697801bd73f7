"""What a new user meets in the first hour, walking the README on real files:
each case is a rough edge that is now an exact, tested behaviour."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import typer.testing
from typer.testing import CliRunner

from ctxpack.cli import app, render
from tests.conftest import FIXTURES, TAU_BENCH

runner = CliRunner()
HAIKU = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"
CODEX = FIXTURES / "codex" / "Trezo-Ai__codex-session.jsonl"
SWE = FIXTURES / "swe-agent" / "SWE-agent__demonstrations__function_calling_simple.traj"
STREAM = next((FIXTURES / "claude-stream-json").glob("*.jsonl"))
COMPRESS = ["compress", "--offline", "--no-archive"]


def _terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner's stdout answers as a terminal would. So does its stderr:
    rich's console made meanwhile draws for a terminal, and goes with the
    test (a process has one stderr, so the console is made once)."""
    monkeypatch.setattr(typer.testing._NamedTextIOWrapper, "isatty", lambda _self: True)
    monkeypatch.setattr(render, "_console", None)


def _said(result: object) -> str:
    return " ".join(str(getattr(result, "stderr", "")).split())


# 1. an input with no messages is an error, and nothing is written


@pytest.mark.parametrize("command", ["compress", "prune", "count"])
def test_an_empty_file_is_an_error_that_names_it(tmp_path: Path, command: str) -> None:
    empty = tmp_path / "same.jsonl"
    empty.write_bytes(b"")
    args = [command, str(empty)] + (
        ["--no-archive", "-o", str(tmp_path / "o")] if command != "count" else []
    )
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert f"error: {empty}: the file is empty: no messages" in _said(result)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same.jsonl"]


@pytest.mark.parametrize(
    ("fixture", "forced", "detected"),
    [(HAIKU, "codex", "claude-code"), (CODEX, "claude-code", "codex")],
)
def test_a_forced_format_that_reads_no_messages_names_the_format(
    tmp_path: Path, fixture: Path, forced: str, detected: str
) -> None:
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, [*COMPRESS, "--from", forced, str(fixture), "-o", str(out)])
    assert result.exit_code == 1, result.output
    assert (
        f"{fixture}: no messages read as --from {forced}; its content looks like {detected}"
        in _said(result)
    )
    assert not out.exists()


# 3. a read-only format is written as OpenAI JSONL, named so, and reported so


def test_a_read_only_input_gets_a_jsonl_name_a_warning_and_status_converted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(SWE, src / "run.traj")
    shutil.copy(HAIKU, src / "s.jsonl")
    result = runner.invoke(app, [*COMPRESS, str(src), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["run.jsonl", "s.jsonl"]
    said = _said(result)
    assert (
        f"warning: {src / 'run.traj'}: swe-agent is read-only; the output is written as openai"
        in said
    )
    assert "run.traj │ 1,790 │ 1,790 │ 100.0% │ converted" in said
    # One file, named by ctxpack beside the input: the same rule.
    _terminal(monkeypatch)
    one = runner.invoke(app, [*COMPRESS, str(src / "run.traj")])
    assert one.exit_code == 0, one.output
    assert (src / "run.ctxpack.jsonl").exists() and not (src / "run.ctxpack.traj").exists()
    assert "swe-agent, 1 session(s): converted" in _said(one)


# 4. a batch says what it skipped and why; --include / --exclude choose


def test_a_batch_counts_skipped_files_by_reason_and_takes_globs(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(HAIKU, src / "a.jsonl")
    shutil.copy(HAIKU, src / "b.jsonl")
    (src / "notes.md").write_text("# notes\n")
    (src / "image.jsonl").write_bytes(bytes(range(256)) * 8)
    result = runner.invoke(app, [*COMPRESS, str(src), "-o", str(tmp_path / "out")])
    assert "2 file(s) skipped: 1 binary, 1 not .jsonl/.json/.traj/.ndjson" in _said(result)
    picked = runner.invoke(
        app, [*COMPRESS, str(src), "-o", str(tmp_path / "o2"), "--exclude", "b.*"]
    )
    assert picked.exit_code == 0, picked.output
    assert [p.name for p in (tmp_path / "o2").iterdir()] == ["a.jsonl"]
    assert "1 --exclude" in _said(picked)
    none = runner.invoke(app, [*COMPRESS, str(src), "--include", "*.md"])
    assert none.exit_code == 2
    assert (
        "no transcripts found in the given paths"
        " (4 file(s) skipped: 3 not --include, 1 not a transcript)" in _said(none)
    )


# 5. stdin into a terminal goes to a file, not over the screen


def test_stdin_with_a_terminal_stdout_writes_stdin_ctxpack_jsonl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _terminal(monkeypatch)
    result = runner.invoke(app, [*COMPRESS, "-"], input=HAIKU.read_bytes())
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert (tmp_path / "stdin.ctxpack.jsonl").read_bytes() == HAIKU.read_bytes()
    assert "written to stdin.ctxpack.jsonl" in _said(result)


# 6. every output path is checked before any work


@pytest.mark.parametrize("which", ["--report", "--archive"])
def test_an_unwritable_report_or_archive_fails_before_the_output_is_written(
    tmp_path: Path, which: str
) -> None:
    (tmp_path / "blocker").write_bytes(b"")
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"previous\n")
    bad = tmp_path / "blocker" / "x"
    args = ["compress", "--offline", "--force", str(HAIKU), "-o", str(out), which, str(bad)]
    if which == "--report":
        args.append("--no-archive")
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert f"{bad}: cannot write: Not a directory" in _said(result)
    assert out.read_bytes() == b"previous\n"


# 7. a bad value in a config file names the file and the key


def test_config_names_the_file_and_key_of_a_bad_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ctxpack.toml").write_text('threshold = "high"\n')
    result = runner.invoke(app, ["config"])
    assert result.exit_code == 2, result.output
    assert str(tmp_path / "ctxpack.toml") in _said(result) and "threshold" in _said(result)


# 8. listings are data: stdout, plain when piped


@pytest.mark.parametrize("args", [["formats"], ["config"]])
def test_listings_go_to_stdout_as_plain_lines(args: list[str]) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "━" not in result.stdout and "\x1b" not in result.stdout
    rows = [line.split()[0] for line in result.stdout.splitlines()]
    assert ("codex" if args == ["formats"] else "threshold") in rows


# 9. count on claude-stream-json says where it starts; --all counts all


def test_count_on_claude_stream_json_names_the_boundary_and_all_counts_everything() -> None:
    result = runner.invoke(app, ["count", "--json", str(STREAM)])
    assert json.loads(result.stdout)["total"]["messages"] == 14
    assert "counting from the last compact boundary; 266 earlier message(s)" in _said(result)
    whole = runner.invoke(app, ["count", "--json", "--all", str(STREAM)])
    assert json.loads(whole.stdout)["total"]["messages"] == 280
    assert "boundary" not in _said(whole)


# 10. eval of two unrelated transcripts is refused


def test_eval_of_unrelated_files_exits_2() -> None:
    result = runner.invoke(app, ["eval", str(CODEX), str(HAIKU)])
    assert result.exit_code == 2
    assert f"{HAIKU} does not look derived from {CODEX}" in _said(result)


# 11. dumping the prompt sends nothing, so it needs no key


def test_dump_prompt_needs_no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("CTXPACK_API_KEY", raising=False)
    result = runner.invoke(
        app, ["summarize", str(HAIKU), "--model", "gpt-4o-mini", "--dump-prompt"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["model"] == "gpt-4o-mini"


# 12. help and messages


def test_help_keeps_example_lines_whole_and_metavars_plain() -> None:
    prune = runner.invoke(app, ["prune", "--help"], terminal_width=80).stdout
    assert "--tail-tokens 2000 --protect-last 6 --dry-run --json" in prune
    count = runner.invoke(app, ["count", "--help"], terminal_width=80).stdout
    assert "Usage: ctxpack count [OPTIONS] {FILE}...\n" in count
    assert "\n  FILE  Transcript files, or - for stdin.  [required]\n" in count
    compress = runner.invoke(app, ["compress", "--help"], terminal_width=80).stdout
    line = (
        "\n  FILE|DIR|-  Transcript files, directories, or - for stdin; with --runner ray,\n"
        "              also URIs (s3://, gs://, ...).  [required]\n"
    )
    assert line in compress
    # Arguments are named by their metavar alone, without typer's Python type.
    for command in ("count", "compress", "eval", "show", "prune", "restore"):
        shown = runner.invoke(app, [command, "--help"], terminal_width=80).stdout
        arguments = shown.split("\nArguments:\n", 1)[1].split("\nOptions:\n", 1)[0]
        names = [line.split("  ")[1] for line in arguments.splitlines() if line[2:3].isupper()]
        assert names and all(re.fullmatch(r"[A-Z|-]+", name) for name in names), (command, names)
    assert "-n, --limit N " in runner.invoke(app, ["log", "--help"]).stdout


def test_prune_that_changes_nothing_says_why(tmp_path: Path) -> None:
    why = (
        "nothing to prune in 200 of 200 sessions: every message is in the protected head or"
        " tail (a tail budget of 20,000 tokens and at least the last 20 messages;"
        " --tail-tokens and --protect-last set them)"
    )
    dry = runner.invoke(app, ["prune", "--dry-run", str(TAU_BENCH)])
    assert dry.exit_code == 0, dry.output
    assert dry.stderr.splitlines()[-2:] == [
        "plan: 0 messages changed (0 deduplicated, 0 outputs summarized, 0 argument sets"
        " shrunk); tokens 717,600 → 717,600, saved 0 (0.0%)",
        why,
    ]
    out = tmp_path / "tau.json"
    written = runner.invoke(app, ["prune", "--no-archive", str(TAU_BENCH), "-o", str(out)])
    assert written.exit_code == 0, written.output
    assert written.stderr.splitlines()[-1] == why
    assert out.read_bytes() == TAU_BENCH.read_bytes()
    changed = runner.invoke(app, ["prune", "--dry-run", "--tail-tokens", "500", str(TAU_BENCH)])
    assert "nothing to prune" not in changed.stderr


def test_a_binary_file_is_called_binary(tmp_path: Path) -> None:
    blob = tmp_path / "photo.jsonl"
    blob.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    result = runner.invoke(app, ["count", str(blob)])
    assert result.exit_code == 1
    assert f"{blob}: a binary file, not text: not a transcript" in _said(result)


def test_batch_rows_shorten_long_names_in_the_middle(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    name = "a-very-long-transcript-name-from-a-real-agent-run-2025-12-22.jsonl"
    shutil.copy(HAIKU, src / name)
    shutil.copy(HAIKU, src / "b.jsonl")
    result = runner.invoke(app, [*COMPRESS, str(src), "-o", str(tmp_path / "o")], terminal_width=80)
    rows = [line for line in result.stderr.splitlines() if "a-very" in line]
    assert len(rows) == 1 and "…" in rows[0] and rows[0].split()[0].endswith("22.jsonl")


def test_one_tool_action_reads_in_the_singular() -> None:
    from ctxpack.summarize.offline.scan import scan
    from ctxpack.summarize.offline.sections import PROGRESS_RE, build
    from tests.builders import call, result

    middle = [
        {"role": "user", "content": "List the files."},
        call("c1", "bash", {"command": "ls"}),
        result("c1", "a.py"),
    ]
    snapshot = [
        i.text
        for i in build(scan(middle), date=None, focus=None, start=1)["Historical Task Snapshot"]
    ]
    [progress] = [line for line in snapshot if PROGRESS_RE.match(line)]
    assert progress.startswith("- 1 tool action was recorded (0 failed); the last: Ran `ls`")
