"""Reading a tool's output: its exit code, whether it still runs, and its
error lines (recognised error lines, or the first line of a failed one)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ctxpack.facts.match import collapse, folded
from ctxpack.transcript import Message

_ERROR_LINE = r"""(?:E\s+|[-*]\s+)?(?:[A-Z]\d{3,4}\s+)?(
        [A-Za-z_][\w.]*(?:Error|Exception)(?::\s.*)?
      | Error:\s.+
      | error(?:\[E\d{4}\])?:\s.+
      | FAILED\s.+
      | fatal:\s.+
      | npm\sERR!.*
      | thread\s'[^']*'\spanicked.*
      | panic:\s.+
    )$"""
_ERROR_RE = re.compile(r"^\s*" + _ERROR_LINE, re.MULTILINE | re.VERBOSE)
# The same from its first non-space character: every line start before that
# character leads to this one attempt.
_ERROR_AT = re.compile(_ERROR_LINE, re.MULTILINE | re.VERBOSE)
# A long run of blank lines makes _ERROR_RE retry the run from each of them.
_LONG_SPACE = re.compile(r"\n\s{64}")
_SPACES = re.compile(r"\s*")
_ERROR_HINTS = ("Error", "error", "Exception", "FAILED", "fatal:", "ERR!", "panic")
MAX_ERROR_CHARS = 300
ERRORS_PER_RESULT = 5
# Lines a tool wrapper prints around the real output (Codex exec, Claude Code Bash).
_WRAPPER_LINE = re.compile(
    r"^(?:Chunk ID:|Wall time:|Process exited with code|Process running with|"
    r"Original token count:|Output:|Exit code \d+|Total output lines:)"
)

_EXIT_RE = re.compile(
    r"(?:exit(?:ed)?(?: with)?(?: exit)? (?:code|status)|exit_code|returncode|return code)"
    r"[\s:=\"]*(-?\d+)",
    re.IGNORECASE,
)
_RUNNING_RE = re.compile(r"Process running with session ID|still running", re.IGNORECASE)


def result_flagged_error(msg: Message) -> bool:
    """The adapter carried the native error flag (is_error, status)."""
    for key in ("is_error", "isError"):
        if msg.get(key) is True:
            return True
    status = msg.get("status")
    return isinstance(status, str) and status.lower() in ("error", "failed", "failure")


def exit_code(output: str) -> int | None:
    for part in (output[:400], output[-400:]):
        lowered = folded(part)
        if lowered is not None and "exit" not in lowered and "return" not in lowered:
            continue
        mt = _EXIT_RE.search(part)
        if mt:
            return int(mt.group(1))
    return None


def still_running(output: str) -> bool:
    return bool(_RUNNING_RE.search(output[:400]))


def error_lines(output: str, *, flagged: bool = False) -> list[str]:
    """Error lines of one tool output; a failed output with no recognised
    line contributes its first meaningful line."""
    found: list[str] = []
    if any(hint in output for hint in _ERROR_HINTS):
        seen: set[str] = set()
        for line in _error_groups(output):
            line = line.strip()[:MAX_ERROR_CHARS]
            key = collapse(line)
            if key and key not in seen:
                seen.add(key)
                found.append(line)
                if len(found) == ERRORS_PER_RESULT:
                    break
    if found:
        return found
    code = exit_code(output)
    if flagged or (code is not None and code != 0):
        for line in output.splitlines():
            line = line.strip()
            if line and not _WRAPPER_LINE.match(line) and not set(line) <= set("=-_*# "):
                return [line[:MAX_ERROR_CHARS]]
    return []


def _error_groups(output: str) -> Iterator[str]:
    """The error text (group 1) of each match of _ERROR_RE, in order."""
    if not _LONG_SPACE.search(output):
        for mt in _ERROR_RE.finditer(output):
            yield mt.group(1)
        return
    line = 0  # the next line start to try
    while 0 <= line < len(output):
        spaces = _SPACES.match(output, line)
        start = spaces.end() if spaces else line
        found = _ERROR_AT.match(output, start)
        if found:
            yield found.group(1)
            end = found.end()
            line = end if output[end - 1] == "\n" else output.find("\n", end) + 1
        else:
            line = output.find("\n", start) + 1
        if line == 0:
            return
