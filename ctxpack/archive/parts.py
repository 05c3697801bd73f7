"""Blobs stored as parts of another, their base (the compaction's input): the
summarized turns as its slices (slices.py), a replaced message's text as one
of its JSON strings (strings.py). Which base may be one, and which blobs are
its parts, are decided here once for both."""

from __future__ import annotations

import sqlite3

from ctxpack.archive import slices, strings
from ctxpack.archive.packing import Coded
from ctxpack.refs import Blob


def usable_base(
    conn: sqlite3.Connection, items: dict[str, Blob], todo: list[str], *, base: str | None
) -> bytes | None:
    """The bytes of `base` (one of `items`) when other blobs may be stored as
    parts of it: it is stored whole, or about to be. A base is never itself
    stored as parts of another, so that reading a blob takes at most one other."""
    if base is None or base not in items:
        return None
    if base not in todo:
        row = conn.execute("SELECT base FROM blobs WHERE sha256 = ?", (base,)).fetchone()
        if row is None or row[0] is not None:
            return None
    return bytes(items[base])  # the same object when it is bytes already


def parts_of_base(
    whole: bytes | None,
    items: dict[str, Blob],
    todo: list[str],
    *,
    base: str | None,
    packed: dict[str, Coded],
) -> dict[str, Coded]:
    """(codec, data) of each of `todo` stored as parts of `base`, whose bytes
    are `whole` (usable_base's): the summarized turns as its slices, a
    replaced message's text as one of its JSON strings. The others are
    packed whole. Reads no archive: it may run in a child process."""
    if whole is None:
        return {}
    others = [sha for sha in todo if sha != base]
    parts: dict[str, Coded] = {
        sha: (slices.CODEC, data)
        for sha, data in slices.sliced_items(items, others, base=whole).items()
    }
    loose = [sha for sha in others if sha not in parts and sha not in packed]
    parts.update(
        (sha, (strings.CODEC, data)) for sha, data in strings.located(whole, items, loose).items()
    )
    return parts
