"""Exact token counts with tiktoken (its files loaded offline by
tokens/encodings.py), and the 4-characters-a-token estimate.

Counting uses `encode_ordinary`: transcripts contain text such as
"<|endoftext|>" that must count as text, not as a special token.

tiktoken is imported only when an exact count needs it (never for
--estimate), and its encoder is built only for inputs large enough to pay for
it: a small input is counted by tokens/bpe.py with the same ranks and results.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ctxpack import messages as m
from ctxpack.settings import DEFAULT_ENCODING
from ctxpack.tokens import forked
from ctxpack.tokens.encodings import built, check_name, get_encoding, small_counter
from ctxpack.transcript import Message

if TYPE_CHECKING:
    import tiktoken


KINDS = (
    "system",
    "user_text",
    "assistant_text",
    "tool_calls",
    "tool_results",
    "reasoning",
    "images",
    "overhead",
)
_ZEROS = (0,) * len(KINDS)
# Role and separator tokens a chat template adds around each message.
MESSAGE_OVERHEAD = 4
IMAGE_TOKENS = 1600
CHARS_PER_TOKEN = 4
# Below this many uncounted messages a fork costs more than it saves.
PARALLEL_MIN_MESSAGES = 2000
# Below this many characters of loose texts, the same (tiktoken counts a few
# million a second; the parent then pays for each page a child shares with it).
PARALLEL_MIN_CHARS = 2_000_000
# Up to about this many characters of text, counting in Python costs less than
# building tiktoken's encoder (a few tenths of a second) and counting there.
# The allowance is the process's, not a counter's: a batch of many small files
# soon pays for the encoder, and then every file is counted by tiktoken.
SMALL_INPUT_CHARS = 300_000
_python_chars = {"left": SMALL_INPUT_CHARS}
# A text this long is counted a stretch at a time, and a stretch is looked
# up among the RECALL_TEXTS counted last before it is tokenized: a record is
# counted as it is fitted, then with its facts, cited and in its message, and
# each of its sections is tokenized once (hashing a text costs a sliver of
# tokenizing it). A stretch ends with a blank line that the next one starts
# right after, with a character that is neither whitespace nor "/". There
# the split pattern of every encoding we load ends a piece (a piece that
# holds a newline is whitespace, or punctuation followed by newlines, and in
# o200k slashes), and no token spans two pieces: a text's count is the sum
# of its stretches'.
RECALL_MIN_CHARS = 256
STRETCH_END = "\n\n"
RECALL_STRETCH_CHARS = 16
RECALL_TEXTS = 128
# What the recalled stretches may hold in all: a few long tool outputs must
# not stay alive for the rest of a run.
RECALL_CHARS = 1 << 22

_TEXT_KIND = {
    "system": "system",
    "developer": "system",
    "user": "user_text",
    "assistant": "assistant_text",
    "tool": "tool_results",
    "function": "tool_results",
}
# A message with none of these keys and string content is only its text.
_NOT_PLAIN = frozenset({"tool_calls", "function_call", *m.REASONING_KEYS})


class TokenCounter:
    """Counts texts and messages; per-message results are memoized by identity.

    Stages replace changed messages with new objects, so a memo keyed on the
    object stays correct and every unchanged message is tokenized once per run.
    """

    def __init__(
        self,
        *,
        encoding: str = DEFAULT_ENCODING,
        estimate: bool = False,
        workers: int | None = None,
    ) -> None:
        self.encoding_name = encoding
        self.estimate = estimate
        if not estimate:
            check_name(encoding)
        # Loaded on first use: a command can read its input before the
        # tokenizer takes its share of memory.
        self._encoding: tiktoken.Encoding | None = None
        # id(message) -> (total, tokens of each of KINDS): one small tuple per
        # message, as large sessions hold hundreds of thousands. `_alive`
        # keeps every counted message alive, so no id is reused meanwhile.
        self._memo: dict[int, tuple[int, ...]] = {}
        # Each distinct row once: a long session holds far fewer distinct
        # counts than messages, and its memo is among the largest things a run
        # holds (a child's rows travel back as references to the first of each).
        self._rows: dict[tuple[int, ...], tuple[int, ...]] = {}
        self._alive: list[Message] = []
        # The RECALL_TEXTS stretches of long texts `text` counted last, the
        # least recent first, and their characters (at most RECALL_CHARS).
        self._recent: dict[str, int] = {}
        self._recent_chars = 0
        # None: as many processes as this machine gives us, for large inputs.
        self.workers = workers

    @property
    def processes(self) -> int:
        """How many processes work on a large input counted here."""
        return self.workers or forked.available_workers()

    def prime(self, msgs: list[Message]) -> None:
        """Count every message not counted yet, on several cores when that pays.

        Stages call this before walking a session so that the per-message
        lookups that follow are memo hits. An estimate keeps no memo: its
        arithmetic costs less than a memo entry.
        """
        if self.estimate:
            return
        todo, workers = self._uncounted(msgs)
        if todo:
            self._remember(todo, forked.map_forked(self._packed, todo, workers=workers))

    @contextlib.contextmanager
    def counting(self, msgs: list[Message]) -> Iterator[None]:
        """Count msgs in child processes while the with-block does other work
        (work that needs no counts, or only a few: those are counted here)."""
        if self.estimate:
            yield
            return
        todo, workers = self._uncounted(msgs)
        if workers == 1:
            yield
            self.prime(todo)
            return
        with forked.in_background(
            lambda chunk: [self._packed(msg) for msg in chunk],
            todo,
            workers=workers,
            done=lambda chunks: self._remember(todo, itertools.chain.from_iterable(chunks)),
        ):
            yield

    def _uncounted(self, msgs: list[Message]) -> tuple[list[Message], int]:
        """The messages not counted yet, and how many processes should count them."""
        todo = [msg for msg in msgs if id(msg) not in self._memo]
        if len(todo) < PARALLEL_MIN_MESSAGES:
            if self._encoding is None and self._chars(todo) > _python_chars["left"]:
                self._encoder()
            return todo, 1
        self._encoder()  # loaded once here, not once per child
        return todo, self.processes

    def _chars(self, msgs: list[Message]) -> int:
        """Roughly the characters an exact count of msgs tokenizes."""
        return sum(_counted(msg, len)[0] for msg in msgs)

    def _remember(self, msgs: list[Message], counted: Iterable[tuple[int, ...]]) -> None:
        same = self._rows.setdefault
        self._memo.update(zip(map(id, msgs), (same(row, row) for row in counted), strict=True))
        self._alive += msgs

    def forget(self) -> None:
        """Drop the memo (and the messages it keeps alive), e.g. between files.
        The few stretches recalled stay: every record's template repeats them."""
        self._memo.clear()
        self._rows.clear()
        self._alive.clear()

    def text(self, text: str) -> int:
        if self.estimate:
            return _estimate(text)
        if len(text) < RECALL_MIN_CHARS:
            return self._count(text)
        if STRETCH_END not in text:
            return self._recalled(text)
        return sum(map(self._recalled, stretches(text)))

    def _recalled(self, text: str) -> int:
        if not RECALL_STRETCH_CHARS <= len(text) <= RECALL_CHARS:
            return self._count(text)
        recent = self._recent
        # The least recently counted goes first: a template's stretches,
        # counted for every record, stay.
        tokens = recent.pop(text, None)
        if tokens is None:
            tokens = self._count(text)
            self._recent_chars += len(text)
            while recent and (len(recent) >= RECALL_TEXTS or self._recent_chars > RECALL_CHARS):
                self._recent_chars -= len(oldest := next(iter(recent)))
                del recent[oldest]
        recent[text] = tokens
        return tokens

    def count_made(self, msgs: list[Message]) -> None:
        """Count the messages of msgs not counted yet through `text`: a
        message a stage made (a record, the message it joined) repeats texts
        counted as it was made, which are recalled."""
        if self.estimate:
            return
        made = [msg for msg in msgs if id(msg) not in self._memo]
        self._remember(made, (_counted(msg, self.text) for msg in made))

    def texts(self, texts: list[str]) -> list[int]:
        """The tokens of each of texts, on several cores when they are many
        (the candidate lines of a long middle's record)."""
        if self.estimate:
            return [_estimate(text) for text in texts]
        many = len(texts) >= PARALLEL_MIN_MESSAGES and sum(map(len, texts)) >= PARALLEL_MIN_CHARS
        workers = self.processes if many else 1
        if workers > 1:
            self._encoder()  # loaded once here, not once per child
        return forked.map_forked(self._count, texts, workers=workers)

    def _count(self, text: str) -> int:
        if not text:
            return 0
        if self._encoding is None:
            if (ready := built(self.encoding_name)) is not None:
                self._encoding = ready
                return len(self._encoding.encode_ordinary(text))
            _python_chars["left"] -= len(text)
            if _python_chars["left"] >= 0:
                tokens = small_counter(self.encoding_name).count(text)
                if tokens is not None:
                    return tokens
        return len((self._encoding or self._encoder()).encode_ordinary(text))

    def _encoder(self) -> tiktoken.Encoding:
        if self._encoding is None:
            self._encoding = get_encoding(self.encoding_name)
        return self._encoding

    def breakdown(self, msg: Message) -> dict[str, int]:
        """Tokens of one message by kind (only non-zero kinds present)."""
        return {kind: n for kind, n in zip(KINDS, self.counts(msg)[1:], strict=True) if n}

    def counts(self, msg: Message) -> tuple[int, ...]:
        """(total, then the tokens of each of KINDS in order) of one message."""
        if self.estimate:
            return estimated(msg)
        hit = self._memo.get(id(msg))
        if hit is not None:
            return hit
        entry = self._memo[id(msg)] = self._packed(msg)
        self._alive.append(msg)
        return entry

    def _packed(self, msg: Message) -> tuple[int, ...]:
        # A message's texts are counted once each (the memo is per message).
        row = _counted(msg, self._count)
        return self._rows.setdefault(row, row)

    def message(self, msg: Message) -> int:
        return self.counts(msg)[0]

    def messages(self, msgs: list[Message]) -> int:
        if self.estimate:
            return estimated_total(msgs)
        self.prime(msgs)
        counts = self.counts
        return sum(counts(msg)[0] for msg in msgs)


def stretches(text: str) -> Iterator[str]:
    """`text` cut after the blank lines where its count is the sum of its
    parts' (see STRETCH_END)."""
    parts = text.split(STRETCH_END)
    # The parts of the stretch in hand, joined once it ends: a text of many
    # blank lines before indented ones (code) is not copied again at each.
    held = [parts[0]]
    for part in parts[1:]:
        if part and not part[0].isspace() and part[0] != "/":
            yield STRETCH_END.join(held) + STRETCH_END
            held = [part]
        else:
            held.append(part)
    yield STRETCH_END.join(held)


def build_before_fork(encoding: str, *, chars: int, processes: int) -> None:
    """Build the encoder here, before `processes` forked processes count about
    `chars` characters between them, when each would soon build its own: they
    then share this one and count nothing in Python first."""
    if chars > processes * SMALL_INPUT_CHARS:
        get_encoding(encoding)


def _estimate(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


# Per text kind, the zeros before its column and the columns after it but the
# overhead, of messages that are only text of that kind.
_PLAIN = {kind: (_ZEROS[:at], _ZEROS[at + 1 : -1]) for at, kind in enumerate(KINDS[:-1])}


def plain_tokens(msg: Message) -> int:
    """The estimated tokens of a message that is one string of text and
    nothing else (most are); -1 for any other message."""
    content = msg.get("content")
    if type(content) is str and _NOT_PLAIN.isdisjoint(msg):
        return -(-len(content) // CHARS_PER_TOKEN)
    return -1


def plain_row(role: str, tokens: int, *, messages: int = 1) -> tuple[int, ...]:
    """The estimate row of `messages` plain messages of `role` holding `tokens`
    tokens of text in all: their text and each one's overhead."""
    before, after = _PLAIN[_TEXT_KIND.get(role, "user_text")]
    overhead = MESSAGE_OVERHEAD * messages
    return (tokens + overhead, *before, tokens, *after, overhead)


def estimated(msg: Message) -> tuple[int, ...]:
    """The estimate row of one message: what `counts` gives, by arithmetic on
    the lengths orjson returned, with no counter state at all."""
    tokens = plain_tokens(msg)
    if tokens >= 0:
        return plain_row(m.role(msg), tokens)
    return estimated_by_kind(msg)


def estimated_by_kind(msg: Message) -> tuple[int, ...]:
    """The estimate row of one message, each of its texts estimated apart
    (what `estimated` gives a message that is not plain text)."""
    return _counted(msg, _estimate)


def estimated_total(msgs: list[Message]) -> int:
    """The estimated tokens of msgs: what summing their `estimated` rows gives,
    with no row made for a plain message."""
    total = 0
    for msg in msgs:
        tokens = plain_tokens(msg)
        total += tokens + MESSAGE_OVERHEAD if tokens >= 0 else estimated(msg)[0]
    return total


# Where each kind's count sits in a row (after the total), and where the
# text of each role goes.
_COLUMN = {kind: at for at, kind in enumerate(KINDS, 1)}
_TEXT_COLUMN = {role: _COLUMN[kind] for role, kind in _TEXT_KIND.items()}
_USER_COLUMN = _COLUMN["user_text"]
_CALLS, _REASONING, _IMAGES = _COLUMN["tool_calls"], _COLUMN["reasoning"], _COLUMN["images"]


def _counted(msg: Message, text: Callable[[str], int]) -> tuple[int, ...]:
    """The row of one message (its total, then each of KINDS), as `text`
    counts each of its texts."""
    row = [0] * (len(KINDS) + 1)
    content = msg.get("content")
    # Most messages are plain text with nothing else to count: one lookup each.
    tokens = (
        text(content)
        if isinstance(content, str)
        else sum(map(text, m.text_parts(msg)))
        if content
        else 0
    )
    if tokens:
        row[_TEXT_COLUMN.get(m.role(msg), _USER_COLUMN)] = tokens
    if "tool_calls" in msg or "function_call" in msg:
        calls = 0
        for call in m.tool_calls(msg):
            calls += text(m.call_name(call)) + text(m.call_arguments(call))
        legacy = m.legacy_function_call(msg)
        if legacy is not None:
            calls += text(_str(legacy.get("name"))) + text(_str(legacy.get("arguments")))
        row[_CALLS] = calls
    if "reasoning_content" in msg or "reasoning" in msg or "thinking" in msg:
        row[_REASONING] = sum(map(text, m.reasoning_texts(msg)))
    if isinstance(content, list):
        row[_IMAGES] = IMAGE_TOKENS * m.image_count(msg)
    row[-1] = MESSAGE_OVERHEAD
    row[0] = sum(row)
    return tuple(row)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""
