"""The command line. Each command lives in its own module and registers itself
on the one Typer app; importing them here is what puts them on the app."""

import gc

from ctxpack.cli import align, archive, compress, count, eval, formats, prune, summarize
from ctxpack.cli.app import app


def main() -> None:
    # A run builds one large acyclic tree of parsed messages and lives seconds:
    # the cycle collector only re-walks that tree (a third of the time on big
    # files), and reference counting frees everything we drop.
    gc.disable()
    app()


__all__ = [
    "align",
    "app",
    "archive",
    "compress",
    "count",
    "eval",
    "formats",
    "main",
    "prune",
    "summarize",
]
