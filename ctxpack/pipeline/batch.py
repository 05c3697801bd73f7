"""`compress` on many files: running them in worker processes and landing what comes back."""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import queue
import signal
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

from ctxpack import files
from ctxpack.errors import INTERRUPTED, CtxpackError
from ctxpack.pipeline.run import (
    Compacted,
    FileJob,
    FileOutcome,
    compact_file,
    land,
    run_file,
    write_output,
)
from ctxpack.pipeline.stages import Compress
from ctxpack.report import CompressReport
from ctxpack.tokens.counter import TokenCounter, build_before_fork

if TYPE_CHECKING:
    from multiprocessing.synchronize import Event as EventType

    from ctxpack.pipeline.archiving import Archives

T = TypeVar("T")
Outcome = FileOutcome[CompressReport]
# What a worker sends back: the file compacted in memory, or why it was not.
Made = Compacted[CompressReport] | Outcome


def compress_file(
    job: FileJob,
    *,
    stage: Compress,
    counter: TokenCounter | None = None,
    archives: Archives | None = None,
) -> Outcome:
    """One file of a batch: its errors come back as data, so the others go on."""
    return _written(
        _caught(job, lambda: run_file(job, stage=stage, counter=counter, archives=archives))
    )


def _caught(job: FileJob, run: Callable[[], T]) -> T | Outcome:
    try:
        return run()
    except CtxpackError as exc:
        return FileOutcome.failed(job, exc)


def _written(outcome: Outcome) -> Outcome:
    if outcome.report is not None:
        outcome.report.output = outcome.target
    return outcome


def _landed(job: FileJob, made: Made, *, archives: Archives | None) -> Outcome:
    """A worker's file, archived and written here (or its error)."""
    if isinstance(made, FileOutcome):
        return made
    return _written(_caught(job, lambda: land(job, made, archives=archives)))


def _land_group(
    group: list[tuple[FileJob, Compacted[CompressReport]]], *, archives: Archives | None
) -> list[Outcome]:
    """Files that came back while the last ones landed, landed together: their
    records committed in one transaction per archive (one fsync, not one a
    file), and only then their outputs written. A failed commit writes none."""
    if archives is None or len(group) == 1:
        return [_landed(job, made, archives=archives) for job, made in group]
    from ctxpack.pipeline.archiving import archiving, store

    try:
        with archiving(), contextlib.ExitStack() as commits:
            files.raise_if_interrupted()
            grouped: set[str] = set()
            for job, made in group:
                if made.record is None:
                    continue
                archive = archives.get(job.archive_path)
                if str(archive.path) not in grouped:
                    commits.enter_context(archive.grouped())
                    grouped.add(str(archive.path))
                store(archive, made.record)
    except CtxpackError as exc:
        return [FileOutcome.failed(job, exc) for job, _ in group]
    return [
        _written(_caught(job, functools.partial(write_output, job, made))) for job, made in group
    ]


def _land_arrived(
    arrived: list[tuple[FileJob, Made]],
    *,
    archives: Archives | None,
    on_done: Callable[[Outcome], bool],
) -> tuple[list[Outcome], bool]:
    """The files that came back together, in the batch's order, and whether
    to go on. A file that failed in its worker is told before the files after
    it are written, so that --fail-fast writes none of them."""
    outcomes: list[Outcome] = []
    group: list[tuple[FileJob, Compacted[CompressReport]]] = []

    def told(done: list[Outcome]) -> bool:
        outcomes.extend(done)
        return all([on_done(outcome) for outcome in done])

    for job, made in arrived:
        if isinstance(made, Compacted):
            group.append((job, made))
            continue
        if not told(_land_group(group, archives=archives)) or not told([made]):
            return outcomes, False
        group = []
    return outcomes, told(_land_group(group, archives=archives))


_stop: EventType | None = None


def _init_worker(stop: EventType) -> None:
    global _stop
    _stop = stop
    # Ctrl-C reaches the whole process group; the parent alone answers it and
    # ends the workers with SIGTERM, which stops the file in hand (a worker
    # writes nothing, so nothing is left half-done) without a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _terminated)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


def _encoders_before_fork(jobs: list[FileJob], workers: int) -> None:
    """The encoders the workers would each build, built once here for all of
    them (the bytes of a file stand in for the characters it counts)."""
    sizes: dict[str, int] = {}
    for job in jobs:
        if not job.estimate:
            sizes[job.encoding] = sizes.get(job.encoding, 0) + files.size_of(job.source)
    for encoding, size in sizes.items():
        build_before_fork(encoding, chars=size, processes=workers)


def _open_archives(archive: bool) -> Archives | None:
    """Where a batch keeps its archives open; None when no job keeps one
    (sqlite is then never imported)."""
    if not archive:
        return None
    from ctxpack.pipeline.archiving import Archives

    return Archives()


def _terminated(_signum: int, frame: FrameType | None) -> None:
    # Only a file in hand is stopped. A message on a queue must be read or
    # sent whole: a worker waiting for work, or sending a result back (which
    # happens after its file), that stopped mid-message would leave the
    # queue's next reader (another worker, the parent) waiting forever. Such
    # a worker leaves when the pool shuts down instead, having skipped any
    # file it is handed after.
    while frame is not None:
        if frame.f_code is _worker_job.__code__:
            raise SystemExit(INTERRUPTED)
        frame = frame.f_back


def _worker_job(job: FileJob, stage: Compress) -> Made:
    """A file compacted in a worker, which writes nothing: the parent archives
    and writes it while the worker goes on to its next file."""
    if _stop is not None and _stop.is_set():
        return FileOutcome(job, error=f"{job.source}: not started", exit_code=INTERRUPTED)
    # The batch already keeps every core busy with a file each.
    counter = TokenCounter(encoding=job.encoding, estimate=job.estimate, workers=1)
    return _caught(job, lambda: compact_file(job, stage=stage, counter=counter))


@dataclass(frozen=True)
class Finished:
    """One file of a batch as the batch's report shows it, whichever runner compacted it."""

    source: str
    report: dict[str, Any] | None = None  # CompressReport.to_dict(), with its output
    error: str | None = None
    exit_code: int = 0
    skippable: bool = False  # CtxpackError.skippable

    @classmethod
    def failed(cls, source: str, exc: CtxpackError) -> Finished:
        return cls(source, error=exc.describe(), exit_code=exc.exit_code, skippable=exc.skippable)


def finished(outcome: Outcome) -> Finished:
    report = outcome.report.to_dict() if outcome.report is not None else None
    return Finished(outcome.job.source, report, outcome.error, outcome.exit_code, outcome.skippable)


def run_batch(
    jobs: list[FileJob], *, stage: Compress, workers: int, on_done: Callable[[Outcome], bool]
) -> list[Outcome]:
    """Run jobs, `workers` processes at a time; on_done returns False to stop early."""
    outcomes: list[Outcome] = []
    archive = any(job.archive for job in jobs)
    if workers <= 1 or len(jobs) <= 1:
        counters: dict[tuple[str, bool], TokenCounter] = {}
        archives = _open_archives(archive)
        try:
            for job in jobs:
                key = (job.encoding, job.estimate)
                counter = counters.setdefault(
                    key, TokenCounter(encoding=job.encoding, estimate=job.estimate)
                )
                outcome = compress_file(job, stage=stage, counter=counter, archives=archives)
                # The memo would keep every finished file's messages alive.
                counter.forget()
                outcomes.append(outcome)
                if not on_done(outcome):
                    break
        finally:
            if archives is not None:
                archives.close()
        return outcomes
    # Set on Ctrl-C or --fail-fast: files already handed to a worker but not
    # yet started are skipped instead of written.
    stop = multiprocessing.get_context().Event()
    _encoders_before_fork(jobs, workers)
    archives = _open_archives(archive)
    with ProcessPoolExecutor(
        max_workers=workers, initializer=_init_worker, initargs=(stop,)
    ) as pool:
        # The workers are forked here: they start with SIGINT and SIGTERM blocked
        # until their own handlers are in place; an interrupt meanwhile waits
        # for the parent, which takes it when the mask is lifted. (The archive
        # is opened after: a forked sqlite connection is not safe to use.)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            pending: dict[Future[Made], FileJob] = {
                pool.submit(_worker_job, job, stage): job for job in jobs
            }
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
        place = {future: i for i, future in enumerate(pending)}
        back: queue.SimpleQueue[Future[Made]] = queue.SimpleQueue()
        for future in pending:
            future.add_done_callback(back.put)
        try:
            left, going = len(pending), True
            while left and going:
                # What came back while the last files landed lands as one group.
                done = [back.get()]
                while not back.empty():
                    done.append(back.get())
                left -= len(done)
                arrived = [(pending[f], f.result()) for f in sorted(done, key=place.__getitem__)]
                landed, going = _land_arrived(arrived, archives=archives, on_done=on_done)
                outcomes.extend(landed)
            if not going:
                stop.set()
                for other in pending:
                    other.cancel()
        except BaseException:
            stop.set()
            for future in pending:
                future.cancel()
            for child in multiprocessing.active_children():
                child.terminate()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        finally:
            if archives is not None:
                archives.close()
    # Worker results carry pickled copies of their jobs: match them by source.
    order = {job.source: i for i, job in enumerate(jobs)}
    outcomes.sort(key=lambda o: order.get(o.job.source, 0))
    return outcomes
