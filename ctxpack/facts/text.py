"""Low-level scanners for the facts a reader of a transcript needs: paths in
tool arguments, identifiers, URLs, values, directives. Pure functions over
strings and parsed tool arguments.

They run over every text of long transcripts, so each one first checks a
cheap necessary condition (a substring any match must hold) and anchors its
regex on a character class rather than a look-behind, which lets the regex
engine skip ahead instead of trying every position."""

from __future__ import annotations

import re
import string
from typing import Any

from ctxpack.facts.match import JOINS, byte_view, collapse, dedupe, folded
from ctxpack.facts.paths import URL_RE, clean_path, looks_like_path, paths_in_command
from ctxpack.facts.sentence import sentences
from ctxpack.filechanges import patched_files
from ctxpack.refs import REF_PREFIX
from ctxpack.tools import PATH_LIKE_KEYS, command_of

_URL_TRAIL = ".,;:!?*_"

_UUID_RE = re.compile(
    r"(?<![\w-])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![\w-])"
)
# Hex ids are whole runs of 7-40 (a short or full SHA) or 64 (a sha256) hex
# digits; a UUID starts with a run of 8. Runs are found on a view of the text
# with every hex digit as "x".
_HEX_VIEW = bytes(ord("x") if chr(i) in string.hexdigits else ord(" ") for i in range(256))
# With every ASCII digit as "0" and each dot kept.
_DOTTED_VIEW = bytes(
    ord("0") if chr(i) in string.digits else i if i == ord(".") else 32 for i in range(256)
)
_HEX_BEFORE = re.compile(r"[\w#-]")
# Versions: v1.2, 1.2.3, 3.11.4rc1, 0.36.0-nightly.20260317.2f90b46 (a
# pre-release is part of the version); not a dotted quad (an IP address), nor
# part of a longer dotted run, nor numbers with a leading zero ("01.27.21" is a
# time). Neither preceded nor followed by a dash, as a fact stands in a text on
# its own (facts.match).
_NUMBER = r"(?:0|[1-9]\d*)"
_VERSION_RE = re.compile(
    rf"(?<![\w.-])(?:v{_NUMBER}(?:\.{_NUMBER}){{1,3}}|{_NUMBER}\.{_NUMBER}\.{_NUMBER})"
    r"(?:[-+]?(?:rc|a|b|alpha|beta|dev|post)\d*)?"
    r"(?:-[0-9A-Za-z]+(?:[.-][0-9A-Za-z]+)*)?(?![\w-]|\.\d)"
)
# A multi-line command longer than this is named by its first line, as the
# record names it, never pasted whole.
MAX_INLINE_COMMAND = 120

_UNITS = (
    r"%|[KMGTP]i?B|bytes?|ms|µs|ns|s|secs?|seconds?|mins?|minutes?|hrs?|hours?|days?|weeks?"
    r"|GHz|MHz|kHz|Hz|km|cm|mm|kg|mg|lbs?|tokens"
)
# A number with a unit, not preceded by a word character, "." or "$". After
# a dash it is the end of a range, "3-4 hours", and the value is the range:
# "4 hours" alone would name another value, and stands in no text on its own.
_NUMBER_UNIT_RE = re.compile(rf"\d\d*(?:[.,]\d+)?(?:\s?(?:{_UNITS}))(?![\w/%-])")
_NUMBER_BLOCKER = re.compile(r"[\w.$]")
_RANGE_DASHES = "-\u2013"
_RANGE_START_RE = re.compile(r"(?<![\w.$\-\u2013])\d+(?:[.,]\d+)?[-\u2013]$")
_DIGITS = re.compile(r"\d+")
# Digits as "0", "." and "," as ".", spaces as " ", the first letters of the
# units as "u", anything else as "-".
_NUMBER_VIEW = (
    bytes(
        ord("0")
        if chr(i).isdigit()
        else ord(".")
        if chr(i) in ".,"
        else 32
        if chr(i).isspace()
        else ord("u")
        if chr(i) in "%KMGTPbmnshdwHkclt"
        else ord("-")
        for i in range(128)
    )
    + b"-" * 128
)
# Thousands groups only: "$1,000," ends a clause, the comma is not part of it.
# Neither preceded nor followed by a word character or a dash, as a fact
# stands in a text on its own (facts.match); "$1,000x" is no "$1".
_MONEY_RE = re.compile(r"[$€£](?>\d+(?:,\d{3})*(?:\.\d+)?)(?![\w-])")
# "the 1990s" is a decade, not thirty seconds.
_DECADE_RE = re.compile(r"^(?:1[0-9]|20)\d0s$")

_NOT = r"(?:don['’]t|do not|doesn['’]t|does not)"
# A habit the user tells the agent to drop ("Stop adding comments", "please
# stop …"): a directive among the facts, a constraint in the record, and a
# "must not" that turns an earlier rule or state around (reversal.py), whose
# verb is QUIT_HABIT's group, without its -ing.
QUIT_HABIT = r"(?:stop|quit)\s+(\w+?)ing\b"
DROP_HABIT = rf"^(?:please\s+|just\s+)?{QUIT_HABIT}|\bplease\s+(?:stop|quit)\b"
# Modal words that state a fact, not a rule: what the user does not have or
# remember, a guess ("there must be a way", "I must have left it"), a promise
# of their own ("I'll make sure to find it"), a habit of the past, what a
# thing does not do (a report of how it behaves, not how it should), how
# many of a thing there are ("there's only one file left"), how things
# will likely stand ("then we should be good to go"), and a next step.
_NOT_A_RULE_RE = re.compile(
    r"\b(?:i|we)(?:\s+(?:really|actually|just|still|honestly|currently))?\s+(?:do not|don['’]t)"
    r"(?:\s+(?:really|actually|even|currently))?"
    r"\s+(?:remember|recall|know|have|think|see|understand|believe|mind|care|recogni[sz]e)\b"
    r"|\b(?:there|it|that)(?:['’]s| is| are| was| were)(?: just)? only\b"
    r"|\bthere must be\b|\bmust(?:['’]ve| have) (?:been|gone|done|made|had|left|lost|forgotten"
    r"|seen|sent|taken|got(?:ten)?|\w+ed)\b"
    r"|\b(?:i|we)(?:['’]ll| will| shall|['’]m going to| am going to| are going to)(?: \w+)?"
    r" (?:make sure|ensure)\b"
    r"|\bnever ?mind\b|(?:['’]ve|\bhave|\bhas|\bhad) always\b|\bas always\b"
    r"|\bshould (?:now |then |probably )?be (?:good|fine|ok|okay|all set)\b"
    r"|\b(?:doesn['’]t|does not|didn['’]t|did not)\s+(?:work|change|adhere|exist|show|render"
    r"|compile|run|happen|load|match|refund)\b"
    # What the user and the agent should do next is a task, not a rule ("then
    # we should document it"), unless it says how to work ("we should use uv",
    # "we should never push"); so is a hedged suggestion ("should probably check").
    r"|\bwe\s+should(?:\s+(?:probably|also|maybe|just|then|definitely))*\s+"
    r"(?!(?:always|never|not|use|keep|stick|avoid|prefer|stay|follow|only)\b)[a-z]+"
    r"|\bshould\s+probably\b",
    re.IGNORECASE,
)
# A message that is one slash command ("/mode", "/model:list") is for the
# client, not the model; a path ("/tmp/x") has a second slash.
_SLASH_COMMAND_RE = re.compile(r"\s*/[A-Za-z][\w:-]*\s*")


def is_slash_command(text: str) -> bool:
    # Fails at the first character of any other text: no scan of a long one.
    return _SLASH_COMMAND_RE.fullmatch(text) is not None


def states_a_rule(pattern: re.Pattern[str], sentence: str) -> bool:
    """Whether `pattern`, a rule's words, finds one in `sentence` outside every
    phrase in which such a word states a fact."""
    words = [mt.start() for mt in pattern.finditer(sentence)]
    if not words:
        return False
    facts = [mt.span() for mt in _NOT_A_RULE_RE.finditer(sentence)]
    return any(not any(start <= at < end for start, end in facts) for at in words)


_DIRECTIVE_RE = re.compile(
    rf"^(?:please\s+)?{_NOT}\b"  # imperative: "Don't touch the schema"
    rf"|\bplease\s+{_NOT}\b"
    rf"|\b(?:I|we)\s+(?:really\s+)?{_NOT}\s+(?:want|like|need)\b"  # stated preference
    r"|\b(?:never|always|must|make sure)\b"
    r"|\buse\b.{1,80}\binstead\b"
    rf"|{DROP_HABIT}"
    r"|^let['’]?s\s+not\b",
    re.IGNORECASE,
)
# Every directive holds one of these (lowercased).
_DIRECTIVE_HINTS = (
    "don",
    "doesn",
    "not",
    "never",
    "always",
    "must",
    "sure",
    "instead",
    "stop",
    "quit",
)
MAX_SENTENCE = 300


# ---- paths ---------------------------------------------------------------


def paths_in_arguments(args: dict[str, Any], raw: str = "") -> list[str]:
    out: list[str] = []
    for key in PATH_LIKE_KEYS:
        value = args.get(key)
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, str) and looks_like_path(clean_path(item), spaces=True):
                out.append(clean_path(item))
    # A decoded value holds "*** " only if the raw JSON does, or escapes it.
    if "*** " in raw or "\\u" in raw or not raw:
        for value in [*(v for v in args.values() if isinstance(v, str)), raw]:
            if "*** " in value:
                out.extend(patched_files(value))
    command = command_of(args)
    if command:
        out.extend(paths_in_command(command))
    return dedupe(out)


# ---- identifiers, urls, values, directives --------------------------------


def script_lines(command: str) -> int:
    """How many lines a long multi-line command (a script) has; 0 for a
    command short enough to be shown whole."""
    lines = command.strip().count("\n") + 1
    return lines if lines > 1 and len(collapse(command)) > MAX_INLINE_COMMAND else 0


def command_fact(command: str) -> str:
    """What a command is known by: itself, or a script's first line."""
    return command.strip().split("\n", 1)[0].strip() if script_lines(command) else command


def versions_in(text: str) -> list[str]:
    if "." not in text:
        return []
    # Every version has a digit, a dot and a digit in a row; most texts with
    # dots have none (only ASCII is looked at so: \d is any Unicode digit).
    if text.isascii() and b"0.0" not in byte_view(text, _DOTTED_VIEW):
        return []
    return dedupe(mt.group(0) for mt in _VERSION_RE.finditer(text))


def without_outline_numbers(versions: list[str], text: str) -> list[str]:
    """`versions` (versions_in(text)) less the numbers of a nested list's items
    or a document's sections: `2.2.1` where the text also numbers `2.2` and
    `2.2.2`. Every part one digit, the parent and a sibling beside it: a
    release named with its neighbours ("from 2.0.1 to 2.0.2") rarely has its
    parent alone beside it too."""
    found = set(versions)
    return [v for v in versions if not _outline_number(v, text, found)]


def _outline_number(version: str, text: str, found: set[str]) -> bool:
    parts = version.split(".")
    if len(parts) < 3 or not all(len(part) == 1 and part.isdigit() for part in parts):
        return False
    *parent, last = parts
    siblings = {".".join([*parent, str(int(last) + step)]) for step in (-1, 1)}
    if not siblings & found:
        return False
    alone = rf"(?<![\w.]){re.escape('.'.join(parent))}(?![\w]|\.\d)"
    return re.search(alone, text) is not None


def identifiers_in(text: str) -> list[str]:
    """UUIDs and hex ids with both digits and letters, in order; never the
    hex of an archive ref (`ctxpack:…`), which names archived text, not a thing
    the work is about, nor the build of a version (`0.36.0-nightly.2f90b4653`)."""
    found: list[str] = []
    view = byte_view(text, _HEX_VIEW)
    start = view.find(b"xxxxxxx")
    while start >= 0:
        end = view.find(b" ", start)
        end = len(view) if end < 0 else end
        token = text[start:end]
        if end - start == 8 and text.startswith("-", end):
            uuid = _UUID_RE.match(text, start)
            if uuid:
                found.append(uuid.group(0))
        elif (
            (end - start <= 40 or end - start == 64)
            and token.islower()
            and not token.isalpha()
            and not (start and _HEX_BEFORE.match(text, start - 1))
            and not (start > 1 and text[start - 1] == "." and text[start - 2].isdigit())
            and not JOINS.match(text, end)
            and not (
                start >= len(REF_PREFIX) and text.startswith(REF_PREFIX, start - len(REF_PREFIX))
            )
        ):
            found.append(token)
        start = view.find(b"xxxxxxx", end)
    return dedupe(found)


def urls_in(text: str) -> list[str]:
    if "://" not in text:
        return []
    return dedupe(mt.group(0).rstrip(_URL_TRAIL) for mt in URL_RE.finditer(text))


def values_in(text: str) -> list[str]:
    out: list[tuple[int, str]] = []
    if text.isascii():
        _ascii_number_units(text, out)
    else:
        _number_units(text, 0, len(text), len(text), out)
    if "$" in text or "€" in text or "£" in text:
        pos = 0
        while mt := _MONEY_RE.search(text, pos):
            if mt.start() and JOINS.match(text, mt.start() - 1):
                pos = mt.start() + 1
                continue
            out.append((mt.start(), mt.group(0)))
            pos = mt.end()
        out.sort(key=lambda pair: pair[0])
    return dedupe(value for _, value in out)


def _number_units(text: str, pos: int, endpos: int, last: int, out: list[tuple[int, str]]) -> int:
    """Numbers with units that start from `pos` up to `last` (searching up to
    `endpos`), in order; where the next search starts."""
    while mt := _NUMBER_UNIT_RE.search(text, pos, endpos):
        start = mt.start()
        if start > last:
            break
        if start and _NUMBER_BLOCKER.match(text, start - 1):
            # No match can start inside this run of digits either.
            digits = _DIGITS.match(text, start)
            pos = digits.end() if digits else start + 1
            continue
        pos = mt.end()
        if _DECADE_RE.match(mt.group(0)):
            continue
        if start and text[start - 1] in _RANGE_DASHES:
            first = start - 1
            while first and (text[first - 1].isdecimal() or text[first - 1] in ".,"):
                first -= 1
            opened = _RANGE_START_RE.search(text, first, start)
            if opened is not None:
                out.append((opened.start(), text[opened.start() : pos]))
        else:
            out.append((start, mt.group(0)))
    return pos


def _ascii_number_units(text: str, out: list[tuple[int, str]]) -> None:
    """_number_units over an ASCII text, looking only where a digit meets a
    unit's first letter (at once or after one space): each match holds one."""
    view = byte_view(text, _NUMBER_VIEW)
    pos = 0
    tight, spaced = view.find(b"0u"), view.find(b"0 u")
    while tight >= 0 or spaced >= 0:
        at = tight if spaced < 0 or 0 <= tight < spaced else spaced
        if at == tight:
            tight = view.find(b"0u", at + 1)
        else:
            spaced = view.find(b"0 u", at + 1)
        if at < pos:
            continue
        # The number that ends at `at` starts after the last other character.
        back = max(view.rfind(b" ", pos, at), view.rfind(b"u", pos, at), view.rfind(b"-", pos, at))
        # A unit is at most 7 letters: the window also holds the character after.
        end = min(len(text), at + 16)
        pos = max(_number_units(text, max(pos, back + 1), end, at, out), at + 1)


def directives_in(text: str) -> list[str]:
    lowered = folded(text)
    if lowered is not None and not any(hint in lowered for hint in _DIRECTIVE_HINTS):
        return []
    return dedupe(
        s for s in sentences(text) if len(s) <= MAX_SENTENCE and states_a_rule(_DIRECTIVE_RE, s)
    )
