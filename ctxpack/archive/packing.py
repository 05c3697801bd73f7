"""How the archive packs a blob's bytes for its row, and reads them back.

zlib is fast enough to sit on the compaction path; lzma and raw are read too,
so a later writer may choose them without a migration. A blob stored as slices
of another (slices.CODEC), or as one of its JSON strings (strings.CODEC), is
read back from that one's bytes."""

from __future__ import annotations

import lzma
import os
import sqlite3
import zlib

from ctxpack.archive import slices, strings
from ctxpack.archive.db import ArchiveCorrupt, ref_of_sha
from ctxpack.refs import Blob, sha256_hex, stretches_of

# Blobs this large are packed on a core of their own.
LARGE_BLOB = 1 << 20


# Level 3 packs transcripts within about a sixth of level 6's size in less
# than half its time: the archive is written on every compaction.
_LEVEL = 3
_STEP = 1 << 20


# A blob's codec and its packed bytes.
Coded = tuple[str, bytes | bytearray]


def pack(data: Blob) -> Coded:
    packed: bytes | bytearray
    if isinstance(data, bytes | bytearray) and len(data) < LARGE_BLOB:
        packed = zlib.compress(data, _LEVEL)
    else:
        # Fed a stretch at a time into one growing buffer: zlib.compress holds
        # its whole output twice as it finishes. The bytes are the same.
        packer = zlib.compressobj(_LEVEL)
        packed = bytearray()
        for stretch in stretches_of(data):
            view = memoryview(stretch)
            for start in range(0, len(stretch), _STEP):
                packed += packer.compress(view[start : start + _STEP])
        packed += packer.flush()
    if len(packed) >= len(data):
        return "raw", data if isinstance(data, bytes | bytearray) else bytes(data)
    return "zlib", packed


# A blob packed before it is stored (a large input, in a child, while the run
# compacts it): its sha256, codec and packed bytes (none for "raw": the blob's
# own bytes are stored).
Packed = tuple[str, str, bytes | bytearray]


def packed_ahead(data: bytes) -> Packed:
    codec, packed = pack(data)
    return sha256_hex(data), codec, b"" if codec == "raw" else packed


# A blob row: (sha256, codec, packed bytes, size unpacked).
BlobRow = tuple[str, str, bytes | bytearray, int]


def insert_blobs(
    tx: sqlite3.Connection,
    rows: list[BlobRow],
    *,
    now: float,
    base: str | None = None,
    replace: bool = False,
) -> None:
    """Insert blob rows touched `now`, leaving those stored already
    (`replace`: insert anew, for a row known to be gone). `base`: the blob
    they are parts of (stored already), named by the id of its row in
    `bases`. A large one's bytes are written a stretch at a time into room
    made for them: bound whole, SQLite copies them and builds its record of
    them, twice their size at once."""
    verb = "INSERT" if replace else "INSERT OR IGNORE"
    of = None if base is None else base_id(tx, base)
    sql = f"{verb} INTO blobs (sha256, codec, data, size, touched, base) VALUES"
    tx.executemany(
        f"{sql} (?, ?, ?, ?, ?, ?)",
        ((*row, now, of) for row in rows if len(row[2]) < LARGE_BLOB),
    )
    for sha, codec, packed, size in rows:
        if len(packed) < LARGE_BLOB:
            continue
        cursor = tx.execute(
            f"{sql} (?, ?, zeroblob(?), ?, ?, ?)", (sha, codec, len(packed), size, now, of)
        )
        if cursor.rowcount < 1 or cursor.lastrowid is None:
            continue  # stored already
        view = memoryview(packed)
        with tx.blobopen("blobs", "data", cursor.lastrowid) as blob:
            for start in range(0, len(packed), _STEP):
                blob.write(view[start : start + _STEP])


def base_id(tx: sqlite3.Connection, sha: str) -> int:
    """The id of the `bases` row that names `sha`, made if there is none."""
    tx.execute("INSERT OR IGNORE INTO bases (sha256) VALUES (?)", (sha,))
    return int(tx.execute("SELECT id FROM bases WHERE sha256 = ?", (sha,)).fetchone()[0])


def pack_all(items: list[Blob]) -> list[Coded]:
    """pack() of each item; the large ones on other cores (zlib releases the
    GIL), while this thread packs the small ones."""
    large = [i for i, item in enumerate(items) if len(item) >= LARGE_BLOB]
    if not large:
        return [pack(item) for item in items]
    # Imported here: the thread pool brings logging with it, which a small run never needs.
    from concurrent.futures import ThreadPoolExecutor

    out: list[Coded] = [("", b"")] * len(items)
    with ThreadPoolExecutor(max_workers=min(len(large), os.cpu_count() or 1)) as pool:
        futures = {i: pool.submit(pack, items[i]) for i in large}
        for i, item in enumerate(items):
            if i not in futures:
                out[i] = pack(item)
        for i, future in futures.items():
            out[i] = future.result()
    return out


def unpack(codec: str, packed: bytes, *, sha: str, base: bytes | None = None) -> bytes:
    """Decompress and verify the hash; any mismatch is corruption, never silence.
    `base`: the whole bytes of the blob a sliced blob is cut from."""
    try:
        if codec in (slices.CODEC, strings.CODEC):
            if base is None:
                form = "slices" if codec == slices.CODEC else "a string"
                raise ArchiveCorrupt(
                    f"blob {ref_of_sha(sha)} is stored as {form} of a missing blob"
                )
            decode = slices.decode if codec == slices.CODEC else strings.decode
            data = decode(packed, base)
        elif codec == "zlib":
            data = zlib.decompress(packed)
        elif codec == "lzma":
            data = lzma.decompress(packed)
        elif codec == "raw":
            data = bytes(packed)
        else:
            raise ArchiveCorrupt(f"blob {ref_of_sha(sha)} uses unknown codec {codec!r}")
    except (zlib.error, lzma.LZMAError, ValueError) as exc:
        raise ArchiveCorrupt(
            f"blob {ref_of_sha(sha)} is damaged and cannot be decompressed ({exc})"
        ) from None
    if sha256_hex(data) != sha:
        raise ArchiveCorrupt(
            f"blob {ref_of_sha(sha)} is damaged: its content no longer matches its sha256"
        )
    return data
