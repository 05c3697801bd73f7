"""Editing a JSON document without re-serializing what did not change.

Writers of JSON documents (a ShareGPT array, a Cline message list) locate the
byte span of each array element or object member, keep the spans of unchanged
values verbatim, and serialize only changed values, in the document's own
style (indent width, ASCII escaping, separators).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_SCALAR = re.compile(rb"[^\s,\]}]*")
_WS = re.compile(rb"[ \t\r\n]*")
_INDENT = re.compile(rb"[\[{]\r?\n([ \t]+)\S")

Span = tuple[int, int]


@dataclass(frozen=True)
class Style:
    indent: int | None
    ensure_ascii: bool
    item_sep: str
    key_sep: str

    def dumps(self, value: Any, *, level: int = 0) -> bytes:
        """Serialize value as it would appear nested `level` containers deep."""
        text = json.dumps(
            value,
            indent=self.indent,
            ensure_ascii=self.ensure_ascii,
            separators=(self.item_sep, self.key_sep),
        )
        if self.indent and level:
            text = text.replace("\n", "\n" + " " * (self.indent * level))
        return text.encode("utf-8")


def detect_style(data: bytes) -> Style:
    head = data[:65536]
    found = _INDENT.search(head)
    indent = len(found.group(1).replace(b"\t", b"    ")) if found else None
    ensure_ascii = data.isascii() and b"\\u" in head
    if indent:
        return Style(indent=indent, ensure_ascii=ensure_ascii, item_sep=",", key_sep=": ")
    spaced = b'", "' in head or b'": ' in head
    return Style(
        indent=None,
        ensure_ascii=ensure_ascii,
        item_sep=", " if spaced else ",",
        key_sep=": " if spaced else ":",
    )


def skip_ws(data: bytes, pos: int) -> int:
    found = _WS.match(data, pos)
    return found.end() if found else pos


def value_end(data: bytes, pos: int) -> int:
    """The end offset of the JSON value starting at pos."""
    first = data[pos : pos + 1]
    if first == b'"':
        found = _STRING.match(data, pos)
        if not found:
            raise ValueError(f"unterminated string at byte {pos}")
        return found.end()
    if first not in (b"[", b"{"):
        scalar = _SCALAR.match(data, pos)
        return scalar.end() if scalar else pos
    depth = 0
    for token in _TOKEN.finditer(data, pos):
        ch = token.group()
        if ch in (b"[", b"{"):
            depth += 1
        elif ch in (b"]", b"}"):
            depth -= 1
            if depth == 0:
                return token.end()
    raise ValueError(f"unterminated container at byte {pos}")


def array_items(data: bytes, pos: int) -> list[Span]:
    """Spans of the elements of the array whose '[' is at pos."""
    assert data[pos : pos + 1] == b"["
    spans: list[Span] = []
    cursor = skip_ws(data, pos + 1)
    if data[cursor : cursor + 1] == b"]":
        return spans
    while True:
        end = value_end(data, cursor)
        spans.append((cursor, end))
        cursor = skip_ws(data, end)
        if data[cursor : cursor + 1] == b",":
            cursor = skip_ws(data, cursor + 1)
            continue
        return spans


def object_members(data: bytes, pos: int) -> dict[str, Span]:
    """Spans of the member values of the object whose '{' is at pos."""
    assert data[pos : pos + 1] == b"{"
    members: dict[str, Span] = {}
    cursor = skip_ws(data, pos + 1)
    while data[cursor : cursor + 1] == b'"':
        key_end = value_end(data, cursor)
        key = json.loads(data[cursor:key_end])
        cursor = skip_ws(data, key_end)
        cursor = skip_ws(data, cursor + 1)  # the colon
        end = value_end(data, cursor)
        members[key] = (cursor, end)
        cursor = skip_ws(data, end)
        if data[cursor : cursor + 1] != b",":
            break
        cursor = skip_ws(data, cursor + 1)
    return members


def render_array(data: bytes, span: Span, items: list[bytes], *, style: Style, level: int) -> bytes:
    """The array at span with its elements replaced by the given serialized items.

    Whitespace after '[', between elements and before ']' is copied from the
    original array so unchanged neighbours keep their exact layout.
    """
    start, end = span
    old = array_items(data, start)
    if not items:
        return b"[]"
    pad = " " * ((style.indent or 0) * level)
    if len(old) >= 2:
        sep = data[old[0][1] : old[1][0]]
    elif style.indent:
        sep = ("," + "\n" + pad).encode()
    else:
        sep = style.item_sep.encode()
    if old:
        lead = data[start + 1 : old[0][0]]
        trail = data[old[-1][1] : end - 1]
    elif style.indent:
        lead = ("\n" + pad).encode()
        trail = ("\n" + " " * (style.indent * (level - 1))).encode()
    else:
        lead = trail = b""
    return b"[" + lead + sep.join(items) + trail + b"]"


def splice(data: bytes, replacements: list[tuple[Span, bytes]]) -> bytes:
    """data with each span replaced (spans must not overlap)."""
    out: list[bytes] = []
    cursor = 0
    for (start, end), text in sorted(replacements, key=lambda r: r[0]):
        out.append(data[cursor:start])
        out.append(text)
        cursor = end
    out.append(data[cursor:])
    return b"".join(out)
