"""One transcript through one command: read, the command's stage, write,
archive. Every command that writes a transcript runs here, so that the rules
on formats, the archive and the output hold the same for all of them."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from ctxpack import files, formats
from ctxpack.errors import CtxpackError, InputError, UsageError
from ctxpack.formats.base import ReadOptions
from ctxpack.settings import DEFAULT_ENCODING
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Transcript

if TYPE_CHECKING:
    from ctxpack.archive.packing import Packed
    from ctxpack.archive.types import Origin
    from ctxpack.pipeline.archiving import Archives, Record, Recording
    from ctxpack.refs import Blob
    from ctxpack.sessionindex import SessionIndex

# The archive (sqlite3, zlib) is imported by the runs that write one: a
# command that only reads a transcript does not pay for it.

# The output format when the input's own format cannot be written, and the
# suffix a name ctxpack chose takes when it is written.
FALLBACK_FORMAT = "openai"
FALLBACK_SUFFIX = ".jsonl"

R = TypeVar("R")


@dataclass(frozen=True)
class FileJob:
    source: str
    output: str | None  # None: the bytes go back to the caller (stdout)
    # True when ctxpack chose the output's name (beside the input, a batch
    # mirror): a transcript converted to openai then gets a .jsonl name.
    output_named: bool = False
    # Files the caller writes after the run (a --report): checked with the
    # output and the archive before any work.
    also_writes: tuple[str, ...] = ()
    read_options: ReadOptions = field(default_factory=ReadOptions)
    input_format: str | None = None
    output_format: str | None = None  # None: the input's format, if it can be written
    encoding: str = DEFAULT_ENCODING
    estimate: bool = False
    archive: bool = True
    archive_path: str | None = None
    # False: run the stage and write nothing (a dry run, a plan printed instead).
    write: bool = True


@dataclass
class Staged(Generic[R]):
    """What a stage made of one transcript."""

    result: Transcript
    report: R
    # Where the run's own warnings go (a read-only input).
    warnings: list[str]
    # What the archive keeps of the settings (never a key) and of the report.
    archive_settings: dict[str, Any] = field(default_factory=dict)
    archive_report: Callable[[], dict[str, Any]] = dict
    blobs: list[tuple[Blob, Origin]] = field(default_factory=list)
    # Told the format written when it is not the input's, so the report can say so.
    converted: Callable[[str], None] | None = None
    # The stage's index of each input session, read again by the archive record.
    indexes: list[SessionIndex] | None = None
    # Work the stage left running in another process (the retention check),
    # done when this block exits: before the report is read or anything lands.
    pending: contextlib.AbstractContextManager[None] = field(default_factory=contextlib.nullcontext)


class Stage(Protocol[R]):
    def __call__(self, transcript: Transcript, *, counter: TokenCounter) -> Staged[R]: ...


@dataclass
class FileOutcome(Generic[R]):
    job: FileJob
    report: R | None = None
    data: bytes | None = None  # the transcript, when it goes to stdout
    target: str | None = None  # where it was written: a path or "stdout"
    error: str | None = None
    exit_code: int = 0
    # The error is one --skip-invalid reads past (CtxpackError.skippable).
    skippable: bool = False

    @classmethod
    def failed(cls, job: FileJob, exc: CtxpackError) -> FileOutcome[R]:
        """The outcome of a file whose run raised `exc`."""
        return cls(
            job,
            error=exc.describe(),
            exit_code=exc.exit_code,
            skippable=exc.skippable,
        )


def output_format(source_format: str, requested: str | None) -> tuple[str, str | None]:
    """The format to write and, when it is not the input's by choice, a warning."""
    if requested is not None:
        adapter = formats.get(requested)
        if not adapter.writable:
            raise UsageError(
                f"format {adapter.name!r} can be read but not written; use --to {FALLBACK_FORMAT}"
            )
        return adapter.name, None
    if formats.get(source_format).writable:
        return source_format, None
    return FALLBACK_FORMAT, f"{source_format} is read-only; the output is written as openai"


def read_transcript(source: str, *, fmt: str | None, options: ReadOptions) -> Transcript:
    """A transcript from a file, or from stdin for "-"."""
    return parse_transcript(files.read_input(source), source=source, fmt=fmt, options=options)


def parse_transcript(
    data: bytes, *, source: str, fmt: str | None, options: ReadOptions
) -> Transcript:
    """A transcript from the bytes of `source` (a path, or "-" for stdin)."""
    name = files.display_name(source)
    transcript = formats.read(data, path=name, fmt=fmt, options=options)
    if not any(s.messages for s in transcript.sessions):
        raise InputError(_no_messages(data), path=name)
    return transcript


def _no_messages(data: bytes) -> str:
    """Why a transcript with no messages is refused: nothing would be compacted,
    and writing it back would only copy (or empty) a file. (A named --from that
    finds nothing is refused by the format reader, which can say what it looks like.)"""
    if not data.strip():
        return "the file is empty: no messages (a shell `>` onto the input empties it first)"
    return "no messages found in this transcript"


def check_outputs(job: FileJob) -> None:
    """Every path the run will write, checked before it reads a byte."""
    paths = [*([job.output] if job.output is not None else []), *job.also_writes]
    for path in paths:
        files.check_writable(path)
    if job.archive:
        from ctxpack.archive.db import resolve_path

        files.check_writable(str(resolve_path(job.archive_path)), create_parents=True)


@dataclass
class Compacted(Generic[R]):
    """One transcript through a stage in memory: the bytes to write, the report
    and what the archive is to keep. Nothing is written yet, so the process
    that made it need not be the one that writes it."""

    report: R
    data: bytes
    source_format: str
    output_format: str
    # None: nothing changed, the job keeps no archive, or the run stored it already.
    record: Record | None


def compact_bytes(
    data: bytes, *, job: FileJob, stage: Stage[R], counter: TokenCounter, store: bool = False
) -> Compacted[R]:
    """The bytes of `job.source` through the stage, in the format the job
    writes. `store`: the archive record is stored here (a file run alone),
    written while the stage's pending work runs and committed once it is
    done, instead of handed back for the caller to store."""
    if not job.archive:
        return _compact_bytes(data, job=job, stage=stage, counter=counter, store=store)
    from ctxpack.pipeline.archiving import input_packing

    with input_packing(data) as input_packed:
        return _compact_bytes(
            data, job=job, stage=stage, counter=counter, store=store, input_packed=input_packed
        )


def _compact_bytes(
    data: bytes,
    *,
    job: FileJob,
    stage: Stage[R],
    counter: TokenCounter,
    store: bool,
    input_packed: Callable[[], Packed | None] = lambda: None,
) -> Compacted[R]:
    transcript = parse_transcript(
        data, source=job.source, fmt=job.input_format, options=job.read_options
    )
    # Before the stage: a format that cannot be written must not cost an LLM call.
    fmt, warning = output_format(transcript.format, job.output_format)
    staged = stage(transcript, counter=counter)
    if warning is not None:
        staged.warnings.append(warning)
    if fmt != transcript.format and staged.converted is not None:
        staged.converted(fmt)
    record: Record | None = None
    recording: Recording | None = None
    try:
        # What needs no report is done while the stage's pending work runs.
        with staged.pending:
            out = formats.write(staged.result, counter=counter, fmt=fmt)
            if job.archive and out != transcript.raw:
                from ctxpack.pipeline.archiving import Kept, Recording, replaced_texts, run_record

                # The report is the pending work's to finish: it is set after.
                kept = Kept(settings=staged.archive_settings, blobs=staged.blobs)
                replaced = replaced_texts(transcript, staged.result, indexes=staged.indexes)
                record = run_record(
                    original=transcript,
                    result=staged.result,
                    output=out,
                    kept=kept,
                    replaced=replaced,
                    input_packed=input_packed(),
                )
                if store and record is not None:
                    recording = Recording(job.archive_path, record)
        if record is not None:
            record = dataclasses.replace(record, report=staged.archive_report())
            if recording is not None:
                files.raise_if_interrupted()
                done, recording = recording, None
                done.commit(record.report)
                record = None
    finally:
        if recording is not None:
            recording.abandon()
    return Compacted(
        report=staged.report,
        data=out,
        source_format=transcript.format,
        output_format=fmt,
        record=record,
    )


def chosen_name(path: str, *, source_format: str, output_format: str) -> str:
    """A name ctxpack chose for an output (beside the input, a batch mirror),
    with the suffix of what was written: a transcript converted to openai, .jsonl."""
    if output_format != source_format and output_format == FALLBACK_FORMAT:
        return files.with_suffix(path, FALLBACK_SUFFIX)
    return path


def run_file(
    job: FileJob,
    *,
    stage: Stage[R],
    counter: TokenCounter | None = None,
    archives: Archives | None = None,
) -> FileOutcome[R]:
    """Read, stage, write and archive one transcript; errors are raised.
    `archives`: the archives a batch keeps open across its files; None: the
    job's archive is opened for this file alone."""
    counter = counter or TokenCounter(encoding=job.encoding, estimate=job.estimate)
    if not job.write:
        transcript = read_transcript(job.source, fmt=job.input_format, options=job.read_options)
        staged = stage(transcript, counter=counter)
        with staged.pending:
            pass
        return FileOutcome(job, report=staged.report)
    # A file run alone stores its record as it finishes the report; a batch's
    # archives store each file's record where the batch lands it.
    done = compact_file(job, stage=stage, counter=counter, store=archives is None)
    return land(job, done, archives=archives)


def compact_file(
    job: FileJob, *, stage: Stage[R], counter: TokenCounter, store: bool = False
) -> Compacted[R]:
    """The half of a run that reads: its outputs checked, then the file
    through the stage (compact_bytes says what `store` does)."""
    check_outputs(job)
    data = files.read_input(job.source)
    return compact_bytes(data, job=job, stage=stage, counter=counter, store=store)


def land(job: FileJob, done: Compacted[R], *, archives: Archives | None = None) -> FileOutcome[R]:
    """The half of a run that writes: archived first, then the output, so that
    no output exists that the archive cannot undo. A batch's workers compact
    and its parent lands, so that their disk waits overlap the next file's work."""
    files.raise_if_interrupted()
    if done.record is not None:
        from ctxpack.pipeline.archiving import Archives, archiving, store

        with archiving(), contextlib.ExitStack() as own:
            if archives is None:
                archives = Archives()
                own.callback(archives.close)
            store(archives.get(job.archive_path), done.record)
    return write_output(job, done)


def write_output(job: FileJob, done: Compacted[R]) -> FileOutcome[R]:
    """The output of a run whose record, if it keeps one, the archive holds already."""
    output = job.output
    if output is None:
        return FileOutcome(job, report=done.report, data=done.data, target="stdout")
    if job.output_named:
        output = chosen_name(
            output, source_format=done.source_format, output_format=done.output_format
        )
    files.write_atomic(output, done.data, inputs=(job.source,))
    return FileOutcome(job, report=done.report, target=output)


def unchanged(transcript: Transcript, *, counter: TokenCounter) -> Staged[Transcript]:
    """The stage of `convert`: the transcript as read, to be written in another format."""
    return Staged(result=transcript, report=transcript, warnings=[])
