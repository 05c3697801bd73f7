"""`ctxpack prune` between reading and writing: stage 1 alone. Kept apart
from the compaction's stages so that a prune run imports none of them."""

from __future__ import annotations

from dataclasses import dataclass

from ctxpack.pipeline.run import Staged
from ctxpack.prune.stage import PruneResult, PruneSettings, prune_transcript, totals
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Transcript


@dataclass
class PruneReport:
    original: Transcript
    results: list[PruneResult]
    warnings: list[str]


@dataclass(frozen=True)
class Prune:
    """`ctxpack prune`: stage 1 alone."""

    settings: PruneSettings

    def __call__(self, transcript: Transcript, *, counter: TokenCounter) -> Staged[PruneReport]:
        pruned, results = prune_transcript(transcript, counter=counter, settings=self.settings)
        report = PruneReport(original=transcript, results=results, warnings=[])
        return Staged(
            result=pruned,
            report=report,
            warnings=report.warnings,
            archive_settings={
                "min_savings": self.settings.min_savings,
                **vars(self.settings.budget),
            },
            archive_report=lambda: {"command": "prune", **totals(results)},
        )
