"""JSON decoding and encoding that never silently changes a value.

orjson is fast but turns integers beyond 64 bits into floats and rejects lone
surrogates; those rare lines go through the standard library, which keeps them
exact. NaN and Infinity are not JSON and are refused on both paths.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

# A run of 19+ digits may be an integer orjson would round to a float.
_LONG_DIGITS = re.compile(rb"\d{19,}")


class JSONError(ValueError):
    """Decoding failed; the message says what, `line` says where (1-based)."""

    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def _refuse_constant(name: str) -> Any:
    raise JSONError(f"{name} is not valid JSON")


def loads(data: bytes) -> Any:
    """Parse one JSON document exactly (big integers and odd escapes kept)."""
    if not _LONG_DIGITS.search(data):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            if b"\\u" not in data:
                raise JSONError(_orjson_reason(exc), line=exc.lineno) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise JSONError(f"invalid UTF-8 at byte {exc.start}", line=line) from None
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise JSONError(f"invalid JSON: {exc.msg} at column {exc.colno}", line=exc.lineno) from None


def _orjson_reason(exc: orjson.JSONDecodeError) -> str:
    msg = str(exc)
    if "utf-8" in msg.lower() or "UTF-8" in msg:
        return "invalid UTF-8"
    return f"invalid JSON: {exc.msg} at column {exc.colno}"


def dumps(value: Any, *, indent: bool = False) -> bytes:
    """Serialize compactly (or with two-space indent), non-ASCII kept as UTF-8."""
    option = orjson.OPT_INDENT_2 if indent else 0
    try:
        return orjson.dumps(value, option=option)
    except TypeError:
        # Big integers or lone surrogates: the stdlib keeps both exact (ASCII escapes).
        return json.dumps(
            value,
            ensure_ascii=True,
            indent=2 if indent else None,
            separators=(",", ": ") if indent else (",", ":"),
        ).encode("ascii")
