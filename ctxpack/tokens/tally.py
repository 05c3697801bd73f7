"""Token and message tallies by role and by kind, per session and in total."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxpack import messages as m
from ctxpack.tokens.counter import KINDS, TokenCounter
from ctxpack.transcript import Message, Transcript


@dataclass
class Tally:
    messages: int = 0
    tokens: int = 0
    messages_by_role: dict[str, int] = field(default_factory=dict)
    tokens_by_role: dict[str, int] = field(default_factory=dict)
    tokens_by_kind: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))

    def merge(self, other: Tally) -> None:
        self.messages += other.messages
        self.tokens += other.tokens
        for role, n in other.messages_by_role.items():
            self.messages_by_role[role] = self.messages_by_role.get(role, 0) + n
        for role, n in other.tokens_by_role.items():
            self.tokens_by_role[role] = self.tokens_by_role.get(role, 0) + n
        for kind, n in other.tokens_by_kind.items():
            self.tokens_by_kind[kind] = self.tokens_by_kind.get(kind, 0) + n

    def to_dict(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "tokens": self.tokens,
            "messages_by_role": dict(sorted(self.messages_by_role.items())),
            "tokens_by_role": dict(sorted(self.tokens_by_role.items())),
            "tokens_by_kind": dict(self.tokens_by_kind),
        }


def tally(messages: list[Message], *, counter: TokenCounter) -> Tally:
    counter.prime(messages)
    # Per role, the counts of its messages summed column by column: the adding
    # up happens in C, not once per message and kind.
    rows: dict[str, list[tuple[int, ...]]] = {}
    for msg in messages:
        rows.setdefault(m.role(msg) or "?", []).append(counter.counts(msg))
    result = Tally()
    for role, counts in rows.items():
        total, *by_kind = map(sum, zip(*counts, strict=True))
        result.messages += len(counts)
        result.tokens += total
        result.messages_by_role[role] = len(counts)
        result.tokens_by_role[role] = total
        for kind, value in zip(KINDS, by_kind, strict=True):
            result.tokens_by_kind[kind] += value
    return result


@dataclass
class CountReport:
    path: str
    format: str
    encoding: str
    estimate: bool
    sessions: list[tuple[str, Tally]]
    total: Tally
    skipped_lines: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "format": self.format,
            "encoding": self.encoding,
            "estimate": self.estimate,
            "skipped_lines": self.skipped_lines,
            "sessions": [{"session": label, **t.to_dict()} for label, t in self.sessions],
            "total": self.total.to_dict(),
        }


def count_transcript(transcript: Transcript, *, counter: TokenCounter) -> CountReport:
    sessions: list[tuple[str, Tally]] = []
    total = Tally()
    for number, session in enumerate(transcript.sessions):
        t = tally(session.messages, counter=counter)
        sessions.append((session.label or f"#{number}", t))
        total.merge(t)
    return CountReport(
        path=transcript.path,
        format=transcript.format,
        encoding=counter.encoding_name,
        estimate=counter.estimate,
        sessions=sessions,
        total=total,
        skipped_lines=transcript.skipped_lines,
    )
