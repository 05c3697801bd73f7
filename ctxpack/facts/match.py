"""Comparing facts: their whitespace-collapsed form, de-duplication, and
whether a fact stands in a text on its own."""

from __future__ import annotations

import re
from collections.abc import Iterable

# A character that runs on into what is beside it: a fact with one at either
# side does not stand on its own.
JOINS = re.compile(r"[\w-]")
_RUN = re.compile(r"[\w-]+")


def collapse(text: str) -> str:
    """Whitespace-collapsed form used to compare facts with a summary."""
    flat = " ".join(text.split())
    # Most facts hold no whitespace to collapse: their key is then the fact
    # itself, not a second copy kept beside it for the rest of the run.
    return text if flat == text else flat


def dedupe(items: Iterable[str]) -> list[str]:
    """Items in order, each once (compared collapsed); empty ones dropped."""
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        key = collapse(item)
        if key and key not in seen:
            seen.add(key)
            out.append(item)
    return out


def mentions(haystack: str, fact: str) -> bool:
    """`fact` (whitespace-collapsed) stands in the collapsed `haystack` on its own:
    "/app" inside "/tmp/test/app", or "a.py" inside "a.pyc", is not a mention."""
    return _stands_in(haystack, collapse(fact))


def _stands_in(haystack: str, needle: str) -> bool:
    if not needle:
        return False
    at = haystack.find(needle)
    while at >= 0:
        end = at + len(needle)
        if not (at and JOINS.match(haystack, at - 1)) and not JOINS.match(haystack, end):
            return True
        at = haystack.find(needle, at + 1)
    return False


class Haystack:
    """A collapsed text to test many facts against.

    A fact that stands in the text on its own has each of its word runs
    ([\\w-]+) as a whole run of the text too: once many facts have been
    tested, a fact with a run the text lacks is rejected by a set lookup
    instead of a scan of the whole text. The set is made only then: finding
    the runs reads the text a hundred times slower than a scan does, and a
    small session's record is tested for a few dozen facts."""

    # Lookups answered by scanning before the runs are indexed.
    SCANS = 32

    def __init__(self, text: str) -> None:
        self.text = collapse(text)
        self._runs: frozenset[str] | None = None
        self._scans = 0

    def mentions(self, fact: str) -> bool:
        needle = collapse(fact)
        if self._runs is None:
            self._scans += 1
            if self._scans <= self.SCANS:
                return _stands_in(self.text, needle)
            self._runs = frozenset(_RUN.findall(self.text))
        if not all(run in self._runs for run in _RUN.findall(needle)):
            return False
        return _stands_in(self.text, needle)


# Case-insensitive regex matching also matches these to "i" and "s" (and
# lower() turns the first into two characters).
_ODD_FOLDS = ("İ", "ı", "ſ")


def folded(text: str) -> str | None:
    """`text` lowercased, so that a lowercase ASCII word is in it exactly
    where a case-insensitive regex finds that word; None for the rare text
    where the two differ."""
    if not text.isascii() and any(odd in text for odd in _ODD_FOLDS):
        return None
    return text.lower()


def byte_view(text: str, table: bytes) -> bytes:
    """`text` as one byte per character (non-ASCII ones as "?") mapped through
    `table`: bytes.find on it runs far faster than a regex over the text, and
    its offsets are the text's."""
    return text.encode("ascii", "replace").translate(table)
