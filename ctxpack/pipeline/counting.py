"""`ctxpack count` of a large JSONL chat file, a stretch of its lines per core.

Counting a file needs no message after it is counted: the file is cut at line
breaks into one stretch per core, and each forked child reads its stretch with
the format's own reader and tallies it, handing back a few numbers. Reading is
then shared between the cores as tokenizing is, and no process holds more than
its stretch's messages.

A child reads its stretch a piece of a few megabytes at a time, each let go
once tallied: its memory is that of a piece, and what it reads stays in the
processor's cache. The file itself may be mapped rather than read
(files.mapped_input): each child then copies only its pieces, with pread, so
a file truncated meanwhile is a short read (and the whole reader's to read as
it now is), not a fault.

Only a file whose lines are each one chat message (OpenAI JSONL, the format
of logged sessions) is read this way: each of its lines is read alone, so a
stretch reads as it does in the whole file. Anything else, and any stretch
that reads otherwise (a bad line, a line that is no message), is read whole,
so what is counted and every error are the whole reader's.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ctxpack import files, formats
from ctxpack.errors import InputError
from ctxpack.formats import jsoncodec
from ctxpack.formats.base import BOM, Clue, Data, ReadOptions, starts_with, words_in
from ctxpack.tokens import forked
from ctxpack.tokens.counter import TokenCounter
from ctxpack.tokens.encodings import get_encoding
from ctxpack.tokens.tally import CountReport, Tally, count_transcript

# Below this size one process reads and counts the file sooner than it forks.
STRETCHES_MIN_BYTES = 4 << 20
# A child reads its stretch in pieces of about this size.
PIECE_BYTES = 4 << 20
_FORMAT = "openai"
_MESSAGES = "jsonl-messages"

# What a stretch hands back: its tally's fields (marshal carries them), the
# lines it skipped (--skip-invalid), its session's label and the clue words
# it holds; None when it reads otherwise than in the whole file.
_Stretch = tuple[dict[str, Any], int, str, frozenset[bytes]]


def count_by_stretches(
    data: Data, *, path: str, fmt: str | None, options: ReadOptions, counter: TokenCounter
) -> CountReport | None:
    """count_transcript of the transcript in `data` (read from `path`), found
    a stretch of lines per core; None when the file is not read that way
    (too small, one core, not one chat message per line, of another format,
    or a stretch that reads otherwise): the caller reads it whole."""
    workers = counter.processes
    if len(data) < STRETCHES_MIN_BYTES or workers < 2 or not forked.can_fork():
        return None
    if options.messages_key or fmt not in (None, _FORMAT) or not _one_message_per_line(data):
        return None
    size, read = len(data), _copier(data)
    bounds = _cut(read, (size * part // workers for part in range(1, workers)), 0, size)
    if not counter.estimate:
        get_encoding(counter.encoding_name)  # built once here, not once per child
    adapter = formats.get(_FORMAT)

    def count(stretch: Sequence[tuple[int, int]]) -> _Stretch | None:
        ((start, stop),) = stretch
        tally, skipped, label = Tally(), 0, ""
        # What telling the format searches the whole file for, found here a
        # piece at a time (each piece only for the words not found yet): the
        # format is told once every stretch is read.
        left = set(Clue.words_of_all) if fmt is None else set()
        for begin, end in _pieces(read, start, stop):
            piece = read(begin, end)
            if len(piece) < end - begin:
                return None  # the file was cut short while it was read
            left -= words_in(piece, left) if left else frozenset()
            try:
                transcript = adapter.read(piece, path=path, options=options)
            except InputError:
                return None
            layout = transcript.layout
            if getattr(layout, "mode", None) != _MESSAGES or len(transcript.sessions) != 1:
                return None
            # A counter per piece: its memo holds the piece's messages.
            own = TokenCounter(encoding=counter.encoding_name, estimate=counter.estimate, workers=1)
            report = count_transcript(transcript, counter=own)
            ((label, counted),) = report.sessions
            tally.merge(counted)
            skipped += report.skipped_lines
        words = frozenset(Clue.words_of_all - left) if fmt is None else frozenset()
        return dataclasses.asdict(tally), skipped, label, words

    found = forked.map_chunks(count, bounds, workers=len(bounds))
    parts = [part for part in found if part is not None]
    if len(parts) < len(found):
        return None
    if fmt is None:
        words = frozenset().union(*(held for *_, held in parts))
        if formats.detect(data, path=path, words=words).name != _FORMAT:
            return None
    # Merged in the file's order: a role is listed where it first comes.
    session = Tally()
    for fields, *_ in parts:
        session.merge(Tally(**fields))
    if not session.messages:
        return None  # the whole reader says why there is nothing to count
    total = Tally()
    total.merge(session)
    return CountReport(
        path=path,
        format=_FORMAT,
        encoding=counter.encoding_name,
        estimate=counter.estimate,
        sessions=[(parts[0][2], session)],
        total=total,
        skipped_lines=sum(skipped for _, skipped, *_ in parts),
    )


def _one_message_per_line(data: Data) -> bool:
    """The reader's own test of a JSONL message file, on its first line: an
    object that parses alone and has a role (a pretty-printed document, or a
    file of records, is read whole)."""
    start = len(BOM) if starts_with(data, BOM) else 0
    while True:
        end = data.find(b"\n", start)
        line = data[start : end if end >= 0 else len(data)]
        if line.strip():
            break
        if end < 0:
            return False
        start = end + 1
    if not line.lstrip().startswith(b"{"):
        return False
    try:
        first = jsoncodec.loads(line)
    except jsoncodec.JSONError:
        return False
    return isinstance(first, dict) and "role" in first


def _copier(data: Data) -> Callable[[int, int], bytes]:
    """How a stretch of `data` is copied out: a mapped file's with pread."""
    if isinstance(data, files.MappedFile):
        return data.copy
    return lambda start, stop: data[start:stop]


# How far a search for a line's end reads at a time.
_LINE_READ = 64 << 10


def _line_end(read: Callable[[int, int], bytes], at: int, stop: int) -> int:
    """Just after the first line break at or after `at`; `stop` when there
    is none before it (or the file ends early)."""
    while at < stop:
        chunk = read(at, min(at + _LINE_READ, stop))
        if not chunk:
            break
        found = chunk.find(b"\n")
        if found >= 0:
            return at + found + 1
        at += len(chunk)
    return stop


def _cut(
    read: Callable[[int, int], bytes], points: Iterable[int], start: int, stop: int
) -> list[tuple[int, int]]:
    """(start, stop) of the stretches of [start, stop) cut just after the
    first line break at or after each of `points` (ascending)."""
    cuts = [start]
    for point in points:
        cuts.append(_line_end(read, max(point, cuts[-1]), stop))
    cuts.append(stop)
    return [(begin, end) for begin, end in itertools.pairwise(cuts) if end > begin]


def _pieces(read: Callable[[int, int], bytes], start: int, stop: int) -> Iterator[tuple[int, int]]:
    """(start, stop) of the pieces of the stretch [start, stop): about
    PIECE_BYTES each, each cut just after a line break."""
    at = start
    while at < stop:
        end = _line_end(read, at + PIECE_BYTES, stop) if at + PIECE_BYTES < stop else stop
        yield at, end
        at = end
