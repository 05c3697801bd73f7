"""The command line. Each command lives in its own module and registers itself
on the one Typer app when imported. A run imports only the module of the
command it names (building the others' options costs startup time); help and
an unknown name get all of them, in this order. Code that drives `app`
directly calls register() first."""

from __future__ import annotations

import gc
import importlib
import signal
import sys

from ctxpack import files
from ctxpack.cli.app import app
from ctxpack.errors import INTERRUPTED, INTERRUPTED_MESSAGE

# Command name -> the module that defines it, in the order of `--help`.
COMMANDS = {
    "count": "count",
    "prune": "prune",
    "align": "align",
    "summarize": "summarize",
    "update": "summarize",
    "compress": "compress",
    "config": "compress",
    "formats": "formats",
    "convert": "formats",
    "engines": "engines",
    "restore": "archive",
    "show": "archive",
    "log": "archive",
    "archive": "archive",
    "eval": "eval",
    "mcp": "mcp",
}
COMMAND_MODULES = tuple(dict.fromkeys(COMMANDS.values()))


def register(modules: tuple[str, ...] = COMMAND_MODULES) -> None:
    for module in modules:
        importlib.import_module(f"ctxpack.cli.{module}")


def modules_for(args: list[str]) -> tuple[str, ...]:
    """The command modules a command line needs: the named command's, none for
    a bare --version, all of them otherwise (help, typos, no command)."""
    words = [arg for arg in args if not arg.startswith("-")]
    if words and words[0] in COMMANDS:
        return (COMMANDS[words[0]],)
    if not words and "--version" in args and "--help" not in args:
        return ()
    return COMMAND_MODULES


def main() -> None:
    # A run builds one large acyclic tree of parsed messages and lives seconds:
    # the cycle collector only re-walks that tree (a third of the time on big
    # files), and reference counting frees everything we drop. The same holds
    # for the modules a command imports (the entry point turns it off first).
    gc.disable()
    if signal.getsignal(signal.SIGINT) is not files.interrupt:
        signal.signal(signal.SIGINT, files.interrupt)
    try:
        register(modules_for(sys.argv[1:]))
        app()
    except KeyboardInterrupt:
        # Outside a command (parsing, imports); a command's own is reported by app.
        _interrupted()
    except SystemExit as exc:
        # An interrupt Python swallowed (raised inside a finalizer) still ends the run as one.
        if files.interrupted() and exc.code != INTERRUPTED:
            _interrupted()
        raise
    finally:
        # Exiting now: a late Ctrl-C must not print a traceback from an exit hook.
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _interrupted() -> None:
    sys.stderr.write(f"error: {INTERRUPTED_MESSAGE}\n")
    sys.stderr.flush()
    raise SystemExit(INTERRUPTED)
