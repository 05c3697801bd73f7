"""Effective settings and where each value came from.

Precedence, highest first: command-line flag, CTXPACK_* environment variable,
config file (`--config FILE`, else ./ctxpack.toml, else [tool.ctxpack] in
./pyproject.toml), built-in default.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxpack.align import budget
from ctxpack.errors import UsageError


@dataclass(frozen=True)
class Setting:
    name: str
    kind: type
    default: Any
    help: str
    secret: bool = False

    @property
    def env(self) -> str:
        return "CTXPACK_" + self.name.upper()


SETTINGS: tuple[Setting, ...] = (
    Setting("context_length", int, budget.DEFAULT_CONTEXT_LENGTH, "model context window, tokens"),
    Setting("threshold", float, budget.DEFAULT_THRESHOLD, "compact at this share of the context"),
    Setting("target_ratio", float, budget.DEFAULT_TARGET_RATIO, "tail budget share (0.10-0.80)"),
    Setting("protect_first", int, budget.DEFAULT_PROTECT_FIRST, "messages kept after system"),
    Setting("protect_last", int, budget.DEFAULT_PROTECT_LAST, "messages always kept at the end"),
    Setting("tail_tokens", int, None, "tail budget in tokens (overrides the ratio)"),
    Setting("min_savings", int, 0, "skip pruning that frees fewer tokens"),
    Setting("encoding", str, "o200k_base", "tiktoken encoding"),
    Setting("model", str, None, "summarizer model (none: offline summarizer)"),
    Setting("base_url", str, None, "OpenAI-compatible endpoint"),
    Setting("api_key", str, None, "API key for the endpoint", secret=True),
    Setting("timeout", float, 120.0, "seconds per LLM request"),
    Setting("max_retries", int, 2, "LLM retries on 429/5xx"),
    Setting("summarizer_context", int, 32_000, "summarizer model context, tokens"),
    Setting("focus", str, None, "topic the summary should favour"),
    Setting("jobs", int, 1, "worker processes for batches"),
)
BY_NAME = {s.name: s for s in SETTINGS}

# Context windows of common models, so --model can imply --context-length.
KNOWN_CONTEXT: dict[str, int] = {
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-5": 400_000,
    "gpt-5-mini": 400_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-opus-4": 200_000,
    "claude-haiku-4": 200_000,
    "llama3.1": 128_000,
    "llama3.2": 128_000,
    "qwen2.5": 32_768,
    "qwen3": 40_960,
    "mistral": 32_768,
    "deepseek-chat": 128_000,
}


def known_context(model: str) -> int | None:
    """The longest known model name that prefixes `model` (provider prefixes ignored)."""
    name = model.rsplit("/", 1)[-1].lower()
    matches = [
        k
        for k in KNOWN_CONTEXT
        if name == k or name.startswith(k + "-") or name.startswith(k + ":")
    ]
    return KNOWN_CONTEXT[max(matches, key=len)] if matches else None


@dataclass(frozen=True)
class Resolved:
    values: dict[str, Any]
    sources: dict[str, str]
    config_file: str | None

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


def find_config_file(explicit: str | None, *, cwd: Path) -> tuple[str | None, dict[str, Any]]:
    if explicit is not None:
        path = Path(explicit)
        if not path.is_file():
            raise UsageError(f"config file not found: {explicit}")
        return str(path), _load_toml(
            path, table=("tool", "ctxpack") if path.name == "pyproject.toml" else ()
        )
    own = cwd / "ctxpack.toml"
    if own.is_file():
        return str(own), _load_toml(own, table=())
    pyproject = cwd / "pyproject.toml"
    if pyproject.is_file():
        values = _load_toml(pyproject, table=("tool", "ctxpack"))
        if values:
            return f"{pyproject} [tool.ctxpack]", values
    return None, {}


def _load_toml(path: Path, *, table: tuple[str, ...]) -> dict[str, Any]:
    import tomllib

    try:
        data: Any = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"{path}: cannot read config: {exc}") from None
    for key in table:
        data = data.get(key, {}) if isinstance(data, dict) else {}
    if not isinstance(data, dict):
        raise UsageError(f"{path}: config must be a table")
    return {k.replace("-", "_"): v for k, v in data.items()}


def _coerce(setting: Setting, value: Any, origin: str) -> Any:
    if value is None:
        return None
    try:
        if setting.kind is bool and isinstance(value, str):
            return value.strip().lower() in ("1", "true", "yes", "on")
        if setting.kind is int and isinstance(value, float):
            raise ValueError("not an integer")
        return setting.kind(value)
    except (TypeError, ValueError):
        raise UsageError(
            f"{origin}: {setting.name} must be {setting.kind.__name__}, got {value!r}"
        ) from None


def resolve(
    cli: Mapping[str, Any],
    *,
    env: Mapping[str, str] | None = None,
    config: str | None = None,
    cwd: Path | None = None,
) -> Resolved:
    """Merge flags (None = not given), environment, file and defaults."""
    env = os.environ if env is None else env
    file_name, file_values = find_config_file(config, cwd=cwd or Path.cwd())
    unknown = sorted(set(file_values) - BY_NAME.keys())
    if unknown:
        raise UsageError(f"{file_name}: unknown setting(s): {', '.join(unknown)}")
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for setting in SETTINGS:
        if cli.get(setting.name) is not None:
            values[setting.name] = _coerce(setting, cli[setting.name], "flag")
            sources[setting.name] = "flag"
        elif env.get(setting.env):
            values[setting.name] = _coerce(setting, env[setting.env], setting.env)
            sources[setting.name] = f"env {setting.env}"
        elif setting.name in file_values:
            values[setting.name] = _coerce(setting, file_values[setting.name], str(file_name))
            sources[setting.name] = f"file {file_name}"
        else:
            values[setting.name] = setting.default
            sources[setting.name] = "default"
    if sources["context_length"] == "default" and values["model"]:
        implied = known_context(values["model"])
        if implied is not None:
            values["context_length"] = implied
            sources["context_length"] = f"implied by model {values['model']}"
    return Resolved(values=values, sources=sources, config_file=file_name)


def budget_from(resolved: Resolved) -> budget.Budget:
    checks = (
        ("context_length", resolved["context_length"] > 0, "a positive number of tokens"),
        ("threshold", 0 < resolved["threshold"] <= 1, "between 0 and 1"),
        ("target_ratio", 0 < resolved["target_ratio"] < 1, "between 0 and 1"),
        ("protect_first", resolved["protect_first"] >= 0, "0 or more"),
        ("protect_last", resolved["protect_last"] >= 0, "0 or more"),
        (
            "tail_tokens",
            resolved["tail_tokens"] is None or resolved["tail_tokens"] >= 0,
            "0 or more",
        ),
    )
    for name, ok, wanted in checks:
        if not ok:
            raise UsageError(f"{name} must be {wanted} ({resolved.sources[name]})")
    return budget.Budget(
        context_length=resolved["context_length"],
        threshold=resolved["threshold"],
        target_ratio=resolved["target_ratio"],
        protect_first=resolved["protect_first"],
        protect_last=resolved["protect_last"],
        tail_tokens=resolved["tail_tokens"],
    )


def display_value(setting: Setting, value: Any) -> str:
    if value is None:
        return "—"
    if setting.secret:
        text = str(value)
        return text[:3] + "…" + text[-2:] if len(text) > 8 else "***"
    return str(value)
