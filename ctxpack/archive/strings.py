"""Blobs stored as a JSON string of another blob: the text of a message that a
compaction replaced is, in a JSON transcript, one string of the input archived
beside it, so the archive keeps where that string is (16 bytes) instead of a
compressed copy of the text.

A text is looked for as orjson writes it. A transcript written with other
escapes (a \\u escape for every non-ASCII character, an escaped slash) does not
hold it in that form, and its texts are packed whole as before. Reading one
back parses those bytes of the base as JSON, and checks its sha256 like any
blob's.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping

import orjson

from ctxpack.refs import Blob

CODEC = "string"
# Shorter texts are packed whole: a location costs about as much as they do.
MIN_SIZE = 64
# The texts come in the order of their messages: each is looked for from where
# the last one was found, this far ahead at most.
WINDOW = 1 << 22
_LOCATION = struct.Struct("<qq")


def located(base: bytes, items: Mapping[str, Blob], todo: Iterable[str]) -> dict[str, bytes]:
    """The location in `base` of each of `todo` that is a JSON string there,
    packed, by sha. A text not found within the window after the last one is
    left out (packed whole by the caller); the searches that find nothing read
    at most twice the base in all, so the cost stays linear."""
    out: dict[str, bytes] = {}
    cursor, budget = 0, 2 * len(base)
    for sha in todo:
        if budget <= 0:
            break
        literal = _literal(items[sha])
        if literal is None:
            continue
        high = min(cursor + WINDOW + len(literal), len(base))
        at = base.find(literal, cursor, high)
        if at < 0:
            budget -= high - cursor
            continue
        budget -= at - cursor
        cursor = at + len(literal)
        out[sha] = _LOCATION.pack(at, cursor)
    return out


def _literal(data: Blob) -> bytes | None:
    """`data` (a text's UTF-8) as orjson writes it as a JSON string; None for
    data that is no such text, or too short to be worth a location."""
    if not isinstance(data, bytes) or len(data) < MIN_SIZE:
        return None
    # Strict UTF-8 holds no lone surrogate, and orjson reads back exactly the
    # text it wrote: decode() gives these very bytes again, unchecked here (a
    # read checks every blob's sha256 all the same).
    try:
        return orjson.dumps(data.decode("utf-8"))
    except (UnicodeDecodeError, orjson.JSONEncodeError):
        return None


def decode(packed: bytes, base: bytes) -> bytes:
    """The text a location stands for; ValueError when damaged."""
    if len(packed) != _LOCATION.size:
        raise ValueError("a string's location is truncated")
    start, stop = _LOCATION.unpack(packed)
    if not 0 <= start < stop <= len(base):
        raise ValueError("a string's location lies outside its base")
    return _text(base[start:stop])


def _text(literal: bytes) -> bytes:
    value = orjson.loads(literal)
    if not isinstance(value, str):
        raise ValueError("a string's location holds no JSON string")
    return value.encode("utf-8", "surrogatepass")
