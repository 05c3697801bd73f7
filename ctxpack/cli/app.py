"""The command line: parse options, call one core function per command, render
the report on stderr; every error becomes its message and exit code here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup

from ctxpack import __version__
from ctxpack import files as io
from ctxpack.cli.coerce import install
from ctxpack.errors import INTERRUPTED, INTERRUPTED_MESSAGE, CtxpackError

# Command modules import the library inside their functions: `ctxpack --version`
# and `--help` must not pay for tokenizers, rich or the pipeline.

SKIP_INVALID_HINT = (
    "--skip-invalid reads past a malformed line or message:"
    " each one skipped is counted, and kept as it is in the output"
)


class Reported(TyperGroup):
    """Runs a command (its option callbacks included) and turns every ctxpack
    error into its message and exit code, in one place."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        install(self.get_params(ctx))
        return super().parse_args(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except CtxpackError as exc:
            from ctxpack.cli.render import error, note

            error(exc.describe())
            if exc.skippable and _takes(self, ctx, "skip_invalid"):
                note(SKIP_INVALID_HINT)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            from ctxpack.cli.render import error

            error(INTERRUPTED_MESSAGE)
            raise typer.Exit(INTERRUPTED) from None


def _takes(group: TyperGroup, ctx: Any, name: str) -> bool:
    """Whether the command the group ran takes the option `name`."""
    command = group.get_command(ctx, ctx.invoked_subcommand or "")
    return command is not None and any(param.name == name for param in command.params)


class Command(TyperCommand):
    """Help whose Arguments are named by their metavar alone: typer adds the
    Python type (`FILE <list[str]>`), which tells a user nothing; the usage
    line already shows which arguments repeat."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        install(self.get_params(ctx))
        return super().parse_args(ctx, args)

    def format_options(self, ctx: Any, formatter: Any) -> None:
        args: list[tuple[str, str]] = []
        opts: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if isinstance(param, TyperArgument):
                args.append((param.display_name_raw, record[1]))
            else:
                opts.append(record)
        for title, rows in (("Arguments", args), ("Options", opts)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


F = TypeVar("F", bound=Callable[..., Any])


class App(typer.Typer):
    """The Typer app whose commands are all `Command`s."""

    def command(
        self, name: str | None = None, *, cls: type[TyperCommand] | None = None, **kwargs: Any
    ) -> Callable[[F], F]:
        return super().command(name, cls=cls or Command, **kwargs)


app = App(
    name="ctxpack",
    help="Compact AI-agent transcripts: prune old tool output, summarize the middle,"
    " report tokens.",
    cls=Reported,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)

InputArg = Annotated[str, typer.Argument(help="Transcript file, or - for stdin.", metavar="FILE")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]
OutputOpt = Annotated[
    str | None,
    typer.Option(
        "-o",
        "--output",
        help="Write the transcript here (atomically); a directory: into it as"
        " <stem>.ctxpack<suffix>. Default: stdout when piped, else beside the input"
        " under that name.",
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


def print_json(value: object) -> None:
    import orjson

    io.write_stdout(orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n")
