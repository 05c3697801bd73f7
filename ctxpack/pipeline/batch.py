"""One file in, one file out, and many files in parallel worker processes."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ctxpack import files, formats
from ctxpack.errors import CtxpackError, InputError, RetentionError
from ctxpack.formats.base import ReadOptions
from ctxpack.pipeline.archiving import archive_result, settings_record
from ctxpack.pipeline.compaction import CompressSettings, compress_transcript
from ctxpack.report import CompressReport
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Transcript

if TYPE_CHECKING:
    from multiprocessing.synchronize import Event as EventType

    from ctxpack.evaluate.retention import EvalReport

TRANSCRIPT_SUFFIXES = (".jsonl", ".json", ".traj", ".ndjson")


@dataclass(frozen=True)
class FileJob:
    source: str
    output: str | None  # None: return the bytes to the caller (stdout)
    settings: CompressSettings
    read_options: ReadOptions
    input_format: str | None = None
    output_format: str | None = None
    encoding: str = "o200k_base"
    estimate: bool = False
    archive: bool = True
    archive_path: str | None = None
    # --min-retention thresholds; a compaction below them is refused (exit 4).
    min_retention: dict[str, float] | None = None


@dataclass
class FileOutcome:
    job: FileJob
    report: CompressReport | None = None
    data: bytes | None = None
    error: str | None = None
    exit_code: int = 0


def compress_file(job: FileJob, *, counter: TokenCounter | None = None) -> FileOutcome:
    """Read, compact and write one transcript; errors come back as data."""
    try:
        counter = counter or TokenCounter(encoding=job.encoding, estimate=job.estimate)
        raw = files.read_input(job.source)
        name = "<stdin>" if job.source == files.STDIO else job.source
        transcript = formats.read(raw, path=name, fmt=job.input_format, options=job.read_options)
        result, report = compress_transcript(transcript, counter=counter, settings=job.settings)
        measured = measure_retention(transcript, result, report, counter=counter)
        if job.min_retention is not None:
            from ctxpack.evaluate.gate import gate

            failures = gate(measured, job.min_retention)
            if failures:
                raise RetentionError("compaction refused: " + "; ".join(failures), path=name)
        output_format = job.output_format
        if output_format is None and not formats.get(transcript.format).writable:
            output_format = "openai"
            report.sessions[0].warnings.append(
                f"{transcript.format} is read-only; the output is written as openai"
            )
        data = formats.write(result, counter=counter, fmt=output_format)
        if job.archive:
            archive_result(
                report.sessions,
                archive_path=job.archive_path,
                original=transcript,
                result=result,
                output_bytes=data,
                settings=settings_record(job.settings),
                report=report.to_dict(),
            )
        if job.output is not None:
            files.write_atomic(job.output, data, inputs=(job.source,))
            report.output = job.output
            return FileOutcome(job, report=report)
        report.output = "stdout"
        return FileOutcome(job, report=report, data=data)
    except CtxpackError as exc:
        return FileOutcome(job, error=exc.describe(), exit_code=exc.exit_code)


def measure_retention(
    original: Transcript, result: Transcript, report: CompressReport, *, counter: TokenCounter
) -> list[EvalReport]:
    """Attach `ctxpack eval`'s retention block to every session that changed."""
    from ctxpack.evaluate.retention import evaluate, retention_summary

    measured = []
    for before, after, session in zip(
        original.sessions, result.sessions, report.sessions, strict=True
    ):
        if after.messages is before.messages:
            continue
        evaluation = evaluate(before.messages, after.messages, counter=counter)
        evaluation.label = session.label
        session.retention = retention_summary(evaluation)
        measured.append(evaluation)
    return measured


def discover(paths: list[str]) -> list[tuple[str, str]]:
    """(file, path relative to its root) for files and directories given.

    Directories are walked recursively and keep only files whose content
    looks like a transcript, so notes and other files beside them are skipped.
    """
    found: list[tuple[str, str]] = []
    for given in paths:
        p = Path(given)
        if given == files.STDIO or not p.is_dir():
            found.append((given, p.name))
            continue
        for child in sorted(_walk(p)):
            if looks_like_transcript(child):
                found.append((str(child), str(child.relative_to(p))))
    return found


def _walk(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if name.endswith(TRANSCRIPT_SUFFIXES) and ".ctxpack." not in name:
                yield Path(dirpath) / name


def looks_like_transcript(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(formats.HEAD_BYTES)
        formats.detect(head, path=str(path))
    except (OSError, InputError):
        return False
    return True


INTERRUPTED = 130
_stop: EventType | None = None


def _init_worker(stop: EventType) -> None:
    global _stop
    _stop = stop


def _worker_job(job: FileJob) -> FileOutcome:
    if _stop is not None and _stop.is_set():
        return FileOutcome(job, error=f"{job.source}: not started", exit_code=INTERRUPTED)
    try:
        # The batch already keeps every core busy with a file each.
        counter = TokenCounter(encoding=job.encoding, estimate=job.estimate, workers=1)
        return compress_file(job, counter=counter)
    except KeyboardInterrupt:
        if _stop is not None:
            _stop.set()
        raise


def run_batch(
    jobs: list[FileJob], *, workers: int, on_done: Callable[[FileOutcome], bool]
) -> list[FileOutcome]:
    """Run jobs, `workers` processes at a time; on_done returns False to stop early."""
    outcomes: list[FileOutcome] = []
    if workers <= 1 or len(jobs) <= 1:
        counters: dict[tuple[str, bool], TokenCounter] = {}
        for job in jobs:
            key = (job.encoding, job.estimate)
            counter = counters.setdefault(
                key, TokenCounter(encoding=job.encoding, estimate=job.estimate)
            )
            outcome = compress_file(job, counter=counter)
            # The memo would keep every finished file's messages alive.
            counter.forget()
            outcomes.append(outcome)
            if not on_done(outcome):
                break
        return outcomes
    # Set on Ctrl-C or --fail-fast: files already handed to a worker but not
    # yet started are skipped instead of written.
    stop = multiprocessing.get_context().Event()
    with ProcessPoolExecutor(
        max_workers=workers, initializer=_init_worker, initargs=(stop,)
    ) as pool:
        pending: list[Future[FileOutcome]] = [pool.submit(_worker_job, job) for job in jobs]
        try:
            for future in as_completed(pending):
                outcome = future.result()
                outcomes.append(outcome)
                if not on_done(outcome):
                    stop.set()
                    for other in pending:
                        other.cancel()
                    break
        except BaseException:
            stop.set()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    # Worker results carry pickled copies of their jobs: match them by source.
    order = {job.source: i for i, job in enumerate(jobs)}
    outcomes.sort(key=lambda o: order.get(o.job.source, 0))
    return outcomes
