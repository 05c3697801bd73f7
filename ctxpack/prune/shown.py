"""What a stand-in shows of a tool output: the line worth quoting (the
last error when it failed, else a summary line), the span a numbered file
view covers and how many matches a search reported (a JSON value's shape is
printed.json_shape, which the record's actions read too).
How the output ended, and its agent wrapper, are read in tooloutput."""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterator

from ctxpack.facts.match import folded
from ctxpack.printed import ANSI_CODE, found_count
from ctxpack.tooloutput import OutputFacts

_NUMBERED = re.compile(r"^\s*(\d+)(?:→|\t|\|)", re.MULTILINE)  # cat -n, Read, Hermes read_file
_SWE_FILE = re.compile(r"^\[File: [^\n]*\((\d+) lines total\)\]", re.MULTILINE)
_NONE_FOUND = re.compile(r"^No (?:files|matches|results) found", re.IGNORECASE)
_PAGINATION = re.compile(r"^\[Showing results with pagination[^\n]*\]$", re.MULTILINE)
# Which line to quote: errors first when the result failed, else a summary.
_QUOTE_STRONG = re.compile(
    r"^\s*(?:error|fatal|failed|failure|panic|traceback)\b|\b[A-Z]\w*(?:Error|Exception)\b|"
    r"\bFAILED\b|^E\s{2,}|^\s*! \[rejected\]",
    re.IGNORECASE,
)
_QUOTE_WEAK = re.compile(
    r"(error|exception|traceback|fatal|failed|failure|panic|denied|not found|"
    r"no such file|cannot|could not|unable to|refused|timed? ?out|abort)",
    re.IGNORECASE,
)
_QUOTE_SUMMARY = re.compile(
    r"(\bpassed\b|\bfailed\b|\bsucceeded\b|\bsuccess|\bok\b|\bdone\b|\bfinished\b|"
    r"\bcompleted?\b|\d\s+total\b|\bsummary\b|\d+ tests?\b|✓|✗)",
    re.IGNORECASE,
)
# What a line holds, folded, wherever the pattern matches it: its words,
# bounded where the pattern bounds them (a line the strong pattern matches for
# opening with "E" and spaces begins with "e").
_QUOTE_HINTS = {
    _QUOTE_STRONG: re.compile(r"error|exception|fatal|fail|panic|traceback|\[rejected\]|^e", re.M),
    _QUOTE_WEAK: re.compile(_QUOTE_WEAK.pattern),
    _QUOTE_SUMMARY: re.compile(
        r"\b(?:passed|failed|succeeded|ok|done|finished|completed?|summary)\b"
        r"|\bsuccess|total\b|tests?\b|✓|✗"
    ),
}
# A line made only of these is a rule, never quoted.
_RULE_CHARS = frozenset("=-_*#~+ ")
QUOTE_CHARS = 100


def nonblank_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def informative_line(body: str, *, prefer_error: bool) -> str:
    """The line a reader most needs: the last error when something failed, else
    the last summary-looking line, else the last line."""
    lines = nonblank_lines(body)[-200:]
    if not lines:
        return ""
    if prefer_error:
        patterns = (_QUOTE_STRONG, _QUOTE_WEAK, _QUOTE_SUMMARY)
    else:
        patterns = (_QUOTE_SUMMARY, _QUOTE_STRONG, _QUOTE_WEAK)
    # The lines each pattern may match, found in one pass over them all
    # rather than a search of each line.
    low = folded("\n".join(lines))
    starts = list(itertools.accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    for pattern in patterns:
        tried = (
            reversed(lines) if low is None else _hinted(lines, starts, low, _QUOTE_HINTS[pattern])
        )
        for line in tried:
            if pattern.search(line) and not set(line.strip()) <= _RULE_CHARS:
                return _quote(line)
    return _quote(lines[-1])


def _hinted(lines: list[str], starts: list[int], low: str, hints: re.Pattern[str]) -> Iterator[str]:
    """The lines, last first, that hold a match of `hints` in `low` (the
    lines joined by newlines and folded, each starting at its `starts`; no
    hint spans a newline)."""
    found = {bisect.bisect_right(starts, mt.start()) - 1 for mt in hints.finditer(low)}
    return (lines[at] for at in sorted(found, reverse=True))


def first_line(body: str) -> str:
    lines = nonblank_lines(body[:4000])
    return _quote(lines[0]) if lines else ""


def _quote(line: str) -> str:
    flat = " ".join(ANSI_CODE.sub("", line).split()).strip("=-_ ")
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
    found = found_count(body)
    if found:
        count, noun = found
        return count, "files" if noun == "file" else ""
    return len(nonblank_lines(_PAGINATION.sub("", body))), "lines"
