"""Whether a sentence of the assistant's names a step it will take next:
the plans a record lists as work left (said.spoken reads them)."""

from __future__ import annotations

import re

# A plan is the assistant's own next step. A need is one when said of "I" or
# "we" ("I'll need to look up your reservation", "we still need to update
# the docs") or of no one, as a note ("Need to add two params"): "you may
# need to contact an agent" is advice, "the cost difference will need to be
# covered" a requirement on someone else, "I didn't need to" no step at all.
# A need that may come offers a possibility, not a step ("we may need to
# collect more data", "we might need a migration"), and a conditional need
# an option: "we'd need to add a token if we want to style them". So does
# any step an "if" governs ("If neither condition is met, I need to know
# ...", "If the build passes, then I'll commit"); an "if" that follows a verb
# asks whether ("To determine if it can be changed, I need to know ..."), so
# only one that opens a clause or follows a comma governs. "Next" is one when the
# assistant goes on ("Next, I'll add the test", "Next, let me check"), not
# in "next, the function returns" or "Next, you can look for ...", which
# describe or advise. "Next steps" is one where it heads what follows ("Next
# steps:", "My next step is to..."), not in "Ready for next steps!" or "I'll
# guide you through the next steps", which name the user's. A step hedged
# by a modal is an option offered, not one taken, whatever opens it ("Next,
# we may need to ...", "Next steps: we might need a migration", "Next, we
# could add caching", "Next, I can also add a token if you want"); "can't"
# and "couldn't" take no step either. Wanting one is taking it ("Next, I'd
# like to run the build"). "TODO" is one as a note's marker
# ("TODO: add tests", "- TODO fix the parser"), not as the noun of prose ("the
# todo item has been created", "a title for the todo item?").
_CLAUSE = r"(?:^\W*|(?:\s[-–—]|[:;])\s+)"
_OWN_NEED_RE = re.compile(
    r"(?:\b(?:I|we)(?:['’]ll)?"
    r"(?:\s+(?:will|shall|also|still|just|first|now|then|only|really))*\s+"
    rf"|{_CLAUSE})(?:need to|still need)\b",
    re.IGNORECASE,
)
_IF_RE = re.compile(
    rf"(?:{_CLAUSE}|,\s+)(?:(?:and|but|so|or|also|otherwise),?\s+)?if\b[^:;]*\Z", re.IGNORECASE
)
# "Next, I ran the tests" tells what was done: a verb in the past plans nothing
# ("need" and "proceed" are no past).
_PAST = (
    r"(?:\w*[^\We]ed|ran|did|made|wrote|found|saw|got|went|took|built|kept|left|put|began|brought"
    r"|thought|tried|had|was|were)\b"
)
_NEXT_RE = re.compile(
    rf"\b(?:next,?\s+(?:(?:I|we)\b(?!\s+{_PAST})|let(?:['’]s|\s+me|\s+us))|next up|then I['’]ll"
    r"|then I will"
    r"|left to do|remaining (?:work|steps?|tasks?|items?|issues?|failures?|tests?))\b"
    rf"|{_CLAUSE}(?:(?-i:TODO)\b|todo\s*:)"
    rf"|{_CLAUSE}(?:(?:the|my|our|as a)\s+)?next steps?\b",
    re.IGNORECASE,
)
# What follows a step when it is hedged: its subject where the step did not
# name it, then the may, might, could, would, can or 'd that hedges.
_HEDGED_RE = re.compile(
    r"(?:\W*(?:I|we)\b)?(?:\s*['’]d|\s+(?:may|might|could|would|can)(?:not|n?['’]t)?)\b"
    r"(?!\s+(?:like|love)\b)",
    re.IGNORECASE,
)


def plans(sentence: str) -> bool:
    """Whether `sentence` names a step the assistant itself will take."""
    return any(
        not _IF_RE.search(sentence, 0, step.end()) and not _HEDGED_RE.match(sentence, step.end())
        for rule in (_NEXT_RE, _OWN_NEED_RE)
        for step in rule.finditer(sentence)
    )
