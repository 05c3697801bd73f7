"""Plain data of the archive: a recorded compaction, sizes, ages, and the
byte rules for restoring a file that grew after compaction."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NotRequired, TypedDict

import orjson

from ctxpack.archive.db import ref_of_sha
from ctxpack.archive.packing import Packed
from ctxpack.errors import UsageError
from ctxpack.refs import Blob, sha256_hex


@dataclass(frozen=True)
class Compaction:
    id: str
    created: datetime
    source_path: str
    input_sha256: str
    input_size: int
    output_sha256: str
    output_size: int
    blobs: tuple[str, ...]  # sha256 of each pruned output / summarized middle, in order
    settings: dict[str, Any]
    report: dict[str, Any]

    @property
    def input_ref(self) -> str:
        return ref_of_sha(self.input_sha256)

    @property
    def blob_refs(self) -> list[str]:
        return [ref_of_sha(sha) for sha in self.blobs]

    @property
    def tokens_before(self) -> int | None:
        value = self.report.get("tokens_before")
        return value if isinstance(value, int) else None

    @property
    def tokens_after(self) -> int | None:
        value = self.report.get("tokens_after")
        return value if isinstance(value, int) else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "created": self.created.isoformat(),
            "source_path": self.source_path,
            "input_ref": self.input_ref,
            "input_sha256": self.input_sha256,
            "input_size": self.input_size,
            "output_sha256": self.output_sha256,
            "output_size": self.output_size,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "blob_refs": self.blob_refs,
            "settings": self.settings,
            "report": self.report,
        }


class CompactionParts(TypedDict):
    """What the archive stores of one compaction besides its report."""

    source_path: str
    input_bytes: bytes
    output_bytes: bytes
    # The pruned outputs and summarized turns the output cites.
    blobs: list[Blob]
    settings: dict[str, Any]
    # Where each blob came from, where known (the first ones).
    origins: NotRequired[Sequence[Origin | None]]
    # The input, packed already (packing.packed_ahead of input_bytes).
    input_packed: NotRequired[Packed | None]


@dataclass(frozen=True, slots=True)
class Origin:
    """Where an archived blob came from in the transcript it was cut from.
    (Slots: a long session's record holds one for each of its messages.)"""

    kind: str  # TOOL_OUTPUT, MESSAGE or SUMMARIZED_TURNS
    session: int  # the session's position in its file
    session_label: str = ""
    # The message's index in its session; for summarized turns, the first one.
    message: int | None = None
    # Summarized turns: the index after the last one.
    end: int | None = None
    role: str = ""
    tool: str = ""
    call: str = ""  # the call as pruning names it: "Bash `pytest -x`"
    command: str = ""
    paths: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The fields that say something (the stored and returned form): no
        empty text, no missing index, no empty list. (A long session's record
        makes one for each of its messages.)"""
        fields: dict[str, Any] = {"kind": self.kind} if self.kind else {}
        fields["session"] = self.session
        if self.session_label:
            fields["session_label"] = self.session_label
        if self.message is not None:
            fields["message"] = self.message
        if self.end is not None:
            fields["end"] = self.end
        for key, text in (
            ("role", self.role),
            ("tool", self.tool),
            ("call", self.call),
            ("command", self.command),
        ):
            if text:
                fields[key] = text
        if self.paths:
            fields["paths"] = list(self.paths)
        return fields

    @classmethod
    def from_dict(cls, value: dict[str, Any]) -> Origin:
        def text(key: str) -> str:
            item = value.get(key)
            return item if isinstance(item, str) else ""

        def number(key: str) -> int | None:
            item = value.get(key)
            return item if isinstance(item, int) else None

        paths = value.get("paths")
        return cls(
            kind=text("kind"),
            session=number("session") or 0,
            session_label=text("session_label"),
            message=number("message"),
            end=number("end"),
            role=text("role"),
            tool=text("tool"),
            call=text("call"),
            command=text("command"),
            paths=tuple(p for p in paths if isinstance(p, str)) if isinstance(paths, list) else (),
        )


TOOL_OUTPUT = "tool output"
MESSAGE = "message"
SUMMARIZED_TURNS = "summarized turns"


@dataclass(frozen=True)
class ArchiveStats:
    compactions: int
    blobs: int
    raw_bytes: int  # uncompressed size of all blobs
    stored_bytes: int  # as stored, after compression


_AGE = re.compile(r"^\s*(\d+)\s*([hdw])\s*$", re.IGNORECASE)
_AGE_UNIT = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}


def parse_age(text: str) -> timedelta:
    """`30d`, `12h`, `2w` -> timedelta."""
    match = _AGE.match(text)
    if not match:
        raise UsageError(f"cannot read the age {text!r}: use a number and h, d or w, e.g. 30d")
    return int(match.group(1)) * _AGE_UNIT[match.group(2).lower()]


def compaction_id(input_sha: str, output_sha: str) -> str:
    # The same input compacted to the same output is the same compaction:
    # recording it again refreshes it instead of piling up duplicates.
    return sha256_hex(f"{input_sha}:{output_sha}".encode())[:16]


def join_appended(original: bytes, appended: bytes, *, output_ended_with_newline: bool) -> bytes:
    """The original followed by lines appended after compaction, as separate lines."""
    if not output_ended_with_newline and appended.startswith(b"\n"):
        appended = appended[1:]  # that newline only ended the compacted file's last line
    if appended and original and not original.endswith(b"\n"):
        return original + b"\n" + appended
    return original + appended


def dump_json(value: dict[str, Any]) -> str:
    options = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
    return orjson.dumps(value, option=options, default=str).decode()


def load_json(text: str) -> dict[str, Any]:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
