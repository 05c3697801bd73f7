"""Options whose values may also come from the environment or a config file.

They default to None ("not given") so `config.resolve` can apply the
precedence flag > env > file > default.
"""

from __future__ import annotations

import os
from typing import Annotated, Any

import typer

from ctxpack import settings as config
from ctxpack.align.budget import Budget
from ctxpack.summarize.llm.settings import LLMSettings, resolve_llm_settings

ContextLength = Annotated[
    int | None, typer.Option("--context-length", help="Model context window in tokens [200000].")
]
Threshold = Annotated[
    float | None,
    typer.Option("--threshold", help="Compact when tokens reach this share of the context [0.5]."),
]
TargetRatio = Annotated[
    float | None,
    typer.Option("--target-ratio", help="Tail kept verbatim, as a share of the threshold [0.2]."),
]
TailTokens = Annotated[
    int | None, typer.Option("--tail-tokens", help="Tail budget in tokens (overrides the ratio).")
]
ProtectFirst = Annotated[
    int | None, typer.Option("--protect-first", help="Messages kept after the system prompt [3].")
]
ProtectLast = Annotated[
    int | None, typer.Option("--protect-last", help="Messages always kept at the end [20].")
]
MinSavings = Annotated[
    int | None, typer.Option("--min-savings", help="Skip pruning that frees fewer tokens [0].")
]
Encoding = Annotated[
    str | None, typer.Option("--encoding", help="tiktoken encoding: o200k_base or cl100k_base.")
]
Model = Annotated[
    str | None, typer.Option("--model", help="Summarizer model; none configured: offline.")
]
BaseUrl = Annotated[
    str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint (Ollama, vLLM, ...).")
]
ApiKey = Annotated[str | None, typer.Option("--api-key", help="Key for --base-url.")]
Timeout = Annotated[float | None, typer.Option("--timeout", help="Seconds per LLM request [120].")]
MaxRetries = Annotated[int | None, typer.Option("--max-retries", help="LLM retries [2].")]
SummarizerContext = Annotated[
    int | None,
    typer.Option(
        "--summarizer-context", help="Summarizer context in tokens; larger middles are chunked."
    ),
]
Focus = Annotated[str | None, typer.Option("--focus", help="Topic the summary should favour.")]
Archive = Annotated[
    str | None,
    typer.Option(
        "--archive",
        help="Archive file (default $CTXPACK_ARCHIVE or ~/.local/share/ctxpack).",
        envvar=None,
    ),
]
NoArchive = Annotated[
    bool, typer.Option("--no-archive", help="Do not keep the original in the archive (no restore).")
]
ConfigFile = Annotated[
    str | None,
    typer.Option("--config", help="TOML config file (default ./ctxpack.toml or [tool.ctxpack])."),
]


def resolve(flags: dict[str, Any], config_file: str | None) -> config.Resolved:
    return config.resolve(flags, env=os.environ, config=config_file)


def budget(resolved: config.Resolved) -> Budget:
    return config.budget_from(resolved)


def llm_settings(
    resolved: config.Resolved, *, offline: bool, use_cache: bool
) -> LLMSettings | None:
    if offline:
        return None
    return resolve_llm_settings(
        model=resolved["model"],
        base_url=resolved["base_url"],
        api_key=resolved["api_key"],
        timeout=resolved["timeout"],
        max_retries=resolved["max_retries"],
        summarizer_context=resolved["summarizer_context"],
        use_cache=use_cache,
        env=os.environ,
    )
