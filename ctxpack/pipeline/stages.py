"""What the compacting commands (compress, summarize, update) do to a transcript
between reading and writing it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ctxpack.align.plan import AlignPlan, plans_from_json
from ctxpack.archive.types import SUMMARIZED_TURNS, Origin
from ctxpack.engines import registry
from ctxpack.engines.protocol import EngineSettings, Scope
from ctxpack.errors import RetentionError
from ctxpack.evaluate.cache import cache_prefix
from ctxpack.evaluate.gate import gate
from ctxpack.evaluate.retention import EvalReport, evaluate, retention_summary
from ctxpack.pipeline.archiving import settings_record
from ctxpack.pipeline.compaction import CompressSettings
from ctxpack.pipeline.run import Staged
from ctxpack.report import CompressReport, SessionReport, Status
from ctxpack.sessionindex import SessionIndex
from ctxpack.tokens import counter as tokens
from ctxpack.tokens import forked
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Transcript


@dataclass(frozen=True)
class Compress:
    """`ctxpack compress`: the whole compaction, refused below --min-retention."""

    settings: CompressSettings
    min_retention: dict[str, float] | None = None

    def __call__(self, transcript: Transcript, *, counter: TokenCounter) -> Staged[CompressReport]:
        indexes = session_indexes(transcript)
        for index in indexes:
            index.facts_of_all = True  # the retention check reads them all
        result, report = compact(
            transcript, self.settings, counter=counter, scope="compress", indexes=indexes
        )
        staged = _compacted(result, report, self.settings, indexes=indexes)
        staged.pending = self._retention(transcript, staged, counter=counter)
        return staged

    def _retention(
        self, transcript: Transcript, staged: Staged[CompressReport], *, counter: TokenCounter
    ) -> contextlib.AbstractContextManager[None]:
        """The retention block of every changed session and the gate of
        --min-retention, found while the run writes the output in memory: in
        a child process for a large input (it reads the run's messages, index
        and counts as they are, and sends back the blocks and the gate's
        verdict), here otherwise."""
        report, indexes = staged.report, staged.indexes

        def check() -> tuple[list[dict[str, Any] | None], list[str]]:
            measured = measure_retention(
                transcript, staged.result, report, counter=counter, indexes=indexes
            )
            failures = gate(measured, self.min_retention) if self.min_retention is not None else []
            return [session.retention for session in report.sessions], failures

        def settle(found: tuple[list[dict[str, Any] | None], list[str]]) -> None:
            blocks, failures = found
            for session, block in zip(report.sessions, blocks, strict=True):
                session.retention = block
            if failures:
                raise RetentionError(
                    "compaction refused: " + "; ".join(failures), path=transcript.path
                )

        messages = sum(len(session.messages) for session in transcript.sessions)
        if counter.processes < 2 or messages < tokens.PARALLEL_MIN_MESSAGES:
            return _then(lambda: settle(check()))
        return _in_child(check, done=settle, indexes=indexes)


@dataclass(frozen=True)
class Summarize:
    """`ctxpack summarize` and `update`: stages 2-4, with no threshold and no pruning."""

    settings: CompressSettings
    # A plan document from `ctxpack align --json`, checked against the transcript.
    plan: Any = None
    require_previous: bool = False

    def __call__(self, transcript: Transcript, *, counter: TokenCounter) -> Staged[CompressReport]:
        plans = None
        if self.plan is not None:
            plans = plans_from_json(self.plan, sessions=[s.messages for s in transcript.sessions])
        indexes = session_indexes(transcript)
        result, report = compact(
            transcript,
            self.settings,
            counter=counter,
            scope="summarize",
            plans=plans,
            require_previous=self.require_previous,
            indexes=indexes,
        )
        return _compacted(result, report, self.settings, indexes=indexes)


@contextlib.contextmanager
def _in_child(
    check: Callable[[], Any], *, done: Callable[[Any], None], indexes: list[SessionIndex] | None
) -> Iterator[None]:
    """forked.in_child(check, done=done); once the child has the indexes as
    they are, this process lets go of what only the stages read (a child that
    fails is checked here, finding the facts again)."""
    with forked.in_child(check, done=done) as started:
        if started:
            for index in indexes or []:
                index.stages_done()
        yield


@contextlib.contextmanager
def _then(finish: Callable[[], None]) -> Iterator[None]:
    """finish() after the block, unless the block raised."""
    yield
    finish()


def session_indexes(transcript: Transcript) -> list[SessionIndex]:
    """One index per session, made when the run starts and read by every stage after."""
    return [SessionIndex(session.messages) for session in transcript.sessions]


def compact(
    transcript: Transcript,
    settings: CompressSettings,
    *,
    counter: TokenCounter,
    scope: Scope,
    plans: list[AlignPlan] | None = None,
    require_previous: bool = False,
    indexes: list[SessionIndex] | None = None,
) -> tuple[Transcript, CompressReport]:
    """The engine and summarizer the settings name, on one transcript: the one
    way every command compacts, so that a plugin works in all of them. Names
    are looked up here, where the work runs (a batch worker), not where the
    settings were made. `indexes`: the run's index of each session."""
    engine = registry.engine(settings.engine)
    summarizer = registry.summarizer(settings.summarizer, llm=settings.llm)
    chosen = EngineSettings(
        compress=settings,
        scope=scope,
        summarizer=summarizer,
        plans=plans,
        require_previous=require_previous,
        indexes=indexes,
    )
    result, report = engine.compact(transcript, chosen, counter=counter)
    for before, after, session in zip(
        transcript.sessions, result.sessions, report.sessions, strict=True
    ):
        prefix = cache_prefix(before.messages, after.messages, counter=counter)
        session.cache_prefix_messages, session.cache_prefix_tokens = prefix.messages, prefix.tokens
    return result, report


def _compacted(
    result: Transcript,
    report: CompressReport,
    settings: CompressSettings,
    *,
    indexes: list[SessionIndex],
) -> Staged[CompressReport]:
    return Staged(
        indexes=indexes,
        result=result,
        report=report,
        warnings=report.sessions[0].warnings if report.sessions else [],
        archive_settings=settings_record(settings),
        archive_report=report.to_dict,
        blobs=[
            (blob, _summarized(number, result.sessions[number].label, s))
            for number, s in enumerate(report.sessions)
            for blob in s.blobs
        ],
        converted=lambda fmt: _converted(report, fmt),
    )


def _summarized(number: int, label: str, report: SessionReport) -> Origin:
    start, end = report.summarized or (None, None)
    return Origin(
        kind=SUMMARIZED_TURNS, session=number, session_label=label, message=start, end=end
    )


def _converted(report: CompressReport, fmt: str) -> None:
    """A session passed through unchanged is still rewritten in another format;
    its notes still say why it was passed through (the threshold, and that
    --force compacts anyway)."""
    for session in report.sessions:
        if session.status == Status.UNDER_THRESHOLD:
            session.status = Status.CONVERTED
            session.notes = [*session.notes, f"messages written as {fmt}"]


def measure_retention(
    original: Transcript,
    result: Transcript,
    report: CompressReport,
    *,
    counter: TokenCounter,
    indexes: list[SessionIndex] | None = None,
) -> list[EvalReport]:
    """Attach `ctxpack eval`'s retention block to every session that changed.
    `indexes`: the run's index of each original session."""
    measured = []
    for number, (before, after, session) in enumerate(
        zip(original.sessions, result.sessions, report.sessions, strict=True)
    ):
        if after.messages is before.messages:
            continue
        index = indexes[number] if indexes is not None else None
        evaluation = evaluate(before.messages, after.messages, counter=counter, index=index)
        evaluation.label = session.label
        session.retention = retention_summary(evaluation)
        measured.append(evaluation)
    return measured
