"""The assistant's last words in a middle: the sentences of its last text
that say where it was, which a record quotes as its in-progress state."""

from __future__ import annotations

from collections.abc import Collection

from ctxpack.facts.match import collapse
from ctxpack.facts.sentence import sentences
from ctxpack.summarize.offline.actions import clip
from ctxpack.summarize.offline.quotes import announces, qualifies, with_list
from ctxpack.summarize.offline.said import MAX_QUOTE, decides


def last_note(bodies: list[str]) -> str | None:
    """The first two quotable sentences of the last assistant text that has
    any, and those right after them that qualify them or state a decision
    (what it found wrong, what it would change), as many as 2 * MAX_QUOTE
    characters hold; a sentence that ends in a colon ends the quote, with the
    list it announces (a block or a call it announces reads wrong out of it)."""
    found = last_note_at(bodies)
    return None if found is None else found[1]


def last_note_at(bodies: list[str], *, quoted: Collection[str] = ()) -> tuple[int, str] | None:
    """last_note(bodies), and which of `bodies` it quotes. `quoted`: the keys
    (Said.add's) of the decisions and next steps the record quotes already;
    their sentences are left out of it, unless they are all it would say.
    Key Decisions and Remaining Work are where those stand: an updated record
    keeps those sections' items and replaces the last words with the later
    turns', and a resuming model looks there for what was decided and what
    is left; the last words still say where the assistant was. Being the
    newest, they are the first items those sections keep where room is short."""
    for at in range(len(bodies) - 1, -1, -1):
        said = _note(bodies[at])
        if said:
            kept = _unquoted(said, quoted) if quoted else None
            return at, " ".join(quote for _, quote in kept or said)
    return None


def _note(body: str) -> list[tuple[str, str]]:
    """last_note's sentences of `body`, each with its quote."""
    said: list[tuple[str, str]] = []
    size = -1
    for sentence in sentences(body):
        if len(sentence) <= 2 * MAX_QUOTE:
            quoted = clip(sentence, MAX_QUOTE)
            if len(said) >= 2:
                if size + 1 + len(quoted) > 2 * MAX_QUOTE or announces(sentence):
                    break
                if not (qualifies(sentence) or decides(quoted)):
                    break
            elif announces(sentence):
                said.append(
                    (sentence, with_list(body, sentence, quote=MAX_QUOTE, limit=2 * MAX_QUOTE))
                )
                break
            said.append((sentence, quoted))
            size += 1 + len(quoted)
    return said


def _unquoted(said: list[tuple[str, str]], quoted: Collection[str]) -> list[tuple[str, str]]:
    """The sentences of `said` whose quote `quoted` holds left out, and what
    qualifies one of them (it reads wrong without it)."""
    kept = []
    left_out = False
    for sentence, quote in said:
        left_out = collapse(quote) in quoted or (left_out and qualifies(sentence))
        if not left_out:
            kept.append((sentence, quote))
    return kept
