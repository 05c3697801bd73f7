"""Dotted paths to a message list inside a record: "traj", "a.train_messages.-1"."""

from __future__ import annotations

from typing import Any

KeyPath = tuple[str | int, ...]

# Tried in order when no --messages-key is given.
AUTO_PATHS: tuple[KeyPath, ...] = (
    ("messages",),
    ("traj",),
    ("answer_generation", "train_messages", -1),
)


def parse(text: str) -> KeyPath:
    parts: list[str | int] = []
    for piece in text.split("."):
        if not piece:
            raise ValueError(f"empty segment in key path {text!r}")
        parts.append(int(piece) if piece.lstrip("-").isdigit() else piece)
    return tuple(parts)


def render(path: KeyPath) -> str:
    return ".".join(str(p) for p in path)


def get(obj: Any, path: KeyPath) -> Any:
    """The value at path, or raise KeyError."""
    for key in path:
        obj = _step(obj, key)
    return obj


def _step(obj: Any, key: str | int) -> Any:
    if isinstance(key, int):
        if isinstance(obj, list) and -len(obj) <= key < len(obj):
            return obj[key]
    elif isinstance(obj, dict) and key in obj:
        return obj[key]
    raise KeyError(key)


def replace(obj: Any, path: KeyPath, value: Any) -> Any:
    """A copy of obj with the value at path replaced; containers off the path are shared."""
    if not path:
        return value
    key, rest = path[0], path[1:]
    if isinstance(obj, dict):
        copy_d = dict(obj)
        copy_d[key] = replace(obj[key], rest, value)
        return copy_d
    assert isinstance(key, int)
    copy_l = list(obj)
    copy_l[key] = replace(obj[key], rest, value)
    return copy_l


def find_messages(record: Any, explicit: KeyPath | None) -> KeyPath | None:
    """The first path holding a list of role-bearing objects."""
    for path in (explicit,) if explicit is not None else AUTO_PATHS:
        try:
            value = get(record, path)
        except KeyError:
            continue
        if isinstance(value, list) and (
            not value or (isinstance(value[0], dict) and "role" in value[0])
        ):
            return path
    return None
