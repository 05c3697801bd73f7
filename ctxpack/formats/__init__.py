"""Transcript formats: one adapter per format, registered in one table."""

from __future__ import annotations

from ctxpack.errors import InputError, UsageError
from ctxpack.formats.base import BOM, FormatAdapter, ReadOptions
from ctxpack.formats.openai import OpenAIFormat
from ctxpack.transcript import Transcript

# Most specific first: detection takes the first adapter that claims the head.
REGISTRY: dict[str, FormatAdapter] = {adapter.name: adapter for adapter in (OpenAIFormat(),)}

HEAD_BYTES = 64 * 1024


def get(name: str) -> FormatAdapter:
    try:
        return REGISTRY[name]
    except KeyError:
        raise UsageError(f"unknown format {name!r}; known: {', '.join(REGISTRY)}") from None


def detect(data: bytes, *, path: str) -> FormatAdapter:
    head = data[:HEAD_BYTES].removeprefix(BOM)
    if not head.strip():
        return REGISTRY["openai"]
    for adapter in REGISTRY.values():
        if adapter.detect(head):
            return adapter
    if head.lstrip()[:1] in (b"{", b"["):
        # A JSON document whose message list lies beyond the head (big records).
        return REGISTRY["openai"]
    raise InputError("cannot tell the transcript format; name it with --from", path=path)


def read(
    data: bytes, *, path: str, fmt: str | None = None, options: ReadOptions | None = None
) -> Transcript:
    adapter = get(fmt) if fmt else detect(data, path=path)
    return adapter.read(data, path=path, options=options or ReadOptions())


def write(transcript: Transcript, *, fmt: str | None = None) -> bytes:
    adapter = get(fmt or transcript.format)
    if not adapter.writable:
        raise UsageError(f"format {adapter.name!r} can be read but not written; use --to openai")
    return adapter.write(transcript)


__all__ = ["REGISTRY", "FormatAdapter", "ReadOptions", "detect", "get", "read", "write"]
