"""What a compaction did, per session and per file, as plain data and JSON."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from ctxpack.refs import Blob
from ctxpack.tokens.tally import Tally

if TYPE_CHECKING:
    from ctxpack.fit.plan import FitPlan


class Status(StrEnum):
    """What happened to one session; the JSON report writes the value."""

    UNDER_THRESHOLD = "under-threshold"
    PRUNED = "pruned"
    COMPACTED = "compacted"
    NOTHING_TO_COMPRESS = "nothing-to-compress"
    # Under the threshold, but written in another format than it was read in.
    CONVERTED = "converted"


@dataclass
class SessionReport:
    label: str
    status: Status
    before: Tally
    after: Tally
    pruned: int = 0
    deduplicated: int = 0
    args_shrunk: int = 0
    prune_saved: int = 0
    summary_saved: int = 0
    summary_tokens: int = 0
    summary_source: str | None = None
    summary_model: str | None = None
    updated_previous_summary: bool = False
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # What assembly removed so that every tool call and result pair up, per message.
    sanitizer_notes: list[str] = field(default_factory=list)
    # What the compacted turns kept (`ctxpack eval`'s retention block), when compacted.
    retention: dict[str, Any] | None = None
    # Bytes the output cites by ref (not part of the JSON report).
    blobs: list[Blob] = field(default_factory=list, repr=False)
    # The messages [start, end) of the session that the summary replaced.
    summarized: tuple[int, int] | None = None
    # The leading messages the output shares with the input, unchanged, and
    # their tokens: what a provider's prompt cache can still serve.
    cache_prefix_messages: int = 0
    cache_prefix_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "session": self.label,
            "status": self.status.value,
            "tokens_before": self.before.tokens,
            "tokens_after": self.after.tokens,
            "messages_before": self.before.messages,
            "messages_after": self.after.messages,
            "ratio": ratio(self.after.tokens, self.before.tokens),
            "pruned": self.pruned,
            "deduplicated": self.deduplicated,
            "args_shrunk": self.args_shrunk,
            "savings": {"prune": self.prune_saved, "summarize": self.summary_saved},
            "summary_tokens": self.summary_tokens,
            "summary_source": self.summary_source,
            "summary_model": self.summary_model,
            "updated_previous_summary": self.updated_previous_summary,
            "before": self.before.to_dict(),
            "after": self.after.to_dict(),
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "sanitized": list(self.sanitizer_notes),
            "retention": self.retention,
            "cache_prefix": {
                "messages": self.cache_prefix_messages,
                "tokens": self.cache_prefix_tokens,
            },
        }


def ratio(after: int, before: int) -> float:
    return round(after / before, 4) if before else 1.0


# The status of a file of a batch that could not be compacted.
ERROR = "error"


def file_status(statuses: Iterable[str]) -> str:
    """A file's status in a batch: the distinct statuses of its sessions."""
    return ", ".join(sorted(set(statuses)))


@dataclass
class CompressReport:
    path: str
    format: str
    sessions: list[SessionReport]
    output: str | None = None
    skipped_lines: int = 0
    # The budget plan of a --fit run.
    fit: FitPlan | None = None

    @property
    def before(self) -> Tally:
        return _sum(s.before for s in self.sessions)

    @property
    def after(self) -> Tally:
        return _sum(s.after for s in self.sessions)

    @property
    def cache_prefix_tokens(self) -> int:
        return sum(s.cache_prefix_tokens for s in self.sessions)

    def to_dict(self) -> dict[str, Any]:
        before, after = self.before, self.after
        return {
            "path": self.path,
            "format": self.format,
            "output": self.output,
            "skipped_lines": self.skipped_lines,
            "tokens_before": before.tokens,
            "tokens_after": after.tokens,
            "ratio": ratio(after.tokens, before.tokens),
            "cache_prefix_tokens": self.cache_prefix_tokens,
            "sessions": [s.to_dict() for s in self.sessions],
            **({"fit": self.fit.to_dict()} if self.fit is not None else {}),
        }


def _sum(tallies: Iterable[Tally]) -> Tally:
    total = Tally()
    for tally in tallies:
        total.merge(tally)
    return total
