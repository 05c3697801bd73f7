"""Summarizers: one that writes a fixed record, one that fails."""

from __future__ import annotations

from ctxpack.summarize.llm.settings import LLMSettings
from ctxpack.summarize.protocol import HEADINGS, SummaryRequest, SummaryResult
from ctxpack.tokens.counter import TokenCounter

FIXED_LINE = "fixed summary of {turns} turn(s)"


class Fixed:
    name = "fixed"

    def __init__(self, *, llm: LLMSettings | None) -> None:
        self.model = llm.model if llm is not None else None

    def summarize(self, request: SummaryRequest, *, counter: TokenCounter) -> SummaryResult:
        line = FIXED_LINE.format(turns=len(request.middle))
        text = "\n\n".join(f"## {heading}\n- {line}" for heading in HEADINGS)
        return SummaryResult(text=text, source=self.name, model=self.model)


class Broken:
    name = "broken"

    def __init__(self, *, llm: LLMSettings | None) -> None:
        pass

    def summarize(self, request: SummaryRequest, *, counter: TokenCounter) -> SummaryResult:
        raise ValueError("house model returned 418")
