"""JSON decoding and encoding that never silently changes a value.

orjson is fast but turns integers beyond 64 bits into floats and rejects lone
surrogates; those rare lines go through the standard library, which keeps them
exact. NaN and Infinity are not JSON and are refused on both paths.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any

import orjson

# A run of 19+ digits may be an integer orjson would round to a float. Mapping
# digits to "9" and everything else to " " and searching for 19 nines is many
# times faster than a regex scan over large transcripts.
_DIGIT_MAP = bytes(0x39 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_RUN = b"9" * 19
# orjson reads documents nested up to 1024 levels; the standard library needs
# a recursion frame per level to write them back (and orjson writes only 255).
_WRITE_DEPTH = 1100


def _has_long_digits(data: bytes | memoryview) -> bool:
    raw = data if isinstance(data, bytes) else data.tobytes()
    return raw.translate(_DIGIT_MAP).find(_LONG_RUN) >= 0


def has_long_digits(data: bytes, *, block: int = 1 << 22) -> bool:
    """Whether any line of `data` may need the exact path; read in blocks so
    that a large file is never copied whole."""
    overlap = len(_LONG_RUN) - 1
    return any(
        _has_long_digits(data[start : start + block + overlap])
        for start in range(0, len(data), block)
    )


# For a caller's own loop over many values of a file `has_long_digits` cleared:
# orjson itself and what it raises. A value it refuses goes through `loads`,
# which reads it exactly (lone surrogates) or says why it is not JSON.
orjson_loads = orjson.loads
OrjsonError = orjson.JSONDecodeError


class JSONError(ValueError):
    """Decoding failed; the message says what, `line` says where (1-based)."""

    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def _refuse_constant(name: str) -> Any:
    raise JSONError(f"invalid JSON: {name} is not a JSON number")


def loads(data: bytes | memoryview, *, no_long_digits: bool = False) -> Any:
    """Parse one JSON document exactly (big integers and odd escapes kept).

    `no_long_digits`: the caller already knows the data has no run of 19+
    digits (has_long_digits over the whole file), so the fast path is safe.
    """
    if no_long_digits or not _has_long_digits(data):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            data = bytes(data)
            if b"\\u" not in data:
                raise _orjson_error(exc, data) from None
    # The standard library's parser loads only for the documents that need it.
    import json

    data = bytes(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _utf8_error(data, exc) from None
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise JSONError(f"invalid JSON: {exc.msg} at column {exc.colno}", line=exc.lineno) from None
    except RecursionError:
        raise JSONError("invalid JSON: nested too deeply") from None


def _orjson_error(exc: orjson.JSONDecodeError, data: bytes) -> JSONError:
    """orjson's complaint, reworded where it would puzzle (NaN, bad bytes)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as bad:
        return _utf8_error(data, bad)
    near = text[max(exc.pos - 1, 0) : exc.pos + 8]
    for name in ("-Infinity", "Infinity", "NaN"):
        if name in near:
            return JSONError(
                f"invalid JSON: {name} is not a JSON number at column {exc.colno}",
                line=exc.lineno,
            )
    return JSONError(f"invalid JSON: {exc.msg} at column {exc.colno}", line=exc.lineno)


def _utf8_error(data: bytes, exc: UnicodeDecodeError) -> JSONError:
    start = data.rfind(b"\n", 0, exc.start) + 1
    return JSONError(
        f"invalid UTF-8 (byte 0x{data[exc.start]:02x}) at column {exc.start - start + 1}",
        line=data.count(b"\n", 0, exc.start) + 1,
    )


def dumps(value: Any, *, indent: bool = False) -> bytes:
    """Serialize compactly (or with two-space indent), non-ASCII kept as UTF-8."""
    option = orjson.OPT_INDENT_2 if indent else 0
    try:
        return orjson.dumps(value, option=option)
    except TypeError:
        # Big integers, lone surrogates or deep nesting: the stdlib keeps them
        # exact (ASCII escapes).
        import json

        with _recursion_room(_WRITE_DEPTH):
            return json.dumps(
                value,
                ensure_ascii=True,
                indent=2 if indent else None,
                separators=(",", ": ") if indent else (",", ":"),
            ).encode("ascii")


@contextlib.contextmanager
def _recursion_room(levels: int) -> Iterator[None]:
    """Allow `levels` more nested calls than the current stack uses."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, _stack_depth() + levels))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def _stack_depth() -> int:
    frame: FrameType | None = sys._getframe()
    depth = 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth
