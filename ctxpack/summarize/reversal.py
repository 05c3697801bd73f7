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
selection", then "agent teams shouldn't persist"): it is no current state,
nor is another account of the same deed (another agent's note of the file
it added that persistence to: Denials.deeds)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ctxpack.facts.text import QUIT_HABIT
from ctxpack.summarize.values import STOP_WORDS, stem

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
# The deed an account of the state opens with, less its -ed or -ing ("Added
# …", "Persisting …").
_DEED = re.compile(r"([a-z]+?)(?:ed|ing)\b", re.IGNORECASE)


def reverses(earlier: str, later: str) -> bool:
    """Whether `later` says the opposite of `earlier` about the same thing."""
    return _turned(_POSITIVE, earlier, _NEGATIVE, later) or _turned(
        _NEGATIVE, earlier, _POSITIVE, later
    )


@dataclass(frozen=True)
class Denial:
    """What one message of the user's says must not be done: its verbs' stems
    and the words it names."""

    stems: frozenset[str]
    content: frozenset[str]


class Denials:
    """The user's words that say something must not be done, each read once,
    and found by the verbs they deny: an update reads every item of its
    earlier state against all of them."""

    def __init__(self, said: Iterable[str]) -> None:
        self._by_verb: dict[str, list[Denial]] = {}
        self._by_form: dict[str, list[Denial]] = {}
        for later in said:
            verbs = _verbs(_NEGATIVE, later)
            if verbs:
                self._add(Denial(frozenset(map(stem, verbs)), _content(later)), verbs)

    def deeds(self, states: Iterable[str]) -> Denials:
        """The deeds the accounts of the state `states` open with, each read as
        one that must not be done: where the user turned those accounts
        around, another account of the same deed, about something they both
        name, is turned around with them, though it never names what the user
        denied ("Added persistence for team selection in workspace settings";
        "settingsSchema.ts - added 'activeTeam' to general settings"). What
        the user's words named is no such thing: all the work on it names it
        ("team")."""
        deeds = Denials(())
        for state in states:
            found = _DEED.match(state)
            if found:
                verbs = _bases(found.group(1).lower())
                content = _content(state).difference(
                    *(denial.content for denial in self._undoing(state))
                )
                deeds._add(Denial(frozenset(map(stem, verbs)), content), verbs)
        return deeds

    def _add(self, denial: Denial, verbs: set[str]) -> None:
        # A habit's verb before its -ing may end in a letter it doubled there
        # ("sett" of "setting", "committ" of "committing").
        doubled = {
            verb for verb in verbs if len(verb) > 2 and verb[-1] == verb[-2] and verb[:-1] in verbs
        }
        for verb in verbs:
            # A state's word names a verb when it opens with it, less a final
            # "e" ("persist": "persistence"; "cache": "cached"). Three letters
            # or fewer, or a doubled end, open unrelated words too ("add":
            # "address"; "use": "user"; "sett": "settings"): only the verb's
            # own forms name it then. Two letters are no verb ("ad" of
            # "adding"; "us" of "using", whose verb is "use").
            key = verb.removesuffix("e")
            if len(key) > 3 and key not in doubled:
                keys, index = [key], self._by_verb
            elif len(verb) > 2:
                keys, index = _forms(verb), self._by_form
            else:
                continue
            for name in keys:
                found = index.setdefault(name, [])
                if not found or found[-1] is not denial:
                    found.append(denial)

    def undo(self, state: str) -> bool:
        """Whether one of them says that what the account of the state `state`
        reports done must not be: a verb it says must not be done names a word
        of the state in any of its forms ("persisted", "persistence";
        "pushed"; "added"), and the two name something else besides."""
        return bool(self._undoing(state))

    def _undoing(self, state: str) -> list[Denial]:
        """The denials that undo the account of the state `state` (undo)."""
        if not self._by_verb and not self._by_form:
            return []
        turned: dict[int, tuple[Denial, set[str]]] = {}
        for word in (word.lower() for word in _WORD.findall(state)):
            found = [*self._by_form.get(word, ())]
            for end in range(4, len(word) + 1):
                found += self._by_verb.get(word[:end], ())
            for denial in found:
                turned.setdefault(id(denial), (denial, set()))[1].add(stem(word))
        if not turned:
            return []
        content = _content(state)
        return [
            denial
            for denial, words in turned.values()
            if (content & denial.content) - words - denial.stems
        ]


def undoes(state: str, later: str) -> bool:
    """Whether `later` undoes the account of the state `state` (Denials.undo)."""
    return Denials([later]).undo(state)


def _turned(one: re.Pattern[str], earlier: str, other: re.Pattern[str], later: str) -> bool:
    said = set(map(stem, _verbs(one, earlier)))
    turned = set(map(stem, _verbs(other, later))) & said
    if not turned:
        return False
    # Something besides the verb that both name.
    return bool((_content(earlier) & _content(later)) - turned)


def _verbs(pattern: re.Pattern[str], text: str) -> set[str]:
    """The verbs `pattern` reads in `text`, lowercased. A habit's verb comes
    without its -ing, so in each form the verb may have (_bases)."""
    verbs: set[str] = set()
    for found in pattern.finditer(text):
        verb = found.group(found.lastindex or 0).lower()
        if found.lastindex == _HABIT and pattern is _NEGATIVE:
            verbs |= _bases(verb)
        else:
            verbs.add(verb)
    return verbs


def _bases(verb: str) -> set[str]:
    """The forms a verb that lost its -ing or -ed may have had ("mak": "make";
    "committ": "commit")."""
    bases = {verb, f"{verb}e"}
    if len(verb) > 2 and verb[-1] == verb[-2]:
        bases.add(verb[:-1])
    return bases


def _forms(verb: str) -> list[str]:
    """The words that are the verb `verb` itself ("use": "uses", "used",
    "using"; "set": "sets", "setting"; "add": "added")."""
    if verb.endswith("e"):
        return [verb, f"{verb}s", f"{verb}d", f"{verb[:-1]}ing"]
    forms = [verb, f"{verb}s", f"{verb}es", f"{verb}ed", f"{verb}ing"]
    forms += [f"{verb}{verb[-1]}ed", f"{verb}{verb[-1]}ing"]
    if verb.endswith("y"):
        forms += [f"{verb[:-1]}ies", f"{verb[:-1]}ied"]
    return forms


def _content(text: str) -> frozenset[str]:
    words = (word.lower() for word in _WORD.findall(text))
    return frozenset(stem(word) for word in words if len(word) > 3 and word not in STOP_WORDS)
