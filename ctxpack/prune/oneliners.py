"""The one-line stand-ins that replace old tool outputs.

A bare "output removed" placeholder loses every fact; a one-liner keeps the
ones a reader needs to follow the rest of the session: which tool, on what
(command, path, pattern, url), how it ended (exit code, match count), how big
the output was, and the single line that matters most. Every stand-in starts
with the same prefix, so a later run knows not to prune it again.
"""

from __future__ import annotations

from ctxpack import tooloutput as outputs
from ctxpack.markers import recall_call
from ctxpack.tools import FILE_SEARCH_TOOLS, CallInfo, Family, base_name, describe

PRUNED_PREFIX = "[ctxpack pruned]"


def is_pruned(text: str) -> bool:
    """True for a stand-in ctxpack wrote (never pruned twice)."""
    return text.lstrip().startswith(PRUNED_PREFIX)


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
    facts = outputs.analyze(output, flagged=is_error)
    status = _status(facts)
    quote_kind, quote = _quote(call, facts)
    details = _details(call, facts)
    size = f"output was {_count(facts.lines, 'line')}, {_count(facts.chars, 'char')}"
    if images:
        size += f", {_count(images, 'image')}"
    head = ", ".join(p for p in (status, details) if p)
    text = f"{PRUNED_PREFIX} {call.label} → " + (f"{head}; {size}" if head else size)
    if quote:
        text += f'; {quote_kind}: "{quote}"'
    return text


def cite_full(ref: str, *, recall: bool, label: str = "full") -> str:
    """How a stand-in points at the text it replaced: `full: REF` (or the bare
    ref, with no label), or with recall, the call that reads it back."""
    if recall:
        return f"full text: {recall_call(ref)}"
    return f"{label}: {ref}" if label else ref


def duplicate_note(*, later: int, label: str, chars: int) -> str:
    """Stand-in for an output repeated verbatim later in the transcript."""
    return f"{PRUNED_PREFIX} duplicate: same output as #{later} ({label}; {chars:,} chars)"


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _status(facts: outputs.OutputFacts) -> str:
    if facts.exit_code is not None:
        return f"exit {facts.exit_code}"
    if facts.running:
        return facts.running
    return "error" if facts.error else ""


def _details(call: CallInfo, facts: outputs.OutputFacts) -> str:
    if call.family in (Family.READ, Family.WRITE):
        return outputs.read_span(facts.body)
    if call.family is Family.SEARCH:
        found = outputs.match_count(facts)
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
        return outputs.json_shape(facts.json_value)
    return ""


def _quote(call: CallInfo, facts: outputs.OutputFacts) -> tuple[str, str]:
    """Which line to keep, and how to introduce it."""
    body = facts.body
    value = facts.json_value
    if isinstance(value, dict) and isinstance(value.get("error"), str) and value["error"]:
        return "error", outputs.first_line(value["error"])
    if facts.error and call.family is not Family.COMMAND:
        return "error", outputs.first_line(body)
    if call.family is Family.COMMAND:
        return "last", outputs.informative_line(body, prefer_error=facts.error)
    if call.family is Family.WRITE and call.paths:
        return "", ""
    if call.family in (Family.WRITE, Family.WEB, Family.AGENT):
        return "first", outputs.first_line(body)
    if call.family is Family.OTHER and facts.json_value is None:
        return "first", outputs.first_line(body)
    return "", ""
