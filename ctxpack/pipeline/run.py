"""One transcript through one command: read, the command's stage, write,
archive. Every command that writes a transcript runs here, so that the rules
on formats, the archive and the output hold the same for all of them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from ctxpack import files, formats
from ctxpack.archive.types import Origin
from ctxpack.errors import CtxpackError, UsageError
from ctxpack.formats.base import ReadOptions
from ctxpack.pipeline.archiving import Kept, record_run
from ctxpack.refs import Blob
from ctxpack.settings import DEFAULT_ENCODING
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Transcript

# The output format when the input's own format cannot be written.
FALLBACK_FORMAT = "openai"

R = TypeVar("R")


@dataclass(frozen=True)
class FileJob:
    source: str
    output: str | None  # None: the bytes go back to the caller (stdout)
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
    # Where the run's own warnings go (read-only input, archive failure).
    warnings: list[str]
    # What the archive keeps of the settings (never a key) and of the report.
    archive_settings: dict[str, Any] = field(default_factory=dict)
    archive_report: Callable[[], dict[str, Any]] = dict
    blobs: list[tuple[Blob, Origin]] = field(default_factory=list)


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
    name = "<stdin>" if source == files.STDIO else source
    return formats.read(files.read_input(source), path=name, fmt=fmt, options=options)


def run_file(
    job: FileJob, *, stage: Stage[R], counter: TokenCounter | None = None
) -> FileOutcome[R]:
    """Read, stage, write and archive one transcript; errors are raised."""
    counter = counter or TokenCounter(encoding=job.encoding, estimate=job.estimate)
    transcript = read_transcript(job.source, fmt=job.input_format, options=job.read_options)
    if not job.write:
        return FileOutcome(job, report=stage(transcript, counter=counter).report)
    # Before the stage: a format that cannot be written must not cost an LLM call.
    fmt, warning = output_format(transcript.format, job.output_format)
    staged = stage(transcript, counter=counter)
    if warning is not None:
        staged.warnings.append(warning)
    data = formats.write(staged.result, counter=counter, fmt=fmt)
    if job.archive:
        _archive(job, transcript, staged, data)
    if job.output is None:
        return FileOutcome(job, report=staged.report, data=data, target="stdout")
    files.write_atomic(job.output, data, inputs=(job.source,))
    return FileOutcome(job, report=staged.report, target=job.output)


def _archive(job: FileJob, original: Transcript, staged: Staged[Any], data: bytes) -> None:
    """A failing archive costs reversibility, not the run: it warns."""
    try:
        kept = Kept(
            settings=staged.archive_settings, report=staged.archive_report(), blobs=staged.blobs
        )
        record_run(
            archive_path=job.archive_path,
            original=original,
            result=staged.result,
            output=data,
            kept=kept,
        )
    except CtxpackError as exc:
        staged.warnings.append(f"not archived ({exc.describe()}); --no-archive skips it")


def unchanged(transcript: Transcript, *, counter: TokenCounter) -> Staged[Transcript]:
    """The stage of `convert`: the transcript as read, to be written in another format."""
    return Staged(result=transcript, report=transcript, warnings=[])
