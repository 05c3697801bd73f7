"""What every transcript format adapter provides, and the options it reads with."""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, overload

from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import RawLine, Transcript

BOM = b"\xef\xbb\xbf"


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


_SPACE = b" \t\r\n\x0b\x0c"


def is_blank(line: bytes | memoryview) -> bool:
    # A JSONL line almost always starts with "{": only look further when not.
    return not line or (line[0] in _SPACE and not bytes(line).strip())


def split_document(data: bytes) -> tuple[bytes, list[bytes], list[bytes], dict[str, Any]]:
    """(body without the BOM, its lines, the lines with content, the layout that
    writes the same bytes back: BOM and final newline)."""
    bom = data.startswith(BOM)
    body = data[len(BOM) :] if bom else data
    lines, final_newline = split_lines(body)
    nonblank = [line for line in lines if line.strip()]
    return body, lines, nonblank, {"bom": bom, "final_newline": final_newline}


def join_lines(lines: Sequence[RawLine], *, final_newline: bool) -> bytes:
    out = b"\n".join(lines)
    return out + b"\n" if final_newline and lines else out
