"""How a sentence the assistant wrote is quoted: with the list it announces,
and with the sentence after it that qualifies it."""

from __future__ import annotations

import re

from ctxpack.facts.match import collapse
from ctxpack.facts.sentence import LIST_ITEM
from ctxpack.summarize.offline.actions import clip

MAX_ITEM = 100
# A sentence that opens so qualifies the one before it ("... was scheduled to
# depart on May 21. However, the exact departure time is not provided"): the
# quote of that one that left it out would say more than was said.
_QUALIFIER_RE = re.compile(r"(?:However|But|Note that|Please note|Although|Though|Unfortunately)\b")


def announces(sentence: str) -> bool:
    """A sentence that ends in a colon announces what follows it (a list, a
    block, a tool call): it is no answer, and reads wrong out of it."""
    return sentence.rstrip().endswith(":")


def with_list(text: str, sentence: str, *, quote: int, limit: int) -> str:
    """`sentence` of `text`, quoted with the items of the list it announces
    there (what it announced is what it says: "I can see:" and the two
    findings), as many as `limit` characters hold, the rest counted; the
    sentence alone, clipped to `quote`, when it announces no list."""
    quoted = clip(sentence, quote)
    if not announces(sentence):
        return quoted
    lines = text.splitlines()
    start = next(
        (at + 1 for at, line in enumerate(lines) if ":" in line and _ends(line, sentence)),
        None,
    )
    items = [] if start is None else _list_after(lines[start:])
    shown, size = 0, len(quoted)
    while shown < len(items) and size + len(items[shown]) + 2 <= limit:
        size += len(items[shown]) + 2
        shown += 1
    if not shown:
        return quoted
    more = f" (+{len(items) - shown} more)" if shown < len(items) else ""
    return f"{quoted} {'; '.join(items[:shown])}{more}"


def _ends(line: str, sentence: str) -> bool:
    """Whether `sentence` ends on `line`: the line ends with it, or it was
    wrapped onto the line and ends with the line's words."""
    words = collapse(line.strip(" \t-*#>"))
    return words.endswith(sentence) or (bool(words) and sentence.endswith(words))


def _list_after(lines: list[str]) -> list[str]:
    """The items of the list `lines` open with (blank lines aside), each with
    its sub-items; none when they open with anything else."""
    items: list[list[str]] = []
    indent: str | None = None
    for line in lines:
        if not line.strip():
            continue
        found = LIST_ITEM.match(line)
        if found is None or (indent is not None and len(found.group(1)) > len(indent)):
            # A line under an item (its sub-items, its wrapped text) is part of it.
            if indent is None or not line[: len(indent) + 1].isspace():
                break
            if found is not None:
                items[-1].append(_bare(found.group(2)))
            continue
        indent = found.group(1) if indent is None else indent
        items.append([_bare(found.group(2))])
    return [clip(_item(*parts), MAX_ITEM) for parts in items]


def _item(head: str, *under: str) -> str:
    """An item with its sub-items: after it when it announces them ("Flights:
    HAT227, HAT139"), else in parentheses ("Flight HAT069 (Departure: 06:00)")."""
    if not under:
        return head
    if announces(head):
        return f"{head} {', '.join(under)}"
    return f"{head} ({', '.join(under)})"


def _bare(item: str) -> str:
    """A list item's text without its bold or underline marks."""
    return item.replace("**", "").replace("__", "").rstrip()


def answer_quote(text: str, said: list[str], at: int, *, quote: int, limit: int) -> str:
    """Sentence `at` of `text`'s sentences `said` (at least up to it and the
    one after), quoted as with_list quotes it, and with the sentence after it
    when that one qualifies it and both fit in `limit` characters."""
    answer = with_list(text, said[at], quote=quote, limit=limit)
    # A sentence clipped, or one that announces a list, ends its quote.
    after = said[at + 1] if at + 1 < len(said) and answer == said[at] else ""
    if qualifies(after) and len(answer) + 1 + len(after) <= limit:
        return f"{answer} {clip(after, limit)}"
    return answer


def qualifies(sentence: str) -> bool:
    """The sentence qualifies the one before it ("However, ...")."""
    return _QUALIFIER_RE.match(sentence) is not None
