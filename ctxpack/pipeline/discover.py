"""Finding the files of a batch: the paths given and the transcripts under the directories given."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ctxpack import files, formats
from ctxpack.errors import InputError

TRANSCRIPT_SUFFIXES = (".jsonl", ".json", ".traj", ".ndjson")


@dataclass
class Found:
    """The files of a batch and, by reason, how many in its directories were skipped."""

    files: list[tuple[str, str]] = field(default_factory=list)  # (file, path relative to root)
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def discover(
    paths: list[str], *, include: tuple[str, ...] = (), exclude: tuple[str, ...] = ()
) -> Found:
    """The files given, and the files under the directories given.

    Directories are walked recursively. A file is kept when its name matches
    an --include glob (by default, a transcript suffix), no --exclude glob,
    and its content looks like a transcript; the others are counted by reason.
    """
    found = Found()
    for given in paths:
        p = Path(given)
        if given == files.STDIO or not p.is_dir():
            found.files.append((given, p.name))
            continue
        for child in sorted(_walk(p)):
            rel = str(child.relative_to(p))
            reason = skip_reason(
                str(child), rel, read_head=_read_head, include=include, exclude=exclude
            )
            if reason is None:
                found.files.append((str(child), rel))
            else:
                found.skip(reason)
    return found


def _walk(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not hidden(d))
        for name in filenames:
            if not hidden(name):
                yield Path(dirpath) / name


def hidden(name: str) -> bool:
    """Dot files and folders (.git, an editor's swap files) are no part of a batch."""
    return name.startswith(".")


def _read_head(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(formats.HEAD_BYTES)


def _matches(rel: str, globs: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(rel, g) or fnmatch.fnmatch(Path(rel).name, g) for g in globs)


def skip_reason(
    path: str,
    rel: str,
    *,
    read_head: Callable[[str], bytes],
    include: tuple[str, ...],
    exclude: tuple[str, ...],
) -> str | None:
    """Why a file found in a directory is left out of the batch; None: it is kept.
    `read_head` gives the first formats.HEAD_BYTES of a path, or raises OSError."""
    if ".ctxpack." in Path(path).name:
        return "ctxpack output"
    if exclude and _matches(rel, exclude):
        return "--exclude"
    if include and not _matches(rel, include):
        return "not --include"
    if not include and not path.endswith(TRANSCRIPT_SUFFIXES):
        return f"not {'/'.join(TRANSCRIPT_SUFFIXES)}"
    try:
        head = read_head(path)
    except OSError:
        return "unreadable"
    if formats.is_binary(head):
        return "binary"
    try:
        formats.detect(head, path=path)
    except InputError:
        return "not a transcript"
    return None
