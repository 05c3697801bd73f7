"""A plugin's work checked before ctxpack writes a byte of it.

A plugin that raises, or hands back what would make a broken file (a tool
call without its result, the user's latest request gone, sessions that do not
match the input's, an empty summary), stops the run with an error that names
the plugin; nothing is written. ctxpack's own errors raised inside a plugin
(it may call the built-in pipeline) keep their message and exit code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ctxpack.errors import CtxpackError, PluginError
from ctxpack.evaluate.checks import latest_user_check, orphan_check, visible_texts
from ctxpack.facts.match import collapse
from ctxpack.report import CompressReport
from ctxpack.summarize.protocol import SummaryResult
from ctxpack.transcript import Transcript

if TYPE_CHECKING:
    from ctxpack.align.budget import Budget
    from ctxpack.engines.protocol import Engine, EngineSettings
    from ctxpack.engines.registry import Plugin
    from ctxpack.summarize.protocol import Summarizer, SummaryRequest
    from ctxpack.tokens.counter import TokenCounter

T = TypeVar("T")
NOTHING_WRITTEN = "nothing was written"


def _run(plugin: Plugin, call: Callable[[], T], *, path: str | None = None) -> T:
    try:
        return call()
    except CtxpackError:
        raise
    except Exception as exc:
        raise PluginError(
            f"{plugin.label} failed ({type(exc).__name__}: {exc}); {NOTHING_WRITTEN}", path=path
        ) from exc


class CheckedEngine:
    """A plugin engine whose every result is checked before it is used."""

    def __init__(self, engine: Engine, plugin: Plugin) -> None:
        self.engine = engine
        self.plugin = plugin
        self.name = plugin.name

    def should_compact(self, *, tokens: int, budget: Budget) -> bool:
        return bool(
            _run(self.plugin, lambda: self.engine.should_compact(tokens=tokens, budget=budget))
        )

    def compact(
        self, transcript: Transcript, settings: EngineSettings, *, counter: TokenCounter
    ) -> tuple[Transcript, CompressReport]:
        returned: Any = _run(
            self.plugin,
            lambda: self.engine.compact(transcript, settings, counter=counter),
            path=transcript.path,
        )
        problem = invalid_result(transcript, returned)
        if problem:
            raise PluginError(
                f"{self.plugin.label} returned {problem}; {NOTHING_WRITTEN}", path=transcript.path
            )
        result, report = returned
        return result, report


def invalid_result(original: Transcript, returned: Any) -> str:
    """What is wrong with an engine's (transcript, report); "" when nothing is."""
    if not (
        isinstance(returned, tuple)
        and len(returned) == 2
        and isinstance(returned[0], Transcript)
        and isinstance(returned[1], CompressReport)
    ):
        return f"{type(returned).__name__}, not (Transcript, CompressReport)"
    result, report = returned
    sessions = len(original.sessions)
    if len(result.sessions) != sessions or len(report.sessions) != sessions:
        return (
            f"{len(result.sessions)} session(s) and {len(report.sessions)} report(s)"
            f" for an input of {sessions}"
        )
    for number, (before, after) in enumerate(zip(original.sessions, result.sessions, strict=True)):
        if after.messages is before.messages:
            continue
        haystack = collapse("\n".join(visible_texts(after.messages)))
        for check in (
            orphan_check(before.messages, after.messages),
            latest_user_check(before.messages, after.messages, haystack),
        ):
            if not check.passed:
                label = before.label or f"#{number}"
                return f"a broken session {label} ({check.name}: {check.detail})"
    return ""


class CheckedSummarizer:
    """A plugin summarizer whose every summary is checked before it is used."""

    def __init__(self, summarizer: Summarizer, plugin: Plugin) -> None:
        self.summarizer = summarizer
        self.plugin = plugin
        self.name = plugin.name

    def summarize(self, request: SummaryRequest, *, counter: TokenCounter) -> SummaryResult:
        result: Any = _run(self.plugin, lambda: self.summarizer.summarize(request, counter=counter))
        if not isinstance(result, SummaryResult):
            raise PluginError(
                f"{self.plugin.label} returned {type(result).__name__}, not a SummaryResult;"
                f" {NOTHING_WRITTEN}"
            )
        if not isinstance(result.text, str) or not result.text.strip():
            raise PluginError(f"{self.plugin.label} returned an empty summary; {NOTHING_WRITTEN}")
        return result
