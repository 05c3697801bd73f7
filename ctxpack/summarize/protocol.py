"""The one interface every summarizer implements (LLM or offline)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message

if TYPE_CHECKING:
    from ctxpack.summarize.llm.settings import LLMSettings

# The template's headings, fixed and in this order.
HEADINGS = (
    "Historical Task Snapshot",
    "Goal",
    "Constraints & Preferences",
    "Completed Actions",
    "Active State",
    "Historical In-Progress State",
    "Blocked",
    "Key Decisions",
    "Resolved Questions",
    "Historical Pending User Asks",
    "Relevant Files",
    "Historical Remaining Work",
    "Critical Context",
)
PRESERVED_FACTS_HEADING = "Preserved Facts"


@dataclass(frozen=True)
class SummaryRequest:
    """What to summarize. `middle` never contains an earlier summary message:
    that one arrives as `previous_summary` (its body text) for an update."""

    middle: list[Message]
    budget_tokens: int
    previous_summary: str | None = None
    focus: str | None = None
    # ISO timestamp of the transcript's last message, when the format records one.
    last_timestamp: str | None = None
    # The turns kept verbatim around the middle: context, never summarized. A
    # failure in the middle that the tail fixed is not "blocked".
    head: list[Message] = field(default_factory=list)
    tail: list[Message] = field(default_factory=list)
    # The compact form (empty sections on one line), for a tight --fit budget.
    compact: bool = False
    # True when whoever built the request took every summary message out of
    # `middle` already (the pipeline does, knowing where they sit): there is
    # nothing left for effective_request to look for.
    turns_only: bool = False


@dataclass
class SummaryResult:
    """The summary body: every heading of HEADINGS as `## Heading` sections."""

    text: str
    # "llm", "offline", or a plugin's own name: the report's summary_source.
    source: str
    model: str | None = None
    warnings: list[str] = field(default_factory=list)


class Summarizer(Protocol):
    name: str

    def summarize(self, request: SummaryRequest, *, counter: TokenCounter) -> SummaryResult: ...


class SummarizerFactory(Protocol):
    """What a `ctxpack.summarizers` entry point names: called once per file with
    the LLM settings in effect (None when no model is configured)."""

    def __call__(self, *, llm: LLMSettings | None) -> Summarizer: ...
