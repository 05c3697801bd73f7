"""Low-level scanners for the facts a reader of a transcript needs: paths,
commands, error lines, identifiers, URLs, values, exit codes, and a small
secret mask. Pure functions over strings and parsed tool arguments."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Iterator
from typing import Any

from ctxpack.transcript import Message

URL_RE = re.compile(r"(?:https?|wss?|ftp)://[^\s<>\"'`)\]{}|\\^]+")
_URL_TRAIL = ".,;:!?*_"

_UUID_RE = re.compile(
    r"(?<![\w-])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![\w-])"
)
# A sha256 first, so a 64-digit hash is not cut into a 40-digit one.
_HEX_RE = re.compile(r"(?<![\w#-])(?:[0-9a-f]{64}|[0-9a-f]{7,40})(?![\w-])")

_UNITS = (
    r"%|[KMGTP]i?B|bytes?|ms|µs|ns|s|secs?|seconds?|mins?|minutes?|hrs?|hours?|days?|weeks?"
    r"|GHz|MHz|kHz|Hz|km|cm|mm|kg|mg|lbs?|tokens"
)
_NUMBER_UNIT_RE = re.compile(rf"(?<![\w.$])\d+(?:[.,]\d+)?(?:\s?(?:{_UNITS}))(?![\w/%])")
# Thousands groups only: "$1,000," ends a clause, the comma is not part of it.
_MONEY_RE = re.compile(r"(?<![\w])[$€£]\d+(?:,\d{3})*(?:\.\d+)?(?![\w])")
# "the 1990s" is a decade, not thirty seconds.
_DECADE_RE = re.compile(r"^(?:1[0-9]|20)\d0s$")

_NOT = r"(?:don['’]t|do not|doesn['’]t|does not)"
_DIRECTIVE_RE = re.compile(
    rf"^(?:please\s+)?{_NOT}\b"  # imperative: "Don't touch the schema"
    rf"|\bplease\s+{_NOT}\b"
    rf"|\b(?:I|we)\s+(?:really\s+)?{_NOT}\s+(?:want|like|need)\b"  # stated preference
    r"|\b(?:never|always|must|make sure)\b"
    r"|\buse\b.{1,80}\binstead\b",
    re.IGNORECASE,
)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
MAX_SENTENCE = 300

_ERROR_RE = re.compile(
    r"""^\s*(?:E\s+|[-*]\s+)?(?:[A-Z]\d{3,4}\s+)?(
        [A-Za-z_][\w.]*(?:Error|Exception)(?::\s.*)?
      | Error:\s.+
      | error(?:\[E\d{4}\])?:\s.+
      | FAILED\s.+
      | fatal:\s.+
      | npm\sERR!.*
      | thread\s'[^']*'\spanicked.*
      | panic:\s.+
    )$""",
    re.MULTILINE | re.VERBOSE,
)
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

COMMAND_KEYS = ("command", "cmd", "script")
PATH_KEYS = (
    "file_path",
    "path",
    "filepath",
    "filename",
    "file",
    "notebook_path",
    "target_file",
    "old_path",
    "new_path",
    "directory",
    "dir",
    "workdir",
    "cwd",
)
# str_replace_editor-style tools reuse "command" for their own sub-commands.
EDITOR_SUBCOMMANDS = frozenset({"view", "create", "str_replace", "insert", "undo_edit", "write"})
_SHELLS = frozenset({"bash", "sh", "zsh", "fish", "dash", "ksh", "pwsh", "powershell", "cmd"})
_SHELL_FLAGS = frozenset({"-c", "-lc", "-ic", "-lic", "-cl", "/c", "-Command", "-command"})
_PATCH_FILE_RE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)

_EXT_WORDS = """
    py pyi pyx js mjs cjs ts tsx jsx rs go java kt kts c h cc cpp hpp cs rb php swift m mm
    scala sh bash zsh fish ps1 bat md rst txt json jsonl yaml yml toml ini cfg conf env lock log
    csv tsv xml html htm css scss sass less vue svelte sql proto graphql ipynb pdf png jpg jpeg
    gif svg webp zip gz tar tgz whl so dll exe dylib traj patch diff gradle tf lua dart ex exs
    erl hs ml r jl nix rlog db sqlite"""
_KNOWN_EXT = frozenset(_EXT_WORDS.split())
_WINDOWS_RE = re.compile(r"[A-Za-z]:\\(?:[^\\/:*?\"<>|\r\n]+\\)*[^\\/:*?\"<>|\r\n]*")
_WINDOWS_UNQUOTED_RE = re.compile(r"(?<![\w])[A-Za-z]:\\(?:[^\\/:*?\"<>|\s]+\\)*[^\\/:*?\"<>|\s]*")
_QUOTED_RE = re.compile(r"\"([^\"\n]{2,300})\"|'([^'\n]{2,300})'|`([^`\n]{2,300})`")
_BAD_PATH_CHARS = frozenset("<>|*?\"'`$(){}[];,=&!^\t\r\n")
_SEGMENT_RE = re.compile(r"[\w.@+~-]+")
_SEGMENT_SPACED_RE = re.compile(r"[\w.@+~ -]+")
_EXT_RE = re.compile(r"\.([A-Za-z][A-Za-z0-9]{0,7})$")
_LOCATION_SUFFIX = re.compile(r"(?::\d+)+$")
# A pytest node id names its file first: tests/test_x.py::TestY::test_z
_NODE_ID = re.compile(r"^([^:\s]+\.[A-Za-z]\w*)::\S+$")
_INITIALS = re.compile(r"^[A-Z]\.[A-Z]$")  # "George R.R. Martin"
_PRODUCT_JS = re.compile(r"^[A-Z][A-Za-z0-9]*\.js$")  # Node.js, Vue.js: names, not files
# Every path holds a separator or a ".ext"; most words of prose hold neither.
_PATHISH = re.compile(r"[/\\]|\.[A-Za-z]")
_PATH_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_.")
_STRIP_LEAD = "([{\"'`"
_STRIP_TRAIL = ".,;:!?)]}\"'`"

_SECRET_RES = (
    re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    re.compile(r"\bAIza[0-9A-Za-z_-]{30,}"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"),
)
_SECRET_ASSIGN_RE = re.compile(
    r"(?i)\b((?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token|token)"
    r"\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;&]+)"
)
_BEARER_RE = re.compile(r"(?i)\b(Bearer\s+)[A-Za-z0-9._~+/=-]{12,}")
MASK = "[masked]"


def collapse(text: str) -> str:
    """Whitespace-collapsed form used to compare facts with a summary."""
    return " ".join(text.split())


def mentions(haystack: str, fact: str) -> bool:
    """`fact` (whitespace-collapsed) stands in the collapsed `haystack` on its own:
    "/app" inside "/tmp/test/app", or "a.py" inside "a.pyc", is not a mention."""
    needle = collapse(fact)
    if not needle or needle not in haystack:
        return False
    return re.search(rf"(?<![\w-]){re.escape(needle)}(?![\w-])", haystack) is not None


def dedupe(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        key = collapse(item)
        if key and key not in seen:
            seen.add(key)
            out.append(item)
    return out


def mask_secrets(text: str) -> str:
    """Hide the obvious credential shapes; a deliberately small local mask."""
    for pattern in _SECRET_RES:
        text = pattern.sub(MASK, text)
    text = _SECRET_ASSIGN_RE.sub(lambda mt: mt.group(1) + MASK, text)
    return _BEARER_RE.sub(lambda mt: mt.group(1) + MASK, text)


# ---- paths ---------------------------------------------------------------


def clean_path(token: str) -> str:
    token = token.strip().lstrip(_STRIP_LEAD).rstrip(_STRIP_TRAIL)
    node = _NODE_ID.match(token)
    if node:
        return node.group(1)
    return _LOCATION_SUFFIX.sub("", token)


def looks_like_path(token: str, *, spaces: bool = False) -> bool:
    if not token or len(token) > 400 or "://" in token:
        return False
    if _WINDOWS_RE.fullmatch(token):
        return (spaces or " " not in token) and len(token) > 3
    if any(c in _BAD_PATH_CHARS for c in token) or (" " in token and not spaces):
        return False
    if token.count(" ") > 3:
        return False
    if token.startswith(("/", "~/", "./", "../")):
        body = token.lstrip("~./")
        segments = [s for s in body.split("/") if s]
        pattern = _SEGMENT_SPACED_RE if spaces else _SEGMENT_RE
        return (
            bool(segments)
            and "//" not in token
            and any(c.isalpha() for c in body)
            and all(pattern.fullmatch(s) and s.strip() == s for s in segments)
        )
    if " " in token:
        # Relative paths with spaces are too easily confused with prose.
        return False
    segments = token.rstrip("/").split("/")
    if not all(_SEGMENT_RE.fullmatch(s) for s in segments):
        return False
    ext = _EXT_RE.search(segments[-1])
    if len(segments) == 1:
        name = segments[0]
        if ext is None or ext.group(1).lower() not in _KNOWN_EXT or _PRODUCT_JS.match(name):
            return False
        if _INITIALS.match(name):
            return False
        return any(c.isalpha() for c in name[: ext.start()]) and "@" not in name
    if ext is not None and any(c.isalpha() for c in segments[0] + segments[-1][: ext.start()]):
        return True
    lettered = sum(1 for s in segments if any(c.isalpha() for c in s))
    # "Data/Compute/Skills" is prose; directories are rarely all capitalised words.
    titled = all(s[:1].isupper() for s in segments)
    return len(segments) >= 3 and segments[0][:1] in _PATH_START and lettered >= 2 and not titled


def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


def paths_in_text(text: str) -> list[str]:
    """Paths in prose or output, in order: quoted ones may hold spaces."""
    found: list[tuple[int, str]] = []
    for mt in URL_RE.finditer(text):
        text = _blank(text, mt.start(), mt.end())
    for mt in _QUOTED_RE.finditer(text):
        inner = next(g for g in mt.groups() if g is not None)
        candidate = clean_path(inner)
        if looks_like_path(candidate, spaces=True):
            found.append((mt.start(), candidate))
            text = _blank(text, mt.start(), mt.end())
    for mt in _WINDOWS_UNQUOTED_RE.finditer(text):
        candidate = clean_path(mt.group(0))
        if looks_like_path(candidate):
            found.append((mt.start(), candidate))
            text = _blank(text, mt.start(), mt.end())
    for mt in re.finditer(r"\S+", text):
        if not _PATHISH.search(mt.group(0)):
            continue
        candidate = clean_path(mt.group(0))
        if looks_like_path(candidate):
            found.append((mt.start(), candidate))
    found.sort(key=lambda pair: pair[0])
    return dedupe(path for _, path in found)


def paths_in_command(command: str) -> list[str]:
    """Paths a shell command names: shell words first (they resolve quoting
    like Documents/'New project'/a.md), then a plain text scan."""
    out: list[str] = []
    try:
        words = shlex.split(command, comments=False, posix=True)
    except ValueError:
        words = []
    for word in words:
        if word.startswith("-") and "=" in word:
            word = word.split("=", 1)[1]
        candidate = clean_path(word)
        if looks_like_path(candidate, spaces=True):
            out.append(candidate)
    out.extend(paths_in_text(command))
    return dedupe(out)


def paths_in_arguments(args: dict[str, Any], raw: str = "") -> list[str]:
    out: list[str] = []
    for key in PATH_KEYS:
        value = args.get(key)
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, str) and looks_like_path(clean_path(item), spaces=True):
                out.append(clean_path(item))
    for value in [*(v for v in args.values() if isinstance(v, str)), raw]:
        out.extend(mt.group(1).strip() for mt in _PATCH_FILE_RE.finditer(value))
    command = command_of(args)
    if command:
        out.extend(paths_in_command(command))
    return dedupe(out)


# ---- commands ------------------------------------------------------------


def _join_argv(argv: list[str]) -> str:
    if len(argv) >= 3 and argv[0].rsplit("/", 1)[-1] in _SHELLS and argv[1] in _SHELL_FLAGS:
        return " ".join(argv[2:]).strip()
    return shlex.join(argv)


def command_of(args: dict[str, Any]) -> str | None:
    """The shell command a tool call ran, kept whole (multi-line included)."""
    for key in COMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            if key == "command" and value.strip() in EDITOR_SUBCOMMANDS:
                continue
            return value.strip()
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            joined = _join_argv(value)
            if joined:
                return joined
    return None


# ---- tool outputs --------------------------------------------------------


def result_flagged_error(msg: Message) -> bool:
    """The adapter carried the native error flag (is_error, status)."""
    for key in ("is_error", "isError"):
        if msg.get(key) is True:
            return True
    status = msg.get("status")
    return isinstance(status, str) and status.lower() in ("error", "failed", "failure")


def exit_code(output: str) -> int | None:
    for part in (output[:400], output[-400:]):
        mt = _EXIT_RE.search(part)
        if mt:
            return int(mt.group(1))
    return None


def still_running(output: str) -> bool:
    return bool(_RUNNING_RE.search(output[:400]))


def error_lines(output: str, *, flagged: bool = False) -> list[str]:
    """Error lines of one tool output; a failed output with no recognised
    line contributes its first meaningful line."""
    found = dedupe(mt.group(1).strip()[:MAX_ERROR_CHARS] for mt in _ERROR_RE.finditer(output))
    if found:
        return found[:ERRORS_PER_RESULT]
    code = exit_code(output)
    if flagged or (code is not None and code != 0):
        for line in output.splitlines():
            line = line.strip()
            if line and not _WRAPPER_LINE.match(line) and not set(line) <= set("=-_*# "):
                return [line[:MAX_ERROR_CHARS]]
    return []


# ---- identifiers, urls, values, directives --------------------------------


def identifiers_in(text: str) -> list[str]:
    found: list[tuple[int, str]] = [(mt.start(), mt.group(0)) for mt in _UUID_RE.finditer(text)]
    for mt in _HEX_RE.finditer(_UUID_RE.sub(lambda u: " " * len(u.group(0)), text)):
        token = mt.group(0)
        if any(c.isdigit() for c in token) and any(c.isalpha() for c in token):
            found.append((mt.start(), token))
    found.sort(key=lambda pair: pair[0])
    return dedupe(token for _, token in found)


def urls_in(text: str) -> list[str]:
    return dedupe(mt.group(0).rstrip(_URL_TRAIL) for mt in URL_RE.finditer(text))


def values_in(text: str) -> list[str]:
    out: list[tuple[int, str]] = []
    for mt in _NUMBER_UNIT_RE.finditer(text):
        if not _DECADE_RE.match(mt.group(0)):
            out.append((mt.start(), mt.group(0)))
    out.extend((mt.start(), mt.group(0)) for mt in _MONEY_RE.finditer(text))
    out.sort(key=lambda pair: pair[0])
    return dedupe(value for _, value in out)


def sentences(text: str) -> Iterator[str]:
    for piece in _SENTENCE_SPLIT.split(text):
        piece = collapse(piece.strip(" \t-*#>"))
        if piece:
            yield piece


def directives_in(text: str) -> list[str]:
    return dedupe(s for s in sentences(text) if len(s) <= MAX_SENTENCE and _DIRECTIVE_RE.search(s))
