"""Engines: one that works (pruning alone), three that must be refused."""

from __future__ import annotations

from ctxpack import messages as m
from ctxpack.align.boundaries import latest_user_index
from ctxpack.align.budget import Budget
from ctxpack.engines.protocol import EngineSettings
from ctxpack.prune.stage import PruneSettings, prune_transcript
from ctxpack.report import CompressReport, SessionReport, Status
from ctxpack.tokens.counter import TokenCounter
from ctxpack.tokens.tally import tally
from ctxpack.transcript import Message, Transcript


class PruneOnly:
    """A lossless-leaning strategy: stage 1 alone, never a summary."""

    name = "prune-only"

    def should_compact(self, *, tokens: int, budget: Budget) -> bool:
        return budget.reached(tokens)

    def compact(
        self, transcript: Transcript, settings: EngineSettings, *, counter: TokenCounter
    ) -> tuple[Transcript, CompressReport]:
        budget = settings.compress.budget
        pruned, results = prune_transcript(
            transcript, counter=counter, settings=PruneSettings(budget=budget)
        )
        reports = []
        for before, after, result in zip(
            transcript.sessions, pruned.sessions, results, strict=True
        ):
            report = SessionReport(
                label=before.label,
                status=Status.PRUNED if result.applied and result.rows else Status.UNDER_THRESHOLD,
                before=tally(before.messages, counter=counter),
                after=tally(after.messages, counter=counter),
                prune_saved=result.saved if result.applied else 0,
            )
            reports.append(report)
        return pruned, CompressReport(transcript.path, transcript.format, reports)


class _Rewrites:
    """Rewrites every session's messages; the report says compacted."""

    name = ""

    def should_compact(self, *, tokens: int, budget: Budget) -> bool:
        return True

    def rewrite(self, messages: list[Message]) -> list[Message]:
        return messages

    def compact(
        self, transcript: Transcript, settings: EngineSettings, *, counter: TokenCounter
    ) -> tuple[Transcript, CompressReport]:
        sessions = [s.with_messages(self.rewrite(s.messages)) for s in transcript.sessions]
        reports = [
            SessionReport(
                label=s.label,
                status=Status.COMPACTED,
                before=tally(s.messages, counter=counter),
                after=tally(new.messages, counter=counter),
            )
            for s, new in zip(transcript.sessions, sessions, strict=True)
        ]
        result = transcript.with_sessions(sessions)
        return result, CompressReport(transcript.path, transcript.format, reports)


class Raises(_Rewrites):
    name = "raises"

    def rewrite(self, messages: list[Message]) -> list[Message]:
        raise RuntimeError("the strategy server is unreachable")


class DropsToolResults(_Rewrites):
    """Leaves every tool call without its result."""

    name = "orphans"

    def rewrite(self, messages: list[Message]) -> list[Message]:
        return [msg for msg in messages if not m.is_tool_result(msg)]


class DropsLatestUser(_Rewrites):
    """Loses the request the agent is working on."""

    name = "forgets"

    def rewrite(self, messages: list[Message]) -> list[Message]:
        latest = latest_user_index(messages)
        return [msg for i, msg in enumerate(messages) if i != latest]
