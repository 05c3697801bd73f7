"""The tool vocabulary: what a tool call does, read from its name and arguments.

Agents name the same few operations differently (Claude Code `Bash`, Codex
`exec_command`, Hermes `terminal`, OpenHands `execute_bash`...). Every stage
that needs to know the family of a call (command, file read, file write,
search, web, sub-agent, todo list, note to self) or which argument holds its
path, command or pattern asks here; `calls` turns a call into what pruning knows of it.
"""

from __future__ import annotations

import shlex
from enum import StrEnum
from typing import Any

# Our own truncation mark (see argshrink); a value carrying it is not the original.
TRUNCATION_MARK = "…[ctxpack: "


def _names(words: str) -> frozenset[str]:
    return frozenset(words.split())


class Family(StrEnum):
    COMMAND = "command"
    READ = "read"
    WRITE = "write"
    SEARCH = "search"
    WEB = "web"
    AGENT = "agent"
    TODO = "todo"
    THINK = "think"
    OTHER = "other"


COMMAND_TOOLS = _names(
    """bash exec_command shell local_shell shell_command terminal execute_bash run_command
    run_shell_command execute_command run_terminal_cmd powershell exec container.exec
    write_stdin"""
)
READ_TOOLS = _names("read read_file view view_file open open_file cat notebookread")
# Writes that put a whole file in place, which may be a new one.
CREATE_TOOLS = _names("write write_file create create_file")
WRITE_TOOLS = CREATE_TOOLS | _names(
    """edit multiedit notebookedit patch apply_patch edit_file str_replace replace
    search_replace insert delete_file append_file"""
)
# Writes that take a file away.
DELETE_TOOLS = _names("delete_file")
# One tool, many operations: its "command" argument names the operation.
EDITOR_TOOLS = _names("str_replace_editor str_replace_based_edit_tool file_editor text_editor")
EDITOR_SUBCOMMANDS = _names("view create str_replace insert undo_edit write")
SEARCH_TOOLS = _names(
    """grep glob search find search_files search_dir search_file find_file file_search
    grep_search codebase_search ls list_dir list_files list_directory"""
)
# Searches whose results are file names rather than matching lines.
FILE_SEARCH_TOOLS = _names("glob find_file file_search ls list_dir list_files list_directory")
WEB_TOOLS = _names(
    """webfetch websearch web_search web_fetch web_extract fetch fetch_url browse
    browser_navigate search_web"""
)
AGENT_TOOLS = _names("task agent delegate_task spawn_agent dispatch_agent")
TODO_TOOLS = _names("todowrite todoread todo update_plan write_todos")
# Tools whose only input is the assistant's own reasoning and that return
# nothing of the world: what they carry is the assistant's words, not an action.
THINK_TOOLS = _names("think think_tool thinking sequentialthinking sequential_thinking")
THOUGHT_KEYS = ("thought", "thoughts", "reasoning")
_FAMILIES = (
    (Family.COMMAND, COMMAND_TOOLS),
    (Family.READ, READ_TOOLS),
    (Family.WRITE, WRITE_TOOLS),
    (Family.SEARCH, SEARCH_TOOLS),
    (Family.WEB, WEB_TOOLS),
    (Family.AGENT, AGENT_TOOLS),
    (Family.TODO, TODO_TOOLS),
    (Family.THINK, THINK_TOOLS),
)

# The argument naming the one file a call reads or writes.
PATH_KEYS = ("file_path", "path", "notebook_path", "filename", "target_file", "file")
# Every argument that may hold a path (the file acted on, a move's ends, the
# directory a command runs in).
PATH_LIKE_KEYS = (
    *PATH_KEYS,
    *("filepath", "old_path", "new_path", "directory", "dir", "workdir", "cwd"),
)
COMMAND_KEYS = ("command", "cmd", "script")
PATTERN_KEYS = ("pattern", "search_term", "regex", "query", "file_name", "q", "glob")
_SHELLS = frozenset({"bash", "sh", "zsh", "fish", "dash", "ksh", "pwsh", "powershell", "cmd"})
_SHELL_FLAGS = frozenset({"-c", "-lc", "-ic", "-lic", "-cl", "/c", "-Command", "-command"})


def base_name(name: str) -> str:
    """`functions.shell` -> shell, `mcp__srv__Read` -> read: lower case, no namespace."""
    short = name.rsplit("__", 1)[-1] if name.startswith("mcp__") else name
    if short.startswith("functions."):
        short = short[len("functions.") :]
    return short.lower()


def family_of(name: str, args: dict[str, Any]) -> Family:
    """The family of a call to `name` with these parsed arguments."""
    base = base_name(name)
    if base in EDITOR_TOOLS:
        return Family.READ if editor_operation(args) == "view" else Family.WRITE
    for family, names in _FAMILIES:
        if base in names:
            return family
    return Family.OTHER


def editor_operation(args: dict[str, Any]) -> str:
    """The operation an editor tool's call names (`view`, `str_replace`...), or ""."""
    sub = args.get("command")
    return sub if isinstance(sub, str) and sub in EDITOR_SUBCOMMANDS else ""


def thought_of(name: str, args: dict[str, Any]) -> str | None:
    """The reasoning a note-to-self call (`think`) carries ("" when it carries
    none); None for any other call."""
    if base_name(name) not in THINK_TOOLS:
        return None
    return first_str(args, THOUGHT_KEYS).strip()


def creates_file(name: str, args: dict[str, Any]) -> bool:
    """A write that puts a whole file in place (it may not have existed)."""
    base = base_name(name)
    if base in EDITOR_TOOLS:
        return editor_operation(args) == "create"
    return base in CREATE_TOOLS


def command_of(args: dict[str, Any]) -> str | None:
    """The shell command a call's arguments hold, kept whole (multi-line included)."""
    for key in COMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            # Editor tools reuse "command" for their own operations.
            if key == "command" and value.strip() in EDITOR_SUBCOMMANDS:
                continue
            return value.strip()
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            joined = _join_argv(value)
            if joined:
                return joined
    return None


def _join_argv(argv: list[str]) -> str:
    """A command given as argv: the script of `bash -lc SCRIPT`, else the words quoted."""
    if len(argv) >= 3 and argv[0].rsplit("/", 1)[-1] in _SHELLS and argv[1] in _SHELL_FLAGS:
        return " ".join(argv[2:]).strip()
    return shlex.join(argv)


def patch_of(name: str, args: dict[str, Any], raw: str) -> str:
    """The patch text a write's call carries ("" when it carries none): its
    "patch" or "input" argument, or the whole of a bare `apply_patch` call."""
    patch = args.get("patch", args.get("input"))
    if isinstance(patch, str):
        return patch
    return raw if base_name(name) in ("apply_patch", "patch") and not args else ""


def first_str(args: dict[str, Any], keys: tuple[str, ...]) -> str:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return ", ".join(value)
    return ""
