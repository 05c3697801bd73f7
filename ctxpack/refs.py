"""Short content references (`ctxpack:1a2b3c4d5e`) that placeholders and
summaries embed; computable without the archive, resolvable with it."""

from __future__ import annotations

REF_PREFIX = "ctxpack:"
REF_HEX = 10
# Content-addressed data: bytes, or a bytearray built in place when large.
Blob = bytes | bytearray


def sha256_hex(data: Blob) -> str:
    # Imported here: hashlib loads OpenSSL, which a command that only reads the
    # prefixes above (count) does not need.
    import hashlib

    return hashlib.sha256(data).hexdigest()


def ref_for(data: Blob) -> str:
    """`ctxpack:` + the first 10 hex digits of the sha256 of the exact bytes."""
    return REF_PREFIX + sha256_hex(data)[:REF_HEX]


def ref_for_text(text: str) -> str:
    return ref_for(text.encode("utf-8", "surrogatepass"))
