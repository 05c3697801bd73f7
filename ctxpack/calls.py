"""What pruning knows of one tool call: a one-line label, the paths it reads
or writes, the part of a file it reads, and a key that says when a later call
repeats or overrides it. The vocabulary it reads the call by is `tools`'."""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from typing import Any

from ctxpack.filechanges import patch_targets
from ctxpack.toolpairs import parse_arguments
from ctxpack.tools import (
    EDITOR_TOOLS,
    PATH_KEYS,
    PATTERN_KEYS,
    TRUNCATION_MARK,
    Family,
    base_name,
    command_of,
    family_of,
    first_str,
    patch_of,
)

_WHERE_KEYS = ("path", "dir", "directory", "file", "cwd")

# Pipes and redirections that only trim or merge what a command prints.
_TRIM_SUFFIX = re.compile(r"(\s*\|\s*(head|tail)(\s+-n)?(\s+-?\d+)?|\s*2>&1)+\s*$")
_SED_RANGE = re.compile(r"^(\d+),(\d+)p$")

LABEL_CHARS = 80


@dataclass(frozen=True)
class CallInfo:
    """The facts about one call that pruning uses."""

    name: str
    family: Family
    label: str  # e.g. "Bash `pytest -x`", "Read src/app.py (lines 10-30)"
    command: str = ""
    paths: tuple[str, ...] = ()
    # (offset, limit) of a partial read; None reads the whole file.
    read_range: tuple[str, ...] | None = None
    # Identical for two calls that observe the same thing; "" when unknown.
    repeat_key: str = ""
    # What the call does to `paths`: "read", "write" or "" (neither / unknown).
    effect: str = ""

    def __post_init__(self) -> None:
        if not self.effect and self.family in (Family.READ, Family.WRITE):
            object.__setattr__(self, "effect", str(self.family))


def one_line(text: str, limit: int = LABEL_CHARS) -> str:
    """Whitespace collapsed to single spaces and cut to `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def short_path(path: str, limit: int = LABEL_CHARS) -> str:
    """A path cut from the left, so the file name survives."""
    flat = " ".join(path.split())
    return flat if len(flat) <= limit else "…" + flat[-(limit - 1) :]


def describe(name: str, arguments: str) -> CallInfo:
    args = parse_arguments(arguments)
    base = base_name(name)
    shown = name or "tool"
    family = family_of(name, args)
    if base in EDITOR_TOOLS:
        return _editor(shown, family, args)
    if family is Family.COMMAND:
        return _command(shown, base, args, arguments)
    if family is Family.READ:
        return _read(shown, args)
    if family is Family.WRITE:
        return _write(shown, base, args, arguments)
    if family is Family.SEARCH:
        return _search(shown, args)
    if family is Family.WEB:
        target = first_str(args, ("url", "query", "urls", "queries"))
        return CallInfo(
            shown, family, _join(shown, one_line(target)), repeat_key=_repeat(name, args)
        )
    if family is Family.AGENT:
        what = first_str(args, ("description", "goal", "task", "prompt"))
        kind = first_str(args, ("subagent_type",))
        label = _join(shown, f'"{one_line(what, 60)}"' if what else "")
        return CallInfo(shown, family, label + (f" [{kind}]" if kind else ""))
    if family is Family.TODO:
        return CallInfo(shown, family, _join(shown, _todo_summary(args)))
    return CallInfo(shown, family, _generic_label(shown, args), repeat_key=_repeat(name, args))


def _command(shown: str, base: str, args: dict[str, Any], raw: str) -> CallInfo:
    if base == "write_stdin":
        session = args.get("session_id")
        label = _join(shown, f"session {session}" if session else "")
        return CallInfo(shown, Family.COMMAND, label)
    command = command_of(args) or ""
    if not command and not args and raw.strip() and not raw.lstrip().startswith("{"):
        command = raw.strip()  # a custom tool whose input is the command itself
    label = _join(shown, f"`{one_line(command)}`" if command else "")
    key = ""
    normalized = normalize_command(command)
    if normalized and TRUNCATION_MARK not in command:
        workdir = first_str(args, ("workdir", "cwd", "dir"))
        paths, read_range = _shell_read(normalized)
        if workdir and paths and not os.path.isabs(paths[0]):
            paths = _paths(os.path.join(workdir, paths[0]))
        key = f"run\0{workdir}\0{normalized}"
        effect = "read" if paths else ""
        return CallInfo(
            shown, Family.COMMAND, label, command, paths, read_range, repeat_key=key, effect=effect
        )
    return CallInfo(shown, Family.COMMAND, label, command=command, repeat_key=key)


def _shell_read(command: str) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
    """The file a plain `cat FILE` or `sed -n 'A,Bp' FILE` prints, and its range."""
    if not command.startswith(("cat ", "sed -n ")):
        return (), None
    try:
        words = shlex.split(command)
    except ValueError:
        return (), None
    if words[0] == "cat" and len(words) in (2, 3) and words[1:-1] in ([], ["-n"]):
        return _paths(words[-1]), None
    if words[:2] == ["sed", "-n"] and len(words) == 4:
        found = _SED_RANGE.match(words[2])
        if found:
            return _paths(words[3]), (found.group(1), found.group(2))
    return (), None


def normalize_command(command: str) -> str:
    """The command without layout noise or output trimming (`| tail -5`, `2>&1`)."""
    flat = " ".join(command.split())
    return _TRIM_SUFFIX.sub("", flat).strip()


def _editor(shown: str, family: Family, args: dict[str, Any]) -> CallInfo:
    sub = first_str(args, ("command",))
    path = _path(args)
    label = _join(shown, " ".join(p for p in (sub, short_path(path)) if p))
    if family is Family.READ:
        rng = args.get("view_range")
        read_range = tuple(repr(v) for v in rng) if isinstance(rng, list) else None
        if rng is not None:
            label += f" (lines {_range_text(rng)})"
        return CallInfo(shown, family, label, paths=_paths(path), read_range=read_range)
    return CallInfo(shown, family, label, paths=_paths(path))


def _read(shown: str, args: dict[str, Any]) -> CallInfo:
    path = _path(args)
    offset = args.get("offset", args.get("line_number", args.get("start_line")))
    limit = args.get("limit", args.get("end_line"))
    read_range = None if offset is None and limit is None else (repr(offset), repr(limit))
    label = _join(shown, short_path(path))
    return CallInfo(shown, Family.READ, label, paths=_paths(path), read_range=read_range)


def _write(shown: str, base: str, args: dict[str, Any], raw: str) -> CallInfo:
    paths: list[str] = []
    path = _path(args)
    if path:
        paths.append(path)
    patch = patch_of(base, args, raw)
    if patch:
        paths.extend(patch_targets(patch))
    edits = args.get("edits")
    suffix = f" ({len(edits)} edits)" if isinstance(edits, list) and len(edits) > 1 else ""
    shown_paths = ", ".join(short_path(p, 60) for p in paths[:2])
    if len(paths) > 2:
        shown_paths += f" (+{len(paths) - 2} more)"
    return CallInfo(
        shown,
        Family.WRITE,
        _join(shown, shown_paths) + suffix,
        paths=_paths(*dict.fromkeys(paths)),
    )


def _search(shown: str, args: dict[str, Any]) -> CallInfo:
    pattern = first_str(args, PATTERN_KEYS)
    where = first_str(args, _WHERE_KEYS)
    glob = first_str(args, ("glob", "file_glob", "include")) if pattern != args.get("glob") else ""
    parts = [f'"{one_line(pattern, 60)}"' if pattern else ""]
    if where and where != pattern:
        parts.append(f"in {short_path(where, 60)}")
    if glob:
        parts.append(f"({one_line(glob, 30)})")
    label = _join(shown, " ".join(p for p in parts if p))
    return CallInfo(shown, Family.SEARCH, label, repeat_key=_repeat(shown, args))


def _todo_summary(args: dict[str, Any]) -> str:
    items = args.get("todos", args.get("plan", args.get("items")))
    if not isinstance(items, list):
        return ""
    states: dict[str, int] = {}
    for item in items:
        state = item.get("status") if isinstance(item, dict) else None
        if isinstance(state, str):
            states[state] = states.get(state, 0) + 1
    detail = ", ".join(f"{n} {state}" for state, n in states.items())
    return f"({len(items)} items" + (f": {detail})" if detail else ")")


def _generic_label(shown: str, args: dict[str, Any]) -> str:
    """name(key=value, ...) from the short scalar arguments."""
    parts = []
    for key, value in args.items():
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int | float):
            parts.append(f"{key}={value}")
        elif isinstance(value, str) and value:
            parts.append(f'{key}="{one_line(value, 40)}"')
    return f"{shown}({one_line(', '.join(parts), LABEL_CHARS)})"


def _repeat(name: str, args: dict[str, Any]) -> str:
    if not args:
        return ""
    canonical = repr(sorted((k, repr(v)) for k, v in args.items()))
    if TRUNCATION_MARK in canonical:
        return ""
    return f"call\0{name}\0{canonical}"


def _path(args: dict[str, Any]) -> str:
    return first_str(args, PATH_KEYS)


def _paths(*paths: str) -> tuple[str, ...]:
    return tuple(os.path.normpath(p) for p in paths if p and TRUNCATION_MARK not in p)


def _join(name: str, detail: str) -> str:
    return f"{name} {detail}" if detail else name


def _range_text(rng: Any) -> str:
    if isinstance(rng, list) and len(rng) == 2:
        return f"{rng[0]}-{rng[1]}"
    return str(rng)
