"""Token and message tallies by role and by kind, per session and in total."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxpack import messages as m
from ctxpack.tokens.counter import (
    KINDS,
    TokenCounter,
    estimated_by_kind,
    plain_row,
    plain_tokens,
)
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
    sums = _estimate_sums(messages) if counter.estimate else _sums(messages, counter)
    result = Tally()
    for role, (count, (total, *by_kind)) in sums.items():
        result.messages += count
        result.tokens += total
        result.messages_by_role[role] = count
        result.tokens_by_role[role] = total
        for kind, value in zip(KINDS, by_kind, strict=True):
            result.tokens_by_kind[kind] += value
    return result


# Per role: how many messages, and their counts (the total, then each of
# KINDS) summed column by column.
Sums = dict[str, tuple[int, tuple[int, ...]]]


def _sums(messages: list[Message], counter: TokenCounter) -> Sums:
    counter.prime(messages)
    # The adding up happens in C, not once per message and kind.
    rows: dict[str, list[tuple[int, ...]]] = {}
    for msg in messages:
        rows.setdefault(m.role(msg) or "?", []).append(counter.counts(msg))
    return {role: (len(counts), _columns(counts)) for role, counts in rows.items()}


def _estimate_sums(messages: list[Message]) -> Sums:
    """The estimate's sums in one pass: most messages are plain text, whose
    tokens are summed per role and made one row at the end; only the others
    get a row of their own."""
    # Per role, in the order roles first come (as `_sums` has them): the
    # tokens of each plain message, and the rows of the others.
    per_role: dict[str, tuple[list[int], list[tuple[int, ...]]]] = {}
    role_of, tokens_of = m.role, plain_tokens
    for msg in messages:
        role = role_of(msg) or "?"
        if (entry := per_role.get(role)) is None:
            entry = per_role[role] = ([], [])
        tokens = tokens_of(msg)
        if tokens >= 0:
            entry[0].append(tokens)
        else:
            entry[1].append(estimated_by_kind(msg))
    return {
        role: (
            len(plain) + len(rows),
            _columns(rows, plain_row(role, sum(plain), messages=len(plain))),
        )
        for role, (plain, rows) in per_role.items()
    }


def _columns(rows: list[tuple[int, ...]], *more: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(map(sum, zip(*rows, *more, strict=True)))


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
