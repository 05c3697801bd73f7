"""Settings precedence: flag > CTXPACK_* env > config file > default, as every
command resolves it (shown here by `ctxpack config --json`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ctxpack import settings as config
from ctxpack.cli import app
from tests.conftest import TAU_BENCH
from tests.llm_server import (
    FakeLLM,
    llm_server_fixture,  # noqa: F401
    ok,
)

runner = CliRunner()
# No CTXPACK_* setting from the developer's environment leaks into a test.
NO_ENV: dict[str, str | None] = {s.env: None for s in config.SETTINGS}


class Shown:
    """What `ctxpack config --json` printed."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.config_file: str | None = document["config_file"]
        self.values = {k: v["value"] for k, v in document["settings"].items()}
        self.sources = {k: v["source"] for k, v in document["settings"].items()}

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


def _config(cwd: Path, *args: str, env: dict[str, str] | None = None) -> Shown:
    result = _invoke(cwd, "config", "--json", *args, env=env)
    assert result.exit_code == 0, result.output
    return Shown(json.loads(result.stdout))


def _invoke(cwd: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd)
        return runner.invoke(app, list(args), env={**NO_ENV, **(env or {})})


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_when_nothing_is_given(tmp_path: Path) -> None:
    resolved = _config(tmp_path)
    assert resolved["context_length"] == 200_000
    assert resolved["threshold"] == 0.5
    assert resolved.sources["threshold"] == "default"
    assert resolved.config_file is None


def test_file_then_env_then_flag(tmp_path: Path) -> None:
    _write(tmp_path / "ctxpack.toml", "threshold = 0.6\nprotect-last = 12\nmodel = 'qwen2.5'\n")
    from_file = _config(tmp_path)
    assert from_file["threshold"] == 0.6
    assert from_file["protect_last"] == 12
    assert from_file.sources["threshold"].startswith("file ")
    from_env = _config(tmp_path, env={"CTXPACK_THRESHOLD": "0.7"})
    assert from_env["threshold"] == 0.7
    assert from_env.sources["threshold"] == "env CTXPACK_THRESHOLD"
    from_flag = _config(tmp_path, "--threshold", "0.8", env={"CTXPACK_THRESHOLD": "0.7"})
    assert from_flag["threshold"] == 0.8
    assert from_flag.sources["threshold"] == "flag"
    assert from_flag["protect_last"] == 12


def test_pyproject_tool_table(tmp_path: Path) -> None:
    _write(
        tmp_path / "pyproject.toml", "[project]\nname='x'\n[tool.ctxpack]\ncontext_length = 32000\n"
    )
    resolved = _config(tmp_path)
    assert resolved["context_length"] == 32_000
    assert "[tool.ctxpack]" in (resolved.config_file or "")


@pytest.mark.parametrize(
    ("text", "context_length"),
    [
        # A table spelled with escapes is still ours.
        ('[tool."\\u0063txpack"]\ncontext_length = 32000\n', 32_000),
        ("[tool]\nctxpack = { context_length = 48000 }\n", 48_000),
        # Another project's file, even one no TOML parser accepts, is not read as ours.
        ("[project]\nname = 'x'\n[tool.black]\nline-length = 99\n", 200_000),
        ("[project\nname = = broken\n", 200_000),
    ],
)
def test_pyproject_is_ours_only_when_it_names_us(
    tmp_path: Path, text: str, context_length: int
) -> None:
    _write(tmp_path / "pyproject.toml", text)
    resolved = _config(tmp_path)
    assert resolved["context_length"] == context_length
    assert (resolved.config_file is not None) == (context_length != 200_000)


def test_broken_pyproject_that_names_us_is_an_error(tmp_path: Path) -> None:
    _write(tmp_path / "pyproject.toml", "[tool.ctxpack\ncontext_length = 1\n")
    result = _invoke(tmp_path, "config", "--json")
    assert result.exit_code == 2
    assert "cannot read config" in result.output


def test_explicit_config_file_wins_over_cwd(tmp_path: Path) -> None:
    _write(tmp_path / "ctxpack.toml", "threshold = 0.6\n")
    other = _write(tmp_path / "other.toml", "threshold = 0.9\n")
    assert _config(tmp_path, "--config", str(other))["threshold"] == 0.9


def test_model_implies_context_length_unless_given(tmp_path: Path) -> None:
    assert _config(tmp_path, "--model", "gpt-4o-mini")["context_length"] == 128_000
    assert _config(tmp_path, "--model", "ollama/qwen2.5:7b")["context_length"] == 32_768
    explicit = _config(tmp_path, "--model", "gpt-4o", "--context-length", "50000")
    assert explicit["context_length"] == 50_000
    unknown = _config(tmp_path, "--model", "my-local-model")
    assert unknown["context_length"] == 200_000


def test_bad_values_are_usage_errors(tmp_path: Path) -> None:
    bad_env = _invoke(tmp_path, "config", env={"CTXPACK_PROTECT_LAST": "many"})
    assert bad_env.exit_code == 2
    assert "CTXPACK_PROTECT_LAST" in bad_env.stderr
    _write(tmp_path / "ctxpack.toml", "thresold = 0.6\n")
    unknown = _invoke(tmp_path, "config")
    assert unknown.exit_code == 2
    assert "unknown setting" in unknown.stderr
    missing = _invoke(tmp_path, "config", "--config", str(tmp_path / "missing.toml"))
    assert missing.exit_code == 2
    assert "not found" in missing.stderr


def test_secrets_are_masked_for_display() -> None:
    assert config.display_value(config.BY_NAME["api_key"], "sk-abcdefghijklmnop") == "sk-…op"


@pytest.mark.parametrize(
    "flags",
    [
        ["--threshold", "1.5"],
        ["--context-length", "0"],
        ["--target-ratio", "0.0"],
        ["--tail-tokens", "-5"],
        ["--timeout", "0"],
        ["--max-retries", "-1"],
        ["--summarizer-context", "999"],
    ],
)
def test_out_of_range_values(flags: list[str], tmp_path: Path) -> None:
    result = _invoke(tmp_path, "config", *flags)
    assert result.exit_code == 2
    name = flags[0].removeprefix("--").replace("-", "_")
    assert f"{name} must be" in result.stderr


def test_a_bad_value_in_the_file_names_the_file(tmp_path: Path) -> None:
    toml = _write(tmp_path / "ctxpack.toml", "protect_first = 1.5\n")
    result = _invoke(tmp_path, "align", str(TAU_BENCH))
    assert result.exit_code == 2
    assert f"file {toml}: protect_first must be int" in " ".join(result.stderr.split())


def test_eval_counts_with_the_encoding_of_the_environment(tmp_path: Path) -> None:
    """count and eval read CTXPACK_ENCODING the same way: the same total."""
    env = {"CTXPACK_ENCODING": "cl100k_base"}
    counted = _invoke(tmp_path, "count", "--json", str(TAU_BENCH), env=env)
    assert counted.exit_code == 0, counted.output
    evaluated = _invoke(tmp_path, "eval", "--json", str(TAU_BENCH), str(TAU_BENCH), env=env)
    assert evaluated.exit_code == 0, evaluated.output
    total = json.loads(counted.stdout)["total"]["tokens"]
    assert json.loads(evaluated.stdout)["total"]["tokens_before"] == total
    default = _invoke(tmp_path, "count", "--json", str(TAU_BENCH))
    assert json.loads(default.stdout)["total"]["tokens"] != total


def test_config_and_compress_take_the_model_from_the_same_place(
    tmp_path: Path, llm_server: FakeLLM
) -> None:
    env = {"CTXPACK_MODEL": "env-model", "CTXPACK_BASE_URL": llm_server.base_url}
    shown = _config(tmp_path, env=env)
    assert (shown["model"], shown.sources["model"]) == ("env-model", "env CTXPACK_MODEL")
    assert shown.sources["base_url"] == "env CTXPACK_BASE_URL"
    llm_server.responder = lambda _body: ok("from the env model")
    out = tmp_path / "out.jsonl"
    args = ["compress", "--force", "--no-cache", "--no-archive", str(TAU_BENCH), "-o", str(out)]
    result = _invoke(tmp_path, *args, env=env)
    assert result.exit_code == 0, result.output
    assert llm_server.received
    assert {r.body["model"] for r in llm_server.received} == {"env-model"}
    flagged = _config(tmp_path, "--model", "flag-model", env=env)
    assert (flagged["model"], flagged.sources["model"]) == ("flag-model", "flag")


def test_flags_beat_env_for_the_summarizer(tmp_path: Path) -> None:
    env = {"CTXPACK_MODEL": "a", "CTXPACK_BASE_URL": "http://a:1/v1", "CTXPACK_API_KEY": "ka"}
    flags = ["--model", "b", "--base-url", "http://b:2/v1", "--api-key", "kb-123456789"]
    shown = _config(tmp_path, *flags, "--timeout", "5", "--max-retries", "0", env=env)
    assert (shown["model"], shown["base_url"], shown["api_key"]) == ("b", "http://b:2/v1", "kb-…89")
    assert (shown["timeout"], shown["max_retries"]) == (5.0, 0)
    assert {shown.sources[k] for k in ("model", "base_url", "api_key")} == {"flag"}


def test_help_shows_the_defaults_of_the_one_table() -> None:
    result = runner.invoke(app, ["prune", "--help"], env=NO_ENV, terminal_width=200)
    text = " ".join(result.stdout.split())
    assert "Messages always kept at the end [20]." in text
    assert "env var: CTXPACK_PROTECT_LAST" in text
