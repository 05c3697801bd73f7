"""What a tool call does, read from its name and arguments.

Agents name the same few operations differently (Claude Code `Bash`, Codex
`exec_command`, Hermes `terminal`, OpenHands `execute_bash`...). Pruning needs
to know the family of a call (command, file read, file write, search, web,
sub-agent, todo list), its key argument for a one-liner, and a key that says
when a later call repeats or overrides it.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from typing import Any

from ctxpack.toolpairs import parse_arguments

# Our own truncation mark (see argshrink); a value carrying it is not the original.
TRUNCATION_MARK = "…[ctxpack: "

COMMAND_TOOLS = frozenset(
    {
        "bash",
        "exec_command",
        "shell",
        "local_shell",
        "shell_command",
        "terminal",
        "execute_bash",
        "run_command",
        "run_shell_command",
        "execute_command",
        "run_terminal_cmd",
        "powershell",
        "exec",
        "container.exec",
        "write_stdin",
    }
)
READ_TOOLS = frozenset({"read", "read_file", "view_file", "open", "open_file", "notebookread"})
WRITE_TOOLS = frozenset(
    {
        "edit",
        "multiedit",
        "write",
        "write_file",
        "notebookedit",
        "patch",
        "apply_patch",
        "create",
        "create_file",
        "edit_file",
        "str_replace",
        "insert",
        "delete_file",
        "append_file",
    }
)
EDITOR_TOOLS = frozenset(
    {"str_replace_editor", "str_replace_based_edit_tool", "file_editor", "text_editor"}
)
SEARCH_TOOLS = frozenset(
    {
        "grep",
        "glob",
        "search_files",
        "search_dir",
        "search_file",
        "find_file",
        "file_search",
        "grep_search",
        "codebase_search",
        "ls",
        "list_dir",
        "list_files",
        "list_directory",
    }
)
WEB_TOOLS = frozenset(
    {
        "webfetch",
        "websearch",
        "web_search",
        "web_fetch",
        "web_extract",
        "fetch",
        "fetch_url",
        "browser_navigate",
        "search_web",
    }
)
AGENT_TOOLS = frozenset({"task", "agent", "delegate_task", "spawn_agent", "dispatch_agent"})
TODO_TOOLS = frozenset({"todowrite", "todoread", "todo", "update_plan", "write_todos"})

_PATH_KEYS = ("file_path", "path", "notebook_path", "filename", "target_file", "file")
_PATTERN_KEYS = ("pattern", "search_term", "regex", "query", "file_name", "glob")
_WHERE_KEYS = ("path", "dir", "directory", "file", "cwd")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+?)\s*$", re.MULTILINE)
_MOVE_TO = re.compile(r"^\*\*\* Move to: (.+?)\s*$", re.MULTILINE)
_SHELLS = ("bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh", "powershell", "pwsh")
# Pipes and redirections that only trim or merge what a command prints.
_TRIM_SUFFIX = re.compile(r"(\s*\|\s*(head|tail)(\s+-n)?(\s+-?\d+)?|\s*2>&1)+\s*$")
_SED_RANGE = re.compile(r"^(\d+),(\d+)p$")

LABEL_CHARS = 80


@dataclass(frozen=True)
class CallInfo:
    """The facts about one call that pruning uses."""

    name: str
    family: str  # command, read, write, search, web, agent, todo, other
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
        if not self.effect and self.family in ("read", "write"):
            object.__setattr__(self, "effect", self.family)


def base_name(name: str) -> str:
    """`functions.shell` -> shell, `mcp__srv__Read` -> read: lower case, no namespace."""
    short = name.rsplit("__", 1)[-1] if name.startswith("mcp__") else name
    if short.startswith("functions."):
        short = short[len("functions.") :]
    return short.lower()


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
    if base in COMMAND_TOOLS:
        return _command(shown, base, args, arguments)
    if base in EDITOR_TOOLS:
        return _editor(shown, args)
    if base in READ_TOOLS:
        return _read(shown, args)
    if base in WRITE_TOOLS:
        return _write(shown, base, args, arguments)
    if base in SEARCH_TOOLS:
        return _search(shown, args)
    if base in WEB_TOOLS:
        target = _first_str(args, ("url", "query", "urls", "queries"))
        return CallInfo(
            shown, "web", _join(shown, one_line(target)), repeat_key=_repeat(name, args)
        )
    if base in AGENT_TOOLS:
        what = _first_str(args, ("description", "goal", "task", "prompt"))
        kind = _first_str(args, ("subagent_type",))
        label = _join(shown, f'"{one_line(what, 60)}"' if what else "")
        return CallInfo(shown, "agent", label + (f" [{kind}]" if kind else ""))
    if base in TODO_TOOLS:
        return CallInfo(shown, "todo", _join(shown, _todo_summary(args)))
    return CallInfo(shown, "other", _generic_label(shown, args), repeat_key=_repeat(name, args))


def _command(shown: str, base: str, args: dict[str, Any], raw: str) -> CallInfo:
    if base == "write_stdin":
        session = args.get("session_id")
        return CallInfo(shown, "command", _join(shown, f"session {session}" if session else ""))
    command = _command_text(args.get("command", args.get("cmd")))
    if not command and not args and raw.strip() and not raw.lstrip().startswith("{"):
        command = raw.strip()  # a custom tool whose input is the command itself
    label = _join(shown, f"`{one_line(command)}`" if command else "")
    key = ""
    normalized = normalize_command(command)
    if normalized and TRUNCATION_MARK not in command:
        workdir = _first_str(args, ("workdir", "cwd", "dir"))
        paths, read_range = _shell_read(normalized)
        if workdir and paths and not os.path.isabs(paths[0]):
            paths = _paths(os.path.join(workdir, paths[0]))
        key = f"run\0{workdir}\0{normalized}"
        effect = "read" if paths else ""
        return CallInfo(
            shown, "command", label, command, paths, read_range, repeat_key=key, effect=effect
        )
    return CallInfo(shown, "command", label, command=command, repeat_key=key)


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


def _command_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        if len(value) >= 3 and value[0] in _SHELLS and value[1] in ("-lc", "-c", "-Command"):
            return str(value[2])
        return shlex.join(value)
    return ""


def normalize_command(command: str) -> str:
    """The command without layout noise or output trimming (`| tail -5`, `2>&1`)."""
    flat = " ".join(command.split())
    return _TRIM_SUFFIX.sub("", flat).strip()


def _editor(shown: str, args: dict[str, Any]) -> CallInfo:
    sub = _first_str(args, ("command",))
    path = _path(args)
    label = _join(shown, " ".join(p for p in (sub, short_path(path)) if p))
    if sub == "view":
        rng = args.get("view_range")
        read_range = tuple(repr(v) for v in rng) if isinstance(rng, list) else None
        if rng is not None:
            label += f" (lines {_range_text(rng)})"
        return CallInfo(shown, "read", label, paths=_paths(path), read_range=read_range)
    return CallInfo(shown, "write", label, paths=_paths(path))


def _read(shown: str, args: dict[str, Any]) -> CallInfo:
    path = _path(args)
    offset = args.get("offset", args.get("line_number", args.get("start_line")))
    limit = args.get("limit", args.get("end_line"))
    read_range = None if offset is None and limit is None else (repr(offset), repr(limit))
    label = _join(shown, short_path(path))
    return CallInfo(shown, "read", label, paths=_paths(path), read_range=read_range)


def _write(shown: str, base: str, args: dict[str, Any], raw: str) -> CallInfo:
    paths: list[str] = []
    path = _path(args)
    if path:
        paths.append(path)
    patch = args.get("patch", args.get("input"))
    if not isinstance(patch, str):
        patch = raw if base in ("apply_patch", "patch") and not args else ""
    if patch:
        paths.extend(_PATCH_FILE.findall(patch))
        paths.extend(_MOVE_TO.findall(patch))
    edits = args.get("edits")
    suffix = f" ({len(edits)} edits)" if isinstance(edits, list) and len(edits) > 1 else ""
    shown_paths = ", ".join(short_path(p, 60) for p in paths[:2])
    if len(paths) > 2:
        shown_paths += f" (+{len(paths) - 2} more)"
    return CallInfo(
        shown, "write", _join(shown, shown_paths) + suffix, paths=_paths(*dict.fromkeys(paths))
    )


def _search(shown: str, args: dict[str, Any]) -> CallInfo:
    pattern = _first_str(args, _PATTERN_KEYS)
    where = _first_str(args, _WHERE_KEYS)
    glob = _first_str(args, ("glob", "file_glob", "include")) if pattern != args.get("glob") else ""
    parts = [f'"{one_line(pattern, 60)}"' if pattern else ""]
    if where and where != pattern:
        parts.append(f"in {short_path(where, 60)}")
    if glob:
        parts.append(f"({one_line(glob, 30)})")
    label = _join(shown, " ".join(p for p in parts if p))
    return CallInfo(shown, "search", label, repeat_key=_repeat(shown, args))


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
    return _first_str(args, _PATH_KEYS)


def _paths(*paths: str) -> tuple[str, ...]:
    return tuple(os.path.normpath(p) for p in paths if p and TRUNCATION_MARK not in p)


def _first_str(args: dict[str, Any], keys: tuple[str, ...]) -> str:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return ", ".join(value)
    return ""


def _join(name: str, detail: str) -> str:
    return f"{name} {detail}" if detail else name


def _range_text(rng: Any) -> str:
    if isinstance(rng, list) and len(rng) == 2:
        return f"{rng[0]}-{rng[1]}"
    return str(rng)
