"""Reading inputs and writing outputs without ever losing or truncating data."""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

from ctxpack.errors import InputError, OutputError, UsageError

STDIO = "-"


def display_name(source: str) -> str:
    """How messages name a source: a path, or <stdin> for "-"."""
    return "<stdin>" if source == STDIO else source


def read_input(path: str) -> bytes:
    if path == STDIO:
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except IsADirectoryError:
        raise InputError("is a directory", path=path) from None
    except OSError as exc:
        raise InputError(exc.strerror or str(exc), path=path) from None


def size_of(path: str) -> int:
    """The bytes of the file at `path`; 0 for standard input or a path that
    cannot be read (its run says why)."""
    if path == STDIO:
        return 0
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


class MappedFile(mmap.mmap):
    """A regular file mapped read-only, with a descriptor of its own kept
    beside the mapping. `copy` reads a stretch of it with pread: a file
    truncated by another process meanwhile answers with fewer bytes, where
    touching the mapping's lost pages ends the process (SIGBUS)."""

    fd: int = -1

    def copy(self, start: int, stop: int) -> bytes:
        return os.pread(self.fd, stop - start, start)

    def close(self) -> None:
        super().close()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


@contextlib.contextmanager
def mapped_input(path: str) -> Iterator[MappedFile | None]:
    """The regular file at `path` mapped read-only for the with-block: its
    pages are the page cache's, read as they are touched and shared with
    forked children, so a large file is never copied whole into one process.
    None for stdin, an empty file or anything else that cannot be mapped: the
    caller reads it with read_input, which says what is wrong with it."""
    mapped = _mapped(path)
    try:
        yield mapped
    finally:
        if mapped is not None:
            mapped.close()


def _mapped(path: str) -> MappedFile | None:
    try:
        # Only a regular file: opening a named pipe would wait for its writer
        # and take what it writes from the read that follows.
        if path == STDIO or not stat.S_ISREG(os.stat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        mapped = MappedFile(fd, 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        os.close(fd)
        return None
    mapped.fd = fd
    return mapped


# Where a transcript read from stdin goes when stdout is a terminal.
STDIN_OUTPUT = "stdin.ctxpack.jsonl"


def sibling_output(path: str) -> str:
    """`<stem>.ctxpack<suffix>` beside the input (session.jsonl -> session.ctxpack.jsonl);
    for stdin, stdin.ctxpack.jsonl in the current directory."""
    if path == STDIO:
        return STDIN_OUTPUT
    p = Path(path)
    return str(p.with_name(f"{p.stem}.ctxpack{p.suffix or '.jsonl'}"))


def with_suffix(path: str, suffix: str) -> str:
    """The same name with another suffix (x.ctxpack.traj -> x.ctxpack.jsonl)."""
    return str(Path(path).with_suffix(suffix))


def check_writable(path: str, *, create_parents: bool = False) -> None:
    """Fail now, before any work, where a later write to `path` would fail.

    The nearest existing directory above it must be writable; without
    `create_parents` that is its own parent.
    """
    target = Path(path)
    if target.is_dir():
        raise OutputError("cannot write: Is a directory", path=path)
    parent = target.parent
    while create_parents and not parent.exists() and parent != parent.parent:
        parent = parent.parent
    problem = None
    if not parent.exists():
        problem = "No such file or directory"
    elif not parent.is_dir():
        problem = "Not a directory"
    elif not os.access(parent, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        problem = "Permission denied"
    if problem is not None:
        raise OutputError(f"cannot write: {problem}", path=path)


# Set by the command line's SIGINT handler. An interrupt raised inside an
# at-fork hook or a finalizer is lost (Python prints "Exception ignored" and
# goes on), so there the handler only sets the flag; every write checks it and
# raises, so no output is written or replaced once it is set.
_interrupted = False
_UNRAISABLE = frozenset(
    {"__del__", "_acquireLock", "_releaseLock", "_after_at_fork_child_reinit_locks", "_after_fork"}
)


def interrupt(_signum: int, frame: FrameType | None) -> None:
    """SIGINT handler: remember the interrupt, and raise it where it can propagate."""
    global _interrupted
    _interrupted = True
    if frame is None or frame.f_code.co_name not in _UNRAISABLE:
        raise KeyboardInterrupt


def interrupted() -> bool:
    return _interrupted


def raise_if_interrupted() -> None:
    if _interrupted:
        raise KeyboardInterrupt


# What must reach the disk before a rename, the one rule for every write here:
# a rename can lose bytes only where it replaces a file. The file system may
# record the rename before the new data, so a crash in between would leave the
# name on data that never arrived and the old bytes (an earlier output the
# session has grown since, a file the user keeps) gone: such a write is
# flushed first. A rename to a new name replaces nothing: a crash before its
# data lands leaves at worst an empty new file beside the intact input it was
# made from, and running the command again writes it whole. For a small file
# the flush costs more than the write, so a new one does without it.
def write_atomic(path: str, data: bytes, *, inputs: tuple[str, ...] = ()) -> None:
    """Write via a temp file in the same directory and rename over the target.

    A failure at any point (read-only directory, full disk, interrupt) leaves
    no partial file behind and the previous target, if any, untouched.
    """
    target = Path(path)
    for source in inputs:
        if source != STDIO and _same_file(Path(source), target):
            raise UsageError(f"refusing to overwrite the input {source}; choose another -o")
    tmp_name = None
    try:
        previous = _mode(target)
        fd, tmp_name = _create_temp(target)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if previous is not None:
                os.fsync(handle.fileno())
        if previous is not None:
            with contextlib.suppress(OSError):
                os.chmod(tmp_name, previous)
        raise_if_interrupted()
        os.replace(tmp_name, target)
        tmp_name = None
    except OSError as exc:
        raise OutputError(f"cannot write: {exc.strerror or exc}", path=path) from None
    finally:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)


def _mode(target: Path) -> int | None:
    """The permission bits of the file a write replaces; None where there is none."""
    try:
        return target.stat().st_mode & 0o7777
    except (FileNotFoundError, NotADirectoryError):
        return None


def _create_temp(target: Path) -> tuple[int, str]:
    """A new hidden file beside target, with the permissions a plain write gives.

    (mkstemp's files are private, 0600: a new output would be unreadable by
    the group and others where `>` would have made it readable.)
    """
    for _ in range(100):
        # os.urandom is what secrets.token_hex reads, without its imports.
        name = os.path.join(target.parent, f".{target.name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", str(target.parent))


def _same_file(a: Path, b: Path) -> bool:
    """Whether both name one file (through links too); a target not there yet is none."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def write_stdout(data: bytes) -> None:
    raise_if_interrupted()
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        # The reader went away (`| head`); that is not our error to report.
        _stdout_to_devnull()
    except OSError as exc:
        # A full disk or a failing device behind a redirect: say so, and keep
        # the flush at exit from failing a second time with a traceback.
        _stdout_to_devnull()
        raise OutputError(f"cannot write: {exc.strerror or exc}", path="<stdout>") from None


def _stdout_to_devnull() -> None:
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
