"""Every user-facing setting, its default and its valid values, defined once.

A value comes from, highest first: command-line flag, CTXPACK_* environment
variable, config file (`--config FILE`, else ./ctxpack.toml, else
[tool.ctxpack] in ./pyproject.toml), built-in default. The command line
collects the given values and where each came from; `resolve` converts and
checks them all the same way, whatever their source.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxpack.errors import UsageError

if TYPE_CHECKING:
    from ctxpack.align.budget import Budget
    from ctxpack.summarize.llm.settings import LLMSettings

DEFAULT_CONTEXT_LENGTH = 200_000
DEFAULT_THRESHOLD = 0.50
DEFAULT_TARGET_RATIO = 0.20
DEFAULT_PROTECT_FIRST = 3
DEFAULT_PROTECT_LAST = 20
DEFAULT_ENCODING = "o200k_base"
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_RETRIES = 2
DEFAULT_SUMMARIZER_CONTEXT = 32_000
# A session smaller than the tail budget (a forced run) keeps this share of its
# own tokens as its tail: the 200k-context default would keep it all.
DEFAULT_FORCED_TAIL_RATIO = 0.25
# The compaction engine used unless another is named; the summarizers built in.
BUILTIN_ENGINE = "builtin"
LLM_SUMMARIZER = "llm"
OFFLINE_SUMMARIZER = "offline"
RUNNERS = ("local", "ray")


@dataclass(frozen=True)
class Setting:
    name: str
    kind: type
    default: Any
    help: str
    # The values accepted, and how to say so when one is not.
    valid: Callable[[Any], bool] = lambda _: True
    wanted: str = ""
    secret: bool = False

    @property
    def env(self) -> str:
        return "CTXPACK_" + self.name.upper()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


def _positive(value: Any) -> bool:
    return bool(value > 0)


def _not_negative(value: Any) -> bool:
    return bool(value >= 0)


def _share(value: Any) -> bool:
    return bool(0 < value < 1)


def _fit(value: Any) -> bool:
    from ctxpack.fit.target import FitTarget

    return FitTarget.parse(str(value)) is not None


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "context_length",
        int,
        DEFAULT_CONTEXT_LENGTH,
        "Model context window in tokens",
        _positive,
        "a positive number of tokens",
    ),
    Setting(
        "threshold",
        float,
        DEFAULT_THRESHOLD,
        "Compact when tokens reach this share of the context",
        lambda v: 0 < v <= 1,
        "between 0 and 1",
    ),
    Setting(
        "target_ratio",
        float,
        DEFAULT_TARGET_RATIO,
        "Tail kept verbatim, as a share of the threshold",
        _share,
        "between 0 and 1",
    ),
    Setting(
        "protect_first",
        int,
        DEFAULT_PROTECT_FIRST,
        "Messages kept after the system prompt",
        _not_negative,
        "0 or more",
    ),
    Setting(
        "protect_last",
        int,
        DEFAULT_PROTECT_LAST,
        "Messages always kept at the end",
        _not_negative,
        "0 or more",
    ),
    Setting(
        "tail_tokens",
        int,
        None,
        "Tail budget in tokens (overrides the ratio)",
        _not_negative,
        "0 or more",
    ),
    Setting(
        "min_savings", int, 0, "Skip pruning that frees fewer tokens", _not_negative, "0 or more"
    ),
    Setting("encoding", str, DEFAULT_ENCODING, "tiktoken encoding: o200k_base or cl100k_base"),
    Setting("model", str, None, "Summarizer model; none configured: offline"),
    Setting("base_url", str, None, "OpenAI-compatible endpoint (Ollama, vLLM, ...)"),
    Setting("api_key", str, None, "Key for --base-url", secret=True),
    Setting("timeout", float, DEFAULT_TIMEOUT, "Seconds per LLM request", _positive, "positive"),
    Setting("max_retries", int, DEFAULT_MAX_RETRIES, "LLM retries", _not_negative, "0 or more"),
    Setting(
        "summarizer_context",
        int,
        DEFAULT_SUMMARIZER_CONTEXT,
        "Summarizer context in tokens; larger middles are chunked",
        lambda v: v >= 1000,
        "at least 1000",
    ),
    Setting(
        "fit",
        str,
        None,
        "Whole output at or under this budget: N tokens, or P% of the input's tokens",
        _fit,
        "a positive number of tokens or a percentage from 1% to 99%",
    ),
    Setting(
        "fit_best_effort",
        bool,
        False,
        "With --fit: when the budget cannot be reached, write the smallest output instead"
        " of failing",
    ),
    Setting("focus", str, None, "Topic the summary should favour"),
    Setting("jobs", int, 1, "Worker processes for batches"),
    Setting(
        "engine",
        str,
        BUILTIN_ENGINE,
        "Compaction engine: builtin, or an installed plugin's name (ctxpack engines)",
    ),
    Setting(
        "summarizer",
        str,
        None,
        f"Summarizer: {LLM_SUMMARIZER}, {OFFLINE_SUMMARIZER}, or an installed plugin's name;"
        f" unset: {LLM_SUMMARIZER} when a model is configured, else {OFFLINE_SUMMARIZER}",
    ),
    Setting(
        "no_system_note",
        bool,
        False,
        "Leave the system message byte for byte as it was: no compaction note on it, so a"
        " provider's prompt cache keeps serving it",
    ),
    Setting(
        "runner",
        str,
        "local",
        "Where a batch runs: local (--jobs processes) or ray (a Ray cluster; pip install"
        " 'ctxpack[ray]')",
        lambda v: v in RUNNERS,
        " or ".join(RUNNERS),
    ),
    Setting(
        "ray_address",
        str,
        None,
        "Ray cluster for --runner ray: ray://HOST:10001 or auto; unset: a Ray on this machine",
    ),
    Setting(
        "recall",
        bool,
        False,
        "Placeholders and the record say how to read refs back with the MCP recall tool"
        " (ctxpack mcp)",
    ),
)
BY_NAME = {s.name: s for s in SETTINGS}
# The settings that make up a Budget, and those of the LLM summarizer.
BUDGET_SETTINGS = (
    "context_length",
    "threshold",
    "target_ratio",
    "tail_tokens",
    "protect_first",
    "protect_last",
)
LLM_SETTINGS = ("model", "base_url", "api_key", "timeout", "max_retries", "summarizer_context")
ENGINE_SETTINGS = ("engine", "summarizer", "no_system_note")

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
    """The config file in effect and its settings (names with underscores)."""
    if explicit is not None:
        path = Path(explicit)
        if not path.is_file():
            raise UsageError(f"config file not found: {explicit}")
        name = str(path)
        values = _load_toml(
            path, table=("tool", "ctxpack") if path.name == "pyproject.toml" else ()
        )
    elif (cwd / "ctxpack.toml").is_file():
        name = str(cwd / "ctxpack.toml")
        values = _load_toml(cwd / "ctxpack.toml", table=())
    else:
        pyproject = cwd / "pyproject.toml"
        values = _load_toml(pyproject, table=("tool", "ctxpack")) if _names_us(pyproject) else {}
        if not values:
            return None, {}
        name = f"{pyproject} [tool.ctxpack]"
    unknown = sorted(set(values) - BY_NAME.keys())
    if unknown:
        raise UsageError(f"{name}: unknown setting(s): {', '.join(unknown)}")
    return name, values


def _names_us(pyproject: Path) -> bool:
    """Whether a project's pyproject.toml can hold a [tool.ctxpack] table: a
    key spells ctxpack in its bytes unless written with escapes. Any other
    project's file is not parsed, so that a run beside it costs no TOML parse
    and a file that only the project's own tools read cannot stop ours."""
    try:
        raw = pyproject.read_bytes()
    except OSError:
        return pyproject.exists()  # there but unreadable: the loader says why
    return b"ctxpack" in raw or b"\\u" in raw or b"\\U" in raw


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


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _boolean(value: Any) -> bool:
    """A switch from TOML (true/false) or the environment (1/0, true/false, yes/no, on/off)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise ValueError(value)


def _convert(setting: Setting, value: Any, source: str) -> Any:
    try:
        converted = _boolean(value) if setting.kind is bool else setting.kind(value)
    except (TypeError, ValueError):
        raise UsageError(
            f"{source}: {setting.name} must be {setting.kind.__name__}, got {value!r}"
        ) from None
    if not setting.valid(converted):
        raise UsageError(f"{setting.name} must be {setting.wanted} ({source})")
    return converted


def resolve(given: Mapping[str, tuple[Any, str]], *, config_file: str | None) -> Resolved:
    """Every setting's value and source, from (value, source) for those given."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for setting in SETTINGS:
        if setting.name in given:
            value, source = given[setting.name]
            values[setting.name] = _convert(setting, value, source)
            sources[setting.name] = source
        else:
            values[setting.name] = setting.default
            sources[setting.name] = "default"
    if sources["context_length"] == "default" and values["model"]:
        implied = known_context(values["model"])
        if implied is not None:
            values["context_length"] = implied
            sources["context_length"] = f"implied by model {values['model']}"
    return Resolved(values=values, sources=sources, config_file=config_file)


def budget_from(resolved: Resolved) -> Budget:
    from ctxpack.align.budget import Budget

    return Budget(**{name: resolved[name] for name in BUDGET_SETTINGS})


def llm_from(
    resolved: Resolved, *, offline: bool, use_cache: bool, env: Mapping[str, str]
) -> LLMSettings | None:
    """The LLM summarizer's settings; None for the offline summarizer."""
    from ctxpack.summarize.llm.settings import resolve_llm_settings

    if offline:
        return None
    values = {name: resolved[name] for name in LLM_SETTINGS}
    return resolve_llm_settings(**values, use_cache=use_cache, env=env)


def display_value(setting: Setting, value: Any) -> str:
    if value is None:
        return "—"
    if setting.secret:
        text = str(value)
        return text[:3] + "…" + text[-2:] if len(text) > 8 else "***"
    return str(value)
