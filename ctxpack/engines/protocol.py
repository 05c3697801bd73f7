"""The interface every compaction engine implements, the built-in one included.

An engine decides when a session needs compacting and compacts a whole
transcript; ctxpack reads, writes, archives and reports around it, the same
for every command (compress, summarize, update, a batch, the library's
run_file), so an engine named once works everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from ctxpack.align.budget import Budget
    from ctxpack.align.plan import AlignPlan
    from ctxpack.pipeline.compaction import CompressSettings
    from ctxpack.report import CompressReport
    from ctxpack.sessionindex import SessionIndex
    from ctxpack.summarize.protocol import Summarizer
    from ctxpack.tokens.counter import TokenCounter
    from ctxpack.transcript import Transcript

# "compress": every stage, each session only once it reaches the threshold
# (unless settings.force). "summarize": summarize and update: the summary
# alone, no pruning and no threshold.
Scope = Literal["compress", "summarize"]


@dataclass(frozen=True)
class EngineSettings:
    """What one compaction of one transcript is asked to do."""

    compress: CompressSettings
    scope: Scope = "compress"
    # The summarizer the user named (a plugin); None: the LLM summarizer when
    # compress.llm is set, else the offline one.
    summarizer: Summarizer | None = None
    # One plan per session from `ctxpack align --json` (summarize --plan).
    plans: list[AlignPlan] | None = None
    # update: a transcript with no earlier summary is an error.
    require_previous: bool = False
    # The run's index of each session (ctxpack.sessionindex), read by every
    # stage that looks into it; None: each stage finds its own.
    indexes: list[SessionIndex] | None = None


class Engine(Protocol):
    name: str

    def should_compact(self, *, tokens: int, budget: Budget) -> bool:
        """Whether a session of `tokens` tokens needs compacting under `budget`."""
        ...

    def compact(
        self, transcript: Transcript, settings: EngineSettings, *, counter: TokenCounter
    ) -> tuple[Transcript, CompressReport]:
        """The transcript compacted, with one report session per session.

        The result keeps the input's sessions in order; a session left as it
        was keeps its very messages (its bytes are written back untouched).
        """
        ...
