"""Reading the archive back for the model that resumes a compacted session:
one blob paged by lines with where it came from, a full-text search over what
compaction set aside, and the compactions of a session.

The rule: read-only toward what the archive records. Nothing here changes a
blob, a compaction or an origin, and nothing outside the archive is returned.
The one thing written is the full-text index (ctxpack.archive.fts), derived
data in side tables of its own. Blobs come back as archived, except that the
text of a blob a --redact compaction cites comes back masked, as that
compaction's output was.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import orjson

from ctxpack.archive import fts
from ctxpack.archive.citations import Origins, positions_of, unpack_shas
from ctxpack.archive.db import ref_of_sha, translate
from ctxpack.archive.store import Archive
from ctxpack.archive.types import Compaction, Origin, load_json
from ctxpack.errors import UsageError
from ctxpack.redact import redact

DEFAULT_LINES = 200
MAX_LINES = 5000
# A page stops before this many characters (but always holds one line).
PAGE_CHARS = 40_000
DEFAULT_HITS = 20
MAX_HITS = 100
DEFAULT_COMPACTIONS = 20
MAX_COMPACTIONS = 100
BLOBS_LISTED = 100  # per compaction in `compactions`
ORIGINS_KEPT = 4  # compactions whose origins a Recall keeps read
SNIPPET_CHARS = 160
ORIGINAL = "original transcript"
UNKNOWN = "unknown (archived before ctxpack recorded origins)"


@dataclass(frozen=True)
class Source:
    """One compaction that cites a blob, and what the blob was to it."""

    compaction: str
    created: str
    source_path: str
    redacted: bool
    kind: str
    origin: Origin | None = None

    def to_dict(self) -> dict[str, Any]:
        where = self.origin.to_dict() if self.origin else {}
        where.pop("kind", None)
        return {
            "kind": self.kind,
            "compaction": self.compaction,
            "created": self.created,
            "source_path": self.source_path,
            **where,
        }

    def describe(self) -> str:
        """`tool output of Bash `pytest` (session #0, message 12) in /p.jsonl`"""
        origin = self.origin
        what = self.kind
        where: list[str] = []
        if origin is not None:
            if origin.call:
                what += f" of {origin.call}"
            elif origin.role and origin.kind != ORIGINAL:
                what += f" ({origin.role})"
            where.append(f"session {origin.session_label or '#' + str(origin.session)}")
            if origin.message is not None and origin.end is not None:
                where.append(f"messages {origin.message}-{origin.end - 1}")
            elif origin.message is not None:
                where.append(f"message {origin.message}")
        at = f" ({', '.join(where)})" if where else ""
        return f"{what}{at} in {self.source_path}, compaction {self.compaction} of {self.created}"


@dataclass(frozen=True)
class Page:
    ref: str
    text: str
    start_line: int
    end_line: int  # the last line shown; start_line - 1 when none
    total_lines: int
    size: int  # bytes as archived
    redacted: bool
    sources: list[Source] = field(default_factory=list)

    @property
    def next_start_line(self) -> int | None:
        return self.end_line + 1 if self.end_line < self.total_lines else None

    def header(self) -> str:
        """What the text is, which part of it this is, and how to get the rest."""
        lines = [f"{self.ref}: {self.sources[0].describe() if self.sources else UNKNOWN}."]
        if len(self.sources) > 1:
            lines.append(f"Also cited by {len(self.sources) - 1} other compaction record(s).")
        shown = (
            f"Lines {self.start_line}-{self.end_line} of {self.total_lines:,}"
            if self.end_line >= self.start_line
            else f"No lines (the text has {self.total_lines:,})"
        )
        lines.append(f"{shown}; {self.size:,} bytes in all.")
        if self.redacted:
            lines.append("Secrets are masked: the compaction was made with --redact.")
        following = self.next_start_line
        if following is None:
            lines.append("This is the end of the text.")
        else:
            lines.append(f"Next page: recall('{self.ref}', start_line={following}).")
        return "\n".join(lines)


@dataclass(frozen=True)
class Hit:
    ref: str
    line: int
    snippet: str
    source: Source | None

    def to_dict(self) -> dict[str, Any]:
        origin = self.source.to_dict() if self.source else {"kind": UNKNOWN}
        return {"ref": self.ref, "line": self.line, "snippet": self.snippet, **origin}


class Recall(Archive):
    """Read access to one archive file; use as a context manager."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        super().__init__(conn, path)
        self._read_origins: dict[str, tuple[bytes | None, Origins]] = {}

    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None, *, create: bool = False) -> Self:
        """The archive at `path` (else $CTXPACK_ARCHIVE, else the XDG default);
        ArchiveMissing when there is none: recall never creates one."""
        return super().open(path, create=create)

    # one blob

    def page(self, *, ref: str, start_line: int = 1, max_lines: int = DEFAULT_LINES) -> Page:
        """Lines start_line.. of a blob, at most max_lines and about PAGE_CHARS."""
        if start_line < 1:
            raise UsageError(f"start_line must be 1 or more, got {start_line}")
        if not 1 <= max_lines <= MAX_LINES:
            raise UsageError(f"max_lines must be between 1 and {MAX_LINES}, got {max_lines}")
        sha = self.resolve(ref)
        sources = self.sources(sha)
        redacted = any(s.redacted for s in sources)
        data = self.get_blob(sha)
        lines = fts.lines_of(_decoded(data, redacted=redacted))
        if lines and start_line > len(lines):
            raise UsageError(
                f"start_line {start_line} is past the end: {ref_of_sha(sha)} has"
                f" {len(lines):,} line(s)"
            )
        taken: list[str] = []
        chars = 0
        for line in lines[start_line - 1 :]:
            if len(taken) == max_lines or (taken and chars + len(line) > PAGE_CHARS):
                break
            taken.append(line)
            chars += len(line)
        return Page(
            ref=ref_of_sha(sha),
            text="".join(taken),
            start_line=start_line,
            end_line=start_line - 1 + len(taken),
            total_lines=len(lines),
            size=len(data),
            redacted=redacted,
            sources=sources,
        )

    def sources(self, sha: str) -> list[Source]:
        """Every compaction that cites the blob, newest first."""
        with translate(self.path):
            cited = self._conn.execute(
                "SELECT c.created, c.rowid, c.id, c.source_path, c.settings, c.cited, c.origins"
                " FROM cites t JOIN compactions c ON c.id = t.compaction"
                " WHERE t.blob = (SELECT id FROM blobs WHERE sha256 = ?)",
                (sha,),
            ).fetchall()
            inputs = self._conn.execute(
                "SELECT created, rowid, id, source_path, settings FROM compactions"
                " WHERE input_sha256 = ?",
                (sha,),
            ).fetchall()
        # (created, is the input, the compaction's place, the blob's place, ...)
        rows: list[tuple[float, int, int, int, str, str, str, str | None]] = []
        for created, place, cid, source_path, settings, packed, origins in cited:
            read = self._origins(cid, origins)
            for position in positions_of(packed, sha):
                rows.append(
                    (created, 0, place, position, cid, source_path, settings, read.text(position))
                )
        for created, place, cid, source_path, settings in inputs:
            rows.append((created, 1, place, 0, cid, source_path, settings, None))
        rows.sort(key=lambda row: (-row[0], *row[1:4]))
        out: list[Source] = []
        seen: set[tuple[str, str | None]] = set()
        for created, is_input, _, _, cid, source_path, settings, origin in rows:
            if (cid, origin) in seen:
                continue
            seen.add((cid, origin))
            where = Origin.from_dict(load_json(origin)) if origin else None
            out.append(
                Source(
                    compaction=cid,
                    created=_iso(created),
                    source_path=source_path,
                    redacted=load_json(settings).get("redact") is True,
                    kind=ORIGINAL if is_input else where.kind if where else UNKNOWN,
                    origin=where,
                )
            )
        return out

    def _origins(self, cid: str, packed: bytes | None) -> Origins:
        """A compaction's origins, read once: a search's hits often share one.
        (Kept with the bytes they were read from: a compaction stored again
        while a server runs may cite other blobs.)"""
        kept = self._read_origins.get(cid)
        if kept is not None and kept[0] == packed:
            return kept[1]
        if len(self._read_origins) >= ORIGINS_KEPT:
            self._read_origins.pop(next(iter(self._read_origins)))
        found = Origins.of(packed)
        self._read_origins[cid] = (packed, found)
        return found

    # search

    def index(self) -> fts.IndexRun:
        """Bring the full-text index up to date (what every search does first)."""
        with translate(self.path):
            return fts.index_pending(self._conn, view=self._view)

    def _view(self, sha: str, redacted: bool) -> str:
        return _decoded(self.get_blob(sha), redacted=redacted)

    def search(
        self, *, query: str, session: str | None = None, limit: int = DEFAULT_HITS
    ) -> list[Hit]:
        """The lines of archived blobs that hold every word of `query`, best first."""
        if not 1 <= limit <= MAX_HITS:
            raise UsageError(f"limit must be between 1 and {MAX_HITS}, got {limit}")
        _, words = fts.expression(query)
        self.index()
        within = None if session is None else self._shas_of(self._matching(session))
        with translate(self.path):
            found = fts.find(self._conn, query=query, limit=limit, within=within)
        texts: dict[str, list[str]] = {}
        hits = []
        for sha, number in found:
            sources = self.sources(sha)
            if sha not in texts:
                redacted = any(s.redacted for s in sources)
                texts[sha] = fts.lines_of(self._view(sha, redacted))
            lines = texts[sha]
            line = lines[number - 1] if number <= len(lines) else ""
            hits.append(
                Hit(
                    ref=ref_of_sha(sha),
                    line=number,
                    snippet=snippet(line, words),
                    source=sources[0] if sources else None,
                )
            )
        return hits

    # compactions

    def compactions(
        self, *, session: str | None = None, limit: int = DEFAULT_COMPACTIONS
    ) -> list[dict[str, Any]]:
        """The compactions of a session (or all), newest first, at most `limit`."""
        if not 1 <= limit <= MAX_COMPACTIONS:
            raise UsageError(f"limit must be between 1 and {MAX_COMPACTIONS}, got {limit}")
        if session is None:
            entries = self.log(limit)
        else:
            wanted = self._matching(session)
            entries = [c for c in self.log(None) if c.id in wanted][:limit]
        return [self._described(entry) for entry in entries]

    def _described(self, entry: Compaction) -> dict[str, Any]:
        with translate(self.path):
            (packed,) = self._conn.execute(
                "SELECT origins FROM compactions WHERE id = ?", (entry.id,)
            ).fetchone()
        origins = self._origins(entry.id, packed)
        sizes = self._sizes([entry.input_sha256, *entry.blobs])
        blobs = []
        for position, sha in enumerate(entry.blobs[:BLOBS_LISTED]):
            origin = origins.text(position)
            where = Origin.from_dict(load_json(origin)).to_dict() if origin else {"kind": UNKNOWN}
            blobs.append({"ref": ref_of_sha(sha), "size": sizes.get(sha), **where})
        return {
            "id": entry.id,
            "created": entry.created.isoformat(),
            "source_path": entry.source_path,
            "command": entry.report.get("command", "compress"),
            "redacted": entry.settings.get("redact") is True,
            "tokens_before": entry.tokens_before,
            "tokens_after": entry.tokens_after,
            "input": {"ref": entry.input_ref, "size": entry.input_size, "kind": ORIGINAL},
            "output_size": entry.output_size,
            "blob_count": len(entry.blobs),
            "blobs": blobs,
            "more_blobs": max(len(entry.blobs) - BLOBS_LISTED, 0),
        }

    def _sizes(self, shas: list[str]) -> dict[str, int]:
        with translate(self.path):
            return {
                sha: int(size)
                for sha, size in self._conn.execute(
                    "SELECT sha256, size FROM blobs WHERE sha256 IN"
                    " (SELECT value FROM json_each(?))",
                    (fts.json_array(shas),),
                )
            }

    def _matching(self, session: str) -> set[str]:
        """Ids of the compactions of `session`: its file's path, name or stem
        (a Claude Code session id), or a session label the origins record."""
        wanted = session.strip()
        if not wanted:
            raise UsageError("session must not be empty: leave it out for every session")
        with translate(self.path):
            rows = self._conn.execute("SELECT id, source_path, labels FROM compactions").fetchall()
        ids = set()
        for cid, source_path, labels in rows:
            name = Path(source_path).name
            stem = name.split(".", 1)[0]
            if wanted in (source_path, name, stem) or wanted in orjson.loads(labels):
                ids.add(cid)
        return ids

    def _shas_of(self, compaction_ids: set[str]) -> set[str]:
        with translate(self.path):
            rows = self._conn.execute(
                "SELECT cited FROM compactions WHERE id IN (SELECT value FROM json_each(?))",
                (fts.json_array(compaction_ids),),
            ).fetchall()
        return {sha for (cited,) in rows for sha in unpack_shas(cited)}


def snippet(line: str, words: list[str]) -> str:
    """The part of `line` around the first word found, on one line."""
    flat = " ".join(line.split())
    lower = flat.lower()
    at = min((i for i in (lower.find(w.lower()) for w in words) if i >= 0), default=0)
    start = max(at - SNIPPET_CHARS // 4, 0)
    piece = flat[start : start + SNIPPET_CHARS]
    return ("…" if start else "") + piece + ("…" if start + SNIPPET_CHARS < len(flat) else "")


def _decoded(data: bytes, *, redacted: bool) -> str:
    text = data.decode("utf-8", "replace")
    return redact(text)[0] if redacted else text


def _iso(created: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(created, tz=UTC).isoformat(timespec="seconds")
