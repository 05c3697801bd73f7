"""Relevant Files: every path of the middle once, under its fullest
spelling, with what was done to it ("- src/a.py — created, edited"); an
update reads such items back (file_item) to merge them with the new turns'."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import TypeVar

from ctxpack.facts.paths import same_files
from ctxpack.redact import mask
from ctxpack.summarize.offline.fit import Item
from ctxpack.summarize.offline.marks import REMOVED, REVERTED, THERE
from ctxpack.summarize.offline.scan import Scan

# A removal or a revert is the file's state now: it is said last.
MARK_ORDER = (
    *("created", "edited", "read", "create failed", "edit failed", "read failed"),
    *(REVERTED, REMOVED),
)
MENTIONED = "mentioned"
T = TypeVar("T")
_FILE_ITEM_RE = re.compile(r"^[-*]\s+(.+?) — ([\w ,-]+)$")


def file_marks(scan: Scan) -> dict[str, list[str]]:
    """Every path of the middle with what was done to it, in_rank."""
    touched = sorted(scan.file_touch, key=lambda p: -scan.file_touch[p])
    ranked = in_rank([(touched, scan.facts.paths)])
    marks = {path: scan.file_marks.get(path, []) for path in ranked}
    return one_per_file(marks, apart=scan.moves)


def in_rank(lists: Sequence[tuple[Sequence[T], Sequence[T]]]) -> list[T]:
    """How Relevant Files ranks the files of turns: those the tools named, most
    recent first, then those only words named. `lists`: each stretch of turns'
    two, the latest stretch first."""
    return [
        *(one for named, _ in lists for one in named),
        *(one for _, said in lists for one in said),
    ]


def named_by_tools(marks: Sequence[list[str]]) -> int:
    """How many of a record's files (their marks, as listed) in_rank put with
    those the tools named: up to the last with a mark beyond "mentioned" (one
    a tool named and did nothing to reads back as only mentioned)."""
    marked = [at for at, found in enumerate(marks) if found != [MENTIONED]]
    return marked[-1] + 1 if marked else 0


def one_per_file(
    marks: dict[str, list[str]], *, apart: Collection[tuple[str, str]] = ()
) -> dict[str, list[str]]:
    """Paths with what was done to them, each file once under its fullest
    spelling (facts.paths.same_files) where the first of its spellings stood,
    with all their marks; a path with none was only mentioned. The two of a
    pair `apart` (a move's: `mv a.py lib/` takes a.py away and makes
    lib/a.py) are two files."""
    fullest = same_files(marks)
    own: set[str] = set()
    for one, other in apart:
        into = fullest.get(one, one)
        if into == fullest.get(other, other):
            own.add(other if into == one else one)
    out: dict[str, list[str]] = {}
    for path, found in marks.items():
        merged = out.setdefault(path if path in own else fullest.get(path, path), [])
        merged.extend(mark for mark in found if mark not in merged)
    for path, found in out.items():
        if len(found) > 1 and MENTIONED in found:
            found.remove(MENTIONED)
        out[path] = ordered_marks(found) or [MENTIONED]
    return out


def kept_apart(marks: dict[str, list[str]]) -> set[tuple[str, str]]:
    """The spellings a record lists as two files though same_files makes them
    one, one removed and the other there: a move's, one_per_file's `apart`."""
    fullest = same_files(marks)
    return {
        (path, into)
        for path, into in fullest.items()
        if {_gone(marks[path]), _gone(marks[into])} == {True, False}
    }


def _gone(marks: list[str]) -> bool | None:
    """Whether marks say a file is gone (True) or there (False); None: neither."""
    return True if REMOVED in marks else False if THERE.intersection(marks) else None


def ordered_marks(marks: list[str]) -> list[str]:
    return sorted(marks, key=lambda mark: MARK_ORDER.index(mark) if mark in MARK_ORDER else 99)


def file_items(marks: dict[str, list[str]]) -> list[Item]:
    return [Item(f"- {mask(path)} — {', '.join(found)}") for path, found in marks.items()]


def file_item(text: str) -> tuple[str, list[str]] | None:
    """The path and marks of an item file_items wrote; None for any other."""
    found = _FILE_ITEM_RE.match(text)
    if not found:
        return None
    return found.group(1), [mark for part in found.group(2).split(",") if (mark := part.strip())]
