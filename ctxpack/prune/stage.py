"""Stage 1: prune old tool output without an LLM.

Outside the protected head and tail, this stage
  - turns older copies of an output repeated verbatim later into a short
    "duplicate" note naming the later copy,
  - replaces each old output longer than 200 characters, and each output a
    later call made obsolete, by an informative one-liner,
  - cuts long string values inside huge tool-call arguments.
Message count, order, roles and tool-call ids never change; a message that is
not changed stays the very same object.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ctxpack import messages as m
from ctxpack import toolpairs
from ctxpack.align.budget import Budget
from ctxpack.align.protect import prune_bounds
from ctxpack.calls import CallInfo
from ctxpack.prune.argshrink import shrink_arguments
from ctxpack.prune.oneliners import cite_full, duplicate_note, one_liner
from ctxpack.prune.supersede import Supersession, find_superseded
from ctxpack.refs import ref_for_text
from ctxpack.sessionindex import SessionIndex
from ctxpack.standin import is_pruned
from ctxpack.tokens import counter as tokens
from ctxpack.tokens import forked
from ctxpack.tokens.counter import TokenCounter
from ctxpack.tooloutput import result_flagged_error
from ctxpack.transcript import Message, Transcript

OUTPUT_CHARS = 200  # outputs longer than this are replaced by a one-liner
DUPLICATE_CHARS = 200  # identical outputs at least this long are deduplicated
ARGUMENT_CHARS = 500  # tool-call arguments longer than this are shrunk
KEEP_CHARS = 200  # what is left of each long string value in shrunk arguments

DEDUPE = "dedupe"
SUMMARIZE = "summarize-output"
SHRINK = "shrink-args"
ACTIONS = (DEDUPE, SUMMARIZE, SHRINK)


@dataclass(frozen=True)
class PruneSettings:
    budget: Budget = field(default_factory=Budget)
    min_savings: int = 0
    output_chars: int = OUTPUT_CHARS
    duplicate_chars: int = DUPLICATE_CHARS
    argument_chars: int = ARGUMENT_CHARS
    keep_chars: int = KEEP_CHARS
    # Placeholders say how to read the output back with the MCP recall tool.
    recall: bool = False


@dataclass(frozen=True)
class PlanRow:
    """One message the stage changes (or would change), and why."""

    index: int
    role: str
    tool: str
    action: str
    reason: str
    tokens_before: int
    tokens_after: int

    @property
    def saved(self) -> int:
        return self.tokens_before - self.tokens_after

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "saved": self.saved}


@dataclass
class PruneResult:
    messages: list[Message]
    rows: list[PlanRow]
    tokens_before: int
    tokens_after: int
    saved: int
    applied: bool
    head_end: int  # messages[:head_end] are the protected head
    tail_start: int  # messages[tail_start:] are the protected tail
    # What the plan frees; equals `saved` unless the min-savings gate held it back.
    planned_saved: int = 0
    note: str = ""

    def actions(self) -> dict[str, int]:
        counts = dict.fromkeys(ACTIONS, 0)
        for row in self.rows:
            counts[row.action] += 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {
            "applied": self.applied,
            "note": self.note,
            "messages": len(self.messages),
            "head_end": self.head_end,
            "tail_start": self.tail_start,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "saved": self.saved,
            "planned_saved": self.planned_saved,
            "actions": self.actions(),
            "rows": [row.to_dict() for row in self.rows],
        }


@dataclass(frozen=True)
class PrunePlan:
    """What pruning would replace: (index, (replacement, action, tool, reason))
    for each planned message between the protected head and tail."""

    head: int
    tail: int
    plans: list[tuple[int, tuple[Message, str, str, str]]]


def plan_prune(
    messages: list[Message],
    *,
    counter: TokenCounter,
    settings: PruneSettings,
    index: SessionIndex | None = None,
) -> PrunePlan:
    """The plan, with no token counts needed but the tail's: it can be made
    while the session is counted in child processes (TokenCounter.counting).
    `index`: the run's index of `messages`."""
    head, tail = prune_bounds(messages, counter=counter, budget=settings.budget)
    if index is None or index.messages is not messages:
        index = SessionIndex(messages)
    # An exact count runs its children beside the plan; an estimate leaves
    # every other core idle, so a long session is planned on them.
    workers = counter.processes if counter.estimate else 1
    return PrunePlan(head, tail, _plans(index, head, tail, settings, workers=workers))


def prune_messages(
    messages: list[Message],
    *,
    counter: TokenCounter,
    settings: PruneSettings,
    plan: PrunePlan | None = None,
    index: SessionIndex | None = None,
    total: int | None = None,
) -> PruneResult:
    """Prune one session, by `plan` when the caller already made it;
    `total`: the tokens of `messages`, when the caller has counted them."""
    if plan is None:
        with counter.counting(messages):
            plan = plan_prune(messages, counter=counter, settings=settings, index=index)
    head, tail, plans = plan.head, plan.tail, plan.plans
    # Placeholders are counted together: on several cores when there are many.
    counter.prime([planned[0] for _, planned in plans])
    out = list(messages)
    rows: list[PlanRow] = []
    for at, (new, action, tool, reason) in plans:
        msg = messages[at]
        before, after = counter.message(msg), counter.message(new)
        if after >= before:
            continue
        out[at] = new
        rows.append(PlanRow(at, m.role(msg), tool, action, reason, before, after))
    if total is None:
        total = counter.messages(messages)
    return _result(messages, out, rows, head, tail, total, settings, planned=bool(plans))


def _unchanged_note(
    messages: list[Message], *, head: int, tail: int, planned: bool, settings: PruneSettings
) -> str:
    """Why pruning changes nothing in a session; the same words for every
    session it applies to, so a report can count them."""
    budget = settings.budget
    if tail <= head:
        return (
            "every message is in the protected head or tail (a tail budget of "
            f"{budget.tail_budget:,} tokens and at least the last {budget.protect_last} messages;"
            " --tail-tokens and --protect-last set them)"
        )
    if planned:
        return "no placeholder would be shorter than the output it replaces"
    outputs = [m.text(messages[i]) for i in range(head, tail) if m.is_tool_result(messages[i])]
    if not outputs:
        return "no tool output between the protected head and tail"
    if all(is_pruned(text) for text in outputs):
        return "every tool output between the protected head and tail is pruned already"
    return (
        "no tool output between the protected head and tail is over "
        f"{settings.output_chars} characters, repeated or superseded, and no tool-call "
        f"arguments are over {settings.argument_chars}"
    )


def _plans(
    index: SessionIndex, head: int, tail: int, settings: PruneSettings, *, workers: int = 1
) -> list[tuple[int, tuple[Message, str, str, str]]]:
    """(index, (replacement, action, tool, reason)) of every message planned:
    what each message becomes depends on the session only through the links,
    supersessions and repeats found first, so a long stretch is planned a
    part per process (`workers` at most)."""
    messages = index.messages
    links = index.pairing.links
    outputs = index.pairing.results()
    infos = {i: index.call_info(i) for i in outputs}
    superseded = find_superseded(infos)
    duplicates = _duplicates(messages, outputs, settings.duplicate_chars)

    def plan(at: int) -> tuple[Message, str, str, str] | None:
        msg = messages[at]
        if at in infos:
            return _plan_output(
                msg,
                index=at,
                use=links.get(at),
                info=infos[at],
                later_copy=duplicates.get(at),
                stale=superseded.get(at),
                settings=settings,
            )
        if m.role(msg) == "assistant":
            return _plan_arguments(msg, settings)
        return None

    stretch = range(head, tail)
    if len(stretch) < tokens.PARALLEL_MIN_MESSAGES:
        workers = 1
    planned = forked.each_mapped(plan, stretch, workers=workers)
    return [(at, new) for at, new in zip(stretch, planned, strict=True) if new is not None]


def _result(
    messages: list[Message],
    out: list[Message],
    rows: list[PlanRow],
    head: int,
    tail: int,
    before: int,
    settings: PruneSettings,
    *,
    planned: bool,
) -> PruneResult:
    if not rows:
        note = _unchanged_note(messages, head=head, tail=tail, planned=planned, settings=settings)
        return PruneResult(list(messages), rows, before, before, 0, False, head, tail, 0, note)
    freed = sum(row.saved for row in rows)
    if freed < settings.min_savings:
        note = (
            f"pruning would free {freed:,} tokens, under the minimum of "
            f"{settings.min_savings:,}; left unchanged"
        )
        return PruneResult(list(messages), rows, before, before, 0, False, head, tail, freed, note)
    note = f"{len(rows):,} messages pruned"
    return PruneResult(out, rows, before, before - freed, freed, True, head, tail, freed, note)


def prune_transcript(
    transcript: Transcript, *, counter: TokenCounter, settings: PruneSettings
) -> tuple[Transcript, list[PruneResult]]:
    """Prune every session; sessions left as they were keep their identity."""
    results = [
        prune_messages(session.messages, counter=counter, settings=settings)
        for session in transcript.sessions
    ]
    sessions = [
        session.with_messages(result.messages) if result.applied else session
        for session, result in zip(transcript.sessions, results, strict=True)
    ]
    return transcript.with_sessions(sessions), results


def totals(results: list[PruneResult]) -> dict[str, Any]:
    """The numbers of several sessions added up."""
    actions = dict.fromkeys(ACTIONS, 0)
    for result in results:
        for action, count in result.actions().items():
            actions[action] += count
    return {
        "sessions": len(results),
        "applied": any(r.applied for r in results),
        "messages_changed": sum(len(r.rows) for r in results if r.applied),
        "tokens_before": sum(r.tokens_before for r in results),
        "tokens_after": sum(r.tokens_after for r in results),
        "saved": sum(r.saved for r in results),
        "planned_saved": sum(r.planned_saved for r in results),
        "actions": actions,
    }


def _duplicates(messages: list[Message], outputs: list[int], min_chars: int) -> dict[int, int]:
    """Map each output repeated verbatim later to the index of its last copy;
    `outputs`: the indexes of the tool outputs, in order."""
    last: dict[str, int] = {}
    out: dict[int, int] = {}
    for index in reversed(outputs):
        msg = messages[index]
        if m.image_count(msg):
            continue
        body = m.text(msg)
        if len(body) < min_chars or is_pruned(body):
            continue
        if body in last:
            out[index] = last[body]
        else:
            last[body] = index
    return out


def _plan_output(
    msg: Message,
    *,
    index: int,
    use: toolpairs.ToolUse | None,
    info: CallInfo,
    later_copy: int | None,
    stale: Supersession | None,
    settings: PruneSettings,
) -> tuple[Message, str, str, str] | None:
    body = m.text(msg)
    if is_pruned(body):
        return None
    tool = info.name
    if later_copy is not None:
        reason = f"same output as #{later_copy}"
        if stale is not None:
            reason += f"; {stale.reason}"
        note = duplicate_note(
            later=later_copy,
            label=info.label,
            output=body,
            is_error=result_flagged_error(msg),
            command=info.command or None,
        )
        cited = cite_full(ref_for_text(body), recall=settings.recall, label="")
        return {**msg, "content": f"{note}; {cited}"}, DEDUPE, tool, reason
    if stale is None and len(body) <= settings.output_chars:
        return None
    line = one_liner(
        name=use.name if use else tool,
        arguments=use.arguments if use else "",
        output=body,
        is_error=result_flagged_error(msg),
        images=m.image_count(msg),
        info=info,
    )
    reason = stale.reason if stale is not None else f"old output, {len(body):,} chars"
    # The ref lets `ctxpack show` (and with recall, the model) read the full output.
    cited = cite_full(ref_for_text(body), recall=settings.recall)
    return {**msg, "content": f"{line}; {cited}"}, SUMMARIZE, tool, reason


def _plan_arguments(msg: Message, settings: PruneSettings) -> tuple[Message, str, str, str] | None:
    names: list[str] = []
    largest = 0
    calls = msg.get("tool_calls")
    new_calls: list[Any] = []
    calls_changed = False
    if isinstance(calls, list):
        for call in calls:
            shrunk = _shrunk(m.call_arguments(call), settings) if isinstance(call, dict) else None
            if shrunk is None:
                new_calls.append(call)
                continue
            calls_changed = True
            names.append(m.call_name(call))
            largest = max(largest, len(m.call_arguments(call)))
            new_calls.append({**call, "function": {**call["function"], "arguments": shrunk}})
    legacy = m.legacy_function_call(msg)
    new_legacy = None
    if legacy is not None and isinstance(legacy.get("arguments"), str):
        shrunk = _shrunk(legacy["arguments"], settings)
        if shrunk is not None:
            name = legacy.get("name")
            names.append(name if isinstance(name, str) else "")
            largest = max(largest, len(legacy["arguments"]))
            new_legacy = {**legacy, "arguments": shrunk}
    if not names:
        return None
    new = dict(msg)
    if calls_changed:
        new["tool_calls"] = new_calls
    if new_legacy is not None:
        new["function_call"] = new_legacy
    reason = (
        f"arguments of {largest:,} chars; strings cut to {settings.keep_chars} chars"
        if len(names) == 1
        else f"{len(names)} calls' arguments (up to {largest:,} chars); "
        f"strings cut to {settings.keep_chars} chars"
    )
    return new, SHRINK, ", ".join(n or "?" for n in names), reason


def _shrunk(arguments: str, settings: PruneSettings) -> str | None:
    return shrink_arguments(arguments, max_chars=settings.argument_chars, keep=settings.keep_chars)
