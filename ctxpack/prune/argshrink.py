"""Shrinking huge tool-call arguments without breaking them.

Arguments are JSON text. Slicing that text would leave invalid JSON, so the
arguments are parsed, every long string value (nested ones too) is cut and
marked, and the object is serialized again, non-ASCII kept as written. A
value that already carries our mark is left alone, so shrinking twice changes
nothing the second time.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ctxpack.tools import COMMAND_KEYS, TRUNCATION_MARK

MAX_ARGUMENT_CHARS = 500
KEEP_CHARS = 200
# A command is a key fact a later reader (and `ctxpack eval`) looks for verbatim;
# it stays whole unless it is a whole program in itself.
COMMAND_KEEP_CHARS = 8_000

_MARKED = re.compile(re.escape(TRUNCATION_MARK) + r"[\d,]+ more chars\]\Z")


def mark(dropped: int) -> str:
    return f"{TRUNCATION_MARK}{dropped:,} more chars]"


def is_marked(value: str) -> bool:
    return _MARKED.search(value) is not None


def shrink_arguments(
    arguments: str, *, max_chars: int = MAX_ARGUMENT_CHARS, keep: int = KEEP_CHARS
) -> str | None:
    """The arguments with long strings cut, or None when nothing should change
    (short, not a JSON object, or nothing long enough to cut)."""
    if len(arguments) <= max_chars:
        return None
    try:
        value = json.loads(arguments, parse_constant=_refuse)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    shrunk, changed = _shrink(value, keep)
    if not changed:
        return None
    return json.dumps(shrunk, ensure_ascii=False, separators=(",", ":"))


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _shrink(value: Any, keep: int) -> tuple[Any, bool]:
    if isinstance(value, str):
        if len(value) <= keep or is_marked(value):
            return value, False
        return value[:keep] + mark(len(value) - keep), True
    if isinstance(value, dict):
        changed = False
        out: dict[str, Any] = {}
        for key, inner in value.items():
            limit = max(keep, COMMAND_KEEP_CHARS) if key in COMMAND_KEYS else keep
            out[key], hit = _shrink(inner, limit)
            changed = changed or hit
        return out, changed
    if isinstance(value, list):
        items = [_shrink(inner, keep) for inner in value]
        return [v for v, _ in items], any(hit for _, hit in items)
    return value, False
