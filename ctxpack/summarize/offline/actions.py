"""One tool call as a completed action: what kind of thing it did, to what,
and what came of it (exit code, test counts, first error line)."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from ctxpack import messages as m
from ctxpack.facts.match import collapse
from ctxpack.facts.output import error_lines, exit_code, result_flagged_error, still_running
from ctxpack.facts.paths import paths_in_command
from ctxpack.facts.text import command_of, mask_secrets, paths_in_arguments
from ctxpack.toolpairs import ToolUse, parse_arguments
from ctxpack.transcript import Message

_READ = frozenset({"read", "read_file", "open", "view", "cat", "notebookread", "view_file"})
_EDIT = frozenset(
    {"edit", "multiedit", "str_replace", "edit_file", "patch", "apply_patch", "notebookedit"}
    | {"replace", "insert", "search_replace"}
)
_CREATE = frozenset({"write", "write_file", "create", "create_file"})
_SEARCH = frozenset(
    {"grep", "glob", "search", "find_file", "search_file", "search_dir", "search_files"}
    | {"find", "ls", "list_dir", "list_files"}
)
_FETCH = frozenset({"webfetch", "websearch", "web_search", "fetch", "web_fetch", "browse"})
_DELEGATE = frozenset({"task", "agent", "delegate_task"})
_EDITOR_KIND = {
    "view": "read",
    "create": "create",
    "str_replace": "edit",
    "insert": "edit",
    "undo_edit": "edit",
}

VERBS = {
    "run": "Ran",
    "read": "Read",
    "edit": "Edited",
    "create": "Created",
    "search": "Searched",
    "fetch": "Fetched",
    "delegate": "Delegated",
    "call": "Called",
}
_PATH_ARG_KEYS = ("file_path", "path", "notebook_path", "filename", "target_file", "file")
_PATTERN_KEYS = ("pattern", "query", "regex", "search_term", "file_name", "q")

_TESTS_RE = re.compile(
    r"(\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed)"
    r"(?:, \d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected))*)"
    r" in \d"
)
_CARGO_RE = re.compile(r"test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed")
_JEST_RE = re.compile(r"Tests:\s+([^\n]*?\d+ total)")
_FAILED_START = re.compile(r"\s*(?:Error|error|ERROR|fatal:|Traceback|FAILED|npm ERR!|aborted)")
_TESTS_HINTS = ("passed", "failed", "error", "skipped")
# Commands whose path arguments are only looked at.
_READERS = frozenset({"cat", "head", "tail", "less", "more", "wc", "nl", "bat", "sed", "rg"})
MAX_TARGET = 120


@dataclass
class Action:
    index: int
    tool: str
    kind: str
    target: str  # display form, masked and shortened
    key: str  # identity of what was acted on, for repeats and resolution
    head: str  # looser identity: program and subcommand, or a file's name
    command: str | None
    paths: list[str]
    mark: str  # what happened to its paths: "read", "edited", "create failed"...
    outcome: str
    failed: bool
    pending: bool
    tests: str | None = None
    exit: int | None = None
    count: int = 1

    def what(self) -> str:
        times = f" ({self.count} times)" if self.count > 1 else ""
        return f"{VERBS[self.kind]} {self.target}{times}"

    def line(self) -> str:
        return f"{self.what()} — {self.outcome} [tool: {self.tool}]"


def clip(text: str, limit: int) -> str:
    masked = mask_secrets(text)
    # Only the start of a long text shows: collapse a prefix while that is
    # enough (a prefix collapses to a prefix of the whole, collapsed).
    size = 4 * limit + 64
    while size < len(masked):
        head = collapse(masked[:size])
        if len(head) > limit:
            return head[: limit - 1].rstrip() + "…"
        size *= 4
    text = collapse(masked)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def code_span(text: str) -> str:
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _kind(name: str, args: dict[str, Any], command: str | None) -> str:
    lowered = name.lower()
    sub = args.get("command")
    if isinstance(sub, str) and sub in _EDITOR_KIND and any(k in args for k in _PATH_ARG_KEYS):
        return _EDITOR_KIND[sub]
    if command:
        return "run"
    for kind, names in (
        ("read", _READ),
        ("edit", _EDIT),
        ("create", _CREATE),
        ("search", _SEARCH),
        ("fetch", _FETCH),
        ("delegate", _DELEGATE),
    ):
        if lowered in names:
            return kind
    return "call"


def _arg_path(args: dict[str, Any], raw: str) -> str | None:
    for key in _PATH_ARG_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    found = paths_in_arguments(args, raw)
    return found[0] if found else None


def _short_args(args: dict[str, Any]) -> str:
    parts = []
    for key, value in list(args.items())[:3]:
        shown = value if isinstance(value, str) else repr(value)
        parts.append(f"{key}={clip(str(shown), 40)}")
    return ", ".join(parts)


def _target(
    kind: str, name: str, args: dict[str, Any], raw: str, command: str | None
) -> tuple[str, str]:
    """(display target, identity key)."""
    if kind == "run" and command:
        lines = command.strip().splitlines()
        if len(lines) > 1 and len(collapse(command)) > MAX_TARGET:
            first = code_span(clip(lines[0], MAX_TARGET))
            return f"{first} (a {len(lines)}-line script)", collapse(command)
        return code_span(clip(command, MAX_TARGET)), collapse(command)
    if kind in ("read", "edit", "create"):
        path = _arg_path(args, raw)
        if path:
            return clip(path, 200), path
    if kind == "search":
        pattern = next((args[k] for k in _PATTERN_KEYS if isinstance(args.get(k), str)), "")
        where = _arg_path(args, raw)
        shown = code_span(clip(pattern, 80)) + (f" in {clip(where, 160)}" if where else "")
        return shown, f"{pattern}@{where}"
    if kind == "fetch":
        what = args.get("url") or args.get("query") or args.get("prompt") or ""
        return clip(str(what), MAX_TARGET), str(what)
    if kind == "delegate":
        what = args.get("description") or args.get("prompt") or ""
        return f'"{clip(str(what), 80)}"', str(what)
    return f"{name}({_short_args(args)})", f"{name}:{collapse(raw)}"


def head_of(command: str) -> str:
    """The program and its first non-flag word: `cargo test`, `python pytest`."""
    words = command.split()
    rest = [w for w in words[1:] if not w.startswith("-")]
    return " ".join(words[:1] + rest[:1])


def _tests(output: str) -> str | None:
    # pytest and cargo summaries name passed, failed, error(s) or skipped.
    counted = any(hint in output for hint in _TESTS_HINTS)
    found = [mt.group(1) for mt in _TESTS_RE.finditer(output)] if counted else []
    if found:
        return found[-1]
    cargo = list(_CARGO_RE.finditer(output)) if counted and "test result: " in output else []
    if cargo:
        return f"{cargo[-1].group(1)} passed, {cargo[-1].group(2)} failed"
    jest = list(_JEST_RE.finditer(output)) if "Tests:" in output else []
    return collapse(jest[-1].group(1)) if jest else None


def make_action(
    use: ToolUse,
    outputs: list[Message],
    *,
    seen: Collection[str],
    args: dict[str, Any] | None = None,
    output: str | None = None,
) -> Action:
    """One tool call and what its results say about it; `seen` holds the paths
    touched before, to tell a new file from an overwritten one. `args` and
    `output` (the outputs' texts joined by newlines) save work when known."""
    if args is None:
        args = parse_arguments(use.arguments)
    name = use.name or "unknown"
    command = command_of(args)
    kind = _kind(name, args, command)
    target, key = _target(kind, name, args, use.arguments, command)
    if command:
        head = head_of(command)
    elif kind in ("read", "edit", "create"):
        head = key.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
    else:
        head = f"{kind}:{name}"
    paths = [key] if kind in ("read", "edit", "create") and key else []
    if kind == "run" and command:
        paths = paths_in_command(command)
    out = "\n".join(m.text(o) for o in outputs) if output is None else output
    flagged = any(result_flagged_error(o) for o in outputs)
    code = exit_code(out) if outputs else None
    running = bool(outputs) and code is None and still_running(out)
    tests = _tests(out) if kind == "run" else None
    failed = bool(outputs) and (
        flagged
        or (code is not None and code != 0)
        or (code is None and bool(_FAILED_START.match(out)))
        or (tests is not None and " failed" in tests and not tests.startswith("0 failed"))
    )
    errors = error_lines(out, flagged=flagged) if failed else []
    pending = not outputs or running
    if kind == "create" and not failed:
        kind = "create" if "created" in out.lower() or key not in seen else "edit"
    parts: list[str] = []
    if not outputs:
        parts.append("no result recorded")
    elif running:
        parts.append("still running")
    elif code is not None:
        parts.append(f"exit {code}")
    elif not tests:
        parts.append("failed" if failed else "ok")
    if tests:
        parts.append(tests)
    if errors:
        parts.append(clip(errors[0], 120))
    elif kind == "call" and code is None and not failed and out.strip():
        parts.append("returned " + clip(out, 60))
    return Action(
        index=use.index,
        tool=name,
        kind=kind,
        target=target,
        key=key,
        head=head,
        command=command,
        paths=paths,
        mark=_mark(kind, command, failed),
        outcome=", ".join(parts),
        failed=failed,
        pending=pending,
        tests=tests,
        exit=code,
    )


def _mark(kind: str, command: str | None, failed: bool) -> str:
    if kind == "run":
        words = command.split() if command else []
        reader = bool(words) and words[0] in _READERS and "-i" not in words
        return "read" if reader and not failed else ""
    if failed:
        return f"{kind} failed"
    return {"read": "read", "edit": "edited", "create": "created"}.get(kind, "")
