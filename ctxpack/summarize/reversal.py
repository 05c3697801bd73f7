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

from ctxpack.summarize.statements import STOP_WORDS, stem

_NOT = r"(?:n['’]t|\s+not)"
# A rule's modal and the verb it governs; the verb is the group.
_NEGATIVE = re.compile(
    rf"\b(?:(?:must|should|shall|do|does|will|can|may|need){_NOT}|won['’]t|cannot|never"
    r"|no longer)(?:\s+(?:need|have)\s+to)?"
    r"(?:\s+(?:ever|be|get|keep|always))*\s+([a-z][a-z'-]+)",
    re.IGNORECASE,
)
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
    verbs = {verb.lower() for verb in _NEGATIVE.findall(later)}
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
    said = {stem(verb.lower()) for verb in one.findall(earlier)}
    turned = {stem(verb.lower()) for verb in other.findall(later)} & said
    if not turned:
        return False
    # Something besides the verb that both name.
    return bool((_content(earlier) & _content(later)) - turned)


def _content(text: str) -> set[str]:
    words = (word.lower() for word in _WORD.findall(text))
    return {stem(word) for word in words if len(word) > 3 and word not in STOP_WORDS}
