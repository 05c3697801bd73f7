"""Files of JSON records (anthropic, sharegpt): one record per line, or one
JSON document holding one record or an array of them.

Both shapes are written back in place: in a JSONL file only the lines of
changed records are re-serialized, each in its own line's style; in a
document, changed values replace their own byte spans (`jsonspans`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ctxpack.errors import InputError, MalformedRecord
from ctxpack.formats import jsoncodec, jsonspans
from ctxpack.formats.base import BOM, ReadOptions, join_lines, split_lines
from ctxpack.transcript import Session


@dataclass(frozen=True)
class RecordLines:
    """A file of one JSON record per line."""

    lines: list[bytes]
    bom: bool
    final_newline: bool

    def read(
        self, session: Callable[[Any, int], Session], *, path: str, options: ReadOptions
    ) -> tuple[list[Session], int]:
        """The session of each record (from the record and its line index),
        and how many invalid lines were skipped; a record `session` rejects
        with ValueError is invalid."""
        sessions: list[Session] = []
        skipped = 0
        for number, line in enumerate(self.lines):
            if not line.strip():
                continue
            try:
                sessions.append(session(jsoncodec.loads(line), number))
            except (ValueError, jsoncodec.JSONError) as exc:
                if not options.skip_invalid:
                    raise MalformedRecord(str(exc), path=path, line=number + 1) from None
                skipped += 1
        return sessions, skipped

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
    def read(cls, body: bytes, *, bom: bool, path: str) -> tuple[RecordDocument, Any]:
        """The document and its parsed value."""
        try:
            value = jsoncodec.loads(body)
        except jsoncodec.JSONError as exc:
            raise InputError(str(exc), path=path, line=exc.line) from None
        start = jsonspans.skip_ws(body, 0)
        return cls(body=body, start=start, style=jsonspans.detect_style(body), bom=bom), value

    def root(self) -> jsonspans.Span:
        return (self.start, jsonspans.value_end(self.body, self.start))

    def splice(self, edits: list[tuple[jsonspans.Span, bytes]]) -> bytes:
        return (BOM if self.bom else b"") + jsonspans.splice(self.body, edits)


def open_file(data: bytes, *, path: str) -> RecordLines | tuple[RecordDocument, Any]:
    """The file as one record per line (JSONL: several lines with content,
    the first parsing alone as an object), or as one document and its value."""
    bom = data.startswith(BOM)
    body = data[len(BOM) :] if bom else data
    lines, final_newline = split_lines(body)
    nonblank = [line for line in lines if line.strip()]
    if _one_per_line(nonblank):
        return RecordLines(lines=lines, bom=bom, final_newline=final_newline)
    return RecordDocument.read(body, bom=bom, path=path)


def _one_per_line(nonblank: list[bytes]) -> bool:
    if len(nonblank) < 2 or not nonblank[0].lstrip().startswith(b"{"):
        return False
    try:
        return isinstance(jsoncodec.loads(nonblank[0]), dict)
    except jsoncodec.JSONError:
        return False
