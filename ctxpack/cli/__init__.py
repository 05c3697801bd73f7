"""The command line. Each command lives in its own module and registers itself
on the one Typer app; importing them here is what puts them on the app."""

from ctxpack.cli import align, archive, compress, count, eval, formats, prune, summarize
from ctxpack.cli.app import app


def main() -> None:
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
