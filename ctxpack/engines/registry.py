"""Which engines and summarizers there are, and the one a name selects.

The built-in ones come with ctxpack. Plugins are whatever installed packages
declare under the `ctxpack.engines` and `ctxpack.summarizers` entry-point
groups, read through importlib.metadata on every lookup (so a package
installed meanwhile is seen). A plugin is loaded only when its name is given
(--engine / --summarizer, the config file): installing one changes nothing
by itself. A built-in's name always means the built-in, and a name two
packages declare means neither until one is removed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ctxpack import __version__
from ctxpack.errors import PluginError, UsageError
from ctxpack.settings import BUILTIN_ENGINE, LLM_SUMMARIZER, OFFLINE_SUMMARIZER

if TYPE_CHECKING:
    from ctxpack.engines.protocol import Engine
    from ctxpack.summarize.llm.settings import LLMSettings
    from ctxpack.summarize.protocol import Summarizer

Kind = Literal["engine", "summarizer"]
GROUPS: dict[Kind, str] = {"engine": "ctxpack.engines", "summarizer": "ctxpack.summarizers"}
BUILTIN_NAMES: dict[Kind, tuple[str, ...]] = {
    "engine": (BUILTIN_ENGINE,),
    "summarizer": (LLM_SUMMARIZER, OFFLINE_SUMMARIZER),
}
# Why a declared plugin cannot be selected.
SHADOWED = "ignored: a built-in has this name"
AMBIGUOUS = "ignored: several packages declare this name"


@dataclass(frozen=True)
class Plugin:
    """One engine or summarizer, built in or declared by an installed package."""

    kind: Kind
    name: str
    package: str
    version: str
    target: str = ""  # the entry point's `module:attribute`; "" for a built-in
    problem: str = ""  # why it cannot be selected; "" when it can

    @property
    def builtin(self) -> bool:
        return not self.target

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name!r} ({self.package} {self.version})"

    def load(self) -> Any:
        """The factory the entry point names; its import errors are the plugin's."""
        from importlib import metadata

        entry = metadata.EntryPoint(name=self.name, value=self.target, group=GROUPS[self.kind])
        try:
            return entry.load()
        except Exception as exc:
            raise PluginError(f"{self.label}: cannot be loaded ({_why(exc)})") from exc


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _builtin(kind: Kind, name: str) -> Plugin:
    return Plugin(kind, name, "ctxpack", __version__)


def installed(kind: Kind) -> list[Plugin]:
    """The built-ins, then every plugin of `kind`, by name."""
    # Reading entry points imports importlib.metadata and scans every installed
    # package: only a run that names a plugin, or lists them, pays for it.
    from importlib import metadata

    builtins = [_builtin(kind, name) for name in BUILTIN_NAMES[kind]]
    declared = [
        Plugin(
            kind,
            entry.name,
            entry.dist.name if entry.dist is not None else "?",
            entry.dist.version if entry.dist is not None else "?",
            entry.value,
        )
        for entry in metadata.entry_points(group=GROUPS[kind])
    ]
    taken = Counter(plugin.name for plugin in declared)
    plugins = [
        Plugin(
            kind,
            p.name,
            p.package,
            p.version,
            p.target,
            SHADOWED if p.name in BUILTIN_NAMES[kind] else AMBIGUOUS if taken[p.name] > 1 else "",
        )
        for p in declared
    ]
    return builtins + sorted(plugins, key=lambda p: (p.name, p.package))


def find(kind: Kind, name: str) -> Plugin:
    """The one `name` selects; an unknown or ambiguous name is a usage error."""
    if name in BUILTIN_NAMES[kind]:
        # A built-in's name always means the built-in: no need to read every
        # installed package's metadata, as each file of a batch would.
        return _builtin(kind, name)
    every = installed(kind)
    usable = [p for p in every if not p.problem]
    for plugin in usable:
        if plugin.name == name:
            return plugin
    packages = [p.package for p in every if p.name == name]
    if packages:
        raise UsageError(
            f"{kind} {name!r} is declared by several packages ({', '.join(packages)});"
            " uninstall all but one"
        )
    names = ", ".join(dict.fromkeys(p.name for p in usable))
    raise UsageError(f"unknown {kind} {name!r}; installed: {names} (see `ctxpack engines`)")


def engine(name: str) -> Engine:
    """The engine `name` selects, ready to run; a plugin's is checked (guard)."""
    from ctxpack.engines.builtin import BuiltinEngine
    from ctxpack.engines.guard import CheckedEngine

    plugin = find("engine", name)
    if plugin.builtin:
        return BuiltinEngine()
    factory = plugin.load()
    return CheckedEngine(_made(plugin, factory), plugin)


def summarizer(name: str | None, *, llm: LLMSettings | None) -> Summarizer | None:
    """The summarizer `name` selects; None for the default choice (the LLM
    summarizer, with its offline fallback, when `llm` is set, else offline)."""
    from ctxpack.engines.guard import CheckedSummarizer
    from ctxpack.summarize.offline.summarizer import OfflineSummarizer

    if name is None:
        return None
    plugin = find("summarizer", name)
    if name == LLM_SUMMARIZER:
        if llm is None:
            raise UsageError(
                f"summarizer {LLM_SUMMARIZER!r} needs a model (--model), and not --offline"
            )
        return None
    if plugin.builtin:
        return OfflineSummarizer()
    factory = plugin.load()
    return CheckedSummarizer(_made(plugin, factory, llm=llm), plugin)


def _made(plugin: Plugin, factory: Any, **arguments: Any) -> Any:
    try:
        return factory(**arguments)
    except Exception as exc:
        raise PluginError(f"{plugin.label}: cannot be set up ({_why(exc)})") from exc
