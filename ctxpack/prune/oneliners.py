"""The one-line stand-ins that replace old tool outputs.

A bare "output removed" placeholder loses every fact; a one-liner keeps the
ones a reader needs to follow the rest of the session: which tool, on what
(command, path, pattern, url), how it ended (exit code, match count), how big
the output was, and the single line that matters most: for a failed output,
the error line the run is remembered by (tooloutput.telling_error). A short stand-in also
names the ids the output held (commits, agent and session ids), which a
resumed model may need to refer back to. Every stand-in starts with the same
prefix, so a later run knows not to prune it again.
"""

from __future__ import annotations

from ctxpack import tooloutput as outputs
from ctxpack.calls import CallInfo, describe
from ctxpack.facts.text import identifiers_in
from ctxpack.markers import recall_call
from ctxpack.printed import json_shape, open_file
from ctxpack.prune import shown
from ctxpack.standin import PRUNED_PREFIX, ending, quote, shortened
from ctxpack.toolpairs import parse_arguments
from ctxpack.tools import FILE_SEARCH_TOOLS, Family, base_name

# The quoted error line is cut to this (standin.shortened); ids are added,
# up to MAX_IDS of them, only to a stand-in no longer than SHORT_CHARS.
ERROR_CHARS = 160
MAX_IDS = 3
SHORT_CHARS = 240


def one_liner(
    *,
    name: str,
    arguments: str,
    output: str,
    is_error: bool = False,
    images: int = 0,
    info: CallInfo | None = None,
) -> str:
    """One line that stands in for `output`, the result of calling `name`;
    `is_error` is the result's own error flag (see result_flagged_error)."""
    call = info or describe(name, arguments)
    facts = outputs.analyze(output, flagged=is_error, command=call.command or None)
    status = _ending(facts)
    quotes = _quotes(call, facts, output=output, flagged=is_error)
    details = _details(call, facts, arguments=arguments)
    size = f"output was {_count(facts.lines, 'line')}, {_count(facts.chars, 'char')}"
    if images:
        size += f", {_count(images, 'image')}"
    head = ", ".join(p for p in (status, details) if p)
    label = call.label
    if call.family in (Family.READ, Family.WRITE) and not call.paths:
        # A call that names no file (SWE-agent's `edit`) is of the one its output names.
        opened = open_file(output)
        label = f"{label} {opened}" if opened else label
    text = f"{PRUNED_PREFIX} {label} → " + (f"{head}; {size}" if head else size)
    for kind, line in quotes:
        text += quote(kind, line)
    ids = identifiers_in(facts.body)[:MAX_IDS] if len(text) <= SHORT_CHARS else []
    if ids:
        text += "; ids: " + ", ".join(ids)
    return text


def cite_full(ref: str, *, recall: bool, label: str = "full") -> str:
    """How a stand-in points at the text it replaced: `full: REF` (or the bare
    ref, with no label), or with recall, the call that reads it back."""
    if recall:
        return f"full text: {recall_call(ref)}"
    return f"{label}: {ref}" if label else ref


def duplicate_note(
    *, later: int, label: str, output: str, is_error: bool = False, command: str | None = None
) -> str:
    """Stand-in for an output repeated verbatim later in the transcript. It
    says how the output ended, as a one-liner does: every later stage reads
    the copy of a failed run as failed (two failed edits in a row are no
    failure and a success)."""
    status = _ending(outputs.analyze(output, flagged=is_error, command=command))
    note = f"{PRUNED_PREFIX} duplicate: same output as #{later} ({label}; {len(output):,} chars)"
    return f"{note} → {status}" if status else note


def _ending(facts: outputs.OutputFacts) -> str:
    """How the output ended, as every stand-in says it."""
    return ending(
        exit_code=facts.exit_code,
        running=facts.running,
        error=facts.error,
        aborted=facts.aborted,
        printed=facts.printed,
    )


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _details(call: CallInfo, facts: outputs.OutputFacts, *, arguments: str) -> str:
    if call.family in (Family.READ, Family.WRITE):
        return shown.read_span(facts.body)
    if call.family is Family.SEARCH:
        found = shown.match_count(facts)
        if found is None:
            return ""
        count, noun = found
        if noun != "files" and base_name(call.name) in FILE_SEARCH_TOOLS:
            noun = "file"
        elif noun == "lines":
            noun = "result line"
        else:
            noun = "file" if noun == "files" else "match"
        return f"{count:,} {noun}" + ("" if count == 1 else "es" if noun == "match" else "s")
    if call.family is Family.OTHER and facts.json_value is not None:
        return json_shape(facts.json_value, asked=parse_arguments(arguments))
    return ""


def _quotes(
    call: CallInfo, facts: outputs.OutputFacts, *, output: str, flagged: bool
) -> list[tuple[str, str]]:
    """Which lines to keep, and how to introduce each; an error comes last,
    where quoted_error finds it."""
    shown_line = _quote(call, facts)
    telling = outputs.telling_error(output, flagged=flagged) if facts.error else None
    if telling is None or _json_error(facts):
        return [shown_line] if shown_line[1] else []
    error = ("error", shortened(telling, ERROR_CHARS))
    # A failed test run's counts say how far the work got; the error says why.
    tests = outputs.test_summary(facts.body)
    if call.family is Family.COMMAND and tests and tests in shown_line[1]:
        return [shown_line, error]
    return [error]


def _quote(call: CallInfo, facts: outputs.OutputFacts) -> tuple[str, str]:
    """Which line to keep, and how to introduce it."""
    body = facts.body
    if _json_error(facts):
        return "error", shown.first_line(_json_error(facts))
    if facts.error and call.family is not Family.COMMAND:
        return "error", shown.first_line(body)
    if call.family is Family.COMMAND:
        return "last", shown.informative_line(body, prefer_error=facts.error)
    if call.family is Family.WRITE and call.paths:
        return "", ""
    if call.family in (Family.WRITE, Family.WEB, Family.AGENT):
        return "first", shown.first_line(body)
    if call.family is Family.OTHER and facts.json_value is None:
        return "first", shown.first_line(body)
    return "", ""


def _json_error(facts: outputs.OutputFacts) -> str:
    value = facts.json_value
    error = value.get("error") if isinstance(value, dict) else None
    return error if isinstance(error, str) else ""
