"""`compress` on many files: finding them, and running them in worker processes."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import TYPE_CHECKING

from ctxpack import files, formats
from ctxpack.errors import INTERRUPTED, CtxpackError, InputError
from ctxpack.pipeline.run import FileJob, FileOutcome, run_file
from ctxpack.pipeline.stages import Compress
from ctxpack.report import CompressReport
from ctxpack.tokens.counter import TokenCounter

if TYPE_CHECKING:
    from multiprocessing.synchronize import Event as EventType

TRANSCRIPT_SUFFIXES = (".jsonl", ".json", ".traj", ".ndjson")


def compress_file(
    job: FileJob, *, stage: Compress, counter: TokenCounter | None = None
) -> FileOutcome[CompressReport]:
    """One file of a batch: its errors come back as data, so the others go on."""
    try:
        outcome = run_file(job, stage=stage, counter=counter)
    except CtxpackError as exc:
        return FileOutcome(job, error=exc.describe(), exit_code=exc.exit_code)
    if outcome.report is not None:
        outcome.report.output = outcome.target
    return outcome


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


_stop: EventType | None = None


def _init_worker(stop: EventType) -> None:
    global _stop
    _stop = stop


def _worker_job(job: FileJob, stage: Compress) -> FileOutcome[CompressReport]:
    if _stop is not None and _stop.is_set():
        return FileOutcome(job, error=f"{job.source}: not started", exit_code=INTERRUPTED)
    try:
        # The batch already keeps every core busy with a file each.
        counter = TokenCounter(encoding=job.encoding, estimate=job.estimate, workers=1)
        return compress_file(job, stage=stage, counter=counter)
    except KeyboardInterrupt:
        if _stop is not None:
            _stop.set()
        raise


Outcome = FileOutcome[CompressReport]


def run_batch(
    jobs: list[FileJob], *, stage: Compress, workers: int, on_done: Callable[[Outcome], bool]
) -> list[Outcome]:
    """Run jobs, `workers` processes at a time; on_done returns False to stop early."""
    outcomes: list[Outcome] = []
    if workers <= 1 or len(jobs) <= 1:
        counters: dict[tuple[str, bool], TokenCounter] = {}
        for job in jobs:
            key = (job.encoding, job.estimate)
            counter = counters.setdefault(
                key, TokenCounter(encoding=job.encoding, estimate=job.estimate)
            )
            outcome = compress_file(job, stage=stage, counter=counter)
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
        pending: list[Future[Outcome]] = [pool.submit(_worker_job, job, stage) for job in jobs]
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
