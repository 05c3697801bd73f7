"""The in-memory transcript: sessions of OpenAI chat messages plus what the
writer needs to put unchanged bytes back exactly where they came from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

Message = dict[str, Any]
# The exact input bytes of one message: a view into the file as read (no copy)
# or bytes of their own.
RawLine = bytes | memoryview


@dataclass
class Session:
    """One conversation. `messages` is what the stages see and return.

    `originals` are the messages as parsed, paired with the raw bytes they came
    from; a writer that finds the very same object in its output writes those
    bytes back untouched. Stages therefore never mutate a message in place:
    they replace it with a changed copy.
    """

    messages: list[Message]
    originals: Sequence[tuple[Message, RawLine]] = field(default_factory=list)
    label: str = ""
    # What the reading adapter needs to write this session back, in a type of
    # its own that only it interprets; None for a session built from messages
    # alone.
    context: object | None = None

    def with_messages(self, messages: list[Message]) -> Session:
        return Session(
            messages=messages, originals=self.originals, label=self.label, context=self.context
        )

    def unchanged(self) -> bool:
        return len(self.messages) == len(self.originals) and all(
            a is b for a, (b, _) in zip(self.messages, self.originals, strict=True)
        )


@dataclass
class Transcript:
    """A whole input file: its format, its sessions and the file-level layout."""

    format: str
    sessions: list[Session]
    path: str = "-"
    raw: bytes = b""
    skipped_lines: int = 0
    # The file-level shape the reading adapter writes the same bytes back by,
    # in a type of its own that only it interprets; None for a transcript built
    # from messages alone.
    layout: object | None = None
    # When the latest message was written, where the format records it: the
    # summary dates itself by it, and new lines a writer adds carry it.
    last_timestamp: str | None = None

    def with_sessions(self, sessions: list[Session]) -> Transcript:
        return Transcript(
            format=self.format,
            sessions=sessions,
            path=self.path,
            raw=self.raw,
            skipped_lines=self.skipped_lines,
            layout=self.layout,
            last_timestamp=self.last_timestamp,
        )

    def unchanged(self) -> bool:
        return all(s.unchanged() for s in self.sessions)
