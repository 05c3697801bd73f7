"""Facts read from a tool's output text: exit code, size, matches, the line
that matters. Each agent wraps command output its own way (Codex headers,
OpenHands and SWE-agent footers, Hermes JSON); the wrapper is peeled off first
so counts and the quoted line describe the output itself."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_EXIT_PATTERNS = (
    re.compile(r"Process exited with code (-?\d+)"),  # Codex exec_command
    re.compile(r"^Exit code:? (-?\d+)\s*$", re.MULTILINE),  # Claude Code Bash, Hermes
    re.compile(r"\[exit code:? ?(-?\d+)\]", re.IGNORECASE),
    re.compile(r"(?:completed|executed|exited|finished) with exit code (-?\d+)"),  # OpenHands
    re.compile(r"\bexit(?:ed)? with code (-?\d+)"),
    re.compile(r'"(?:exit_code|exitCode|returncode|exit_status)"\s*:\s*(-?\d+)'),
)
_RUNNING = re.compile(r"Process running with session ID (\d+)")
_CODEX_HEADER = re.compile(r"(?:Chunk ID:|Wall time:|Process (?:exited|running) |Exit code)")
_CODEX_OUTPUT = "\nOutput:\n"
_OPENHANDS_SUFFIX = re.compile(
    r"\n?\[The command (?:completed with exit code -?\d+|has no new[^\]]*)\.?\]\s*\Z"
)
_SWE_FOOTER = re.compile(r"\n?\(Open file: [^\n]*\)\n\(Current directory: [^\n]*\)\n?bash-\$\s*\Z")
_CLAUDE_EXIT = re.compile(r"\AExit code:? -?\d+\n")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_ERROR_TAG = re.compile(r"</?tool_use_error>")
_REMINDER = re.compile(r"\n*<system-reminder>.*?</system-reminder>\s*", re.DOTALL)
_NUMBERED = re.compile(r"^\s*(\d+)(?:→|\t|\|)", re.MULTILINE)  # cat -n, Read, Hermes read_file
_SWE_FILE = re.compile(r"^\[File: [^\n]*\((\d+) lines total\)\]", re.MULTILINE)
_FOUND = re.compile(r"\bFound (\d+) (matches|match|files|file|results|result)\b")
_NONE_FOUND = re.compile(r"^No (?:files|matches|results) found", re.IGNORECASE)
_PAGINATION = re.compile(r"^\[Showing results with pagination[^\n]*\]$", re.MULTILINE)
_STRONG_ERROR = re.compile(
    r"^\s*(?:error|fatal|failed|failure|panic|traceback)\b|\b[A-Z]\w*(?:Error|Exception)\b|"
    r"\bFAILED\b|^E\s{2,}|^\s*! \[rejected\]",
    re.IGNORECASE,
)
_ERROR_LINE = re.compile(
    r"(error|exception|traceback|fatal|failed|failure|panic|denied|not found|"
    r"no such file|cannot|could not|unable to|refused|timed? ?out|abort)",
    re.IGNORECASE,
)
_SUMMARY_LINE = re.compile(
    r"(\bpassed\b|\bfailed\b|\bsucceeded\b|\bsuccess|\bok\b|\bdone\b|\bfinished\b|"
    r"\bcompleted?\b|\d\s+total\b|\bsummary\b|\d+ tests?\b|✓|✗)",
    re.IGNORECASE,
)
QUOTE_CHARS = 100


@dataclass(frozen=True)
class OutputFacts:
    chars: int  # of the whole original output
    body: str  # the output with its agent wrapper removed
    lines: int  # of the body
    exit_code: int | None = None
    running: str = ""  # e.g. "still running (session 3587)"
    error: bool = False
    json_value: Any = None  # the parsed output, when it is JSON


def analyze(output: str, *, is_error: bool = False) -> OutputFacts:
    code = exit_code(output)
    running = _RUNNING.search(output[:400])
    value = _json(output)
    body = _unwrap(output, value)
    error = is_error or (code is not None and code != 0) or _json_error(value)
    return OutputFacts(
        chars=len(output),
        body=body,
        lines=count_lines(body),
        exit_code=code,
        running=f"still running (session {running.group(1)})" if running and code is None else "",
        error=error,
        json_value=value,
    )


def exit_code(output: str) -> int | None:
    """The exit code an agent wrote into a command's output, if any."""
    head, tail = output[:600], output[-600:]
    for pattern in _EXIT_PATTERNS:
        for part in (head, tail):
            found = pattern.search(part)
            if found:
                return int(found.group(1))
    return None


def count_lines(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _json(output: str) -> Any:
    stripped = output.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        return json.loads(stripped)
    except (ValueError, RecursionError):
        return None


def _json_error(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    err = value.get("error")
    return bool(err) or value.get("success") is False or value.get("is_error") is True


def _unwrap(output: str, value: Any) -> str:
    if isinstance(value, dict):
        for key in ("output", "content", "stdout", "result", "diff"):
            inner = value.get(key)
            if isinstance(inner, str):
                return inner
        return output
    text = output
    cut = text.find(_CODEX_OUTPUT, 0, 600)
    if cut >= 0 and _CODEX_HEADER.match(text[:cut]):
        text = text[cut + len(_CODEX_OUTPUT) :]
    text = _CLAUDE_EXIT.sub("", text)
    text = _OPENHANDS_SUFFIX.sub("", text)
    text = _SWE_FOOTER.sub("", text)
    text = _REMINDER.sub("\n", text)
    text = _ERROR_TAG.sub("", text)
    return text.replace("\r\n", "\n").strip("\n")


def nonblank_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def informative_line(body: str, *, prefer_error: bool) -> str:
    """The line a reader most needs: the last error when something failed, else
    the last summary-looking line, else the last line."""
    lines = nonblank_lines(body)[-200:]
    if not lines:
        return ""
    if prefer_error:
        patterns = (_STRONG_ERROR, _ERROR_LINE, _SUMMARY_LINE)
    else:
        patterns = (_SUMMARY_LINE, _STRONG_ERROR, _ERROR_LINE)
    for pattern in patterns:
        for line in reversed(lines):
            if pattern.search(line) and not set(line.strip()) <= set("=-_*#~+ "):
                return _quote(line)
    return _quote(lines[-1])


def first_line(body: str) -> str:
    lines = nonblank_lines(body[:4000])
    return _quote(lines[0]) if lines else ""


def _quote(line: str) -> str:
    flat = " ".join(_ANSI.sub("", line).split()).strip("=-_ ")
    return flat if len(flat) <= QUOTE_CHARS else flat[: QUOTE_CHARS - 1] + "…"


def read_span(body: str) -> str:
    """`lines 314-333` for numbered file views; `1,997 lines total` for SWE-agent."""
    total = _SWE_FILE.search(body[:500])
    numbers = [int(n) for n in _NUMBERED.findall(body)]
    parts = []
    if numbers:
        parts.append(f"lines {numbers[0]}-{numbers[-1]}")
    if total:
        lines = int(total.group(1))
        parts.append(f"{lines:,} line{'' if lines == 1 else 's'} total")
    return ", ".join(parts)


def match_count(facts: OutputFacts) -> tuple[int, str] | None:
    """How many matches or files a search reported, and what it counted:
    "files", "lines" (counted here, one result per line) or "" (matches)."""
    value = facts.json_value
    if isinstance(value, dict):
        for key in ("total_count", "count", "num_results", "total"):
            if isinstance(value.get(key), int):
                return int(value[key]), "files" if "files" in value else ""
        for key in ("matches", "files", "results"):
            if isinstance(value.get(key), list):
                return len(value[key]), "files" if key == "files" else ""
        return None
    if isinstance(value, list):
        return len(value), ""
    body = facts.body
    if _NONE_FOUND.search(body.lstrip()[:80]):
        return 0, ""
    found = _FOUND.search(body[:300])
    if found:
        noun = found.group(2)
        return int(found.group(1)), "files" if noun.startswith("file") else ""
    return len(nonblank_lines(_PAGINATION.sub("", body))), "lines"


def json_shape(value: Any) -> str:
    """`object: reservation_id=ZFA04Y, origin=SFO, … (12 keys)` / `list of 3 (HAT069, …)`."""
    if isinstance(value, dict):
        scalars = [
            f"{k}={_scalar(v)}"
            for k, v in value.items()
            if isinstance(v, str | int | float)
            and not isinstance(v, bool)
            and len(_scalar(v)) <= 24
        ]
        shown = ", ".join(scalars[:4])
        if len(scalars) > 4 or len(value) > len(scalars[:4]):
            shown += ", …" if shown else "…"
        return f"JSON object ({len(value)} keys): {shown}"
    if isinstance(value, list):
        ids = _list_ids(value)
        return f"JSON list of {len(value)}" + (f" ({ids})" if ids else "")
    return "JSON"


def _list_ids(items: list[Any]) -> str:
    first = next((i for i in items if isinstance(i, dict)), None)
    if first is None:
        return ""
    for key, value in first.items():
        if isinstance(value, str) and 0 < len(value) <= 24:
            values = [str(i.get(key)) for i in items if isinstance(i, dict) and key in i]
            shown = ", ".join(values[:5]) + (", …" if len(values) > 5 else "")
            return f"{key}: {shown}"
    return ""


def _scalar(value: str | int | float) -> str:
    return " ".join(str(value).split())
