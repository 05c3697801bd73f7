"""Token and message tallies by role and by kind, per session and in total."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxpack import messages as m
from ctxpack.tokens import KINDS, TokenCounter
from ctxpack.transcript import Message, Transcript


@dataclass
class Tally:
    messages: int = 0
    tokens: int = 0
    messages_by_role: dict[str, int] = field(default_factory=dict)
    tokens_by_role: dict[str, int] = field(default_factory=dict)
    tokens_by_kind: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))

    def add_message(self, msg: Message, breakdown: dict[str, int]) -> None:
        role = m.role(msg) or "?"
        tokens = sum(breakdown.values())
        self.messages += 1
        self.tokens += tokens
        self.messages_by_role[role] = self.messages_by_role.get(role, 0) + 1
        self.tokens_by_role[role] = self.tokens_by_role.get(role, 0) + tokens
        for kind, value in breakdown.items():
            self.tokens_by_kind[kind] = self.tokens_by_kind.get(kind, 0) + value

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
    result = Tally()
    counter.prime(messages)
    for msg in messages:
        result.add_message(msg, counter.breakdown(msg))
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
