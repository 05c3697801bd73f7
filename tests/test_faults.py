"""Faults from outside: an unwritable output, a full disk, Ctrl-C mid-write, a
summarizer endpoint that hangs or answers garbage.

Whatever fails, the input is never touched, no partial output and no temp
file is left behind, a previous output stays as it was, and the exit code
says what happened (1 error, 3 strict fallback, 130 interrupted).
"""

from __future__ import annotations

import errno
import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ctxpack import files, formats
from ctxpack.cli import app
from ctxpack.errors import UsageError
from tests.conftest import COUNTER, FIXTURES
from tests.llm_server import (
    FakeLLM,
    Reply,
    completion,
    llm_server_fixture,  # noqa: F401
    summary_text,
)

runner = CliRunner()
HAIKU = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"
COMPRESS = ["compress", "--force", "--offline", "--no-archive"]
PRUNE = ["prune", "--no-archive"]
PREVIOUS = b'{"role":"user","content":"the previous output"}\n'


@pytest.fixture(scope="module")
def session_bytes() -> bytes:
    """A real Claude Code session (64 messages, ~50k tokens) as OpenAI JSONL."""
    return formats.write(
        formats.read(HAIKU.read_bytes(), path=str(HAIKU)), fmt="openai", counter=COUNTER
    )


@pytest.fixture
def work(tmp_path: Path, session_bytes: bytes) -> Path:
    """A directory holding only the input, session.jsonl."""
    directory = tmp_path / "work"
    directory.mkdir()
    (directory / "session.jsonl").write_bytes(session_bytes)
    return directory


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _names(directory: Path) -> list[str]:
    """Every entry, hidden temp files included."""
    return sorted(p.name for p in directory.iterdir())


def _assert_input_intact(work: Path, session_bytes: bytes) -> None:
    assert _sha((work / "session.jsonl").read_bytes()) == _sha(session_bytes)


# --- an output that cannot be written ---------------------------------------


@pytest.mark.parametrize("command", [COMPRESS, PRUNE], ids=["compress", "prune"])
def test_output_under_a_regular_file_is_a_clear_error(
    work: Path, session_bytes: bytes, command: list[str]
) -> None:
    # Tests run as root in CI, where a read-only directory stops nothing;
    # a path through a regular file fails for everyone.
    (work / "blocker").write_bytes(b"")
    target = work / "blocker" / "out.jsonl"
    result = runner.invoke(app, [*command, str(work / "session.jsonl"), "-o", str(target)])
    assert result.exit_code == 1, result.output
    assert f"{target}: cannot write: Not a directory" in " ".join(result.stderr.split())
    _assert_input_intact(work, session_bytes)
    assert _names(work) == ["blocker", "session.jsonl"]
    assert (work / "blocker").read_bytes() == b""


class _FullDisk:
    """A file handle that stores half of what it is given, then reports ENOSPC."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    def write(self, data: bytes) -> int:
        self._handle.write(data[: len(data) // 2])
        self._handle.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __enter__(self) -> _FullDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)


def _enospc(*_args: object, **_kwargs: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _full_on_write(monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.fdopen
    monkeypatch.setattr(os, "fdopen", lambda fd, mode: _FullDisk(real(fd, mode)))


FAULTS: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "write": _full_on_write,
    "fsync": lambda mp: mp.setattr(os, "fsync", _enospc),
    "rename": lambda mp: mp.setattr(os, "replace", _enospc),
}


@pytest.mark.parametrize(
    ("command", "fault"),
    [(COMPRESS, "write"), (COMPRESS, "fsync"), (COMPRESS, "rename"), (PRUNE, "write")],
    ids=["compress-write", "compress-fsync", "compress-rename", "prune-write"],
)
def test_full_disk_keeps_the_previous_output_and_leaves_no_temp_file(
    work: Path,
    session_bytes: bytes,
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
    fault: str,
) -> None:
    out = work / "out.jsonl"
    out.write_bytes(PREVIOUS)
    FAULTS[fault](monkeypatch)
    result = runner.invoke(app, [*command, str(work / "session.jsonl"), "-o", str(out)])
    assert result.exit_code == 1, result.output
    assert f"{out}: cannot write: No space left on device" in " ".join(result.stderr.split())
    _assert_input_intact(work, session_bytes)
    assert out.read_bytes() == PREVIOUS
    assert _names(work) == ["out.jsonl", "session.jsonl"]


def test_a_new_output_gets_the_permissions_of_a_plain_write(work: Path) -> None:
    out = work / "out.jsonl"
    result = runner.invoke(app, [*PRUNE, str(work / "session.jsonl"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask


def _ctxpack(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "ctxpack", *args], capture_output=True, check=False, **kwargs
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize(
    "command", [COMPRESS, PRUNE, ["count", "--json"]], ids=["compress", "prune", "count"]
)
def test_stdout_on_a_full_device_is_an_error_not_a_traceback(
    work: Path, command: list[str]
) -> None:
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [sys.executable, "-m", "ctxpack", *command, str(work / "session.jsonl")],
            stdout=full,
            stderr=subprocess.PIPE,
            check=False,
        )
    stderr = done.stderr.decode()
    assert done.returncode == 1, stderr
    assert "<stdout>: cannot write: No space left on device" in stderr
    assert "Traceback" not in stderr


# --- interrupts ---------------------------------------------------------------


def test_interrupt_during_the_write_exits_130_and_leaves_nothing(
    work: Path, session_bytes: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = work / "out.jsonl"
    out.write_bytes(PREVIOUS)

    def interrupted(*_args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    result = runner.invoke(app, [*COMPRESS, str(work / "session.jsonl"), "-o", str(out)])
    assert result.exit_code == 130, result.output
    assert "interrupted" in result.stderr
    _assert_input_intact(work, session_bytes)
    assert out.read_bytes() == PREVIOUS
    assert _names(work) == ["out.jsonl", "session.jsonl"]


# Runs ctxpack with the rename of an output's temp file (a hidden name beside
# it) slowed down: it touches READY when a write has begun (the temp file
# exists and holds the data) and then sleeps, so the test can interrupt it at
# exactly that point.
SLOW_WRITE = """
import os, pathlib, runpy, sys, time
ready = pathlib.Path(sys.argv[1])
real_replace = os.replace
def slow_replace(src, dst):
    if os.path.basename(src).startswith("."):
        ready.touch()
        time.sleep(30)
    real_replace(src, dst)
os.replace = slow_replace
sys.argv = ["ctxpack", *sys.argv[2:]]
runpy.run_module("ctxpack", run_name="__main__")
"""


def _interrupt_mid_write(
    ready: Path, args: list[str], *, group: bool, script: str = SLOW_WRITE
) -> subprocess.CompletedProcess[bytes]:
    """Run ctxpack through `script`, which creates `ready` at the moment to
    interrupt; then send SIGINT as a terminal (group) or a parent would."""
    process = subprocess.Popen(
        [sys.executable, "-c", script, str(ready), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=group,
    )
    deadline = time.monotonic() + 60
    while not ready.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            out, err = process.communicate()
            pytest.fail(f"never got ready: {err.decode()[-2000:]}")
        time.sleep(0.02)
    if group:
        # Ctrl-C in a terminal reaches the whole process group: batch workers too.
        os.killpg(process.pid, signal.SIGINT)
    else:
        process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


@pytest.mark.parametrize("command", [COMPRESS, PRUNE], ids=["compress", "prune"])
def test_sigint_mid_write_exits_130_with_no_output(
    work: Path, tmp_path: Path, session_bytes: bytes, command: list[str]
) -> None:
    out = work / "out.jsonl"
    done = _interrupt_mid_write(
        tmp_path / "ready", [*command, str(work / "session.jsonl"), "-o", str(out)], group=False
    )
    assert done.returncode == 130, done.stderr.decode()
    assert b"interrupted" in done.stderr and b"Traceback" not in done.stderr
    _assert_input_intact(work, session_bytes)
    assert _names(work) == ["session.jsonl"]


def _batch_dir(tmp_path: Path, session_bytes: bytes, *, files: int) -> tuple[Path, Path]:
    """A folder of `files` copies of the session, and where its batch output goes."""
    src = tmp_path / "in"
    src.mkdir()
    for n in range(files):
        (src / f"s{n}.jsonl").write_bytes(session_bytes)
    return src, tmp_path / "out"


def test_sigint_stops_a_parallel_batch_before_any_file_is_written(
    tmp_path: Path, session_bytes: bytes
) -> None:
    src, out = _batch_dir(tmp_path, session_bytes, files=4)
    started = time.monotonic()
    done = _interrupt_mid_write(
        tmp_path / "ready", [*COMPRESS, str(src), "-o", str(out), "--jobs", "2"], group=True
    )
    assert done.returncode == 130, done.stderr.decode()
    # Workers do not go on to the files queued behind the interrupted ones
    # (each would sleep 30 s in its write).
    assert time.monotonic() - started < 25
    assert [p for p in out.rglob("*")] == []
    assert sorted(_sha(p.read_bytes()) for p in src.iterdir()) == [_sha(session_bytes)] * 4


# --- a summarizer endpoint that fails ---------------------------------------

# Each fault and the reason the fallback warning gives for it.
LLM_FAULTS = {
    "hangs": (Reply(body=completion(summary_text("late")), delay=30), "the request timed out"),
    "cuts-the-body": (
        Reply(body=completion(summary_text("cut")), cut_mid_body=True),
        "RemoteProtocolError",
    ),
    "invalid-json": (
        Reply(raw=b'{"id": "chatcmpl-1", "choices": [{"message": '),
        "the reply is not valid JSON",
    ),
    "200-with-error-body": (
        Reply(body={"error": {"message": "model is overloaded", "type": "server_error"}}),
        "the reply reports an error: model is overloaded",
    ),
}


@pytest.fixture(scope="module")
def offline_output(tmp_path_factory: pytest.TempPathFactory, session_bytes: bytes) -> bytes:
    directory = tmp_path_factory.mktemp("offline")
    source, out = directory / "session.jsonl", directory / "out.jsonl"
    source.write_bytes(session_bytes)
    result = runner.invoke(app, [*COMPRESS, str(source), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out.read_bytes()


def _llm_args(server: FakeLLM, work: Path, out: Path) -> list[str]:
    return [
        "compress",
        "--force",
        "--no-archive",
        "--no-cache",
        "--model",
        "m",
        "--base-url",
        server.base_url,
        "--api-key",
        "test-key",
        "--timeout",
        "0.5",
        "--max-retries",
        "0",
        str(work / "session.jsonl"),
        "-o",
        str(out),
    ]


@pytest.mark.parametrize("fault", list(LLM_FAULTS))
def test_failing_endpoint_falls_back_to_the_offline_summary(
    llm_server: FakeLLM,
    work: Path,
    session_bytes: bytes,
    offline_output: bytes,
    fault: str,
) -> None:
    reply, reason = LLM_FAULTS[fault]
    llm_server.responder = lambda _body: reply
    out = work / "out.jsonl"
    result = runner.invoke(app, _llm_args(llm_server, work, out))
    assert result.exit_code == 0, result.output
    assert llm_server.received, "the endpoint was never asked"
    stderr = " ".join(result.stderr.split())
    assert "warning: LLM summary failed (" in stderr and "used the offline summarizer" in stderr
    assert reason in stderr
    assert out.read_bytes() == offline_output
    _assert_input_intact(work, session_bytes)


@pytest.mark.parametrize("fault", list(LLM_FAULTS))
def test_failing_endpoint_with_strict_exits_3_and_writes_nothing(
    llm_server: FakeLLM, work: Path, session_bytes: bytes, fault: str
) -> None:
    reply, reason = LLM_FAULTS[fault]
    llm_server.responder = lambda _body: reply
    out = work / "out.jsonl"
    result = runner.invoke(app, [*_llm_args(llm_server, work, out), "--strict"])
    assert result.exit_code == 3, result.output
    stderr = " ".join(result.stderr.split())
    assert "--strict forbids the offline fallback" in stderr and reason in stderr
    _assert_input_intact(work, session_bytes)
    assert _names(work) == ["session.jsonl"]


SLOW_CHILD = r"""
import os, sys, time
from ctxpack.tokens import forked
from ctxpack.tokens import counter as tokens
ready, parent = sys.argv[1], os.getpid()
real = tokens.TokenCounter._packed
def slow(self, msg):
    if os.getpid() != parent:
        if not os.path.exists(ready):
            with open(ready + ".tmp", "w") as fh:
                fh.write(str(os.getpid()))
            os.replace(ready + ".tmp", ready)
        time.sleep(0.05)
    return real(self, msg)
tokens.TokenCounter._packed = slow
tokens.PARALLEL_MIN_MESSAGES = 0
forked.available_workers = lambda: 2
sys.argv = ["ctxpack", *sys.argv[2:]]
from ctxpack.cli import main
main()
"""


@pytest.mark.parametrize("group", [True, False], ids=["terminal", "parent-only"])
def test_sigint_while_children_count_exits_130_and_leaves_no_process(
    tmp_path: Path, group: bool
) -> None:
    ready = tmp_path / "ready"
    done = _interrupt_mid_write(ready, ["count", str(HAIKU)], group=group, script=SLOW_CHILD)
    assert done.returncode == 130, done.stderr.decode()
    assert b"interrupted" in done.stderr and b"Traceback" not in done.stderr and done.stdout == b""
    with pytest.raises(ProcessLookupError):
        os.kill(int(ready.read_text()), 0)


# Sends SIGINT to itself the moment the command line starts importing typer:
# an interrupt during the imports, long before any command runs.
EARLY = """
import importlib.abc, os, pathlib, runpy, signal, sys
ready = pathlib.Path(sys.argv[1])
class Interrupt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "typer":
            ready.touch()
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, Interrupt())
sys.argv = ["ctxpack", *sys.argv[2:]]
runpy.run_module("ctxpack", run_name="__main__", alter_sys=True)
"""


def test_sigint_during_the_imports_exits_130_with_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", EARLY, str(tmp_path / "ready"), "count", str(HAIKU)],
        capture_output=True,
        check=False,
    )
    assert (tmp_path / "ready").exists()
    assert done.returncode == 130, done.stderr.decode()
    assert done.stderr.decode().splitlines() == [
        "error: interrupted; no output was left half-written"
    ]
    assert done.stdout == b""


# Touches READY when a batch worker starts compacting a file, then sleeps in
# the stage: Ctrl-C then reaches the parent and every worker, busy or idle.
SLOW_STAGE = """
import os, pathlib, runpy, sys, time
from ctxpack.pipeline import stages
ready = pathlib.Path(sys.argv[1])
real = stages.Compress.__call__
def slow(self, transcript, *, counter):
    ready.touch()
    time.sleep(30)
    return real(self, transcript, counter=counter)
stages.Compress.__call__ = slow
sys.argv = ["ctxpack", *sys.argv[2:]]
runpy.run_module("ctxpack", run_name="__main__")
"""


def test_sigint_in_a_parallel_batch_prints_one_line_and_no_traceback(
    tmp_path: Path, session_bytes: bytes
) -> None:
    src, out = _batch_dir(tmp_path, session_bytes, files=2)
    # More workers than files: one waits idle for work when Ctrl-C comes.
    args = [*COMPRESS, str(src), "-o", str(out), "--jobs", "3"]
    done = _interrupt_mid_write(tmp_path / "ready", args, group=True, script=SLOW_STAGE)
    assert done.returncode == 130, done.stderr.decode()
    assert done.stderr.decode().splitlines() == [
        "error: interrupted; no output was left half-written"
    ]
    assert [p for p in out.rglob("*") if p.is_file()] == []


# --- what reaches the disk ------------------------------------------------------


def test_only_a_write_that_replaces_a_file_waits_for_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def noting_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", noting_fsync)
    out = tmp_path / "out.jsonl"
    files.write_atomic(str(out), b"first\n")
    assert synced == [] and out.read_bytes() == b"first\n"
    out.chmod(0o640)
    files.write_atomic(str(out), b"second\n")
    assert len(synced) == 1 and out.read_bytes() == b"second\n"
    assert out.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


@pytest.mark.parametrize("spelling", ["same", "dotted", "symlink", "hardlink"])
def test_an_output_that_is_the_input_is_refused_however_it_is_named(
    work: Path, session_bytes: bytes, spelling: str
) -> None:
    source = work / "session.jsonl"
    if spelling == "same":
        out = source
    elif spelling == "dotted":
        out = work / ".." / work.name / "session.jsonl"
    elif spelling == "symlink":
        out = work / "link.jsonl"
        out.symlink_to(source)
    else:
        out = work / "link.jsonl"
        os.link(source, out)
    with pytest.raises(UsageError, match="refusing to overwrite the input"):
        files.write_atomic(str(out), b"compacted\n", inputs=(str(source),))
    result = runner.invoke(app, [*COMPRESS, str(source), "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert "refusing to overwrite the input" in " ".join(result.stderr.split())
    _assert_input_intact(work, session_bytes)
