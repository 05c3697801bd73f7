"""Settings precedence: flag > CTXPACK_* env > config file > default."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxpack import settings as config
from ctxpack.errors import UsageError


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_when_nothing_is_given(tmp_path: Path) -> None:
    resolved = config.resolve({}, env={}, cwd=tmp_path)
    assert resolved["context_length"] == 200_000
    assert resolved["threshold"] == 0.5
    assert resolved.sources["threshold"] == "default"
    assert resolved.config_file is None


def test_file_then_env_then_flag(tmp_path: Path) -> None:
    _write(tmp_path / "ctxpack.toml", "threshold = 0.6\nprotect-last = 12\nmodel = 'qwen2.5'\n")
    from_file = config.resolve({}, env={}, cwd=tmp_path)
    assert from_file["threshold"] == 0.6
    assert from_file["protect_last"] == 12
    assert from_file.sources["threshold"].startswith("file ")
    from_env = config.resolve({}, env={"CTXPACK_THRESHOLD": "0.7"}, cwd=tmp_path)
    assert from_env["threshold"] == 0.7
    assert from_env.sources["threshold"] == "env CTXPACK_THRESHOLD"
    from_flag = config.resolve({"threshold": 0.8}, env={"CTXPACK_THRESHOLD": "0.7"}, cwd=tmp_path)
    assert from_flag["threshold"] == 0.8
    assert from_flag.sources["threshold"] == "flag"
    assert from_flag["protect_last"] == 12


def test_pyproject_tool_table(tmp_path: Path) -> None:
    _write(
        tmp_path / "pyproject.toml", "[project]\nname='x'\n[tool.ctxpack]\ncontext_length = 32000\n"
    )
    resolved = config.resolve({}, env={}, cwd=tmp_path)
    assert resolved["context_length"] == 32_000
    assert "[tool.ctxpack]" in (resolved.config_file or "")


def test_explicit_config_file_wins_over_cwd(tmp_path: Path) -> None:
    _write(tmp_path / "ctxpack.toml", "threshold = 0.6\n")
    other = _write(tmp_path / "other.toml", "threshold = 0.9\n")
    assert config.resolve({}, env={}, config=str(other), cwd=tmp_path)["threshold"] == 0.9


def test_model_implies_context_length_unless_given(tmp_path: Path) -> None:
    assert (
        config.resolve({"model": "gpt-4o-mini"}, env={}, cwd=tmp_path)["context_length"] == 128_000
    )
    assert (
        config.resolve({"model": "ollama/qwen2.5:7b"}, env={}, cwd=tmp_path)["context_length"]
        == 32_768
    )
    explicit = config.resolve({"model": "gpt-4o", "context_length": 50_000}, env={}, cwd=tmp_path)
    assert explicit["context_length"] == 50_000
    unknown = config.resolve({"model": "my-local-model"}, env={}, cwd=tmp_path)
    assert unknown["context_length"] == 200_000


def test_bad_values_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="CTXPACK_PROTECT_LAST"):
        config.resolve({}, env={"CTXPACK_PROTECT_LAST": "many"}, cwd=tmp_path)
    _write(tmp_path / "ctxpack.toml", "thresold = 0.6\n")
    with pytest.raises(UsageError, match="unknown setting"):
        config.resolve({}, env={}, cwd=tmp_path)
    with pytest.raises(UsageError, match="not found"):
        config.resolve({}, env={}, config=str(tmp_path / "missing.toml"), cwd=tmp_path)


def test_secrets_are_masked_for_display() -> None:
    assert config.display_value(config.BY_NAME["api_key"], "sk-abcdefghijklmnop") == "sk-…op"


@pytest.mark.parametrize(
    "flags", [{"threshold": 1.5}, {"context_length": 0}, {"target_ratio": 0.0}, {"tail_tokens": -5}]
)
def test_out_of_range_budget_values(flags: dict[str, float], tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="must be"):
        config.budget_from(config.resolve(flags, env={}, cwd=tmp_path))
