"""A provider's prompt cache: what it can still serve after a compaction, and
where the cache breakpoints of a Claude request fall.

A provider caches a request by its prefix, so a compacted transcript keeps
its cache warm only up to the first message that changed. Messages are
compared whole, as ctxpack reads them (role, content, tool calls and their
ids, reasoning: every field, as canonical JSON), at the same positions in
the session; the prefix ends at the first message that differs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import orjson

from ctxpack import messages as m

if TYPE_CHECKING:
    from ctxpack.tokens.counter import TokenCounter
    from ctxpack.transcript import Message

# A Claude request caches at most four breakpoints: the end of the system
# prompt and, as a client that caches its conversation sets them, the last
# three messages.
CACHED_MESSAGES = 3


@dataclass(frozen=True)
class CachePrefix:
    messages: int  # leading messages unchanged
    tokens: int  # their tokens


def rendered(msg: Message) -> bytes:
    """A message as the model sees it, byte for byte comparable."""
    return orjson.dumps(msg, option=orjson.OPT_SORT_KEYS, default=str)


def cache_prefix(
    original: list[Message], compacted: list[Message], *, counter: TokenCounter
) -> CachePrefix:
    """The leading messages of `compacted` identical to `original`'s, and their tokens."""
    same = 0
    for before, after in zip(original, compacted, strict=False):
        if before is not after and rendered(before) != rendered(after):
            break
        same += 1
    return CachePrefix(messages=same, tokens=counter.messages(compacted[:same]))


@dataclass(frozen=True)
class Breakpoint:
    index: int  # the message the breakpoint follows, by its index in the session
    role: str
    # Tokens from the start of the request through this message: the prefix
    # this breakpoint caches.
    position: int
    system: bool  # the end of the system prompt, rather than a message


def breakpoints(messages: list[Message], *, counter: TokenCounter) -> list[Breakpoint]:
    """The breakpoints of a Claude request made of `messages`: after the system
    prompt (the leading system messages, which the request sends apart as
    `system`), and after each of the last three messages that follow it."""
    system = 0
    while system < len(messages) and m.is_system(messages[system]):
        system += 1
    last = range(max(system, len(messages) - CACHED_MESSAGES), len(messages))
    marked = {*([system - 1] if system else []), *last}
    found: list[Breakpoint] = []
    position = 0
    counter.prime(messages)
    for index, msg in enumerate(messages[: max(marked, default=-1) + 1]):
        position += counter.message(msg)
        if index in marked:
            found.append(Breakpoint(index, m.role(msg), position, index < system))
    return found
