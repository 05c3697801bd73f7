"""One regular expression that finds any of many literal words.

A plain alternation (`a|b|c`) makes the engine try every word at every
position. Built as a tree of the words' shared prefixes, it tries one branch
per character instead: searching a long text for a few dozen words then
costs about one pass, less than a substring test per word."""

from __future__ import annotations

import re


def pattern(words: list[str]) -> str:
    """A pattern matching exactly `words` (sorted and distinct) at a position."""
    if words[0] == "":
        rest = words[1:]
        return "(?:" + pattern(rest) + ")?" if rest else ""
    branches: dict[str, list[str]] = {}
    for word in words:
        branches.setdefault(word[:1], []).append(word[1:])
    alternatives = [re.escape(first) + pattern(rest) for first, rest in branches.items()]
    return alternatives[0] if len(alternatives) == 1 else "(?:" + "|".join(alternatives) + ")"


def any_of(words: list[str]) -> re.Pattern[str]:
    """A pattern whose search finds any of `words` (none: one that never matches)."""
    distinct = sorted(set(words))
    return re.compile(pattern(distinct) if distinct else r"(?!)")


def any_of_bytes(words: list[bytes]) -> re.Pattern[bytes]:
    """any_of for bytes: the same tree, each byte a character of its own."""
    distinct = sorted(set(words))
    if not distinct:
        return re.compile(rb"(?!)")
    return re.compile(pattern([word.decode("latin-1") for word in distinct]).encode("latin-1"))
