"""What every transcript format adapter provides, and the options it reads with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ctxpack.transcript import Transcript

BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class ReadOptions:
    skip_invalid: bool = False
    # Dotted path to the message list inside each record ("traj", "a.b.-1").
    messages_key: str | None = None
    include_sidechains: bool = False


class FormatAdapter(Protocol):
    name: str
    description: str
    writable: bool

    def detect(self, head: bytes) -> bool:
        """True when the start of a file looks like this format."""
        ...

    def read(self, data: bytes, *, path: str, options: ReadOptions) -> Transcript: ...

    def write(self, transcript: Transcript) -> bytes: ...


def split_lines(data: bytes) -> tuple[list[bytes], bool]:
    """Split on b"\\n" only; say whether the data ended with one."""
    if not data:
        return [], False
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
        return lines, True
    return lines, False


def join_lines(lines: list[bytes], *, final_newline: bool) -> bytes:
    out = b"\n".join(lines)
    return out + b"\n" if final_newline and lines else out
