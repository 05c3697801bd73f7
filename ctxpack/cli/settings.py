"""The options commands share, declared once, and the typed objects built from them.

Options come in groups. A command names the groups it takes (`@takes(...)`);
their values reach it through the click context, which also records where each
came from (flag, environment, config file, default), rather than as function
parameters. The options of settings are built from the one table in
ctxpack.settings: flag, environment variable, help and default.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ctxpack import files
from ctxpack import settings as config
from ctxpack.errors import UsageError

if TYPE_CHECKING:
    from ctxpack.formats.base import ReadOptions
    from ctxpack.pipeline.compaction import CompressSettings
    from ctxpack.pipeline.run import FileJob
    from ctxpack.tokens.counter import TokenCounter
    from ctxpack.transcript import Transcript

# ctx.meta key: the config file the settings were read from.
CONFIG_FILE = "ctxpack.config_file"

_METAVARS = {int: "<int>", float: "<float>", str: "<str>"}


def _setting_option(setting: config.Setting, *short: str) -> tuple[Any, Any]:
    if setting.kind is bool:
        # A switch: given, it is on; unset, the environment or config file decides.
        switch = typer.Option(setting.flag, *short, envvar=setting.env, help=f"{setting.help}.")
        return Annotated[bool | None, switch], None
    # Typed as text: ctxpack.settings converts and checks every value the same
    # way, whichever layer it came from, and names that layer when it is wrong.
    default = "" if setting.default is None else f" [{setting.default}]"
    option = typer.Option(
        setting.flag,
        *short,
        envvar=setting.env,
        metavar=_METAVARS[setting.kind],
        help=f"{setting.help}{default}.",
    )
    return Annotated[str | None, option], None


def _load_config(ctx: typer.Context, value: str | None) -> str | None:
    """Eager: the file's values become the defaults of every option parsed after it."""
    name, values = config.find_config_file(value, cwd=Path.cwd())
    ctx.default_map = {**(ctx.default_map or {}), **values}
    ctx.meta[CONFIG_FILE] = name
    return value


Group = dict[str, tuple[Any, Any]]


def _settings(*names: str) -> Group:
    return {name: _setting_option(config.BY_NAME[name]) for name in names}


def _flag(*decls: str, help: str) -> tuple[Any, Any]:
    return Annotated[bool, typer.Option(*decls, help=help)], False


def _text(*decls: str, help: str) -> tuple[Any, Any]:
    return Annotated[str | None, typer.Option(*decls, help=help)], None


ArchiveOpt = Annotated[
    str | None,
    typer.Option(
        "--archive",
        metavar="PATH",
        help="Archive file. Default: $CTXPACK_ARCHIVE, else"
        " $XDG_DATA_HOME/ctxpack/archive.db (~/.local/share/ctxpack/archive.db).",
    ),
]

CONFIG: Group = {
    "config_file": (
        Annotated[
            str | None,
            typer.Option(
                "--config",
                is_eager=True,
                callback=_load_config,
                help="TOML config file (default ./ctxpack.toml or [tool.ctxpack]).",
            ),
        ],
        None,
    )
}
READ: Group = {
    "from_": _text("--from", help="Input format (default: detected from content)."),
    "messages_key": _text(
        "--messages-key",
        help="Dotted path to the message list in each record, e.g. traj or a.msgs.-1.",
    ),
    "skip_invalid": _flag(
        "--skip-invalid", help="Skip malformed lines (counted, kept untouched in the output)."
    ),
}
COUNT: Group = {
    **_settings("encoding"),
    "estimate": _flag("--estimate", help="Fast estimate: 4 characters per token."),
}
BUDGET: Group = _settings(*config.BUDGET_SETTINGS)
PRUNING: Group = _settings("min_savings")
FIT: Group = _settings("fit", "fit_best_effort")
JOBS: Group = {"jobs": _setting_option(config.BY_NAME["jobs"], "-j")}
RUNNER: Group = _settings("runner", "ray_address")
SUMMARY: Group = {
    **_settings(*config.LLM_SETTINGS, "focus"),
    "offline": _flag("--offline", help="Use the offline summarizer."),
    "strict": _flag("--strict", help="Exit 3 instead of falling back to the offline summary."),
    "abort_on_failure": _flag(
        "--abort-on-failure", help="Exit 1 and write nothing if the LLM fails."
    ),
    "no_cache": _flag("--no-cache", help="Do not reuse cached LLM summaries."),
    "previous_summary": _text("--previous-summary", help="File with an earlier summary to update."),
}
# The engine and summarizer by name, and what the compaction may touch.
ENGINE: Group = _settings(*config.ENGINE_SETTINGS)
OUTPUT: Group = {
    "to": _text("--to", help="Output format (default: same as input)."),
    "report_file": _text("--report", help="Also write the report as JSON to this file."),
}
ARCHIVE: Group = {
    "archive": (ArchiveOpt, None),
    "no_archive": _flag(
        "--no-archive", help="Do not keep the original in the archive (no restore)."
    ),
    **_settings("recall"),
}
EVERY_SETTING: Group = _settings(*config.BY_NAME)

Command = Callable[..., None]


def takes(*groups: Group) -> Callable[[Command], Command]:
    """Give a command the options of these groups; it reads them from its context."""
    names = {name: spec for group in groups for name, spec in group.items()}

    def decorate(command: Command) -> Command:
        signature = inspect.signature(command, eval_str=True)
        extra = [
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind
            )
            for name, (kind, default) in names.items()
        ]

        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> None:
            command(*args, **{k: v for k, v in kwargs.items() if k not in names})

        run.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[*signature.parameters.values(), *extra]
        )
        return run

    return decorate


def _source(ctx: typer.Context, setting: config.Setting) -> str:
    source = ctx.get_parameter_source(setting.name)
    name = source.name if source is not None else ""
    if name == "ENVIRONMENT":
        return f"env {setting.env}"
    if name == "DEFAULT_MAP":
        return f"file {ctx.meta.get(CONFIG_FILE)}"
    return "flag"


def resolve(ctx: typer.Context) -> config.Resolved:
    """Every setting's value and source, for the settings this command takes."""
    given = {
        name: (value, _source(ctx, config.BY_NAME[name]))
        for name, value in ctx.params.items()
        if name in config.BY_NAME and value is not None
    }
    return config.resolve(given, config_file=ctx.meta.get(CONFIG_FILE))


def read_options(ctx: typer.Context, **more: Any) -> ReadOptions:
    from ctxpack.formats.base import ReadOptions

    return ReadOptions(
        skip_invalid=ctx.params["skip_invalid"], messages_key=ctx.params["messages_key"], **more
    )


def load(ctx: typer.Context, path: str, *, fmt: str | None, **more: Any) -> Transcript:
    """A transcript for a command that never writes it back."""
    from ctxpack.pipeline.run import read_transcript

    return read_transcript(path, fmt=fmt, options=read_options(ctx, keep_bytes=False, **more))


def counter(ctx: typer.Context, resolved: config.Resolved) -> TokenCounter:
    from ctxpack.tokens.counter import TokenCounter

    return TokenCounter(encoding=resolved["encoding"], estimate=ctx.params["estimate"])


def single_job(
    ctx: typer.Context,
    resolved: config.Resolved,
    *,
    source: str,
    output: str | None,
    write: bool = True,
) -> FileJob:
    """The job of a command on one file, written where `-o` says or where ctxpack names it."""
    target = output_target(source, output)
    named = output is None or target != output
    return file_job(ctx, resolved, source=source, output=target, named=named, write=write)


def file_job(
    ctx: typer.Context,
    resolved: config.Resolved,
    *,
    source: str,
    output: str | None,
    named: bool = False,
    write: bool = True,
) -> FileJob:
    """One transcript's input, output and archive, from the READ, COUNT, OUTPUT and
    ARCHIVE options a command takes; `named`: ctxpack chose the output's name."""
    from ctxpack.pipeline.run import FileJob

    params = ctx.params
    if resolved["recall"] and params.get("no_archive"):
        raise UsageError("--recall cites the archive: it cannot go with --no-archive")
    report = params.get("report_file")
    return FileJob(
        source=source,
        output=output,
        output_named=named,
        also_writes=(report,) if report is not None else (),
        read_options=read_options(ctx, keep_bytes=write),
        input_format=params["from_"],
        output_format=params.get("to"),
        encoding=resolved["encoding"],
        estimate=params["estimate"],
        archive="no_archive" in params and not params["no_archive"],
        archive_path=params.get("archive"),
        write=write,
    )


def compress_settings(
    ctx: typer.Context, resolved: config.Resolved, *, sending: bool = True, **more: Any
) -> CompressSettings:
    """The compaction settings, from the BUDGET, SUMMARY and PRUNING options.
    `sending=False` (a request only shown): no API key is needed."""
    from ctxpack.engines import registry
    from ctxpack.fit.target import FitTarget
    from ctxpack.pipeline.compaction import CompressSettings

    params = ctx.params
    env: dict[str, str] = dict(os.environ)
    if not sending:
        env["OPENAI_API_KEY"] = env.get("OPENAI_API_KEY") or "not-sent"
    previous = params["previous_summary"]
    fit = resolved["fit"] if "fit" in params else None
    summarizer = resolved["summarizer"]
    if params["offline"] and summarizer not in (None, config.OFFLINE_SUMMARIZER):
        raise UsageError(f"--offline contradicts --summarizer {summarizer}")
    offline = params["offline"] or summarizer == config.OFFLINE_SUMMARIZER
    llm = config.llm_from(resolved, offline=offline, use_cache=not params["no_cache"], env=env)
    # Before any work: an unknown name is a usage error that lists what is
    # installed, and a plugin that cannot load fails here, not per file.
    registry.engine(resolved["engine"])
    registry.summarizer(summarizer, llm=llm)
    return CompressSettings(
        budget=config.budget_from(resolved),
        focus=resolved["focus"],
        previous_summary=(
            files.read_input(previous).decode("utf-8", "replace").strip() or None
            if previous is not None
            else None
        ),
        llm=llm,
        on_failure=(
            "strict" if params["strict"] else "abort" if params["abort_on_failure"] else "fallback"
        ),
        recall=resolved["recall"],
        fit=FitTarget.parse(fit) if fit is not None else None,
        fit_best_effort=bool(resolved["fit_best_effort"]),
        engine=resolved["engine"],
        summarizer=summarizer,
        system_note=not resolved["no_system_note"],
        **more,
    )


def output_target(source: str, output: str | None) -> str | None:
    """Where one transcript goes: -o FILE; into -o DIR (a directory there) under
    the name ctxpack gives it beside the input; else, when stdout is a terminal,
    beside the input (stdin.ctxpack.jsonl for stdin); else stdout (None)."""
    import sys

    if output is not None and output != files.STDIO and Path(output).is_dir():
        return str(Path(output) / Path(files.sibling_output(source)).name)
    if output is not None:
        return None if output == files.STDIO else output
    if sys.stdout.isatty():
        return files.sibling_output(source)
    return None
