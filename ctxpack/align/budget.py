"""The token budgets every stage derives from the same few settings."""

from __future__ import annotations

from dataclasses import dataclass

from ctxpack.settings import (
    DEFAULT_CONTEXT_LENGTH,
    DEFAULT_PROTECT_FIRST,
    DEFAULT_PROTECT_LAST,
    DEFAULT_TARGET_RATIO,
    DEFAULT_THRESHOLD,
)

MIN_SUMMARY_TOKENS = 2_000
MAX_SUMMARY_TOKENS = 10_000


@dataclass(frozen=True)
class Budget:
    context_length: int = DEFAULT_CONTEXT_LENGTH
    threshold: float = DEFAULT_THRESHOLD
    target_ratio: float = DEFAULT_TARGET_RATIO
    protect_first: int = DEFAULT_PROTECT_FIRST
    protect_last: int = DEFAULT_PROTECT_LAST
    # Set the tail budget directly instead of deriving it.
    tail_tokens: int | None = None

    @property
    def threshold_tokens(self) -> int:
        """Compaction starts when a transcript reaches this many tokens."""
        return int(self.context_length * self.threshold)

    def reached(self, tokens: int) -> bool:
        """Whether a session of `tokens` tokens is due for compaction."""
        return tokens >= self.threshold_tokens

    @property
    def tail_budget(self) -> int:
        """Tokens kept verbatim at the end of the transcript."""
        if self.tail_tokens is not None:
            return self.tail_tokens
        ratio = min(max(self.target_ratio, 0.10), 0.80)
        return int(self.threshold_tokens * ratio)

    def summary_budget(self, middle_tokens: int) -> int:
        """max(2,000, min(20% of the middle, 5% of context, 10,000))."""
        cap = min(int(0.05 * self.context_length), MAX_SUMMARY_TOKENS)
        return max(MIN_SUMMARY_TOKENS, min(int(0.20 * middle_tokens), cap))
