"""The entry point. Ctrl-C is handled from its first instant: the handler is
installed before the command line's heavy imports, which an interrupt would
otherwise end with a traceback."""

import atexit
import gc
import os
import signal
import sys
import threading
from typing import NoReturn

from ctxpack import files
from ctxpack.errors import INTERRUPTED, INTERRUPTED_MESSAGE


def main() -> None:
    # Importing a command's modules allocates only what lives until exit: the
    # cycle collector would walk it a dozen times for nothing.
    gc.disable()
    signal.signal(signal.SIGINT, files.interrupt)
    try:
        from ctxpack.cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write(f"error: {INTERRUPTED_MESSAGE}\n")
        sys.exit(INTERRUPTED)
    try:
        run()
    except SystemExit as exc:
        _leave(exc.code)
    _leave(0)


def _leave(code: str | int | None) -> NoReturn:
    """End the process as Python would, less freeing what it holds object by
    object: the operating system takes a process's memory back at once, while
    the interpreter's teardown (the tokenizer's tables alone, 60 ms; every
    module's objects) only delays the prompt. Exit hooks still run, and the
    standard streams are flushed. A thread still running (Python waits for
    it), a stream that cannot be flushed or an exit code that is not a number
    takes Python's own way out."""
    if threading.active_count() > 1 or not isinstance(code, int | None):
        sys.exit(code)
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(code)
    os._exit(code or 0)


if __name__ == "__main__":
    main()
