"""A text cut into sentences, for the scanners that read what a person
wrote: at sentence punctuation, and at each line break that does not run a
sentence on onto the next line."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

from ctxpack.facts.match import collapse

# A sentence ends at sentence punctuation and at line breaks; a lone line
# break before a word not in capitals (group 1) may run it on instead
# (runs_on). Every branch opens on a character, not a look-behind: the
# regex engine skips ahead to the next such character.
_SENTENCE_SPLIT = re.compile(r"[.!?]\s+|\n(?![ \t]*[^\W\d_A-Z])\n*|(\n)")
_LIST_MARKER = re.compile(r"\d{1,3}[.)]")
# A line of a list: its indent, and its text after the marker.
LIST_ITEM = re.compile(r"([ \t]*)(?:[-*•+]|\d{1,3}[.)])[ \t]+(\S.*)")
# A line that opens or closes a block of code.
FENCE = re.compile(r"^[ \t]*(?:```|~~~)", re.MULTILINE)
# A line that is no line of prose: a heading, a quote, a table row, a comment
# in code.
_NOT_PROSE = ("#", ">", "|", "//")
# Words a sentence does not end on: a line that ends on one was wrapped
# ("You must" / "never push").
_UNFINISHED = re.compile(
    r"a|an|the|to|of|in|on|at|by|for|from|with|into|onto|about|without|and|or|but|nor|if"
    r"|than|that|which|who|whose|whom|is|are|was|were|be|been|am|will|would|shall|should"
    r"|can|could|may|might|must|do|does|did|has|have|had|not|never|always|also|only|just"
    r"|my|your|our|their|its|this|these|those",
    re.IGNORECASE,
)
# Words that carry on the sentence of the line before ("and", "so that").
_CARRIES_ON = re.compile(r"(?:and|or|but|nor|than|that|which|who|whom|whose|so)\b")
# Words a request or a rule opens with ("don't touch the workflow"): after a
# long line or a comma, such a line says a thing of its own.
_OPENS_ANEW = re.compile(r"(?:please|don['’]t|do not|let['’]?s|(?:stop|quit)\s+\w+ing|fyi|btw)\b")
# A line this long that ends without punctuation was wrapped where it ran
# out of room (an email at 72 columns breaks between any two words); a line a
# person ends on purpose without a full stop ("ok", "thanks") is short.
_WRAPPED_WIDTH = 50


def sentences(text: str) -> Iterator[str]:
    """Sentences and lines, whitespace-collapsed, produced as they are read.
    A numbered list's marker ("1." before "**Flight HAT069**") is no sentence;
    a sentence hard-wrapped onto the next line is one (runs_on)."""
    start = 0
    fences: list[int] | None = None
    for mt in _SENTENCE_SPLIT.finditer(text):
        at = mt.start()
        if mt.lastindex:
            # Only after a letter or a comma may the line break run on; the
            # rest of the test (and finding the fences) is paid there alone.
            # A line break written as "\r\n" (a Windows editor's) is one too.
            before = text[at - 2] if text[at - 1] == "\r" and at > 1 else text[at - 1]
            if before.isalpha() or before == ",":
                if fences is None:
                    fences = (
                        [f.start() for f in FENCE.finditer(text)]
                        if "``" in text or "~~" in text
                        else []
                    )
                if bisect.bisect(fences, at) % 2 == 0 and runs_on(text, at):
                    continue
        elif text[at] != "\n":
            at += 1  # the sentence keeps its full stop
        piece = collapse(text[start:at].strip(" \t-*#>"))
        start = mt.end()
        if piece and not _list_marker(piece):
            yield piece
    piece = collapse(text[start:].strip(" \t-*#>"))
    if piece and not _list_marker(piece):
        yield piece


def runs_on(text: str, at: int) -> bool:
    """Whether the line break at `at` continues the sentence of the line
    before: that line ends on a letter or a comma, mid-sentence (on a word
    no sentence ends on, or the next line carries on with "and", "that",
    ...; or on a comma or at a wrapped line's width, unless the next line
    opens a request of its own), and is prose, not a heading, quote, table
    row or fence; the next line opens with a lowercase word, indented as the
    words of the line before (under a list item's text, or level with it).
    A line that ends on a letter and a next one in lowercase is not enough:
    "ok" / "don't push" are two things said."""
    begin = text.rfind("\n", 0, at) + 1
    line = text[begin:at].removesuffix("\r")
    words = line.lstrip(" \t")
    indent = len(line) - len(words)
    if not words or words.startswith(_NOT_PROSE) or FENCE.match(words):
        return False
    opens = at + 1
    while opens < len(text) and text[opens] in " \t":
        opens += 1
    if opens == len(text) or not text[opens].islower():
        return False
    item = LIST_ITEM.match(line)
    if not indent <= opens - at - 1 <= (item.start(2) if item else indent):
        return False
    if _UNFINISHED.fullmatch(line, line.rfind(" ") + 1) or _CARRIES_ON.match(text, opens):
        return True
    return (line.endswith(",") or len(words) >= _WRAPPED_WIDTH) and not _OPENS_ANEW.match(
        text, opens
    )


def _list_marker(piece: str) -> bool:
    return len(piece) <= 4 and _LIST_MARKER.fullmatch(piece) is not None
