"""What every transcript format adapter provides, and the options it reads with."""

from __future__ import annotations

import itertools
import mmap
import re
from array import array
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import ClassVar, Protocol, TypeVar, overload

from ctxpack.alternation import any_of_bytes
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message, RawLine, Session, Transcript

BOM = b"\xef\xbb\xbf"
State = TypeVar("State")

# A file's bytes as read, or the file mapped into memory (a large file counted
# in stretches by children, never read whole into one process). What may be
# given either only slices it (which gives bytes), finds in it and searches it
# with a pattern: the mapping has no other method of bytes.
Data = bytes | mmap.mmap


def holds(data: Data, word: bytes) -> bool:
    return data.find(word) >= 0


def starts_with(data: Data, prefix: bytes) -> bool:
    return data[: len(prefix)] == prefix


_NOT_SPACE = re.compile(rb"\S")


def first_byte(data: Data) -> bytes:
    """The first byte that is not white space, or b"" (data.lstrip()[:1])."""
    hit = _NOT_SPACE.search(data)
    return hit.group() if hit else b""


@dataclass(frozen=True)
class ReadOptions:
    skip_invalid: bool = False
    # Dotted path to the message list inside each record ("traj", "a.b.-1").
    messages_key: str | None = None
    include_sidechains: bool = False
    # Also the turns before the format's own last compaction marker, which the
    # agent no longer sees (claude-stream-json); only for counting.
    whole_history: bool = False
    # False when the transcript will never be written back: readers then keep
    # no per-message bytes, so the input can be freed once it is parsed.
    keep_bytes: bool = True


class Format:
    """What an adapter declares about itself, once, in its class statement: its
    name and whether it can be written; its docstring is its one line for
    `ctxpack formats`. The rule that tells its files by their bytes is in
    signs.RULES under its name."""

    name: str
    description: str
    writable: bool

    def __init_subclass__(cls, *, name: str, writable: bool) -> None:
        super().__init_subclass__()
        cls.name, cls.writable = name, writable
        cls.description = " ".join((cls.__doc__ or "").split())

    def detect(self, head: bytes) -> bool:
        from ctxpack.formats.signs import RULES

        return bool(RULES[self.name](head))

    def write(self, transcript: Transcript, *, counter: TokenCounter) -> bytes:
        raise NotImplementedError(f"{self.name} is read only")


class Clue:
    """A detection pattern and the words one of which every match of it holds.
    Detection may search a whole large file, where `in` finds a word several
    times faster than the regex engine searches: the engine runs only on data
    that holds one of the words, so the answer is the pattern's own. Inside
    `searching_whole`, the words were all looked for at once."""

    # Every clue's words, for the one pass over a whole file.
    words_of_all: ClassVar[set[bytes]] = set()

    def __init__(self, pattern: bytes, *words: bytes) -> None:
        # A file's words are then those of its stretches of lines, found apart.
        if any(b"\n" in word for word in words):
            raise ValueError("a clue word holds no line break")
        self.pattern = re.compile(pattern)
        self.words = words
        Clue.words_of_all.update(words)

    def search(self, data: Data) -> bool:
        held = _held.get()
        if held is not None and held[0] is data:
            found = not held[1].isdisjoint(self.words)
        else:
            found = any(holds(data, word) for word in self.words)
        return found and self.pattern.search(data) is not None


# The whole file being searched, and which clue words it holds.
_held: ContextVar[tuple[Data, frozenset[bytes]] | None] = ContextVar("held", default=None)


# Below this size a search per word costs less than compiling the alternation.
ONE_PASS_MIN_BYTES = 512 << 10


@contextmanager
def searching_whole(data: Data, *, words: frozenset[bytes] | None = None) -> Iterator[None]:
    """Clues search `data` knowing which of their words it holds: found in one
    pass of one alternation of them all, where a search per word would read a
    large file once for each word it lacks. `words`: those of Clue.words_of_all
    that `data` holds, when the caller found them already (no word spans a
    line, so the words of a file are those of its stretches of lines)."""
    if words is None:
        if len(data) < ONE_PASS_MIN_BYTES:
            yield
            return
        words = words_in(data, Clue.words_of_all)
    token = _held.set((data, words))
    try:
        yield
    finally:
        _held.reset(token)


def words_in(data: Data, words: Iterable[bytes]) -> frozenset[bytes]:
    """Which of `words` occur in `data`. A word found is dropped from the
    alternation, so data that holds a common word is still read once."""
    left = set(words)
    found: set[bytes] = set()
    at = 0
    while left:
        hit = any_of_bytes(list(left)).search(data, at)
        if hit is None:
            break
        # Words may overlap: the next search starts just after this one's start.
        at = hit.start()
        here = {word for word in left if data[at : at + len(word)] == word}
        found |= here
        left -= here
        at += 1
    return frozenset(found)


class FormatAdapter(Protocol):
    name: str
    description: str
    writable: bool

    def detect(self, head: bytes) -> bool:
        """True when the start of a file looks like this format."""
        ...

    def read(self, data: bytes, *, path: str, options: ReadOptions) -> Transcript: ...

    def write(self, transcript: Transcript, *, counter: TokenCounter) -> bytes:
        """The transcript in this format; `counter` is the run's, for any token
        count the format records."""
        ...


def split_lines(data: bytes) -> tuple[list[bytes], bool]:
    """Split on b"\\n" only; say whether the data ended with one."""
    if not data:
        return [], False
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
        return lines, True
    return lines, False


class LineViews(Sequence[memoryview]):
    """The lines of `data` (split on b"\\n" only) as views made on demand:
    a few bytes per line until a reader keeps one."""

    def __init__(self, data: bytes) -> None:
        self._view = memoryview(data)
        starts, ends = array("q"), array("q")
        start, size, find = 0, len(data), data.find
        while start < size:
            end = find(b"\n", start)
            if end < 0:
                end = size
            starts.append(start)
            ends.append(end)
            start = end + 1
        self._starts, self._ends = starts, ends
        self.final_newline = bool(data) and data.endswith(b"\n")

    def __len__(self) -> int:
        return len(self._starts)

    def __iter__(self) -> Iterator[memoryview]:
        view = self._view
        for start, end in zip(self._starts, self._ends, strict=True):
            yield view[start:end]

    @overload
    def __getitem__(self, index: int) -> memoryview: ...
    @overload
    def __getitem__(self, index: slice) -> list[memoryview]: ...
    def __getitem__(self, index: int | slice) -> memoryview | list[memoryview]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return self._view[self._starts[index] : self._ends[index]]


class _Originals(Sequence[tuple[Message, RawLine]]):
    """Session.originals made when asked for: each message paired with the
    bytes it was read from (`_raw`), rather than a pair held per message."""

    _messages: list[Message]

    def _raw(self, index: int) -> RawLine:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self._messages)

    @overload
    def __getitem__(self, index: int) -> tuple[Message, RawLine]: ...
    @overload
    def __getitem__(self, index: slice) -> list[tuple[Message, RawLine]]: ...
    def __getitem__(
        self, index: int | slice
    ) -> tuple[Message, RawLine] | list[tuple[Message, RawLine]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return self._messages[index], self._raw(index)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


class LineOriginals(_Originals):
    """Session.originals of a file read a message a line: each message with
    the view of its line. A long session's lines stay a few bytes each (their
    numbers) instead of a view and a pair each."""

    def __init__(self, messages: list[Message], lines: LineViews, numbers: array[int]) -> None:
        self._messages, self._lines, self._numbers = messages, lines, numbers

    def _raw(self, index: int) -> RawLine:
        return self._lines[self._numbers[index]]

    def __iter__(self) -> Iterator[tuple[Message, RawLine]]:
        lines = self._lines
        for msg, number in zip(self._messages, self._numbers, strict=True):
            yield msg, lines[number]


class Unkept(_Originals):
    """Session.originals of a file read for counting only: each message with
    no bytes (b"")."""

    def __init__(self, messages: list[Message]) -> None:
        self._messages = messages

    def _raw(self, index: int) -> RawLine:
        return b""

    def __iter__(self) -> Iterator[tuple[Message, RawLine]]:
        return zip(self._messages, itertools.repeat(b""))


_SPACE = b" \t\r\n\x0b\x0c"


def is_blank(line: bytes | memoryview) -> bool:
    # A JSONL line almost always starts with "{": only look further when not.
    return not line or (line[0] in _SPACE and not bytes(line).strip())


def join_lines(lines: Sequence[RawLine], *, final_newline: bool) -> bytes:
    out = b"\n".join(lines)
    return out + b"\n" if final_newline and lines else out


def layout_of(transcript: Transcript, kind: type[State]) -> State | None:
    """The transcript's layout as the adapter owning `kind` recorded it; None
    for a transcript built from messages alone."""
    return _owned(transcript.layout, kind, f"a {transcript.format!r} transcript")


def context_of(session: Session, kind: type[State]) -> State | None:
    """The session's context as the adapter owning `kind` recorded it; None
    for a session built from messages alone."""
    return _owned(session.context, kind, "a session")


def _owned(state: object | None, kind: type[State], holder: str) -> State | None:
    if state is None or isinstance(state, kind):
        return state
    # Only the adapter that read a transcript can interpret its state; a writer
    # of another format must be reached through `convert`, which drops it.
    raise TypeError(
        f"internal error: {holder} carries {type(state).__name__}, "
        f"not the {kind.__name__} its writer reads"
    )
