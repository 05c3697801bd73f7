"""Reading one JSON document whose errors name a line: where it fails to
parse, or where the element of its list that is not what the format allows
starts (a pretty-printed document spreads one element over many lines)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ctxpack.errors import InputError
from ctxpack.formats import jsoncodec, jsonspans

T = TypeVar("T")


class ItemError(ValueError):
    """Element `index` of a document's list is not what the format allows."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


def load_document(body: bytes, *, path: str) -> Any:
    try:
        return jsoncodec.loads(body)
    except jsoncodec.JSONError as exc:
        raise InputError(str(exc), path=path, line=exc.line) from None


def each_item(items: list[Any], convert: Callable[[Any], list[T]], *, what: str) -> list[T]:
    """convert(item) for every item, concatenated; a ValueError becomes an
    ItemError that names the item ("step 3: ...")."""
    out: list[T] = []
    for number, item in enumerate(items):
        try:
            out += convert(item)
        except ValueError as exc:
            raise ItemError(number, f"{what} {number + 1}: {exc}") from None
    return out


def item_line(body: bytes, *, index: int, key: str | None = None) -> int | None:
    """The line element `index` starts on, in the top-level array or in the
    array held by the top-level member `key`; None when there is no such element."""
    pos = jsonspans.skip_ws(body, 0)
    try:
        if key is not None:
            if body[pos : pos + 1] != b"{":
                return None
            span = jsonspans.object_members(body, pos).get(key)
            if span is None:
                return None
            pos = span[0]
        if body[pos : pos + 1] != b"[":
            return None
        spans = jsonspans.array_items(body, pos)
    except ValueError:
        return None
    if index >= len(spans):
        return None
    return body.count(b"\n", 0, spans[index][0]) + 1


def item_input_error(
    exc: ItemError, *, body: bytes, path: str, key: str | None = None
) -> InputError:
    return InputError(str(exc), path=path, line=item_line(body, index=exc.index, key=key))
