"""Recording a finished run in the archive, so that it can be undone."""

from __future__ import annotations

from typing import Any

from ctxpack import messages as m
from ctxpack.archive import Archive
from ctxpack.transcript import Transcript


def replaced_texts(original: Transcript, result: Transcript) -> list[bytes]:
    """The text of every original message the run replaced or removed: what the
    refs in pruning placeholders point at."""
    blobs: list[bytes] = []
    for before, after in zip(original.sessions, result.sessions, strict=True):
        kept = {id(msg) for msg in after.messages}
        for msg in before.messages:
            if id(msg) not in kept:
                text = m.text(msg)
                if text:
                    blobs.append(text.encode("utf-8", "surrogatepass"))
    return blobs


def record_run(
    *,
    archive_path: str | None,
    original: Transcript,
    result: Transcript,
    output_bytes: bytes,
    extra_blobs: list[bytes],
    settings: dict[str, Any],
    report: dict[str, Any],
) -> str | None:
    """Store the run; None when nothing changed (there is nothing to undo)."""
    if output_bytes == original.raw:
        return None
    with Archive.open(archive_path) as archive:
        return archive.record_compaction(
            source_path=original.path,
            input_bytes=original.raw,
            output_bytes=output_bytes,
            blobs=[*replaced_texts(original, result), *extra_blobs],
            settings=settings,
            report=report,
        )
