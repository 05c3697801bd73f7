"""Recording a finished run in the archive, so that it can be undone."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ctxpack import messages as m
from ctxpack.archive.store import Archive
from ctxpack.refs import Blob
from ctxpack.transcript import Transcript

if TYPE_CHECKING:
    from ctxpack.pipeline.compaction import CompressSettings


def replaced_texts(original: Transcript, result: Transcript) -> list[Blob]:
    """The text of every original message the run replaced or removed: what the
    refs in pruning placeholders point at."""
    blobs: list[Blob] = []
    for before, after in zip(original.sessions, result.sessions, strict=True):
        kept = {id(msg) for msg in after.messages}
        for msg in before.messages:
            if id(msg) not in kept:
                text = m.text(msg)
                if text:
                    blobs.append(text.encode("utf-8", "surrogatepass"))
    return blobs


@dataclass(frozen=True)
class Kept:
    """What the archive keeps of a run besides its input and output."""

    settings: dict[str, Any] = field(default_factory=dict)  # never an API key
    report: dict[str, Any] = field(default_factory=dict)
    # Texts the output refers to but no longer holds (summarized turns).
    blobs: list[Blob] = field(default_factory=list)


def record_run(
    *, archive_path: str | None, original: Transcript, result: Transcript, output: bytes, kept: Kept
) -> str | None:
    """Store the run; None when nothing changed (there is nothing to undo)."""
    if output == original.raw:
        return None
    with Archive.open(archive_path) as archive:
        return archive.record_compaction(
            source_path=original.path,
            input_bytes=original.raw,
            output_bytes=output,
            blobs=[*replaced_texts(original, result), *kept.blobs],
            settings=kept.settings,
            report=kept.report,
        )


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
        "model": settings.llm.model if settings.llm else None,
    }
