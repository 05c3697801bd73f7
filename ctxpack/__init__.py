"""ctxpack: offline compactor for AI-agent conversation transcripts.

The library in a few names (loaded on first use, so that `import ctxpack` and
the command line stay fast):

    transcript = ctxpack.read(data, path="session.jsonl")
    counter = ctxpack.TokenCounter()
    result, report = ctxpack.compress_transcript(
        transcript, counter=counter, settings=ctxpack.CompressSettings(force=True)
    )
    out = ctxpack.write(result, counter=counter)

`run_file` is the same path the command line takes for one file: read, the
stage, write, archive.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ctxpack.formats import read, write
    from ctxpack.formats.base import ReadOptions
    from ctxpack.pipeline.compaction import CompressSettings, compress_transcript
    from ctxpack.pipeline.run import FileJob, run_file
    from ctxpack.pipeline.stages import Compress
    from ctxpack.tokens.counter import TokenCounter
    from ctxpack.transcript import Session, Transcript

__version__ = "0.1.0"

__all__ = [
    "Compress",
    "CompressSettings",
    "FileJob",
    "ReadOptions",
    "Session",
    "TokenCounter",
    "Transcript",
    "__version__",
    "compress_transcript",
    "read",
    "run_file",
    "write",
]

# Public name -> the module that defines it.
_PUBLIC = {
    "read": "ctxpack.formats",
    "write": "ctxpack.formats",
    "ReadOptions": "ctxpack.formats.base",
    "CompressSettings": "ctxpack.pipeline.compaction",
    "compress_transcript": "ctxpack.pipeline.compaction",
    "FileJob": "ctxpack.pipeline.run",
    "run_file": "ctxpack.pipeline.run",
    "Compress": "ctxpack.pipeline.stages",
    "TokenCounter": "ctxpack.tokens.counter",
    "Session": "ctxpack.transcript",
    "Transcript": "ctxpack.transcript",
}


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'ctxpack' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])
