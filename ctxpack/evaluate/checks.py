"""The structural checks of `ctxpack eval` (tool pairs, the latest request, the
summary's headings and prefix) and the message views they share with it."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

import orjson

from ctxpack import markers
from ctxpack import messages as m
from ctxpack.align.boundaries import latest_user_index
from ctxpack.facts.match import collapse
from ctxpack.summarize.protocol import HEADINGS
from ctxpack.toolpairs import Pairing, ToolUse, calls_of, orphans, pair
from ctxpack.transcript import Message

_PREFIX_HEAD = markers.SUMMARY_PREFIX.split("\n", 1)[0]
# A quoted user request inside a summary: "> line" (see pipeline.summarizing._active_request).
_QUOTE_MARK = re.compile(r"^> ?", re.MULTILINE)


class Check(NamedTuple):
    name: str
    passed: bool
    detail: str


def visible_texts(messages: list[Message]) -> Iterator[str]:
    """What the model reads: message text and tool-call arguments, raw and decoded."""
    for index, msg in enumerate(messages):
        yield m.text(msg)
        for use in calls_of(msg, index):
            yield use.arguments
            # Decoded strings too: a multi-line command is escaped in the raw JSON.
            yield from strings_in(use.args())


def strings_in(value: Any) -> Iterator[str]:
    """Every string of a JSON value, in order, however deep."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)


def message_key(msg: Message) -> bytes:
    parts = [m.role(msg), msg.get("content"), msg.get("tool_calls"), msg.get("function_call")]
    return exact_copy(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS, default=str))


Shape = tuple[str, int, int, str | None]


def _shape(msg: Message) -> Shape:
    """A cheap digest that equal message_keys always share, and few unequal
    ones: the id of its first call tells apart the many messages of a long
    session that are one call and no text."""
    content, calls = msg.get("content"), msg.get("tool_calls")
    first = calls[0] if isinstance(calls, list) and calls else None
    call_id = first.get("id") if isinstance(first, dict) else None
    return (
        m.role(msg),
        len(content) if isinstance(content, str | list) else -1,
        len(calls) if isinstance(calls, list) else -1,
        call_id if isinstance(call_id, str) else None,
    )


class MessageSet:
    """Membership by message_key, the same message object counting without
    serializing it: a compaction keeps most messages as the very same objects."""

    def __init__(self, messages: list[Message]) -> None:
        self._ids = {id(msg) for msg in messages}
        # Each message's shape, in order: a caller that tests these same
        # messages against another set hands them on (holds) instead of
        # making each one again.
        self.shapes = [_shape(msg) for msg in messages]
        self._groups: dict[Shape, list[Message]] = {}
        for msg, shape in zip(messages, self.shapes, strict=True):
            self._groups.setdefault(shape, []).append(msg)
        self._keys: dict[Shape, set[bytes]] = {}

    def __contains__(self, msg: Message) -> bool:
        return self.holds(msg)

    def holds(self, msg: Message, shape: Shape | None = None) -> bool:
        """`msg in self`; `shape`: _shape(msg), when the caller has it."""
        if id(msg) in self._ids:
            return True
        if shape is None:
            shape = _shape(msg)
        group = self._groups.get(shape)
        if group is None:
            return False
        keys = self._keys.get(shape)
        if keys is None:
            keys = self._keys[shape] = {message_key(other) for other in group}
        return message_key(msg) in keys


def exact_copy(data: bytes) -> bytes:
    """An exact-size copy of orjson output that is kept: orjson's own buffer
    holds several kilobytes however short the output."""
    return memoryview(data).tobytes()


def orphan_check(
    original: list[Message], compacted: list[Message], *, original_pairing: Pairing | None = None
) -> Check:
    """Orphans the compaction introduced; ones the input already had are only noted.
    `original_pairing`: toolpairs.pair(original), when the caller has it already."""
    results, calls = orphans(compacted)
    old_results, old_calls = (original_pairing or pair(original)).orphans()
    old_result_keys = {message_key(original[i]) for i in old_results}
    old_call_keys = {_call_key(use) for use in old_calls}
    new_results = [i for i in results if message_key(compacted[i]) not in old_result_keys]
    new_calls = [use for use in calls if _call_key(use) not in old_call_keys]
    inherited = len(results) - len(new_results) + len(calls) - len(new_calls)
    also = f" ({inherited} already in the original)" if inherited else ""
    if new_results or new_calls:
        detail = (
            f"{len(new_results)} result(s) without a call, "
            f"{len(new_calls)} call(s) without a result{also}"
        )
        return Check("no_orphan_tool_pairs", False, detail)
    return Check("no_orphan_tool_pairs", True, f"every call and result pairs up{also}")


def _call_key(use: ToolUse) -> tuple[str, str, str]:
    return use.call_id, use.name, use.arguments


def latest_user_check(original: list[Message], compacted: list[Message], haystack: str) -> Check:
    name = "latest_user_message_kept"
    index = latest_user_index(original)
    if index is None:
        return Check(name, True, "the original has no user message")
    latest = original[index]
    if any(message_key(msg) == message_key(latest) for msg in compacted):
        return Check(name, True, f"message #{index} kept as it was")
    text = m.text(latest)
    ask = collapse(text)
    if not ask:
        return Check(name, False, f"message #{index} (no text) is gone")
    if ask in haystack:
        return Check(name, True, f"message #{index} found verbatim")
    unquoted = collapse(_QUOTE_MARK.sub("", "\n".join(visible_texts(compacted))))
    if collapse(_QUOTE_MARK.sub("", text)) in unquoted:
        return Check(name, True, f"message #{index} quoted verbatim")
    return Check(name, False, f"message #{index} is not in the compacted text: {_clip(ask)!r}")


def written_summaries(compacted: list[Message], original: MessageSet) -> list[Message]:
    """Summary messages the compaction wrote (not ones carried over unchanged)."""
    found = []
    for msg in compacted:
        if msg in original:
            continue
        body = m.text(msg)
        if (
            markers.is_summary(msg)
            or markers.SUMMARY_END in body
            or sum(1 for h in HEADINGS if _has_heading(body, h)) * 2 >= len(HEADINGS)
        ):
            found.append(msg)
    return found


def summary_checks(summaries: list[Message]) -> list[Check]:
    if not summaries:
        none = "no summary in the compacted transcript"
        return [Check("summary_headings", True, none), Check("reference_prefix", True, none)]
    lacking: list[str] = []
    unprefixed = 0
    for msg in summaries:
        body = m.text(msg)
        lacking.extend(h for h in HEADINGS if not _has_heading(body, h) and h not in lacking)
        unprefixed += _PREFIX_HEAD not in body
    headings = (
        Check("summary_headings", False, "missing: " + ", ".join(f"## {h}" for h in lacking))
        if lacking
        else Check("summary_headings", True, f"all {len(HEADINGS)} template headings present")
    )
    prefix = (
        Check("reference_prefix", False, f"{unprefixed} summary message(s) without the prefix")
        if unprefixed
        else Check("reference_prefix", True, "the reference-only prefix opens the summary")
    )
    return [headings, prefix]


def _has_heading(body: str, heading: str) -> bool:
    # Most messages tested hold no heading at all: one find answers for them.
    return "##" in body and _heading_line(heading).search(body) is not None


@functools.cache
def _heading_line(heading: str) -> re.Pattern[str]:
    return re.compile(rf"^##\s+{re.escape(heading)}\s*$", re.MULTILINE)


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
