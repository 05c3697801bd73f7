"""The align plan as data: regions, token counts, the budget used and every
boundary move with its reason; JSON in and out (`ctxpack align --json` writes
it, `ctxpack summarize --plan` reads it back)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

from ctxpack.errors import UsageError
from ctxpack.markers import is_summary
from ctxpack.transcript import Message

AdjustmentKind = Literal[
    "aligned-forward",
    "aligned-back",
    "anchor-user",
    "anchor-assistant",
    "turn-to-middle",
    "floor",
    "min-middle",
    "all-fits",
    "previous-summary",
]
ADJUSTMENT_KINDS: tuple[str, ...] = get_args(AdjustmentKind)


@dataclass(frozen=True)
class Adjustment:
    """One move of a boundary: `from_index` -> `to_index` (both boundary positions)."""

    kind: AdjustmentKind
    reason: str
    from_index: int
    to_index: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class AlignPlan:
    """Regions are head [0, head_end), middle [head_end, tail_start), tail [tail_start, total)."""

    total: int
    head_end: int
    tail_start: int
    tokens_head: int
    tokens_middle: int
    tokens_tail: int
    tail_budget: int
    soft_ceiling: int
    compressible: bool
    previous_summary_index: int | None = None
    latest_user_index: int | None = None
    latest_assistant_text_index: int | None = None
    # Why nothing is compressed; empty when the plan compresses.
    note: str = ""
    adjustments: list[Adjustment] = field(default_factory=list)

    @property
    def messages_head(self) -> int:
        return self.head_end

    @property
    def messages_middle(self) -> int:
        return self.tail_start - self.head_end

    @property
    def messages_tail(self) -> int:
        return self.total - self.tail_start

    @property
    def tokens_total(self) -> int:
        return self.tokens_head + self.tokens_middle + self.tokens_tail

    def head(self, messages: list[Message]) -> list[Message]:
        return messages[: self.head_end]

    def middle(self, messages: list[Message]) -> list[Message]:
        return messages[self.head_end : self.tail_start]

    def tail(self, messages: list[Message]) -> list[Message]:
        return messages[self.tail_start :]

    def previous_summary(self, messages: list[Message]) -> Message | None:
        index = self.previous_summary_index
        return messages[index] if index is not None else None

    def middle_turns(self, messages: list[Message]) -> list[Message]:
        """The middle without the previous summary (that one is passed separately)."""
        skip = self.previous_summary_index
        return [messages[i] for i in range(self.head_end, self.tail_start) if i != skip]

    def check(self, messages: list[Message]) -> None:
        """Refuse a plan made for another transcript."""
        if self.total != len(messages):
            raise UsageError(
                f"plan is for {self.total} messages but the transcript has {len(messages)}"
            )
        index = self.previous_summary_index
        if index is not None and not is_summary(messages[index]):
            raise UsageError(
                f"plan names message #{index} as the existing summary, but it is not one"
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "total_messages": self.total,
            "head_end": self.head_end,
            "tail_start": self.tail_start,
            "messages_head": self.messages_head,
            "messages_middle": self.messages_middle,
            "messages_tail": self.messages_tail,
            "tokens_head": self.tokens_head,
            "tokens_middle": self.tokens_middle,
            "tokens_tail": self.tokens_tail,
            "tokens_total": self.tokens_total,
            "tail_budget": self.tail_budget,
            "soft_ceiling": self.soft_ceiling,
            "compressible": self.compressible,
            "previous_summary_index": self.previous_summary_index,
            "latest_user_index": self.latest_user_index,
            "latest_assistant_text_index": self.latest_assistant_text_index,
            "note": self.note,
            "adjustments": [a.to_dict() for a in self.adjustments],
        }

    @classmethod
    def from_dict(cls, d: Any, *, messages: list[Message] | None = None) -> AlignPlan:
        """Read a plan written by `to_dict`; with `messages`, also check it fits them."""
        if not isinstance(d, dict):
            raise UsageError("plan: expected a JSON object")
        ints = {key: _int_field(d, key) for key in _INT_FIELDS}
        optional = {key: _optional_int(d, key) for key in _OPTIONAL_FIELDS}
        compressible, note = d.get("compressible"), d.get("note", "")
        if not isinstance(compressible, bool) or not isinstance(note, str):
            raise UsageError("plan: 'compressible' must be true/false and 'note' a string")
        raw_adjustments = d.get("adjustments", [])
        if not isinstance(raw_adjustments, list):
            raise UsageError("plan: 'adjustments' must be a list")
        plan = cls(
            total=ints["total_messages"],
            head_end=ints["head_end"],
            tail_start=ints["tail_start"],
            tokens_head=ints["tokens_head"],
            tokens_middle=ints["tokens_middle"],
            tokens_tail=ints["tokens_tail"],
            tail_budget=ints["tail_budget"],
            soft_ceiling=ints["soft_ceiling"],
            compressible=compressible,
            previous_summary_index=optional["previous_summary_index"],
            latest_user_index=optional["latest_user_index"],
            latest_assistant_text_index=optional["latest_assistant_text_index"],
            note=note,
            adjustments=[_adjustment(a) for a in raw_adjustments],
        )
        if not 0 <= plan.head_end <= plan.tail_start <= plan.total:
            raise UsageError(
                f"plan: regions out of order (head_end {plan.head_end}, tail_start "
                f"{plan.tail_start}, {plan.total} messages)"
            )
        for key, value in optional.items():
            if value is not None and value >= plan.total:
                raise UsageError(f"plan: {key} {value} is past the last message")
        prev = plan.previous_summary_index
        if plan.compressible and (
            plan.head_end == plan.tail_start
            or (prev is not None and not plan.head_end <= prev < plan.tail_start)
        ):
            raise UsageError(
                "plan: a compressible plan needs a middle that holds the existing summary"
            )
        if messages is not None:
            plan.check(messages)
        return plan


_INT_FIELDS = (
    "total_messages",
    "head_end",
    "tail_start",
    "tokens_head",
    "tokens_middle",
    "tokens_tail",
    "tail_budget",
    "soft_ceiling",
)
_OPTIONAL_FIELDS = ("previous_summary_index", "latest_user_index", "latest_assistant_text_index")


def _optional_int(d: dict[str, Any], key: str) -> int | None:
    return None if d.get(key) is None else _int_field(d, key)


def _int_field(d: dict[str, Any], key: str) -> int:
    value = d.get(key)
    # bool is an int subclass; a plan never holds true/false where a number goes.
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise UsageError(f"plan: {key!r} must be a non-negative integer, got {value!r}")
    return value


def _adjustment(d: Any) -> Adjustment:
    if not isinstance(d, dict) or d.get("kind") not in ADJUSTMENT_KINDS:
        raise UsageError(f"plan: not an adjustment: {d!r}")
    reason = d.get("reason", "")
    return Adjustment(
        kind=d["kind"],
        reason=reason if isinstance(reason, str) else str(reason),
        from_index=_int_field(d, "from_index"),
        to_index=_int_field(d, "to_index"),
    )


def plans_from_json(value: Any, *, sessions: list[list[Message]]) -> list[AlignPlan]:
    """The plans of `ctxpack align --json` (one object per session under "sessions"),
    also a bare plan or a list of plans, checked against the sessions they are for."""
    if isinstance(value, dict) and "sessions" in value:
        value = value["sessions"]
    items = value if isinstance(value, list) else [value]
    if len(items) != len(sessions):
        raise UsageError(f"plan has {len(items)} session(s) but the transcript has {len(sessions)}")
    return [
        AlignPlan.from_dict(item, messages=msgs) for item, msgs in zip(items, sessions, strict=True)
    ]
