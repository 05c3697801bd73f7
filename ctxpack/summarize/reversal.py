"""Whether a later rule turns an earlier one around: one says a thing must
(should, always) be done, the other that it must not (should not, never),
of the same verb and about something they both name ("Active team selection
MUST persist in workspace settings", then "agent teams shouldn't persist").

An update keeps an earlier record's rules; where the user has since turned
one around, what they said later stands in its place and quotes it, so that
the rule in force is the one read. The earlier rule is quoted, not dropped:
a later rule may be an exception to it as well as its end.

An earlier account of the state is turned around the same way when the user
later says that what it reports done must not be ("Added persistence for team
selection", then "agent teams shouldn't persist"): it is no current state."""

from __future__ import annotations

import re

from ctxpack.facts.text import QUIT_HABIT
from ctxpack.summarize.statements import STOP_WORDS, stem

_NOT = r"(?:n['’]t|\s+not)"
# Told to the agent, not said of a thing ("it may stop working"): where a
# sentence, clause or quote opens, or after the words that ask it. Read only
# before "stop" or "quit": at every place, it would slow each scan fourfold.
_TOLD = r"(?:(?<![\w'’] )|(?<=\bplease )|(?<=\bjust )|(?<=\byou )|(?<=\bto )|(?<=\bnow ))"
# A rule's modal and the verb it governs; the verb is the group. "Stop
# grouping …" is a "must not group", its verb the second group, less its -ing.
_NEGATIVE = re.compile(
    rf"\b(?:(?:must|should|shall|do|does|will|can|may|need){_NOT}|won['’]t|cannot|never"
    r"|no longer)(?:\s+(?:need|have)\s+to)?"
    rf"(?:\s+(?:ever|be|get|keep|always))*\s+([a-z][a-z'-]+)|\b(?=stop|quit){_TOLD}{QUIT_HABIT}",
    re.IGNORECASE,
)
_HABIT = 2
_POSITIVE = re.compile(
    rf"\b(?:must|should|shall|always|need(?:s)? to|ha(?:s|ve) to)(?!{_NOT})"
    r"(?:\s+(?:always|also|still|be|get|keep))*\s+([a-z][a-z'-]+)",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z][\w'-]*")


def reverses(earlier: str, later: str) -> bool:
    """Whether `later` says the opposite of `earlier` about the same thing."""
    return _turned(_POSITIVE, earlier, _NEGATIVE, later) or _turned(
        _NEGATIVE, earlier, _POSITIVE, later
    )


def denies(later: str) -> bool:
    """Whether `later` says of something that it must not be done: words no
    state is undone by (undoes) go unread."""
    return _NEGATIVE.search(later) is not None


def undoes(state: str, later: str) -> bool:
    """Whether `later` says that what the account of the state `state` reports
    done must not be: a verb it says must not be done names a word of the
    state in any of its forms ("persisted", "persistence"; "pushed"), and the
    two name something else besides."""
    words = [word.lower() for word in _WORD.findall(state)]
    verbs = _verbs(_NEGATIVE, later)
    turned = {
        stem(word)
        for word in words
        for verb in verbs
        if len(verb) > 3 and word.startswith(verb.removesuffix("e"))
    }
    return bool(turned) and bool(
        (_content(state) & _content(later)) - turned - set(map(stem, verbs))
    )


def _turned(one: re.Pattern[str], earlier: str, other: re.Pattern[str], later: str) -> bool:
    said = set(map(stem, _verbs(one, earlier)))
    turned = set(map(stem, _verbs(other, later))) & said
    if not turned:
        return False
    # Something besides the verb that both name.
    return bool((_content(earlier) & _content(later)) - turned)


def _verbs(pattern: re.Pattern[str], text: str) -> set[str]:
    """The verbs `pattern` reads in `text`, lowercased. A habit's verb comes
    without its -ing, so in each form the verb may have ("mak": "make";
    "committ": "commit")."""
    verbs: set[str] = set()
    for found in pattern.finditer(text):
        verb = found.group(found.lastindex or 0).lower()
        verbs.add(verb)
        if found.lastindex == _HABIT and pattern is _NEGATIVE:
            verbs.add(f"{verb}e")
            if len(verb) > 2 and verb[-1] == verb[-2]:
                verbs.add(verb[:-1])
    return verbs


def _content(text: str) -> set[str]:
    words = (word.lower() for word in _WORD.findall(text))
    return {stem(word) for word in words if len(word) > 3 and word not in STOP_WORDS}
