"""Reading a tool's output: how it ended (exit code, still running, the
result's error flag), whether it failed, its error lines and test counts.
What it printed, apart from its agent's wrapper, is `printed`'s to say.
Every stage that asks whether a result failed asks here, of an output as
the tool wrote it or of the stand-in pruning left in its place (read by
`standin`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ctxpack.answers import answer_shape, is_answer
from ctxpack.facts.match import collapse, folded
from ctxpack.printed import EXIT_STATUS, parse_json, printed_of
from ctxpack.standin import ending_said, is_pruned
from ctxpack.transcript import Message

# Where agents write the exit status: a header or a footer.
_STATUS_CHARS = 600
# What a command still running when it returned says, in its output's head.
_RUNNING_HEAD = 400
_SESSION = re.compile(r"Process running with session ID (\d+)")
_STILL_RUNNING_WORDS = "still running"
_STILL_RUNNING = re.compile(re.escape(_STILL_RUNNING_WORDS), re.IGNORECASE)
# An output that opens like this failed, whatever else it says: SWE-agent's
# editor refuses an edit its linter rejects, and applies none of it; Gemini
# CLI answers a call the user denied, or an edit whose text it did not find,
# with an error whose words are all that a history keeps of it.
_FAILED_START = re.compile(
    r"\s*(?:Error|error|ERROR|fatal:|Traceback|FAILED|npm ERR!|npm error |aborted|Failed to "
    r"|(?:ENOENT|EACCES|EPERM|EISDIR|ENOTDIR|EEXIST|ENOTEMPTY): "
    r"|\[Operation Cancelled\]|Your proposed edit has introduced new syntax error)"
)
_TESTS_RE = re.compile(
    r"(\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed)"
    r"(?:, \d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected))*)"
    r" in \d"
)
_CARGO_RE = re.compile(r"test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed")
_JEST_RE = re.compile(r"Tests:\s+([^\n]*?\d+ total)")
# Tests failed when a count of them did: cargo and jest print a zero count
# ("1 passed, 0 failed" is cargo's every passing run), pytest none.
_SOME_FAILED = re.compile(r"(?<!\d)[1-9]\d* failed")
_TESTS_HINTS = ("passed", "failed", "error", "skipped")

# A recognised error line; group 1 is the error text. An exception's class is
# capitalised (after any module path), and a lower-case "error:" opening an
# object literal or a list item ("isError: true," "error: { type: ... },") is
# code being read, not an error. Compilers and type checkers put the place
# first ("a.c:3:5: error: ...", "a.py:12: error: ...", tsc's "a.ts(28,2): error
# TS2739: ..." and "a.ts:28:2 - error TS2739: ..."): the line is quoted whole,
# the place being what a resumed model goes to.
_ERROR_LINE = r"""(?:E\s+|[-*]\s+)?(?:[A-Z]\d{3,4}\s+)?(
        (?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?::\s.*)?
      | Error:\s.+
      | (?:\S+?(?:\(\d+,\d+\)|:\d+(?::\d+)?)(?::|\s-)\s)?(?:fatal\s)?
        error(?:\[E\d{4}\]|\sTS\d+)?:\s(?![{\[])(?!.*,$).+
      | FAILED\s.+
      | fatal:\s.+
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
_ERROR_HINTS = ("Error", "error", "Exception", "FAILED", "fatal:", "panic")
MAX_ERROR_CHARS = 300
ERRORS_PER_RESULT = 5


@dataclass(frozen=True)
class OutputFacts:
    chars: int  # of the whole original output
    body: str  # what it printed (printed_of): no wrapper, no status line around it
    lines: int  # of the body
    exit_code: int | None = None
    running: str = ""  # e.g. "still running (session 3587)"
    error: bool = False
    aborted: bool = False  # failed because the user stopped it
    json_value: Any = None  # the parsed output, when it is JSON
    printed: bool = False  # a non-zero exit that is no failure printed its answer


def analyze(output: str, *, flagged: bool = False, command: str | None = None) -> OutputFacts:
    """What one output says; `flagged` is the result's own error flag,
    `command` the command that printed it, where known."""
    code = exit_code(output)
    value = parse_json(output)
    # The exit status is read above from the agent's words around the output
    # (pi's footer, Claude Code's header); what the command printed is the rest.
    body = printed_of(output, value)
    running = ""
    if code is None and still_running(output):
        session = running_session(output)
        running = f"still running (session {session})" if session else "still running"
    error = _failed(output, code=code, value=value, flagged=flagged, command=command)
    answered = bool(code) and not error and ending_said(output) is None
    return OutputFacts(
        chars=len(output),
        body=body,
        lines=count_lines(body),
        exit_code=code,
        running=running,
        error=error,
        aborted=error and aborted(output),
        json_value=value,
        printed=answered and bool(body),
    )


def result_flagged_error(msg: Message) -> bool:
    """The result carries its agent's own error flag (is_error, isError, status)."""
    for key in ("is_error", "isError"):
        if msg.get(key) is True:
            return True
    status = msg.get("status")
    if isinstance(status, str) and status.lower() in ("error", "failed", "failure"):
        return True
    content = msg.get("content")
    return isinstance(content, list) and any(
        isinstance(part, dict) and part.get("is_error") is True for part in content
    )


def result_failed(output: str, *, flagged: bool = False, command: str | None = None) -> bool:
    """Whether a tool result failed: its error flag, a non-zero exit code, a
    JSON error, an output that opens with an error, or failed tests.
    `command`: the command that printed it, where known."""
    return failed_with_code(output, code=exit_code(output), flagged=flagged, command=command)


def failed_with_code(
    output: str, *, code: int | None, flagged: bool = False, command: str | None = None
) -> bool:
    """result_failed, for a caller that has read the exit code already, and
    may know the command that printed the output."""
    value = parse_json(output) if _may_say_failed(output) else None
    return _failed(output, code=code, value=value, flagged=flagged, command=command)


def _may_say_failed(output: str) -> bool:
    """Whether the output may be a JSON object that says it failed. Most are
    not (a list, or an object without those keys), and parsing a long output
    only to learn that costs more than the rest of reading it."""
    if not output.lstrip().startswith("{"):
        return False
    # A key spelt with \u escapes is only found by parsing.
    return "\\u" in output or any(key in output for key in _QUOTED_FAILURE_KEYS)


def _failed(
    output: str, *, code: int | None, value: Any, flagged: bool, command: str | None = None
) -> bool:
    if code == 1 and _answered(output, value, command):
        return False
    if flagged or (code is not None and code != 0) or _json_error(value):
        return True
    if code is None and _FAILED_START.match(output):
        return True
    said = ending_said(output) if code is None else None
    if said is not None and said.error:
        return True
    tests = test_summary(output)
    return tests is not None and " failed" in tests and _SOME_FAILED.search(tests) is not None


# Longer than this, an output printed more than its agent's status lines.
_STATUS_ONLY_CHARS = 400


def _answered(output: str, value: Any, command: str | None) -> bool:
    """Exit status 1 with nothing printed is an answer, not a failure: a search
    found no line (grep, rg), a test was false (`test -f`, `[ … ]`), two files
    differ (`cmp -s`). Its agent may flag it as an error all the same; an
    error the command met is printed. The printed answer of a command whose
    exit status 1 answers (answers.py: diff's differences, grep -c's zero)
    is one too."""
    said = ending_said(output)
    if said is not None:
        return said.quiet
    if value is not None:
        return False
    shape = answer_shape(command)
    if shape is not None:
        return is_answer(shape, printed_of(output, value))
    return len(output) <= _STATUS_ONLY_CHARS and not printed_of(output, value)


def exit_code(output: str) -> int | None:
    """The exit code an agent wrote into a command's output, if any."""
    said = ending_said(output)
    if said is not None:
        return said.code
    for part in (output[:_STATUS_CHARS], output[-_STATUS_CHARS:]):
        lowered = folded(part)
        if lowered is not None and "exit" not in lowered and "return" not in lowered:
            continue
        found = EXIT_STATUS.search(part)
        if found:
            return int(found.group(1))
    return None


def running_session(output: str) -> str | None:
    """The session id of a command that was still running when it returned."""
    said = ending_said(output)
    if said is not None:
        return said.session
    found = _SESSION.search(output[:_RUNNING_HEAD])
    return found.group(1) if found else None


def still_running(output: str) -> bool:
    said = ending_said(output)
    if said is not None:
        return said.running
    head = output[:_RUNNING_HEAD]
    if _SESSION.search(head):
        return True
    lowered = folded(head)
    if lowered is None:
        return bool(_STILL_RUNNING.search(head))
    return _STILL_RUNNING_WORDS in lowered


def test_summary(output: str) -> str | None:
    """The last test run's counts (`3 passed, 1 failed`), from pytest, cargo or jest."""
    counted = any(hint in output for hint in _TESTS_HINTS)
    found = [mt.group(1) for mt in _TESTS_RE.finditer(output)] if counted else []
    if found:
        return found[-1]
    cargo = list(_CARGO_RE.finditer(output)) if counted and "test result: " in output else []
    if cargo:
        return f"{cargo[-1].group(1)} passed, {cargo[-1].group(2)} failed"
    jest = list(_JEST_RE.finditer(output)) if "Tests:" in output else []
    return collapse(jest[-1].group(1)) if jest else None


# A line that names what failed and not why, the reason being another error
# line: pytest's summary of a failed test without its reason, or with the
# reason cut ("FAILED t.py::test_x - ..."), Node's wrapper around a child
# process that failed ("Error: Command failed: tsc --build") and cargo's last
# word on a build ("error: could not compile `app` ... due to 2 previous errors").
_NAMES_ONLY = re.compile(
    r"FAILED \S+(?: - \.\.\.)?|Error: Command failed: .+|error: could not compile .+"
)
# npm's report of a script that failed ("npm error ..." since npm 7, "npm
# ERR! ..." before) is no error line: the script's own errors are printed
# above it. Most of its lines only place the failure (the exit code, the
# package, its folder, the log); an output cut down to the report is
# remembered by its first line that says what failed ("npm error Lifecycle
# script `check` failed with error:", "npm error command failed").
_NPM_PLACE = re.compile(
    r"npm (?:ERR!|error)(?:$|\s{2,}|\s(?:code|errno|path|workspace|location|syscall|signal"
    r"|Exit status|A complete log|This is probably|Did you mean|Run `npm))"
)
# How an agent says it stopped a command, on the output's last line: pi's
# "Command aborted" and "Command timed out after 30 seconds", Codex's "aborted
# by user after 33.4s". A stopped command printed what it had got to. Timed
# out, the stop is why it failed; aborted, the user stopped it: no error.
_ABORTED = re.compile(r"Command aborted|aborted by user\b.*")
_TIMED_OUT = re.compile(r"Command timed out\b.*")


def telling_error(output: str, *, flagged: bool = False) -> str | None:
    """The error line a failed run is remembered by, of its output's error
    lines (error_lines): the last, the one a resumed model must fix, unless
    it only names what failed and an earlier one says why. Where the lines
    right above it are error lines too (one message written over several
    lines, as git writes them, or a compiler's list of errors), the first of
    them: the cause that the rest follow from. None: no error line."""
    errors = error_lines(output, flagged=flagged)
    if not errors:
        return None
    chosen = next(
        (line for line in reversed(errors) if not _NAMES_ONLY.fullmatch(line)), errors[-1]
    )
    start = output.rfind(chosen)
    start = output.rfind("\n", 0, start) + 1 if start > 0 else 0
    while start > 0:
        above = output.rfind("\n", 0, start - 1) + 1
        found = _ERROR_RE.fullmatch(output, above, start - 1)
        line = found.group(1).strip()[:MAX_ERROR_CHARS] if found else ""
        if not line or _NAMES_ONLY.fullmatch(line):
            break
        chosen, start = line, above
    return chosen


def aborted(output: str) -> bool:
    """Whether the output ends with its agent's word that the user stopped the
    command (a stand-in: says it was aborted)."""
    said = ending_said(output)
    if said is not None:
        return said.aborted
    tail = output.rstrip()
    return _ABORTED.fullmatch(tail[tail.rfind("\n") + 1 :].strip()) is not None


def error_lines(output: str, *, flagged: bool = False, command: str | None = None) -> list[str]:
    """Error lines of one tool output; a failed output with no recognised
    line contributes one: its time-out when its agent stopped it so, else the
    first meaningful line the command printed that is not npm placing the
    failure (none when the user aborted it, or it printed nothing). A
    stand-in has none of its own: the line it quotes is `quoted_error`'s.
    `command`: the command that printed it, where known. A command whose
    exit status 1 answers has none then: what it printed is the answer (a
    diff's lines that quote an error are the files' text)."""
    if is_pruned(output):
        return []
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
        # What a command whose exit status 1 answers (answers.py) printed
        # then is its answer, when that is no failure.
        answered = (
            exit_code(output) == 1
            and answer_shape(command) is not None
            and not result_failed(output, flagged=flagged, command=command)
        )
        return [] if answered else found
    if result_failed(output, flagged=flagged, command=command) and not aborted(output):
        lines = printed_of(output, parse_json(output)).splitlines()
        last = next(_meaningful(reversed(lines)), None)
        if last is None:
            return []
        if _TIMED_OUT.fullmatch(last):
            return [last[:MAX_ERROR_CHARS]]
        telling = next((line for line in _meaningful(lines) if not _NPM_PLACE.match(line)), None)
        return [(telling or next(_meaningful(lines)))[:MAX_ERROR_CHARS]]
    return []


def _meaningful(lines: Iterable[str]) -> Iterator[str]:
    """The lines that say something (no rule of dashes or stars), stripped."""
    for line in lines:
        line = line.strip()
        if line and not set(line) <= set("=-_*# "):
            yield line


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


def count_lines(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


# What a JSON object output says by each key when it failed.
_FAILED_BY_KEY: dict[str, Callable[[Any], bool]] = {
    "error": bool,
    "success": lambda value: value is False,
    "is_error": lambda value: value is True,
}
# Those keys as an object writes them unescaped.
_QUOTED_FAILURE_KEYS = tuple(f'"{key}"' for key in _FAILED_BY_KEY)


def _json_error(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    return any(failed(value.get(key)) for key, failed in _FAILED_BY_KEY.items())
