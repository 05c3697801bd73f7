"""Transcript formats: one adapter per format, registered in one table.

Reading detects the format from the content, by the rules in `signs` (most
specific first, `openai` last): first from the head of the file, then, when no
specific rule claims the head, from the whole document, whose telling keys may
come late (a SWE-agent `.traj` with `trajectory` before `history`, an
OpenHands record behind a large instruction). Only the adapter of the format
found is imported. Writing uses the transcript's own format by default, which
puts unchanged bytes back exactly; naming another format converts: the target
is built from the messages alone (`convert`).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from ctxpack import messages as m
from ctxpack.errors import InputError, UsageError
from ctxpack.formats import signs
from ctxpack.formats.base import (
    BOM,
    Data,
    FormatAdapter,
    ReadOptions,
    first_byte,
    searching_whole,
    starts_with,
)
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message, Session, Transcript

# Each format's adapter (module, class), imported when a file of the format is
# read or written: telling a file's format reads only the rules in signs.
_ADAPTERS = {
    "codex": ("codex", "CodexFormat"),
    "claude-stream-json": ("claude_stream", "ClaudeStreamFormat"),
    "claude-code": ("claude_code", "ClaudeCodeFormat"),
    "pi": ("pi", "PiFormat"),
    "atif": ("atif", "ATIFFormat"),
    "gemini": ("gemini", "GeminiFormat"),
    "opencode": ("opencode", "OpencodeFormat"),
    "openhands": ("openhands", "OpenHandsFormat"),
    "swe-agent": ("swe_agent", "SWEAgentFormat"),
    "sharegpt": ("sharegpt", "ShareGPTFormat"),
    "anthropic": ("anthropic", "AnthropicFormat"),
    "openai": ("openai", "OpenAIFormat"),
}


class _Registry(Mapping[str, FormatAdapter]):
    """Every format by name, in the order detection tries them (signs.RULES);
    an adapter is made the first time it is looked up."""

    def __init__(self) -> None:
        self._made: dict[str, FormatAdapter] = {}

    def __getitem__(self, name: str) -> FormatAdapter:
        adapter = self._made.get(name)
        if adapter is None:
            module, cls = _ADAPTERS[name]
            made: FormatAdapter = getattr(importlib.import_module(f"{__name__}.{module}"), cls)()
            adapter = self._made[name] = made
        return adapter

    def __iter__(self) -> Iterator[str]:
        return iter(signs.RULES)

    def __len__(self) -> int:
        return len(signs.RULES)


REGISTRY: Mapping[str, FormatAdapter] = _Registry()

HEAD_BYTES = 64 * 1024


def get(name: str) -> FormatAdapter:
    try:
        return REGISTRY[name]
    except KeyError:
        raise UsageError(f"unknown format {name!r}; known: {', '.join(REGISTRY)}") from None


# Bytes text never holds (tab, newlines, form feed and escape aside).
_CONTROL = bytes(b for b in range(32) if b not in b"\t\n\r\f\x1b")


def is_binary(head: bytes) -> bool:
    """Not text: a NUL byte, or more than a few control bytes (an image, an archive).
    Text in a wrong encoding is still text: its reader names the bad line."""
    if b"\x00" in head:
        return True
    control = len(head) - len(head.translate(None, _CONTROL))
    return control > len(head) // 20


def detect(
    data: Data,
    *,
    path: str,
    options: ReadOptions | None = None,
    words: frozenset[bytes] | None = None,
) -> FormatAdapter:
    """The format of `data`. `words`: which clue words (base.Clue) the file
    holds, when the caller found them already."""
    bom = starts_with(data, BOM)
    head = data[len(BOM) : len(BOM) + HEAD_BYTES] if bom else data[:HEAD_BYTES]
    if not head.strip():
        return REGISTRY["openai"]
    if is_binary(head):
        raise InputError("a binary file, not text: not a transcript", path=path)
    specific = [(name, rule) for name, rule in signs.RULES.items() if name != "openai"]
    found = next((name for name, rule in specific if rule(head)), None)
    if found is None and len(data) > len(head):
        # Searched in place: the bytes already read, never parsed twice.
        whole = data[len(BOM) :] if bom else data
        with searching_whole(whole, words=words):
            found = next((name for name, rule in specific if rule(whole)), None)
    else:
        whole = head
    if found is not None:
        return REGISTRY[found]
    if signs.openai(whole) or (options is not None and options.messages_key):
        return REGISTRY["openai"]
    if len(data) >= HEAD_BYTES and first_byte(whole) in (b"{", b"["):
        # Only a head was given (a batch scan): the message list may lie beyond it.
        return REGISTRY["openai"]
    raise _unknown(path)


def _unknown(path: str) -> InputError:
    return InputError(
        f"cannot tell the transcript format (none of {', '.join(REGISTRY)} matched); "
        "name it with --from FORMAT",
        path=path,
    )


def read(
    data: bytes, *, path: str, fmt: str | None = None, options: ReadOptions | None = None
) -> Transcript:
    options = options or ReadOptions()
    adapter = get(fmt) if fmt else detect(data, path=path, options=options)
    try:
        transcript = adapter.read(data, path=path, options=options)
    except InputError:
        if fmt or adapter.name != "openai" or options.messages_key or adapter.detect(data):
            raise
        raise _unknown(path) from None
    if fmt and data.strip() and not any(s.messages for s in transcript.sessions):
        raise InputError(
            f"no messages read as --from {fmt}; {_guess(data)}: "
            "name the right format or drop --from",
            path=path,
        )
    return transcript


def _guess(data: bytes) -> str:
    try:
        return f"its content looks like {detect(data, path='').name}"
    except InputError:
        return f"its content matches none of {', '.join(REGISTRY)}"


def write(transcript: Transcript, *, counter: TokenCounter, fmt: str | None = None) -> bytes:
    adapter = get(fmt or transcript.format)
    if not adapter.writable:
        raise UsageError(f"format {adapter.name!r} can be read but not written; use --to openai")
    if adapter.name == transcript.format:
        return adapter.write(transcript, counter=counter)
    return convert(transcript, adapter.name, counter=counter)


def convert(transcript: Transcript, fmt: str, *, counter: TokenCounter) -> bytes:
    """The transcript written as `fmt`, built from its messages alone."""
    adapter = get(fmt)
    if not adapter.writable:
        raise UsageError(f"format {adapter.name!r} can be read but not written; use --to openai")
    sessions = [
        Session(messages=[portable(msg) for msg in s.messages], label=s.label)
        for s in transcript.sessions
    ]
    bare = Transcript(
        adapter.name, sessions, path=transcript.path, last_timestamp=transcript.last_timestamp
    )
    return adapter.write(bare, counter=counter)


def portable(msg: Message) -> Message:
    """A message without format-private carriers (Codex reasoning items)."""
    items = msg.get("reasoning")
    if not isinstance(items, list):
        return msg
    out = {k: v for k, v in msg.items() if k != "reasoning"}
    text = "\n".join(t for t in m.reasoning_texts({"reasoning": items}) if t)
    if text and "reasoning_content" not in out:
        out["reasoning_content"] = text
    return out
