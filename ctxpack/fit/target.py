"""What `--fit` asks for: a number of tokens, or a share of the input's tokens."""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKENS_RE = re.compile(r"^\s*([0-9][0-9_,]*)\s*$")
_PERCENT_RE = re.compile(r"^\s*([0-9]+)\s*%\s*$")


@dataclass(frozen=True)
class FitTarget:
    """Exactly one of `tokens` (a budget) and `percent` (1-99, of the input)."""

    tokens: int | None = None
    percent: int | None = None

    @classmethod
    def parse(cls, text: str) -> FitTarget | None:
        """`4000`, `4,000` or `20%`; None for anything else (0, 100%, 2.5%)."""
        if mt := _PERCENT_RE.match(text):
            percent = int(mt.group(1))
            return cls(percent=percent) if 1 <= percent <= 99 else None
        if mt := _TOKENS_RE.match(text):
            tokens = int(mt.group(1).replace(",", "").replace("_", ""))
            return cls(tokens=tokens) if tokens > 0 else None
        return None

    def budget(self, input_tokens: int) -> int:
        """The budget in tokens for an input of `input_tokens` (a share rounds down)."""
        if self.tokens is not None:
            return self.tokens
        return input_tokens * (self.percent or 0) // 100

    def describe(self) -> str:
        return f"{self.percent}%" if self.percent is not None else f"{self.tokens:,} tokens"
