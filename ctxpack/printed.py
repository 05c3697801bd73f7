"""What a tool printed, apart from what its agent wrote around it: Codex's
header, Claude Code's exit line and error tags, Gemini CLI's fields, the
footers of OpenHands and SWE-agent, the client's reminders, and a JSON
object's output field. Counts and quoted lines describe the output itself,
and "printed nothing" means the same for every agent (exit 1 with nothing
printed is an answer, not a failure). A terminal's colour codes are no text.
What a call returned as JSON is said in one line (json_shape), and how many
things a search found by the count it reports (found_count), the same in a
stand-in and in the record's action."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping
from typing import Any

from ctxpack.formats import jsoncodec

# "Exit code: 3", "Process exited with code 3", "[exit code 3]", "exit status 3",
# "completed with exit code 3", "exitCode": 3, returncode=3, "return code 3".
EXIT_STATUS = re.compile(
    r"(?:exit(?:ed)?(?: with)?(?: exit)?[ _]?(?:code|status)|returncode|return code)"
    r"[\s:=\"\]]*(-?\d+)",
    re.IGNORECASE,
)
_CODEX_HEADER = re.compile(r"(?:Chunk ID:|Wall time:|Process (?:exited|running) |Exit code)")
_CODEX_OUTPUT = "\nOutput:\n"
_OPENHANDS_SUFFIX = re.compile(
    r"\n?\[The command (?:completed with exit code -?\d+|has no new[^\]]*)\.?\]\s*\Z"
)
_SWE_FOOTER = re.compile(
    r"\n?\(Open file: (?P<open>[^\n]*)\)\n\(Current directory: [^\n]*\)\n?bash-\$\s*\Z"
)
_CLAUDE_EXIT = re.compile(r"\AExit code:? -?\d+\n")
# Gemini CLI writes a command's output as fields: the command and its folder
# (older versions), what it printed, then how it ended.
_GEMINI_FIRST = ("Output: ", "Stdout: ", "Command: ", "Directory: ")
_GEMINI_HEAD = re.compile(r"(?:Command: [^\n]*\n)?(?:Directory: [^\n]*\n)?(?:Output|Stdout): ?")
_GEMINI_TAIL = re.compile(
    r"(?:\n(?:Stderr: \(empty\)|Error: \(none\)|Exit Code: -?\d+|Signal: [^\n]*"
    r"|Background PIDs: [^\n]*|Process Group PGID: [^\n]*))+\s*\Z"
)
_GEMINI_TAIL_CHARS = 1000
_ERROR_TAG = re.compile(r"</?tool_use_error>")
# A terminal's colour and cursor codes: how the text looked, not what it says.
ANSI_CODE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# A note the client injects into a turn (Claude Code's system reminders): never
# the tool's output, nor the user's words.
REMINDER_BLOCK = r"<system-reminder>.*?</system-reminder>"
_REMINDER = re.compile(r"\n*" + REMINDER_BLOCK + r"\s*", re.DOTALL)


def parse_json(output: str) -> Any:
    """The output parsed as the standard library parses it, or None."""
    stripped = output.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    # jsoncodec reads JSON to the standard library's values, mostly with
    # orjson; what it refuses and the standard library reads (NaN, Infinity,
    # a lone surrogate) is read here the slow way.
    with contextlib.suppress(jsoncodec.JSONError):
        return jsoncodec.loads(stripped.encode("utf-8", "surrogatepass"))
    try:
        return json.loads(stripped)
    except (ValueError, RecursionError):
        return None


def unwrap(output: str, value: Any) -> str:
    """The output without its agent's wrapper; `value`: the output as parse_json reads it."""
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
    # Each wrapper is looked for only where its words are: a regex without a
    # fixed start tries every position of the output.
    if text.startswith("Exit code"):
        text = _CLAUDE_EXIT.sub("", text)
    if text.startswith(_GEMINI_FIRST):
        text = _gemini_output(text)
    if "[The command " in text:
        text = _OPENHANDS_SUFFIX.sub("", text)
    if "(Open file: " in text:
        text = _SWE_FOOTER.sub("", text)
    if "<system-reminder>" in text:
        text = _REMINDER.sub("\n", text)
    if "tool_use_error>" in text:
        text = _ERROR_TAG.sub("", text)
    return text.replace("\r\n", "\n").strip("\n")


def _gemini_output(text: str) -> str:
    head = _GEMINI_HEAD.match(text)
    if head is None:
        return text
    tail = _GEMINI_TAIL.search(text, max(head.end(), len(text) - _GEMINI_TAIL_CHARS))
    return text[head.end() : tail.start() if tail else len(text)]


# What agents write in place of output when a command printed nothing.
_NOTHING_PRINTED = frozenset(
    {"(no output)", "(empty)", "Your command ran successfully and did not produce any output."}
)


def printed(output: str) -> str:
    """What a command printed: its output without its agent's wrapper and
    without the lines around it that only state the exit status; "" when it
    printed nothing. Not for a stand-in, which keeps no output."""
    return printed_of(output, parse_json(output))


def printed_of(output: str, value: Any) -> str:
    """printed(output), for a caller that has parsed it (parse_json) already."""
    text = unwrap(output, value)
    if "\x1b[" in text:
        text = ANSI_CODE.sub("", text)
    # Status lines stand at either end: the lines between are never split
    # apart (a long output's tens of thousands of them).
    start, end = 0, len(text)
    while start < end:
        stop = text.find("\n", start, end)
        stop = end if stop < 0 else stop
        if not _status_line(text[start:stop]):
            break
        start = stop + 1
    while end > start:
        newline = text.rfind("\n", start, end)
        begin = start if newline < 0 else newline + 1
        if not _status_line(text[begin:end]):
            break
        end = begin - 1
    kept = text[start:end].strip() if start < end else ""
    return "" if kept in _NOTHING_PRINTED else kept


# What node prints around a program's output when a debugger attaches to it
# (an editor's terminal does that to every node process): never the program's.
_DEBUGGER = re.compile(
    r"\s*(?:Debugger attached\.|Waiting for the debugger to disconnect\.\.\."
    r"|Debugger listening on ws://\S+|For help, see: https://nodejs\.org/\S+)\s*\Z"
)


def _status_line(line: str) -> bool:
    if not line.strip():
        return True
    # The words looked for first: the pattern would try every place of a long line.
    lowered = line.lower()
    if ("exit" in lowered or "return" in lowered) and EXIT_STATUS.search(line):
        return True
    return bool(_DEBUGGER.match(line))


# How a search says how many it found: Claude Code's Grep "Found 3 files",
# SWE-agent's 'Found 1 matches for "fields.py" in /testbed/src:'.
_FOUND = re.compile(r"\bFound (\d+) (matches|match|files|file|results|result)\b")
_FOUND_WITHIN = 300


def found_count(text: str) -> tuple[int, str] | None:
    """The count a search reports at its start, and what it counted, in the
    singular: "file", "match" or "result"."""
    found = _FOUND.search(text[:_FOUND_WITHIN])
    if found is None:
        return None
    noun = found.group(2)
    return int(found.group(1)), "match" if noun.startswith("match") else noun.rstrip("s")


def open_file(output: str) -> str | None:
    """The file SWE-agent's editor has open, as its output's footer names it:
    the file its `edit` changes, which the call itself does not name."""
    if "(Open file: " not in output:
        return None
    found = _SWE_FOOTER.search(output[-2000:])
    path = found.group("open").strip() if found else ""
    return path if path and path != "n/a" else None


def json_shape(value: Any, *, asked: Mapping[str, Any] | None = None) -> str:
    """What a call returned as JSON, in a line: `JSON object (12 keys): origin=SFO,
    destination=JFK, …` (its first short fields: a scalar, or a short list of
    them such as `reservations=[NO6JO3, AIXC49]`), `JSON list of 3 (flight_number:
    HAT069, …)`. `asked`: the call's arguments; a field the call was asked with,
    the same name and value, says nothing new and is left out."""
    if isinstance(value, dict):
        asked = asked or {}
        fields = [
            f"{k}={shown}"
            for k, v in value.items()
            if (shown := _short(v)) is not None and not (k in asked and asked[k] == v)
        ]
        said = ", ".join(fields[:4])
        if len(fields) > 4 or len(value) > len(fields[:4]):
            said += ", …" if said else "…"
        return f"JSON object ({len(value)} keys): {said}"
    if isinstance(value, list):
        ids = _list_ids(value)
        return f"JSON list of {len(value)}" + (f" ({ids})" if ids else "")
    return "JSON"


def _list_ids(items: list[Any]) -> str:
    """The first short text field of a list's objects, each item's: `flight_number:
    HAT069, HAT083`; an item that is a list of objects (a connection of two
    flights) names each of its own, `HAT057+HAT012`."""
    first = next(
        (o for i in items for o in (i if isinstance(i, list) else [i]) if isinstance(o, dict)),
        None,
    )
    if first is None:
        return ""
    for key, value in first.items():
        if isinstance(value, str) and 0 < len(value) <= 24:
            values = [ids for item in items if (ids := _ids_of(item, key))]
            shown = ", ".join(values[:5]) + (", …" if len(values) > 5 else "")
            return f"{key}: {shown}"
    return ""


def _ids_of(item: Any, key: str) -> str:
    parts = item if isinstance(item, list) else [item]
    return "+".join(str(p[key]) for p in parts if isinstance(p, dict) and key in p)


def _short(value: Any) -> str | None:
    """A field's value as json_shape shows it; None for one too long to."""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        text = _scalar(value)
        return text if len(text) <= 24 else None
    if isinstance(value, list) and len(value) <= 5:
        items = [_short(item) for item in value if not isinstance(item, list)]
        shown = [item for item in items if item is not None]
        text = "[" + ", ".join(shown) + "]"
        return text if len(shown) == len(value) and len(text) <= 48 else None
    return None


def _scalar(value: str | int | float) -> str:
    return " ".join(str(value).split())
