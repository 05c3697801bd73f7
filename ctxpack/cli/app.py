"""The command line: parse options, open streams, call one core function per
command, render the report on stderr, map errors to exit codes."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated

import typer

from ctxpack import __version__
from ctxpack import files as io
from ctxpack.errors import CtxpackError

if TYPE_CHECKING:
    from ctxpack.transcript import Transcript

# Command modules import the library inside their functions: `ctxpack --version`
# and `--help` must not pay for tokenizers, rich or the pipeline.

app = typer.Typer(
    name="ctxpack",
    help="Compact AI-agent transcripts: prune old tool output, summarize the middle,"
    " report tokens.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)

# Options shared by every command that reads a transcript.
InputArg = Annotated[str, typer.Argument(help="Transcript file, or - for stdin.", metavar="FILE")]
FromOpt = Annotated[
    str | None, typer.Option("--from", help="Input format (default: detected from content).")
]
MessagesKeyOpt = Annotated[
    str | None,
    typer.Option(
        "--messages-key",
        help="Dotted path to the message list in each record, e.g. traj or a.msgs.-1.",
    ),
]
SkipInvalidOpt = Annotated[
    bool,
    typer.Option(
        "--skip-invalid", help="Skip malformed lines (counted, kept untouched in the output)."
    ),
]
EncodingOpt = Annotated[
    str, typer.Option("--encoding", help="tiktoken encoding: o200k_base or cl100k_base.")
]
EstimateOpt = Annotated[
    bool, typer.Option("--estimate", help="Fast estimate: 4 characters per token.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]
OutputOpt = Annotated[
    str | None,
    typer.Option(
        "-o",
        "--output",
        help="Write the transcript here (atomically). Default: stdout when piped, "
        "else <stem>.ctxpack<suffix> beside the input.",
    ),
]


def _version(value: bool) -> None:
    if value:
        print(f"ctxpack {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """ctxpack compacts agent transcripts offline and reports tokens before and after."""


@contextlib.contextmanager
def reported() -> Iterator[None]:
    """Translate every ctxpack error into its message and exit code, in one place."""
    from ctxpack.cli.render import error

    try:
        yield
    except CtxpackError as exc:
        error(exc.describe())
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        error("interrupted; no output was left half-written")
        raise typer.Exit(130) from None


def load(
    path: str,
    *,
    fmt: str | None,
    messages_key: str | None,
    skip_invalid: bool,
    keep_bytes: bool = True,
) -> Transcript:
    """Read a transcript; keep_bytes=False for commands that never write it back."""
    from ctxpack import formats
    from ctxpack.formats.base import ReadOptions

    options = ReadOptions(
        skip_invalid=skip_invalid, messages_key=messages_key, keep_bytes=keep_bytes
    )
    return formats.read(
        io.read_input(path), path="<stdin>" if path == io.STDIO else path, fmt=fmt, options=options
    )


def emit(data: bytes, *, source: str, output: str | None) -> str:
    """Write transcript bytes where the user expects them; return where that was."""
    if output is not None and output != io.STDIO:
        io.write_atomic(output, data, inputs=(source,))
        return output
    if output is None and sys.stdout.isatty() and source != io.STDIO:
        target = io.sibling_output(source)
        io.write_atomic(target, data, inputs=(source,))
        return target
    io.write_stdout(data)
    return "stdout"


def print_json(value: object) -> None:
    import orjson

    io.write_stdout(orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n")
