"""The token budgets every stage derives from the same few settings."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ctxpack.settings import (
    DEFAULT_CONTEXT_LENGTH,
    DEFAULT_FORCED_TAIL_RATIO,
    DEFAULT_PROTECT_FIRST,
    DEFAULT_PROTECT_LAST,
    DEFAULT_TARGET_RATIO,
    DEFAULT_THRESHOLD,
)

MIN_SUMMARY_TOKENS = 2_000
MAX_SUMMARY_TOKENS = 10_000
# The fewest messages a compacted tail keeps (a --fit budget may ask for fewer).
MIN_TAIL = 3


@dataclass(frozen=True)
class Budget:
    context_length: int = DEFAULT_CONTEXT_LENGTH
    threshold: float = DEFAULT_THRESHOLD
    target_ratio: float = DEFAULT_TARGET_RATIO
    protect_first: int = DEFAULT_PROTECT_FIRST
    protect_last: int = DEFAULT_PROTECT_LAST
    # Set the tail budget directly instead of deriving it.
    tail_tokens: int | None = None
    min_tail: int = MIN_TAIL

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

    def for_session(self, tokens: int) -> Budget:
        """This budget for a session of `tokens`. A session smaller than the tail
        budget (reached only when forced: the threshold is above it) would stay
        verbatim, so its tail is a share of its own tokens instead, unless
        --tail-tokens sets it."""
        if self.tail_tokens is not None or tokens >= self.tail_budget:
            return self
        return replace(self, tail_tokens=int(tokens * DEFAULT_FORCED_TAIL_RATIO))

    def summary_budget(self, middle_tokens: int, *, previous_tokens: int = 0) -> int:
        """max(2,000, min(20% of the middle, 40% of the threshold, 10,000)),
        and an update's no less than the record it updates (`previous_tokens`)
        within that cap.

        Tied to the threshold, not the window: record and tail together stay
        well under it, and a long session in a small window is not squeezed
        into 2,000 tokens (at a 32,000-token window a 900-message session kept
        4% of the commands it ran). An update made to fit 20% of its new turns
        alone would drop, round after round, the constraints and work the
        record kept."""
        cap = min(int(0.40 * self.threshold_tokens), MAX_SUMMARY_TOKENS)
        wanted = max(int(0.20 * middle_tokens), previous_tokens)
        return max(MIN_SUMMARY_TOKENS, min(wanted, cap))
