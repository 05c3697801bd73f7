"""The command line. Each command lives in its own module and registers itself
on the one Typer app when imported. A run imports only the module of the
command it names (building the others' options costs startup time); help and
an unknown name get all of them, in this order. Code that drives `app`
directly calls register() first."""

from __future__ import annotations

import gc
import importlib
import sys

from ctxpack.cli.app import app

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
    # files), and reference counting frees everything we drop.
    gc.disable()
    register(modules_for(sys.argv[1:]))
    app()
