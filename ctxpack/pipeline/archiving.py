"""Recording a finished run in the archive, so that it can be undone."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxpack import messages as m
from ctxpack.archive.db import resolve_path
from ctxpack.archive.packing import LARGE_BLOB, Packed, packed_ahead
from ctxpack.archive.store import Archive
from ctxpack.archive.types import MESSAGE, TOOL_OUTPUT, CompactionParts, Origin
from ctxpack.errors import CtxpackError, OutputError
from ctxpack.refs import Blob
from ctxpack.sessionindex import SessionIndex
from ctxpack.tokens import forked
from ctxpack.transcript import Message, Transcript

if TYPE_CHECKING:
    from ctxpack.pipeline.compaction import CompressSettings


def replaced_texts(
    original: Transcript, result: Transcript, *, indexes: list[SessionIndex] | None = None
) -> list[tuple[Blob, Origin]]:
    """The text of every original message the run replaced or removed (what the
    refs in pruning placeholders point at), and where each one was.
    `indexes`: the run's index of each original session."""
    blobs: list[tuple[Blob, Origin]] = []
    # Equal texts share one copy of their bytes: pruning replaces an output
    # repeated later in the session, so a long session removes many texts
    # that are the same, and each would otherwise be held encoded until stored.
    encoded: dict[str, Blob] = {}
    for number, (before, after) in enumerate(zip(original.sessions, result.sessions, strict=True)):
        kept = {id(msg) for msg in after.messages}
        index = indexes[number] if indexes is not None else None
        for at, msg in enumerate(before.messages):
            if id(msg) in kept:
                continue
            text = m.text(msg)
            if not text:
                continue
            if index is None or index.messages is not before.messages:
                index = SessionIndex(before.messages)
            origin = _origin(msg, index, number=number, label=before.label, at=at)
            data = encoded.get(text)
            if data is None:
                data = encoded[text] = text.encode("utf-8", "surrogatepass")
            blobs.append((data, origin))
    return blobs


def _origin(msg: Message, index: SessionIndex, *, number: int, label: str, at: int) -> Origin:
    """Where the message was, its role and, for a tool result, its call."""
    if not m.is_tool_result(msg):
        return Origin(
            kind=MESSAGE, session=number, session_label=label, message=at, role=m.role(msg)
        )
    call = index.call_info(at)
    return Origin(
        kind=TOOL_OUTPUT,
        session=number,
        session_label=label,
        message=at,
        role=m.role(msg),
        tool=call.name,
        call=call.label,
        command=call.command,
        paths=call.paths,
    )


@dataclass(frozen=True)
class Kept:
    """What the archive keeps of a run besides its input and output."""

    settings: dict[str, Any] = field(default_factory=dict)  # never an API key
    report: dict[str, Any] = field(default_factory=dict)
    # Texts the output refers to but no longer holds (summarized turns), and
    # where they were.
    blobs: list[tuple[Blob, Origin]] = field(default_factory=list)


@dataclass(frozen=True)
class Record:
    """One compaction as the archive stores it, in plain data: made where the
    file was compacted, stored by the one process that writes the archive."""

    source_path: str
    input_bytes: bytes
    output_bytes: bytes
    blobs: list[Blob]
    origins: list[Origin]
    settings: dict[str, Any]
    report: dict[str, Any]
    # The input packed already (input_packing), or None: packed when stored.
    input_packed: Packed | None = None

    def parts(self) -> CompactionParts:
        """What the archive stores of it besides the report."""
        return {
            "source_path": self.source_path,
            "input_bytes": self.input_bytes,
            "output_bytes": self.output_bytes,
            "blobs": self.blobs,
            "origins": self.origins,
            "settings": self.settings,
            "input_packed": self.input_packed,
        }


def run_record(
    *,
    original: Transcript,
    result: Transcript,
    output: bytes,
    kept: Kept,
    replaced: list[tuple[Blob, Origin]] | None = None,
    input_packed: Packed | None = None,
) -> Record | None:
    """What the archive keeps of a run; None when nothing changed (there is
    nothing to undo). `replaced`: replaced_texts(original, result), when the
    run already found them; `input_packed`: the input, packed already."""
    if output == original.raw:
        return None
    if replaced is None:
        replaced = replaced_texts(original, result)
    cited = [*replaced, *kept.blobs]
    return Record(
        source_path=original.path,
        input_bytes=original.raw,
        output_bytes=output,
        blobs=[blob for blob, _ in cited],
        origins=[origin for _, origin in cited],
        settings=kept.settings,
        report=kept.report,
        input_packed=input_packed,
    )


# An input this large is packed for the archive from the start of the run, in
# a child of its own at the lowest priority: it takes the time a core has spare
# while the run works in one process.
PACK_AHEAD_MIN_BYTES = LARGE_BLOB


@contextlib.contextmanager
def input_packing(data: bytes) -> Iterator[Callable[[], Packed | None]]:
    """For a run that archives its input: a large one packed for the archive
    in the background; the body gets a function that waits for it (None:
    packed when stored)."""
    if len(data) < PACK_AHEAD_MIN_BYTES:
        yield lambda: None
        return
    with forked.started(lambda: packed_ahead(data), background=True) as packed:
        yield packed


class Archives:
    """The archives one process writes over a batch, each opened once: opening
    one (its schema check) and closing it (a checkpoint of its log, with its
    fsyncs) cost more than storing a small file's record."""

    def __init__(self) -> None:
        self._open: dict[Path, Archive] = {}

    def get(self, path: str | None) -> Archive:
        """The archive at `path` (or its default, as Archive.open finds it), opened on first use."""
        where = resolve_path(path)
        archive = self._open.get(where)
        if archive is None:
            archive = self._open[where] = Archive.open(where)
        return archive

    def close(self) -> None:
        for archive in self._open.values():
            archive.close()
        self._open.clear()


def store(archive: Archive, record: Record) -> str:
    """Record it; storing the same record again refreshes it instead of adding a second."""
    return archive.record_compaction(report=record.report, **record.parts())


class Recording:
    """A run's record written into its archive while the run still works on
    its report (the retention check in another process), in a transaction
    left open until `commit` gives the report: the archive's writing overlaps
    that work instead of following it. Nothing is stored unless committed."""

    def __init__(self, archive_path: str | None, record: Record) -> None:
        with archiving():
            self._archive = Archive.open(archive_path)
            try:
                self._open = self._archive.begin_compaction(**record.parts())
            except BaseException:
                self._archive.close()
                raise

    def commit(self, report: dict[str, Any]) -> None:
        try:
            with archiving():
                self._open.commit(report)
        finally:
            self._archive.close()

    def abandon(self) -> None:
        self._open.rollback()
        self._archive.close()


@contextlib.contextmanager
def archiving() -> Iterator[None]:
    """A run that cannot be archived cannot be restored: it is an error, before
    the output is written; --no-archive is the way to run without one."""
    try:
        yield
    except CtxpackError as exc:
        raise OutputError(
            f"not archived, so nothing was written ({exc.describe()});"
            " --no-archive skips the archive"
        ) from None


def record_run(
    *, archive_path: str | None, original: Transcript, result: Transcript, output: bytes, kept: Kept
) -> str | None:
    """Store the run; None when nothing changed (there is nothing to undo)."""
    record = run_record(original=original, result=result, output=output, kept=kept)
    if record is None:
        return None
    with Archive.open(archive_path) as archive:
        return store(archive, record)


def settings_record(settings: CompressSettings) -> dict[str, Any]:
    """What the archive keeps of the settings: never the API key."""
    budget = settings.budget
    return {
        "context_length": budget.context_length,
        "threshold": budget.threshold,
        "target_ratio": budget.target_ratio,
        "protect_first": budget.protect_first,
        "protect_last": budget.protect_last,
        "tail_tokens": budget.tail_tokens,
        "force": settings.force,
        "prune": settings.prune != "no-prune",
        "prune_only": settings.prune == "prune-only",
        "focus": settings.focus,
        "redact": settings.redact,
        "recall": settings.recall,
        "model": settings.llm.model if settings.llm else None,
        "engine": settings.engine,
        "summarizer": settings.summarizer,
        "system_note": settings.system_note,
    }
