"""Paths in prose, tool output and shell commands.

Scanning is the hot loop of fact extraction on long transcripts, so every
regex that has a cheap necessary condition (a substring the match must hold)
checks it first, and the word scan looks only at the words that hold a path
separator or a ".ext" instead of at every word."""

from __future__ import annotations

import re
import shlex
import string
from collections.abc import Iterable
from functools import lru_cache

from ctxpack.facts.match import byte_view, dedupe

URL_RE = re.compile(r"(?:https?|wss?|ftp)://[^\s<>\"'`)\]{}|\\^]+")

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
# The folders at the root that sessions name alone. Any other one word after a
# slash is a slash command (`/theme`, `/new`) or a regex's flags (`s/a/b/g`).
_ROOT_WORDS = """tmp usr etc var opt home root srv mnt dev proc sys bin sbin lib lib64 boot run
    media app apps workspace workspaces testbed repo repos data code src work project projects
    build out dist Users Volumes private Applications Library System"""
_ROOT_FOLDERS = frozenset(_ROOT_WORDS.split())
# A pytest node id names its file first: tests/test_x.py::TestY::test_z
_NODE_ID = re.compile(r"^([^:\s]+\.[A-Za-z]\w*)::\S+$")
_INITIALS = re.compile(r"^[A-Z]\.[A-Z]$")  # "George R.R. Martin"
_PRODUCT_JS = re.compile(r"^[A-Z][A-Za-z0-9]*\.js$")  # Node.js, Vue.js: names, not files
# Every path holds a separator or a ".ext"; most words of prose hold neither,
# so only the words around one of these are looked at. They are found on a
# view of the text with "/" for both separators and "a" for ASCII letters.
_LETTERS = frozenset(string.ascii_letters)
_MARK_VIEW = bytes(
    ord("/") if chr(i) in "/\\" else i if chr(i) == "." else ord("a") if chr(i) in _LETTERS else 32
    for i in range(256)
)
_SPACE = re.compile(r"\s")
_WORD_END = re.compile(r"\S*")
_PATH_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_.")
_STRIP_LEAD = "([{\"'`"
_STRIP_TRAIL = ".,;:!?)]}\"'`"


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
        if token[0] == "/" and len(segments) == 1 and "." not in body:
            return segments[0] in _ROOT_FOLDERS
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


def _blanked(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with each (start, end) span, in order and apart, turned into spaces."""
    if not spans:
        return text
    parts: list[str] = []
    last = 0
    for start, end in spans:
        parts.append(text[last:start])
        parts.append(" " * (end - start))
        last = end
    parts.append(text[last:])
    return "".join(parts)


def paths_in_text(text: str) -> list[str]:
    """Paths in prose or output, in order: quoted ones may hold spaces.

    URLs are blanked first, then quoted paths, then unquoted Windows paths, so
    no later pass sees a piece of an earlier find."""
    found: list[tuple[int, str]] = []
    if "://" in text:
        text = _blanked(text, [mt.span() for mt in URL_RE.finditer(text)])
    if '"' in text or "'" in text or "`" in text:
        spans = []
        for mt in _QUOTED_RE.finditer(text):
            inner = next(g for g in mt.groups() if g is not None)
            if "/" not in inner and "\\" not in inner and "." not in inner:
                continue  # every path holds one of these
            candidate = clean_path(inner)
            if looks_like_path(candidate, spaces=True):
                found.append((mt.start(), candidate))
                spans.append(mt.span())
        text = _blanked(text, spans)
    if ":\\" in text:
        spans = []
        for mt in _WINDOWS_UNQUOTED_RE.finditer(text):
            candidate = clean_path(mt.group(0))
            if looks_like_path(candidate):
                found.append((mt.start(), candidate))
                spans.append(mt.span())
        text = _blanked(text, spans)
    for start, word in _pathish_words(text):
        candidate = clean_path(word)
        if looks_like_path(candidate):
            found.append((start, candidate))
    if len(found) > 1:
        found.sort(key=lambda pair: pair[0])
    return dedupe(path for _, path in found)


def _pathish_words(text: str) -> list[tuple[int, str]]:
    """The whitespace-separated words holding a separator or ".ext", with
    their offsets; each word found from one such mark inside it."""
    words: list[tuple[int, str]] = []
    view = byte_view(text, _MARK_VIEW)
    slash, dot = view.find(b"/"), view.find(b".a")
    done = 0  # end of the last word taken; no later word starts before it
    while slash >= 0 or dot >= 0:
        at = slash if dot < 0 or 0 <= slash < dot else dot
        start = max(text.rfind(" ", done, at), text.rfind("\n", done, at)) + 1
        start = max(start, done)
        for space in _SPACE.finditer(text, start, at):
            start = space.end()  # a tab or a rarer space between
        word = _WORD_END.match(text, at)
        end = word.end() if word else at + 1
        words.append((start, text[start:end]))
        done = end
        if slash >= 0 and slash < done:
            slash = view.find(b"/", done)
        if dot >= 0 and dot < done:
            dot = view.find(b".a", done)
    return words


def paths_in_command(command: str) -> list[str]:
    """Paths a shell command names: shell words first (they resolve quoting
    like Documents/'New project'/a.md), then a plain text scan."""
    return list(_command_paths(command))


# What a search is told to match is a name or a pattern, not a file it read:
# `rg --files -g package.json` lists the files of that name, `find . -name
# x.py` looks for them. The word after one of these flags (or after its "=")
# of one of these programs is left out.
_SEARCHERS = frozenset(["rg", "grep", "egrep", "fgrep", "ag", "ack", "find", "fd", "fdfind"])
_PATTERN_FLAGS = frozenset(
    [
        *("-g", "--glob", "--iglob", "-e", "--regexp", "--include", "--exclude", "--exclude-dir"),
        *("-name", "-iname", "-path", "-ipath", "-regex", "-iregex", "-wholename", "-iwholename"),
    ]
)
_COMMAND_BREAKS = frozenset(["&&", "||", "|", ";"])


@lru_cache(maxsize=4096)
def _command_paths(command: str) -> tuple[str, ...]:
    # Agents run the same commands over and over; shell parsing is slow.
    out: list[str] = []
    try:
        words = shlex.split(command, comments=False, posix=True)
    except ValueError:
        words = []
    kept = _without_patterns(words)
    for word in kept:
        if word.startswith("-") and "=" in word:
            word = word.split("=", 1)[1]
        candidate = clean_path(word)
        if looks_like_path(candidate, spaces=True):
            out.append(candidate)
    # A pattern is not read in the command's text either: the text scanned is
    # then the command's other words, quoted again.
    out.extend(paths_in_text(command if len(kept) == len(words) else shlex.join(kept)))
    return tuple(dedupe(out))


def _without_patterns(words: list[str]) -> list[str]:
    """The words of a command but the patterns a search is given (and their flags)."""
    out: list[str] = []
    program, pattern_next = "", False
    for word in words:
        if pattern_next:
            pattern_next = False
            continue
        if word in _COMMAND_BREAKS:
            program = ""
        elif not program:
            program = word.rsplit("/", 1)[-1]
        elif program in _SEARCHERS:
            flag, equals, _ = word.partition("=")
            if flag in _PATTERN_FLAGS:
                pattern_next = not equals
                continue
        out.append(word)
    return out


def _spelling(path: str) -> str:
    """A path as compared with its other spellings: no "./" before it or
    inside it, no "/" after it."""
    text = path.replace("/./", "/")
    while text.startswith("./"):
        text = text[2:]
    return text.rstrip("/") or text


def same_files(paths: Iterable[str]) -> dict[str, str]:
    """Of `paths`, each that names a file another names more fully, mapped to
    the fullest: a relative path that another ends with ("src/a.py" and
    "/repo/src/a.py"), a bare name that ends another ("a.py"); and each that
    spells a file as an earlier one does ("dir/" and "dir", "a/./b" and "a/b"),
    mapped to that one. A path that ends two different files ("Cargo.toml" of
    two crates) is left as it is: which one it meant is not known. A path that
    starts at a root, a home or a parent ("/", "~", "..") is its own, and a
    parent's names no other."""
    spelled: dict[str, str] = {}
    first: dict[str, str] = {}  # each spelling's first path
    out: dict[str, str] = {}
    for path in paths:
        text = spelled[path] = _spelling(path)
        if first.setdefault(text, path) != path:
            out[path] = first[text]
    # Every tail of every spelling that starts after one of its separators.
    ends: dict[str, list[str]] = {}
    for text in first:
        if text.startswith(".."):
            continue  # relative to a place the transcript may not say
        at = text.find("/", 1)
        while at >= 0:
            ends.setdefault(text[at + 1 :], []).append(text)
            at = text.find("/", at + 1)
    for text, path in first.items():
        if not text or text.startswith(("/", "~", "..")) or _WINDOWS_RE.match(text):
            continue
        fuller = ends.get(text)
        if not fuller:
            continue
        longest = max(fuller, key=len)
        if all(longest.endswith("/" + other) for other in fuller if other != longest):
            out[path] = first[longest]
    return {path: out[path] if out[path] not in out else out[out[path]] for path in out}
