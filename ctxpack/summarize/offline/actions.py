"""One tool call as a completed action: what kind of thing it did, to what,
and what came of it (exit code, test counts, first error line)."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, fields
from typing import Any

from ctxpack import messages as m
from ctxpack.facts.match import collapse
from ctxpack.facts.paths import paths_in_command
from ctxpack.facts.text import command_fact, paths_in_arguments, script_lines
from ctxpack.printed import found_count, json_shape, open_file, parse_json, printed
from ctxpack.redact import mask
from ctxpack.standin import ANSWERED, QUIET, ending_said, is_pruned, quoted_error, shortened
from ctxpack.summarize.offline.marks import mark_of, marks_by_file
from ctxpack.tooloutput import (
    aborted,
    exit_code,
    failed_with_code,
    result_flagged_error,
    still_running,
    telling_error,
    test_summary,
)
from ctxpack.toolpairs import ToolUse, parse_arguments
from ctxpack.tools import (
    DELETE_TOOLS,
    PATH_KEYS,
    PATTERN_KEYS,
    Family,
    base_name,
    command_of,
    creates_file,
    family_of,
    patch_of,
)
from ctxpack.transcript import Message

# What the summary calls each family's action; a write is an edit or a creation.
_KINDS = {
    Family.READ: "read",
    Family.WRITE: "edit",
    Family.SEARCH: "search",
    Family.WEB: "fetch",
    Family.AGENT: "delegate",
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
MAX_TARGET = 120
# How much of what a call returned or a command printed its action quotes.
QUOTED = 60
# How much of the error line a failed run is remembered by (standin.shortened).
ERROR_QUOTED = 120


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
    # A write that made its file unless the path was touched before: settle().
    maybe_edit: bool = False
    # A result answers the call (a pending one may still be running).
    answered: bool = True
    # Failed because the user stopped it: nothing to resolve.
    aborted: bool = False
    # Each file of a call that changes several files each its own way (a
    # patch that adds one and deletes another), with its mark; when empty,
    # every one of `paths` takes `mark`.
    file_marks: tuple[tuple[str, str], ...] = ()

    def marked_paths(self) -> Iterable[tuple[str, str]]:
        """Each of the action's files with what it did to it."""
        return self.file_marks or [(path, self.mark) for path in self.paths]

    def plain(self) -> tuple[Any, ...]:
        """The action as plain data (marshal carries it): Action(*plain)."""
        return tuple(getattr(self, name) for name in _FIELDS)

    def take_outcome(self, other: Action) -> None:
        """How `other` ended, as this action's: a repeat's or a poll's result."""
        self.outcome, self.failed, self.aborted = other.outcome, other.failed, other.aborted
        self.tests, self.exit = other.tests, other.exit

    def what(self) -> str:
        times = _TIMES.format(count=self.count) if self.count > 1 else ""
        return f"{VERBS[self.kind]} {self.target}{times}"

    def line(self) -> str:
        return f"{self.what()} — {self.outcome} [tool: {self.tool}]"


# How many times an action ran in a row, as its line says it (before its outcome).
_TIMES = " ({count} times)"
_TIMES_RE = re.compile(r" \(\d[\d,]* times\)(?= — )")


def without_count(line: str) -> str:
    """An action's line without how many times it ran in a row: a repeat of
    the action reads the same."""
    return _TIMES_RE.sub("", line)


def clip(text: str, limit: int) -> str:
    masked = mask(text)
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
    family = family_of(name, args)
    if command and family in (Family.COMMAND, Family.OTHER):
        return "run"  # a custom tool handed a shell command ran it too
    if family is Family.WRITE and creates_file(name, args):
        return "create"
    # A command tool's call without a command (a poll, input) shows as a plain call.
    return "call" if family is Family.COMMAND else _KINDS.get(family, "call")


def _arg_path(args: dict[str, Any], raw: str) -> str | None:
    for key in PATH_KEYS:
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
    kind: str, name: str, args: dict[str, Any], raw: str, command: str | None, path: str | None
) -> tuple[str, str]:
    """(display target, identity key); `path`: the file a read or write is of."""
    if kind == "run" and command:
        # A script is named as the facts know it (its first line), never pasted.
        lines = script_lines(command)
        if lines:
            first = code_span(clip(command_fact(command), MAX_TARGET))
            return f"{first} (a {lines}-line script)", collapse(command)
        return code_span(clip(command, MAX_TARGET)), collapse(command)
    if path:
        return clip(path, 200), path
    if kind == "search":
        pattern = next((args[k] for k in PATTERN_KEYS if isinstance(args.get(k), str)), "")
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


def make_action(
    use: ToolUse,
    outputs: list[Message],
    *,
    seen: Collection[str] | None,
    args: dict[str, Any] | None = None,
    output: str | None = None,
) -> Action:
    """One tool call and what its results say about it; `seen` holds the paths
    touched before, to tell a new file from an overwritten one (None: not known
    yet, settle() tells them apart later). `args` and `output` (the outputs'
    texts joined by newlines) save work when known."""
    if args is None:
        args = parse_arguments(use.arguments)
    name = use.name or "unknown"
    command = command_of(args)
    kind = _kind(name, args, command)
    out = "\n".join(m.text(o) for o in outputs) if output is None else output
    path = None
    if kind in ("read", "edit", "create"):
        # SWE-agent's `edit` names no file: it changes the one its editor has open.
        path = _arg_path(args, use.arguments) or open_file(out)
    target, key = _target(kind, name, args, use.arguments, command, path)
    if command:
        head = head_of(command)
    elif kind in ("read", "edit", "create"):
        head = key.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
    else:
        head = f"{kind}:{name}"
    paths = [path] if path else []
    if kind == "run" and command:
        paths = paths_in_command(command)
    patch = patch_of(name, args, use.arguments) if kind in ("edit", "create") else ""
    flagged = any(result_flagged_error(o) for o in outputs)
    code = exit_code(out) if outputs else None
    running = bool(outputs) and code is None and still_running(out)
    tests = test_summary(out) if kind == "run" else None
    failed = bool(outputs) and failed_with_code(out, code=code, flagged=flagged, command=command)
    stopped = failed and aborted(out)
    # A pruned output's stand-in quotes the original's telling error line.
    error = (
        (quoted_error(out) or telling_error(out, flagged=flagged))
        if failed and not stopped
        else None
    )
    pending = not outputs or running
    mark = mark_of(kind, command, failed, deletes=base_name(name) in DELETE_TOOLS)
    marked = marks_by_file(
        kind=kind, command=command, patch=patch, paths=paths, mark=mark, failed=failed
    )
    if patch and marked:
        paths = list(dict.fromkeys(file for file, _ in marked))
    parts: list[str] = []
    if not outputs:
        parts.append("no result recorded")
    elif running:
        parts.append("still running")
    elif code is not None:
        parts.append(f"exit {code}")
    elif not tests:
        parts.append("aborted" if stopped else "failed" if failed else "ok")
    if tests:
        parts.append(tests)
    if error:
        parts.append(shortened(mask(error), ERROR_QUOTED))
    elif failed:
        pass
    elif kind == "call" and code is None and out.strip() and not is_pruned(out):
        # A stand-in's opening names the call again: it says nothing returned.
        value = parse_json(out)
        shape = json_shape(value, asked=args) if isinstance(value, dict | list) else None
        parts.append("returned " + (shape or clip(out, QUOTED)))
    elif kind == "run" and not pending and not tests and mark != "read":
        # A stand-in keeps no output: it says only how the output ended.
        said = ending_said(out)
        text = "" if said is not None else printed(out)
        parts.extend(_printed(text, code=code, answered=said is not None and said.answered))
    elif kind == "search" and not pending and not is_pruned(out):
        parts.extend(_found(printed(out)))
    action = Action(
        index=use.index,
        tool=name,
        kind=kind,
        target=target,
        key=key,
        head=head,
        command=command,
        paths=paths,
        mark=mark,
        outcome=", ".join(parts),
        failed=failed,
        pending=pending,
        tests=tests,
        exit=code,
        maybe_edit=kind == "create" and not failed and "created" not in out.lower(),
        answered=bool(outputs),
        aborted=stopped,
        file_marks=marked,
    )
    return action if seen is None else settle(action, seen=seen)


def _printed(text: str, *, code: int | None, answered: bool = False) -> list[str]:
    """What a command that did not fail printed, as its action says it; the
    last line of a longer output, where builds, tests and git say how things
    stand. `answered`: a stand-in says an exit status that answers printed."""
    if not text:
        # Only an answer exits non-zero without failing: say how it answered.
        return [ANSWERED if answered else QUIET] if code else []
    return _told("printed", text, last=True)


def _found(text: str) -> list[str]:
    """What a search returned, as its action says it: a short answer whole; a
    longer one by the count it reports and its first result, or else by its
    count of lines and its first line."""
    if not text.strip():
        return []
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    counted = found_count(lines[0]) if len(lines) > 1 else None
    if counted is None or len(collapse(text)) <= QUOTED:
        return _told("returned", text, last=False)
    count, noun = counted
    first = clip(lines[1], QUOTED)
    if count == 1:
        return [f'found 1 {noun}: "{first}"']
    return [f'found {count:,} {noun}{"es" if noun == "match" else "s"}, the first "{first}"']


def _told(verb: str, text: str, *, last: bool) -> list[str]:
    """A short output whole, a longer one by its count of lines and its last
    line with a word in it (a closing bracket or a rule says nothing), or its
    first line."""
    whole = collapse(text)
    lines = [line for line in text.splitlines() if line.strip()]
    if last:
        line = next((line for line in reversed(lines) if any(c.isalnum() for c in line)), None)
    else:
        line = lines[0]
    if len(whole) <= QUOTED or len(lines) == 1 or line is None:
        return [f'{verb} "{clip(whole, QUOTED)}"']
    where = "last" if last else "first"
    return [f'{verb} {len(lines)} lines, the {where} "{clip(line, QUOTED)}"']


def settle(action: Action, *, seen: Collection[str]) -> Action:
    """The action with a write that says nothing of creating its file told
    apart: an edit when `seen` (the paths touched before) holds the path."""
    if action.maybe_edit:
        action.maybe_edit = False
        if action.key in seen:
            action.kind, action.mark = "edit", mark_of("edit", action.command, action.failed)
    return action


_FIELDS = tuple(field.name for field in fields(Action))
