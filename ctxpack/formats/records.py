"""Files of JSON records (anthropic, sharegpt): one record per line, or one
JSON document holding one record or an array of them.

Both shapes are written back in place: in a JSONL file only the lines of
changed records are re-serialized, each in its own line's style; in a
document, changed values replace their own byte spans (`jsonspans`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ctxpack.formats import jsoncodec, jsonspans
from ctxpack.formats.base import BOM, join_lines, split_lines


@dataclass(frozen=True)
class RecordLines:
    """A file of one JSON record per line."""

    lines: list[bytes]
    bom: bool
    final_newline: bool

    def write(self, changed: dict[int, dict[str, Any]]) -> bytes:
        """The file with the record on each line of `changed` replaced."""
        lines = list(self.lines)
        for index, record in changed.items():
            old = lines[index]
            new = jsonspans.detect_style(old).dumps(record)
            lines[index] = new + (b"\r" if old.endswith(b"\r") else b"")
        return (BOM if self.bom else b"") + join_lines(lines, final_newline=self.final_newline)


@dataclass(frozen=True)
class RecordDocument:
    """One JSON document: `body` is the file without its BOM, its root value
    starts at `start`, and new values are written in its `style`."""

    body: bytes
    start: int
    style: jsonspans.Style
    bom: bool

    @classmethod
    def of(cls, body: bytes, *, bom: bool) -> RecordDocument:
        start = jsonspans.skip_ws(body, 0)
        return cls(body=body, start=start, style=jsonspans.detect_style(body), bom=bom)

    def root(self) -> jsonspans.Span:
        return (self.start, jsonspans.value_end(self.body, self.start))

    def splice(self, edits: list[tuple[jsonspans.Span, bytes]]) -> bytes:
        return (BOM if self.bom else b"") + jsonspans.splice(self.body, edits)


def split_document(data: bytes) -> tuple[bytes, list[bytes], RecordLines]:
    """(the body without the BOM, its lines with content, the file as lines)."""
    bom = data.startswith(BOM)
    body = data[len(BOM) :] if bom else data
    lines, final_newline = split_lines(body)
    nonblank = [line for line in lines if line.strip()]
    return body, nonblank, RecordLines(lines=lines, bom=bom, final_newline=final_newline)


def one_per_line(nonblank: list[bytes]) -> bool:
    """Whether lines with content are records of their own (JSONL), not the
    lines of one document: there are several and the first parses alone."""
    if len(nonblank) < 2 or not nonblank[0].lstrip().startswith(b"{"):
        return False
    try:
        return isinstance(jsoncodec.loads(nonblank[0]), dict)
    except jsoncodec.JSONError:
        return False
