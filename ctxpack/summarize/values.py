"""Which values a user's sentence sets (a version, a ratio, a date, a region,
an id, a path, a name, an amount), each with the words that name what it is
the value of, so that a later message that changes a value makes the earlier
one superseded. Only what the user wrote is read: a pasted screen, listing or
trace changes no value."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ctxpack.facts.text import values_in
from ctxpack.summarize.pasted import prose

# Values, each with the words that name what it is the value of.
_RATIO_RE = re.compile(r"\b([A-Za-z][\w-]*)\s+(\d+)\s*(?:of|/|out of)\s*(\d+)\b")
_VERSION_RE = re.compile(
    r"\b([A-Za-z][A-Za-z+#-]*)(?:\s+|@|==|\s+v|\s+version\s+)v?(\d+(?:\.\d+)+)\b"
)
_DATE_RE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_REGION_RE = re.compile(
    r"\b(?:(?:us|eu|ap|sa|ca|me|af|il|mx|cn)-(?:gov-)?(?:north|south|east|west|central"
    r"|northeast|southeast|northwest|southwest)-\d|(?:us|europe|asia|australia|"
    r"northamerica|southamerica)-[a-z]+\d)\b"
)
# Upper-case ids with a digit or an underscore: JUDGE-004, EXPORTS_V2.
_ID_RE = re.compile(r"\b[A-Z][A-Z0-9]+(?:[-_][A-Z0-9]+)+\b")
_PATH_RE = re.compile(r"(?<![\w/])(?:~|\.{1,2})?/[\w.@+-]+(?:/[\w.@+-]+)+/?")
# A proper name inside a sentence: two capitalised words after a lower-case one.
_NAME_RE = re.compile(r"(?<=[a-z,] )[A-Z][a-z]+(?: [A-Z][a-z]+)+\b")
_WORD_RE = re.compile(r"[A-Za-z][\w'-]*")
# What the ratio, version, date and region patterns all need: most of what a
# user writes has no digit, and one search for one is cheaper than four scans.
_DIGIT_RE = re.compile(r"\d")
STOP_WORDS = frozenset(
    [
        "the",
        "a",
        "an",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "to",
        "of",
        "in",
        "on",
        "at",
        "for",
        "by",
        "with",
        "and",
        "or",
        "it",
        "its",
        "we",
        "our",
        "i",
        "my",
        "me",
        "you",
        "your",
        "now",
        "actually",
        "instead",
        "use",
        "using",
        "used",
        "set",
        "please",
        "should",
        "must",
        "will",
        "let",
        "lets",
        "let's",
        "from",
        "into",
        "moved",
        "move",
        "change",
        "changed",
        "changes",
        "switch",
        "switched",
        "update",
        "updated",
        "than",
        "that",
        "this",
        "these",
        "those",
        "no",
        "not",
        "any",
        "new",
        "old",
        "keep",
        "kept",
        "go",
        "going",
        "also",
        "just",
        "still",
        "then",
        "so",
        "currently",
        "current",
        "is's",
        "it's",
        "we're",
        "here",
        "there",
        "which",
        "what",
        "when",
        "where",
        "all",
        "only",
        "do",
        "does",
        "total",
        "about",
        "around",
        "as",
        "per",
    ]
)
_CONTEXT_WORDS = 5
_CLAUSE_STOPS = ".;!?\n"
_NAMED = ("ratio", "version")


@dataclass(frozen=True)
class Value:
    """One value a sentence sets: its shape, what it names, and the text shown."""

    shape: str
    names: frozenset[str]
    text: str


def values_of(text: str) -> list[Value]:
    """The values a text sets, in order of appearance."""
    found: list[tuple[int, Value]] = []
    taken: list[tuple[int, int]] = []

    def add(start: int, end: int, value: Value) -> None:
        if any(start < b and a < end for a, b in taken):
            return
        taken.append((start, end))
        found.append((start, value))

    digits = _DIGIT_RE.search(text) is not None
    if digits:
        for mt in _RATIO_RE.finditer(text):
            name = mt.group(1).lower()
            if name not in STOP_WORDS:
                add(mt.start(), mt.end(), Value("ratio", frozenset({name}), mt.group(0)))
        for mt in _VERSION_RE.finditer(text):
            name = mt.group(1).lower()
            if name not in STOP_WORDS:
                add(mt.start(), mt.end(), Value("version", frozenset({name}), mt.group(0)))
    for shape, pattern in (
        ("date", _DATE_RE if digits else None),
        ("region", _REGION_RE if digits else None),
        ("id", _ID_RE),
        ("path", _PATH_RE if "/" in text else None),
    ):
        if pattern is None:
            continue
        for mt in pattern.finditer(text):
            if shape == "id" and not any(c.isdigit() or c == "_" for c in mt.group(0)):
                continue
            add(mt.start(), mt.end(), Value(shape, _context(text, mt.start()), mt.group(0)))
    for mt in _NAME_RE.finditer(text):
        add(mt.start(), mt.end(), Value("name", _context(text, mt.start()), mt.group(0)))
    for raw in values_in(text):
        start = text.find(raw)
        if start >= 0:
            add(start, start + len(raw), Value("amount", _context(text, start), raw))
    found.sort(key=lambda pair: pair[0])
    return [value for _, value in found]


def _context(text: str, start: int) -> frozenset[str]:
    """The few content words before a value within its clause, stemmed."""
    # The clause is what follows the last stop before the value.
    clause = text[max(text.rfind(stop, 0, start) for stop in _CLAUSE_STOPS) + 1 : start]
    words = [w.lower() for w in _WORD_RE.findall(clause)]
    content = [w for w in words if w not in STOP_WORDS and len(w) > 1]
    return frozenset(stem(w) for w in content[-_CONTEXT_WORDS:])


def stem(word: str) -> str:
    """A word's crude stem: its first five letters, or itself without a plural s."""
    return word[:5] if len(word) > 5 else word.rstrip("s")


@dataclass(frozen=True)
class Change:
    """A value a later statement replaced: the old text and the current one."""

    old: str
    new: str


def changes(statements: Sequence[str]) -> dict[int, list[Change]]:
    """For each statement (by position) whose values a later statement
    changed: what it set and what is current now. The latest word wins; within
    one statement only a named value (a version, a phase) can replace another
    ("from Python 3.11 to Python 3.12"), as two dates there are more likely a range."""
    flat = [(i, value) for i, text in enumerate(statements) for value in values_of(prose(text))]
    # A value's latest word is the last value after it in its slot (its shape,
    # a name in common): the last place of each shape and name tells it, in
    # one pass rather than one per value. When that last place is in the same
    # statement, no later statement names the slot.
    last: dict[tuple[str, str], int] = {}
    for k, (_, value) in enumerate(flat):
        for name in value.names:
            last[value.shape, name] = k
    out: dict[int, list[Change]] = {}
    for k, (i, old) in enumerate(flat):
        at = max((last[old.shape, name] for name in old.names), default=k)
        if at <= k:
            continue
        j, latest = flat[at]
        if (j > i or old.shape in _NAMED) and _norm(latest.text) != _norm(old.text):
            out.setdefault(i, []).append(Change(old.text, latest.text))
    return out


def _norm(text: str) -> str:
    return " ".join(text.lower().split())
