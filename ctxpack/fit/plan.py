"""A fit plan as data: every item of the input, what the planner did with it,
its tokens before and after, and why; the totals and what each stage spent.

Rows add up exactly: the sum of `tokens_after` is the exact token count of the
written transcript (the record's row holds the record message, or what it
added to the tail message it rides in)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Action = Literal["keep", "one-liner", "shrink-args", "summarize", "drop", "record"]
Region = Literal["head", "middle", "tail", "record", "whole"]


@dataclass(frozen=True)
class FitRow:
    session: str
    index: int | None  # the input message; None for the record
    role: str
    region: Region
    action: Action
    tokens_before: int
    tokens_after: int
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class FitPlan:
    target: str  # as asked: "20%" or "4,000 tokens"
    budget: int
    tokens_before: int
    tokens_after: int
    # The smallest output the planner can reach for this input.
    smallest: int
    met: bool
    best_effort: bool = False
    # Per session, the planner step that was kept (see ctxpack.fit.solve.STEPS).
    steps: list[str] = field(default_factory=list)
    rows: list[FitRow] = field(default_factory=list)

    def spent(self) -> dict[str, int]:
        """Tokens of the output by region: the verbatim head and tail, the record,
        and the sessions written whole (too short to compact, or pruned only)."""
        out = dict.fromkeys(("head", "record", "tail", "whole"), 0)
        for row in self.rows:
            if row.region != "middle":
                out[row.region] += row.tokens_after
        return out

    def actions(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for row in self.rows:
            counts[row.action] = counts.get(row.action, 0) + 1
        return counts

    def to_dict(self, *, rows: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "target": self.target,
            "budget": self.budget,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "smallest": self.smallest,
            "met": self.met,
            "best_effort": self.best_effort,
            "steps": list(self.steps),
            "spent": self.spent(),
            "actions": self.actions(),
        }
        if rows:
            out["rows"] = [row.to_dict() for row in self.rows]
            out["total"] = sum(row.tokens_after for row in self.rows)
        return out
