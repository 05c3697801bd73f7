"""Transcript formats: one adapter per format, registered in one table.

Reading detects the format from the content (most specific adapter first,
`openai` last): first from the head of the file, then, when no specific
adapter claims the head, from the whole document, whose telling keys may come
late (a SWE-agent `.traj` with `trajectory` before `history`, an OpenHands
record behind a large instruction). Writing uses the transcript's own format by default, which
puts unchanged bytes back exactly; naming another format converts: the target
is built from the messages alone (`convert`).
"""

from __future__ import annotations

from ctxpack import messages as m
from ctxpack.errors import InputError, UsageError
from ctxpack.formats.anthropic import AnthropicFormat
from ctxpack.formats.atif import ATIFFormat
from ctxpack.formats.base import BOM, FormatAdapter, ReadOptions, searching_whole
from ctxpack.formats.claude_code import ClaudeCodeFormat
from ctxpack.formats.claude_stream import ClaudeStreamFormat
from ctxpack.formats.codex import CodexFormat
from ctxpack.formats.gemini import GeminiFormat
from ctxpack.formats.openai import OpenAIFormat
from ctxpack.formats.opencode import OpencodeFormat
from ctxpack.formats.openhands import OpenHandsFormat
from ctxpack.formats.pi import PiFormat
from ctxpack.formats.sharegpt import ShareGPTFormat
from ctxpack.formats.swe_agent import SWEAgentFormat
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message, Session, Transcript

# Most specific first: detection takes the first adapter that claims the head.
REGISTRY: dict[str, FormatAdapter] = {
    adapter.name: adapter
    for adapter in (
        CodexFormat(),
        ClaudeStreamFormat(),
        ClaudeCodeFormat(),
        PiFormat(),
        ATIFFormat(),
        GeminiFormat(),
        OpencodeFormat(),
        OpenHandsFormat(),
        SWEAgentFormat(),
        ShareGPTFormat(),
        AnthropicFormat(),
        OpenAIFormat(),
    )
}

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


def detect(data: bytes, *, path: str, options: ReadOptions | None = None) -> FormatAdapter:
    head = data[len(BOM) : len(BOM) + HEAD_BYTES] if data.startswith(BOM) else data[:HEAD_BYTES]
    if not head.strip():
        return REGISTRY["openai"]
    if is_binary(head):
        raise InputError("a binary file, not text: not a transcript", path=path)
    specific = [a for name, a in REGISTRY.items() if name != "openai"]
    found = next((a for a in specific if a.detect(head)), None)
    if found is None and len(data) > len(head):
        # Searched in place: the bytes already read, never parsed twice.
        whole = data.removeprefix(BOM)
        with searching_whole(whole):
            found = next((a for a in specific if a.detect(whole)), None)
        head = whole
    if found is not None:
        return found
    if REGISTRY["openai"].detect(head) or (options is not None and options.messages_key):
        return REGISTRY["openai"]
    if len(data) >= HEAD_BYTES and head.lstrip()[:1] in (b"{", b"["):
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
