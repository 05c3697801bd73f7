"""Budget options shared by the commands that cut a transcript (prune, compress)."""

from __future__ import annotations

from typing import Annotated

import typer

from ctxpack.budget import (
    DEFAULT_CONTEXT_LENGTH,
    DEFAULT_PROTECT_FIRST,
    DEFAULT_PROTECT_LAST,
    DEFAULT_TARGET_RATIO,
    DEFAULT_THRESHOLD,
    Budget,
)

__all__ = [
    "DEFAULT_CONTEXT_LENGTH",
    "DEFAULT_PROTECT_FIRST",
    "DEFAULT_PROTECT_LAST",
    "DEFAULT_TARGET_RATIO",
    "DEFAULT_THRESHOLD",
    "ContextLength",
    "MinSavings",
    "ProtectFirst",
    "ProtectLast",
    "TailTokens",
    "TargetRatio",
    "Threshold",
    "budget_from_options",
]

ContextLength = Annotated[
    int,
    typer.Option("--context-length", min=1, help="Model context window in tokens."),
]
Threshold = Annotated[
    float,
    typer.Option(
        "--threshold",
        min=0.0,
        max=1.0,
        help="Compaction starts at this share of the context window.",
    ),
]
TargetRatio = Annotated[
    float,
    typer.Option(
        "--target-ratio",
        min=0.0,
        max=1.0,
        help="Tail kept verbatim, as a share of the threshold tokens (clamped to 0.10-0.80).",
    ),
]
TailTokens = Annotated[
    int | None,
    typer.Option(
        "--tail-tokens",
        min=0,
        help="Tail budget in tokens, instead of the ratio.",
        show_default=False,
    ),
]
ProtectFirst = Annotated[
    int,
    typer.Option("--protect-first", min=0, help="Messages kept after the system message(s)."),
]
ProtectLast = Annotated[
    int,
    typer.Option("--protect-last", min=0, help="Messages always kept verbatim at the end."),
]
MinSavings = Annotated[
    int,
    typer.Option(
        "--min-savings", min=0, help="Leave the transcript unchanged if pruning frees fewer tokens."
    ),
]


def budget_from_options(
    *,
    context_length: int = DEFAULT_CONTEXT_LENGTH,
    threshold: float = DEFAULT_THRESHOLD,
    target_ratio: float = DEFAULT_TARGET_RATIO,
    tail_tokens: int | None = None,
    protect_first: int = DEFAULT_PROTECT_FIRST,
    protect_last: int = DEFAULT_PROTECT_LAST,
) -> Budget:
    return Budget(
        context_length=context_length,
        threshold=threshold,
        target_ratio=target_ratio,
        protect_first=protect_first,
        protect_last=protect_last,
        tail_tokens=tail_tokens,
    )
