"""What was said in a middle: the user's asks and questions, and the
sentences in which the assistant said what it decided or would do next."""

from __future__ import annotations

import itertools
import re

from ctxpack import messages as m
from ctxpack.facts.match import collapse, folded
from ctxpack.facts.sentence import sentences
from ctxpack.redact import mask
from ctxpack.summarize.ledger import cut_mark, is_acknowledgement, user_words
from ctxpack.summarize.offline.actions import clip
from ctxpack.summarize.offline.plans import plans
from ctxpack.summarize.offline.quotes import announces, answer_quote, with_list
from ctxpack.summarize.pasted import closing_words, without_screens
from ctxpack.transcript import Message

_DECISION_RE = re.compile(
    r"\b(?:I['’]ll use|I will use|I['’]m using|we['’]ll use|decided|instead of|going with"
    r"|I chose|switching to|opted for|I['’]ll go with"
    # What it found wrong and what it changes for it are what it concluded:
    # "The issue is that ...", "... can lead to incorrect rounding", "The fix
    # is to ...", "To fix this issue, we should ...", "We should use round()".
    r"|the (?:issue|problem|bug|root cause|cause) (?:here )?is (?:that|because|due to)"
    r"|(?:is|are) caused by|leads? to (?:incorrect|wrong)|the fix is (?:to|that)"
    r"|to fix (?:this|the|it)\b[^.;:]*?\b(?:we|I) should|(?:we|I) should use)\b",
    re.IGNORECASE,
)
# A guess or a suggestion names another way without choosing it.
_GUESS_RE = re.compile(
    r"\b(?:I bet|might|maybe|perhaps|probably|possibly|would explain|could be|I suspect)\b",
    re.IGNORECASE,
)
MAX_ASK = 300
MAX_QUOTE = 240
MAX_REPLY = 160
# An ask this short ("yes", "ok, go ahead") says what it means only with the
# question the assistant asked just before it.
MAX_SHORT_ASK = 24
# How a record lists what the user left pending: an ask it quotes (the
# question it answered may follow) with no reply, or a question left open.
# An update reads the user's words back (pending_words); quote() leaves no
# double quote inside them, so the first closing one ends them.
NO_REPLY = " (no reply recorded in these turns)"
OPEN_QUESTION = "Question left open: "
_PENDING_RE = re.compile(rf'^- (?:{OPEN_QUESTION})?"([^"]+)"')
# An answer of this many words, with no question of its own, hands over what
# the assistant asked for ("Sure, my user ID is mia_li_3668."): no new task.
MAX_ANSWER_WORDS = 8


def ask_quote(raw: str, limit: int = MAX_ASK) -> str:
    """A user's ask as a record quotes it, within `limit` characters. A
    longer one that ends in the user's words after something they pasted
    shows the start of the paste and those words (up to half the room), the
    middle cut: what they asked of it is the ask."""
    text = without_screens(raw)
    shown = clip(text, limit)
    if not shown.endswith("…") or (words := closing_words(raw)) is None:
        return shown
    whole = collapse(mask(text))
    if len(whole) <= limit:
        return shown  # its own "…" ends it
    end = clip(without_screens(words), limit // 2)
    # The mark is never longer than one that counts the whole text.
    room = limit - len(end) - len(cut_mark(len(whole))) - 2
    head = whole[: max(0, room)].rstrip()
    return f"{head} {cut_mark(len(whole) - len(head) - len(end))} {end}"


class Ask:
    """A user's ask: where it was, its text, and the first sentence of the
    assistant's next visible text (None if there is none). Both texts are
    clipped when first read: most asks of a long middle are never shown."""

    __slots__ = ("_limit", "_raw", "_replies", "_text", "index")

    def __init__(self, index: int, raw: str, limit: int, replies: Replies) -> None:
        self.index = index
        self._raw, self._limit, self._replies = raw, limit, replies
        self._text: str | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = ask_quote(self._raw, self._limit)
        return self._text

    @property
    def reply(self) -> str | None:
        return self._replies.after(self.index)

    @property
    def answering(self) -> str | None:
        """The question the assistant asked right before a short ask, which
        the ask answers ("yes" to "Should I add the same aliases?")."""
        if len(self._raw.strip()) > MAX_SHORT_ASK:
            return None
        return self._replies.question_before(self.index)

    @property
    def only_answers(self) -> bool:
        """The ask replies, in a few words and asking nothing, to the question
        the assistant asked right before it."""
        raw = self._raw
        if "?" in raw or len(raw.split(maxsplit=MAX_ANSWER_WORDS)) > MAX_ANSWER_WORDS:
            return False
        return self._replies.question_before(self.index) is not None

    @property
    def answered(self) -> bool:
        """The assistant wrote something visible after it."""
        return self.replied_at is not None

    @property
    def replied_at(self) -> int | None:
        """Where the assistant's next visible text is: asks with the same one
        have the same reply."""
        return self._replies.next_of(self.index)

    def __repr__(self) -> str:
        return f"Ask(index={self.index!r}, text={self.text!r}, reply={self.reply!r})"


def _announces_a_call(said: list[str], at: int) -> bool:
    """Sentence `at` of a text's sentences `said` (at least up to it and the
    one after) ends the text announcing: what it announced was a tool call."""
    return at == len(said) - 1 and announces(said[at])


def _speaker(msg: Message, text: str) -> str:
    """ "assistant" for a visible text of the assistant, "user" for the
    user's words (not a tool result), "" for any other message."""
    role = m.role(msg)
    if role == "assistant" and text and not text.isspace():
        return "assistant"
    return "user" if role == "user" and not m.is_tool_result(msg) else ""


class Replies:
    """The assistant's reply to a turn: the first sentence it wrote after it,
    unless that sentence announces a tool call (its text ends with it): then
    the first of a later text that says something, before the user spoke
    again; else the first it wrote. A first sentence that only acknowledges
    leads the one that answers."""

    def __init__(self, middle: list[Message], texts: list[str]) -> None:
        self._texts = texts
        # Who spoke in each message: the assistant (visible text), the user, or neither.
        spoke = [_speaker(msg, text) for msg, text in zip(middle, texts, strict=True)]
        self._next: list[int | None] = [None] * len(middle)
        # Whether the user speaks between a message and the assistant's next text.
        self._user_before_next: list[bool] = [False] * len(middle)
        upcoming: int | None = None
        user_since = False
        for index in range(len(middle) - 1, -1, -1):
            self._next[index] = upcoming
            self._user_before_next[index] = user_since
            if spoke[index] == "assistant":
                upcoming, user_since = index, False
            elif spoke[index] == "user":
                user_since = True
        self._quoted: dict[int, str] = {}
        # The assistant's first text, where no word of the user's comes
        # before it: it answers what came before these turns.
        first = next(((i, who) for i, who in enumerate(spoke) if who), None)
        self._first = first[0] if first is not None and first[1] == "assistant" else None
        # The assistant's last visible text before each message, if the user
        # has not spoken since.
        self._before: list[int | None] = [None] * len(middle)
        last: int | None = None
        for index, who in enumerate(spoke):
            self._before[index] = last
            if who == "assistant":
                last = index
            elif who == "user":
                last = None

    def first(self) -> str | None:
        """The reply to what came before these turns, read as a reply is from
        the assistant's first text in them; None when the user spoke first."""
        return None if self._first is None else self._reply_at(self._first)

    def question_before(self, index: int) -> str | None:
        """The last question the assistant asked before the message at
        `index`, with no word from the user in between."""
        at = self._before[index]
        if at is None:
            return None
        asked = [said for said in sentences(self._texts[at]) if said.endswith("?")]
        return clip(asked[-1], MAX_QUOTE) if asked else None

    def next_of(self, index: int) -> int | None:
        return self._next[index]

    def after(self, index: int) -> str | None:
        found = self._next[index]
        return None if found is None else self._reply_at(found)

    def _reply_at(self, found: int) -> str:
        if found not in self._quoted:
            self._quoted[found] = self._reply_from(found)
        return self._quoted[found]

    def _reply_from(self, found: int) -> str:
        at: int | None = found
        # "Good question!" answers nothing, and "Yes!" little: what follows
        # it answers, in this text or, when a call comes first, a later one.
        lead = ""
        while at is not None:
            text = self._texts[at]
            # The sentences up to the one after the first that is no
            # acknowledgement: enough to tell whether that one ends the text.
            rest = sentences(text)
            said = list(itertools.islice(rest, 2))
            first = 0
            while first < len(said) and is_acknowledgement(said[first]):
                lead = lead or said[first]
                first += 1
                said.extend(itertools.islice(rest, 1))
            if first < len(said) and not _announces_a_call(said, first):
                answer = answer_quote(text, said, first, quote=MAX_REPLY, limit=MAX_QUOTE)
                return f"{lead} {answer}" if lead else answer
            if self._user_before_next[at]:
                break
            at = self._next[at]
        return lead or clip(next(sentences(self._texts[found]), ""), MAX_REPLY)


def decides(quoted: str) -> bool:
    """The (quoted) sentence states a decision: said, not guessed."""
    return _DECISION_RE.search(quoted) is not None and not _GUESS_RE.search(quoted)


class Said:
    """What the assistant wrote so far: its texts, and the keys of the
    decisions and next steps already recorded (each is kept once)."""

    def __init__(self) -> None:
        self.bodies: list[str] = []
        # Where each of the bodies is in the middle.
        self.at: list[int] = []
        self.decisions: set[str] = set()
        self.next_steps: set[str] = set()

    @staticmethod
    def add(items: list[str], out: list[str], seen: set[str]) -> None:
        for item in items:
            key = collapse(item)
            if key and key not in seen:
                seen.add(key)
                out.append(item)


def asked(msg: Message) -> tuple[str, list[str]] | None:
    """The user's own words in `msg` and the questions among them."""
    body = user_words(msg)
    if body is None:
        return None
    return body, questions_in(body)


def questions_in(words: str) -> list[str]:
    """The questions among the user's `words`: the sentences that end asking,
    short enough to quote."""
    if "?" not in words:
        return []
    return [s for s in sentences(words) if s.endswith("?") and len(s) <= MAX_QUOTE]


def pending_words(item: str) -> str | None:
    """The user's words that a pending item (NO_REPLY, OPEN_QUESTION) quotes;
    None for an item of another shape."""
    found = _PENDING_RE.match(item)
    return found.group(1) if found else None


def spoken(body: str) -> tuple[list[str], list[str]] | None:
    """The quotable sentences of an assistant's text that state a decision,
    and those that name a next step; None when it wrote nothing visible."""
    if not body or body.isspace():
        return None
    decisions: list[str] = []
    next_steps: list[str] = []
    if not _maybe_said(collapse(body)):
        return decisions, next_steps
    said = list(sentences(body))
    for at, sentence in enumerate(said):
        if len(sentence) > 2 * MAX_QUOTE or not _maybe_said(sentence):
            continue
        quoted = clip(sentence, MAX_QUOTE)
        decided = decides(quoted)
        # A step its text ends announcing was the tool call that followed it.
        planned = plans(quoted) and not _announces_a_call(said, at)
        if decided or planned:
            quoted = with_list(body, sentence, quote=MAX_QUOTE, limit=2 * MAX_QUOTE)
        if decided:
            decisions.append(quoted)
        if planned:
            next_steps.append(quoted)
    return decisions, next_steps


def _maybe_said(text: str) -> bool:
    """Whether collapsed `text` may hold a decision or a next step: it holds
    one of the phrases of the two patterns (lowercased; no word boundaries, as
    a quote cut short can end right after one)."""
    t = folded(text)
    return t is None or (
        ("use" in t and ("ll use" in t or "will use" in t))
        or "m using" in t
        or "decided" in t
        or "instead of" in t
        or "going with" in t
        or "chose" in t
        or "switching to" in t
        or "opted for" in t
        or "ll go with" in t
        or "should use" in t
        or "fix is " in t
        or ("to fix" in t and "should" in t)
        or " is that" in t
        or " is because" in t
        or " is due to" in t
        or "caused by" in t
        or "to incorrect" in t
        or "to wrong" in t
        or (
            "next" in t
            and (
                "next step" in t
                or "next," in t
                or "next i" in t
                or "next we" in t
                or "next let" in t
                or "next up" in t
            )
        )
        or "then i" in t
        or "still need" in t
        or "need to" in t
        or "left to do" in t
        or "remaining " in t
        or "todo" in t
    )
