"""What a user's sentence is: a constraint or preference, a goal or state, a
fact, or a file they dropped in.

Classification reads labels ("HARD CONSTRAINT:", "Note:", "FYI"), modal words
anywhere in the sentence and values of every shape (values.py); nothing
depends on a keyword being the first word. Only what the user wrote is read:
a pasted screen, listing or trace states no goal."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

from ctxpack.facts.sentence import sentences
from ctxpack.facts.text import DROP_HABIT, states_a_rule, values_in
from ctxpack.summarize.pasted import dropped_file, prose
from ctxpack.summarize.values import values_of

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
