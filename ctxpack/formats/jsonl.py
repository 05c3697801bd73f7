"""Typed-line JSONL files (Claude Code, Codex, stream-json): every line kept as
raw bytes next to its parsed object, so writers touch only the lines they edit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxpack.errors import MalformedRecord
from ctxpack.formats import jsoncodec
from ctxpack.formats.base import BOM, ReadOptions, join_lines, split_lines


@dataclass
class Lines:
    raw: list[bytes]
    # The parsed object of each line; None for blank or skipped lines.
    objs: list[dict[str, Any] | None]
    final_newline: bool
    bom: bool
    skipped: int = 0

    @classmethod
    def empty(cls) -> Lines:
        """The file a transcript built from messages alone is written into."""
        return cls(raw=[], objs=[], final_newline=True, bom=False)


def parse(data: bytes, *, path: str, options: ReadOptions) -> Lines:
    bom = data.startswith(BOM)
    raw, final_newline = split_lines(data[len(BOM) :] if bom else data)
    objs: list[dict[str, Any] | None] = []
    skipped = 0
    for index, line in enumerate(raw):
        if not line.strip():
            objs.append(None)
            continue
        try:
            obj = jsoncodec.loads(line)
            if not isinstance(obj, dict):
                raise jsoncodec.JSONError("a line must be a JSON object")
        except jsoncodec.JSONError as exc:
            if not options.skip_invalid:
                reason = str(exc)
                if index == len(raw) - 1 and not final_newline:
                    reason += " (the last line looks truncated)"
                raise MalformedRecord(reason, path=path, line=index + 1) from None
            skipped += 1
            objs.append(None)
            continue
        objs.append(obj)
    return Lines(raw=raw, objs=objs, final_newline=final_newline, bom=bom, skipped=skipped)


def dump(obj: Any, *, like: bytes = b"") -> bytes:
    """One line, compact; keeps a CR ending when the line it replaces had one."""
    return jsoncodec.dumps(obj) + (b"\r" if like.endswith(b"\r") else b"")


@dataclass
class Edits:
    """Line-level changes to a file: replacements, deletions and insertions."""

    replace: dict[int, bytes] = field(default_factory=dict)
    delete: set[int] = field(default_factory=set)
    before: dict[int, list[bytes]] = field(default_factory=dict)
    after: dict[int, list[bytes]] = field(default_factory=dict)
    append: list[bytes] = field(default_factory=list)

    def insert(self, lines: list[bytes], *, before: int | None, after: int | None = None) -> None:
        if before is not None:
            self.before.setdefault(before, []).extend(lines)
        elif after is not None:
            self.after.setdefault(after, []).extend(lines)
        else:
            self.append.extend(lines)

    def apply(self, doc: Lines) -> bytes:
        cr = b"\r" if doc.raw and doc.raw[0].endswith(b"\r") else b""

        def new(lines: list[bytes]) -> list[bytes]:
            return [line + cr for line in lines]

        out: list[bytes] = []
        for index, line in enumerate(doc.raw):
            out.extend(new(self.before.get(index, [])))
            if index not in self.delete:
                out.append(self.replace.get(index, line))
            out.extend(new(self.after.get(index, [])))
        out.extend(new(self.append))
        final = doc.final_newline or not doc.raw
        return (BOM if doc.bom else b"") + join_lines(out, final_newline=final)
