"""What a user's sentence is (a constraint or preference, a goal or state, a
fact) and which values it sets, so that a later message that changes a value
makes the earlier one superseded.

Classification reads labels ("HARD CONSTRAINT:", "Note:", "FYI"), modal words
anywhere in the sentence and values of every shape; nothing depends on a
keyword being the first word. Only what the user wrote is read: a pasted
screen, listing or trace states no goal and changes no value."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ctxpack.facts.sentence import sentences
from ctxpack.facts.text import DROP_HABIT, states_a_rule, values_in
from ctxpack.summarize.pasted import dropped_file, prose

# "file": a file the user dropped into the message (its path).
Kind = Literal["constraint", "goal", "fact", "file"]

_LABEL_RE = re.compile(
    r"^\W{0,4}(?P<label>[A-Za-z][A-Za-z /&'-]{0,28}?)\W{0,4}\s*(?::|\s-\s|—)\s*", re.IGNORECASE
)
_CONSTRAINT_LABELS = frozenset(
    [
        "hard constraint",
        "constraint",
        "constraints",
        "rule",
        "rules",
        "safety",
        "safety rule",
        "requirement",
        "requirements",
        "important",
        "warning",
        "preference",
        "preferences",
        "style",
        "policy",
        "limit",
        "limits",
        "guardrail",
        "hard rule",
        "must",
        "never",
        "always",
    ]
)
_GOAL_LABELS = frozenset(
    [
        "goal",
        "goals",
        "objective",
        "task",
        "status",
        "state",
        "current state",
        "progress",
        "milestone",
        "plan",
        "target",
        "aim",
        "mission",
        "update",
        "where we are",
    ]
)
_FACT_LABELS = frozenset(
    [
        "note",
        "fyi",
        "fact",
        "facts",
        "context",
        "remember",
        "info",
        "background",
        "reminder",
        "heads up",
        "reference",
        "for reference",
        "btw",
        "nb",
        "ps",
        "detail",
        "details",
    ]
)
_FACT_OPENING_RE = re.compile(r"^\W{0,4}(?:fyi|btw|heads[- ]up|note that|for reference)\b", re.I)
_MODAL_RE = re.compile(
    r"\b(?:must(?:n['’]t| not)?|never|always|do not|don['’]t|does not|doesn['’]t"
    r"|should(?:n['’]t| not)?|only|prefer(?:s|red|ably|ence)?|please use|avoid|make sure"
    r"|ensure|no more than|at most|at least|not allowed|forbidden|required?|cap(?:ped)?"
    # A budget's cap: "pay up to $600", "fit under $1,000".
    r"|(?:(?:pay|spend) up to|(?:fit|stay|be|keep(?: \w+){0,2}) (?:under|below)) [$€£](?=\d)"
    r"|limit(?:ed)? to|under no circumstances|stick (?:to|with)|instead|refrain|keep it"
    # "I'd like it terse" is a preference; "I would like to cancel it" asks for a change.
    r"|(?:i|we)(?: really)?(?: would|['’]d) like(?! to\b)"
    r"|(?:i|we)(?: really)? (?:like|love|hate|dislike)|^(?:please )?use"
    rf"|(?:i|we)(?:['’]d| would) rather|rather than|let['’]?s not|{DROP_HABIT})\b",
    re.IGNORECASE,
)
_GOAL_RE = re.compile(
    r"\b(?:goal|objective|aim is|milestone|phase|stage \d|we(?:['’]re| are) (?:on|at|in|now)"
    r"|working (?:on|toward)|(?:i|we)(?:['’]m|['’]re| am| are)(?: \w+)? trying to|the task is"
    r"|we need to|i want (?:you )?to|deliver|ship(?:ping)?|target(?:ing)?|status(?= is\b|:)"
    r"|progress(?= is\b|:| so far\b))\b",
    re.IGNORECASE,
)

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


def kind_of(sentence: str) -> Kind | None:
    """The kind of a user's sentence, or None for one that is neither (a
    question, a thank-you, a plain request)."""
    label = _label(sentence)
    if label in _CONSTRAINT_LABELS:
        return "constraint"
    if label in _GOAL_LABELS:
        return "goal"
    if label in _FACT_LABELS or _FACT_OPENING_RE.match(sentence):
        return "fact"
    if sentence.rstrip().endswith("?"):
        return None
    if states_a_rule(_MODAL_RE, sentence):
        return "constraint"
    if _GOAL_RE.search(sentence):
        return "goal"
    values = [value.text for value in values_of(sentence)] + values_in(sentence)
    return "fact" if values and _says_more(sentence, values) else None


def _says_more(sentence: str, values: list[str]) -> bool:
    """A word of the sentence besides its values: a path alone on its line
    ("`~/tools/README.md`:", a pasted file's caption) says nothing of it."""
    for value in values:
        sentence = sentence.replace(value, " ")
    return any(char.isalpha() for char in sentence)


# classified(), or a memo of it for a run that asks about the same text twice.
Classify = Callable[[str], list[tuple[Kind, str]]]


def classified(text: str) -> list[tuple[Kind, str]]:
    """Every sentence the user wrote in a message (not what they pasted) that
    has a kind, with it, in order; a file they dropped into it, by its path."""
    out: list[tuple[Kind, str]] = []
    for sentence in sentences(prose(text)):
        dropped = dropped_file(sentence)
        if dropped is not None:
            path, sentence = dropped
            out.append(("file", path))
            if not sentence:
                continue
        kind = kind_of(sentence)
        if kind is not None:
            out.append((kind, sentence))
    return out


class Classified(dict[str, list[tuple[Kind, str]]]):
    """classified() remembered by text, for a run that asks about the same
    text twice (the ledger and the record's sections read the same messages);
    what a child classified is handed back as a plain dict and taken in."""

    def __call__(self, text: str) -> list[tuple[Kind, str]]:
        found = self.get(text)
        if found is None:
            found = self[text] = classified(text)
        return found


def is_constraint(text: str) -> bool:
    return any(kind == "constraint" for kind, _ in classified(text))


def _label(sentence: str) -> str | None:
    mt = _LABEL_RE.match(sentence)
    return " ".join(mt.group("label").lower().split()) if mt else None


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
