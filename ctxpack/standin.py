"""The words of the stand-in that replaces a pruned output, written and read.

A stand-in opens with PRUNED_PREFIX, names the call, and says how the output
ended right after the label's arrow: "→ exit 3", "→ exit 1, nothing printed",
"→ exit 1, not a failure" (a command's answer: diff's differences), "→ still
running (session 7)", "→ error", "→ aborted" (the user stopped it).
Every stage after pruning reads a stand-in here, and so learns what it would
have learnt from the output itself; the output's telling error line is the
quote `quoted_error` finds.
"""

from __future__ import annotations

import re
from typing import NamedTuple

PRUNED_PREFIX = "[ctxpack pruned]"
# What an output that exits 1 with nothing printed (an answer) is said to be.
QUIET = "nothing printed"
# What one that exits 1 printing its command's answer (answers.py) is said to be.
ANSWERED = "not a failure"
_ENDING = re.compile(
    r" → (?:exit (?P<code>-?\d+)(?P<quiet>, (?:"
    + re.escape(QUIET)
    + r"|(?P<answered>"
    + re.escape(ANSWERED)
    + r")))?"
    r"|(?P<running>still running)(?: \(session (?P<session>\d+)\))?"
    r"|(?P<error>error)|(?P<aborted>aborted))(?=[;,]|$)"
)


class Ending(NamedTuple):
    """How a stand-in says its output ended."""

    code: int | None
    quiet: bool  # exit 1 that is an answer, not a failure
    answered: bool  # that answer printed (see ANSWERED)
    running: bool
    session: str | None
    error: bool
    aborted: bool  # the user stopped it: an error with nothing to fix


def ending(
    *,
    exit_code: int | None,
    running: str,
    error: bool,
    aborted: bool = False,
    printed: bool = False,
) -> str:
    """How an output ended, in a stand-in's words: the exit code, still
    running, aborted, or an error; "" when it says none of these. `printed`:
    an exit that is no failure printed its answer."""
    if exit_code is not None:
        # Only an answer (exit 1) exits non-zero and did not fail.
        if exit_code and not error:
            return f"exit {exit_code}, " + (ANSWERED if printed else QUIET)
        return f"exit {exit_code}"
    if running:
        return running
    if aborted:
        return "aborted"
    return "error" if error else ""


def quote(kind: str, line: str) -> str:
    """How a stand-in quotes one line of the output, introduced by `kind`; an
    error is quoted last, where `quoted_error` finds it."""
    return f'; {kind}: "{line}"'


_ERROR_INTRO = quote("error", "")[:-1]
# Quoted spans, paired from the left (an apostrophe inside a word, as in
# "can't", opens and closes none; a line cut short may end inside one); one
# longer than _QUOTE_KEEPS and a few (a type's spelling, a value's repr) may
# be cut short.
_QUOTED_SPAN = re.compile(r"(?<!\w)(?:'[^']*(?:'(?!\w)|$)|\"[^\"]*(?:\"(?!\w)|$))")
_QUOTE_KEEPS = 10


def shortened(line: str, limit: int) -> str:
    """`line` whitespace-collapsed and, longer than `limit`, cut to it: first
    its longest quoted spans, each to its first few characters, then its end.
    A compiler's error line keeps its place, its code and what is wrong, with
    the types it spells out in between cut short ("Property 'activeTeam' does
    not exist on type 'InferMerge…'."); an exception's keeps its message."""
    flat = " ".join(line.split())
    if len(flat) <= limit:
        return flat
    spans = [
        found.span()
        for found in _QUOTED_SPAN.finditer(flat)
        if found.end() - found.start() > _QUOTE_KEEPS + 6
    ]
    size, cut = len(flat), set()
    for start, end in sorted(spans, key=lambda span: span[0] - span[1]):
        if size <= limit:
            break
        cut.add(start)
        size -= end - start - (_QUOTE_KEEPS + 3)
    parts, at = [], 0
    for start, end in spans:
        if start in cut:
            closed = flat[end - 1] if end - start > 1 and flat[end - 1] == flat[start] else ""
            parts += [flat[at : start + 1 + _QUOTE_KEEPS], "…", closed]
            at = end
    flat = "".join([*parts, flat[at:]])
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def is_pruned(text: str) -> bool:
    """True for a stand-in ctxpack wrote (never pruned twice)."""
    return text.lstrip().startswith(PRUNED_PREFIX)


_SAID_NONE = Ending(
    code=None,
    quiet=False,
    answered=False,
    running=False,
    session=None,
    error=False,
    aborted=False,
)


def ending_said(text: str) -> Ending | None:
    """How the stand-in `text` says its output ended (an ending that says
    nothing when it says none of it); None for any other text."""
    if not is_pruned(text):
        return None
    found = _ENDING.search(text)
    if found is None:
        return _SAID_NONE
    code = found["code"]
    return Ending(
        code=int(code) if code else None,
        quiet=bool(found["quiet"]),
        answered=bool(found["answered"]),
        running=bool(found["running"]),
        session=found["session"],
        error=bool(found["error"] or found["aborted"]),
        aborted=bool(found["aborted"]),
    )


def quoted_error(text: str) -> str | None:
    """The error line a stand-in quotes, if it quotes one."""
    if not is_pruned(text):
        return None
    # The error is the last quote, and nothing after it holds a double quote.
    start = text.rfind(_ERROR_INTRO)
    end = text.rfind('"')
    return text[start + len(_ERROR_INTRO) : end] if 0 <= start < end else None
