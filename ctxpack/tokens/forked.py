"""Map a function over a list on several cores, with forked children.

Tokenizing is most of the cost of an exact count, and tiktoken keeps the GIL
while it encodes, so threads do not help. Forked children see the parent's
parsed messages without any copying or pickling; each maps one contiguous
chunk and sends its results back through a pipe with marshal. Anything
unusual (no fork on this platform, other threads alive, a child that fails)
makes the caller compute the missing chunks itself: the result is always the
same as the serial map.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import signal
import sys
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

MAX_WORKERS = 8


def available_workers() -> int:
    """Cores this process may run on (its affinity mask, not the machine's total)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_WORKERS))


def can_fork() -> bool:
    # Forking with other threads alive can leave a lock held forever in the child.
    return (
        hasattr(os, "fork") and sys.platform.startswith("linux") and threading.active_count() == 1
    )


def map_forked(func: Callable[[T], Any], items: Sequence[T], *, workers: int) -> list[Any]:
    """[func(x) for x in items], mapped as each_mapped does."""
    return list(each_mapped(func, items, workers=workers))


def each_mapped(
    func: Callable[[T], Any], items: Sequence[T], *, workers: int
) -> Generator[Any, None, None]:
    """func(x) for each of items, in order, as the caller takes them: the
    first chunk mapped here meanwhile, each other one in a child of its own
    (started first). The children's results are held as their bytes, a
    frame of them read at a time (FRAME_ITEMS)."""
    if workers <= 1 or len(items) < 2 or not can_fork():
        yield from (func(x) for x in items)
        return
    (start, stop), *others = _bounds(len(items), workers)
    rest: list[list[bytes]] = []
    with _chunks(_framed(func), items, others, fork=True, done=rest.extend):
        yield from (func(x) for x in items[start:stop])
    for frames in rest:
        for frame in frames:
            yield from marshal.loads(frame)


# Results of each_mapped's children travel in frames of this many: the parent
# holds a child's results as bytes and makes the objects of one frame at a time,
# as the caller takes them.
FRAME_ITEMS = 2048


def _framed(func: Callable[[T], Any]) -> Callable[[Sequence[T]], list[bytes]]:
    def frames(chunk: Sequence[T]) -> list[bytes]:
        return [
            marshal.dumps([func(x) for x in chunk[at : at + FRAME_ITEMS]])
            for at in range(0, len(chunk), FRAME_ITEMS)
        ]

    return frames


def map_chunks(
    func: Callable[[Sequence[T]], Any], items: Sequence[T], *, workers: int
) -> list[Any]:
    """func of each of up to `workers` contiguous chunks of items, in order:
    the first chunk here, each other one in a child process of its own.

    Results must be marshal-able (ints, strings, bytes, tuples, dicts, lists).
    """
    if workers <= 1 or len(items) < 2 or not can_fork():
        return [func(items)]
    (start, stop), *others = _bounds(len(items), workers)
    rest: list[Any] = []
    with _chunks(func, items, others, fork=True, done=rest.extend):
        first = func(items[start:stop])
    return [first, *rest]


@contextlib.contextmanager
def in_background(
    func: Callable[[Sequence[T]], Any],
    items: Sequence[T],
    *,
    workers: int,
    done: Callable[[list[Any]], None],
) -> Iterator[None]:
    """Map func over `workers` chunks of items in children while the body of
    the with-block runs here; then hand the chunk results, in order, to done.

    When forking is not possible the chunks are mapped here after the body.
    If the body raises, the children are killed and done is not called.
    """
    fork = workers > 1 and len(items) > 1 and can_fork()
    with _chunks(func, items, _bounds(len(items), workers), fork=fork, done=done):
        yield


@contextlib.contextmanager
def started(func: Callable[[], T], *, background: bool = False) -> Iterator[Callable[[], T]]:
    """func() started now in a child; the body gets a function that waits
    for its result (func runs here when no child delivers it). Leaving the
    block kills a child not waited for. `background`: the child runs at the
    lowest priority, on the time the cores have spare."""
    with _started(func, nice=19 if background else 0) as (result, _):
        yield result


@contextlib.contextmanager
def _started(func: Callable[[], T], *, nice: int) -> Iterator[tuple[Callable[[], T], bool]]:
    """(a function that waits for func's result, whether a child runs func)."""
    child = _spawn(lambda _: func(), [None], 0, 1, nice=nice) if can_fork() else None
    found: list[T] = []

    def result() -> T:
        nonlocal child
        if not found:
            delivered: tuple[bool, Any] = (False, None) if child is None else _collect(*child)
            child = None
            found.append(delivered[1] if delivered[0] else func())
        return found[0]

    try:
        yield result, child is not None
    finally:
        if child is not None:
            _abandon(*child)


@contextlib.contextmanager
def in_child(func: Callable[[], Any], *, done: Callable[[Any], None]) -> Iterator[bool]:
    """func() in one child while the body of the with-block runs here; then
    its result to done. The body is told whether a child was started. Without
    one (no fork, or it failed) func runs here after the body. If the body
    raises, the child is killed and done is not called."""
    with _started(func, nice=0) as (result, forked):
        yield forked
        done(result())


@contextlib.contextmanager
def _chunks(
    func: Callable[[Sequence[T]], Any],
    items: Sequence[T],
    bounds: list[tuple[int, int]],
    *,
    fork: bool,
    done: Callable[[list[Any]], None],
) -> Iterator[None]:
    """A child per chunk (when fork) while the body runs; chunks a child did
    not deliver are mapped here afterwards."""
    children = [_spawn(func, items, start, stop) if fork else None for start, stop in bounds]
    try:
        yield
        results: list[Any] = []
        for number, (start, stop) in enumerate(bounds):
            child = children[number]
            ok, value = _collect(*child) if child is not None else (False, None)
            children[number] = None
            results.append(value if ok else func(items[start:stop]))
    finally:
        for child in children:
            if child is not None:
                _abandon(*child)
    done(results)


def _bounds(count: int, chunks: int) -> list[tuple[int, int]]:
    size = max(1, -(-count // max(chunks, 1)))
    return [(start, min(start + size, count)) for start in range(0, count, size)] or [(0, 0)]


def _spawn(
    func: Callable[[Sequence[T]], Any], items: Sequence[T], start: int, stop: int, *, nice: int = 0
) -> tuple[int, int] | None:
    read_fd, write_fd = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        return None
    if pid == 0:  # pragma: no cover - runs in the child, reported through the pipe
        status = 1
        try:
            os.close(read_fd)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            if nice:
                os.nice(nice)
            payload = marshal.dumps(func(items[start:stop]))
            view = memoryview(payload)
            while view:
                view = view[os.write(write_fd, view) :]
            status = 0
        finally:
            # Never return into the parent's code, never flush its buffers.
            os._exit(status)
    os.close(write_fd)
    return pid, read_fd


def _collect(pid: int, fd: int) -> tuple[bool, Any]:
    """(True, the child's result), or (False, None) when it did not deliver."""
    # One buffer, grown in place: blocks joined at the end would hold a large
    # result twice just before it is read.
    payload = bytearray()
    with os.fdopen(fd, "rb") as pipe:
        while block := pipe.read(1 << 20):
            payload += block
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        return False, None
    try:
        return True, marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return False, None


def _abandon(pid: int, fd: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.close(fd)
    with contextlib.suppress(OSError):
        os.waitpid(pid, 0)
