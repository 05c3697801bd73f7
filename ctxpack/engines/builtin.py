"""ctxpack's own engine: prune, align, summarize, assemble (pipeline.compaction)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxpack.pipeline.compaction import compress_transcript, summarize_transcript
from ctxpack.settings import BUILTIN_ENGINE

if TYPE_CHECKING:
    from ctxpack.align.budget import Budget
    from ctxpack.engines.protocol import EngineSettings
    from ctxpack.report import CompressReport
    from ctxpack.tokens.counter import TokenCounter
    from ctxpack.transcript import Transcript


class BuiltinEngine:
    name = BUILTIN_ENGINE

    def should_compact(self, *, tokens: int, budget: Budget) -> bool:
        return budget.reached(tokens)

    def compact(
        self, transcript: Transcript, settings: EngineSettings, *, counter: TokenCounter
    ) -> tuple[Transcript, CompressReport]:
        if settings.compress.fit is not None:
            from ctxpack.fit.solve import fit_transcript

            return fit_transcript(
                transcript,
                counter=counter,
                settings=settings.compress,
                summarizer=settings.summarizer,
            )
        if settings.scope == "summarize":
            return summarize_transcript(
                transcript,
                counter=counter,
                settings=settings.compress,
                plans=settings.plans,
                require_previous=settings.require_previous,
                summarizer=settings.summarizer,
                indexes=settings.indexes,
            )
        return compress_transcript(
            transcript,
            counter=counter,
            settings=settings.compress,
            summarizer=settings.summarizer,
            indexes=settings.indexes,
        )
