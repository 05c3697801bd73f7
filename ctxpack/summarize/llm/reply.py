"""Turning a chat.completions reply into a summary body, or refusing it.

The reply is parsed from the raw JSON (not the client's model objects) so a
server that answers 200 with an error object, no choices or odd content still
gives a clear reason. A usable reply has every template heading; its sections
are put into template order under canonical `## Heading` lines.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ctxpack.summarize.ledger import LEDGER_HEADING
from ctxpack.summarize.llm.errors import ContextOverflow, SummaryFailed, describe_body, is_overflow
from ctxpack.summarize.protocol import HEADINGS
from ctxpack.summarize.serialize import strip_think

_HEADING_LINE = re.compile(
    r"^\s{0,3}(?:#{1,6}\s*(?P<hashed>.+?)\s*#*|\*\*(?P<bold>[^*]+?)\*\*:?)\s*$"
)
_FENCE = re.compile(r"^```[A-Za-z]*\n(?P<body>.*)\n```$", re.DOTALL)


def _key(name: str) -> str:
    name = re.sub(r"^\s*\d+[.)]\s*", "", name.replace("*", "").replace("_", " "))
    name = name.lower().replace("&", " ").replace(" and ", " ")
    return re.sub(r"[^a-z]", "", name)


_CANONICAL = {_key(h): h for h in HEADINGS}
_LEDGER_KEY = _key(LEDGER_HEADING)


def parse_reply(raw: str) -> str:
    """The summary in a raw response body; SummaryFailed (or ContextOverflow) if unusable."""
    try:
        payload = json.loads(raw)
    except ValueError:
        raise SummaryFailed("the reply is not valid JSON") from None
    return reply_text(payload)


def reply_text(payload: Any) -> str:
    if not isinstance(payload, dict):
        raise SummaryFailed("the reply is not a JSON object")
    choices = payload.get("choices")
    if payload.get("error") is not None and not choices:
        detail = describe_body(payload)
        if is_overflow(json.dumps(payload)):
            raise ContextOverflow(f"the reply reports an error: {detail}")
        raise SummaryFailed(f"the reply reports an error: {detail}")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise SummaryFailed("the reply has no choices")
    choice = choices[0]
    if choice.get("finish_reason") == "length":
        raise SummaryFailed("the reply was cut off at the token limit (finish_reason=length)")
    message = choice.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    text = strip_think(_content_text(content)).strip()
    if not text:
        raise SummaryFailed("the reply was empty")
    return normalize_summary(text)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def normalize_summary(text: str) -> str:
    """Sections under canonical `## Heading` lines in template order.

    Text before the first heading (a model's "Here is the summary:") is dropped;
    a repeated heading adds to its section, a copy of the user ledger is
    dropped. A missing heading fails the reply.
    """
    fenced = _FENCE.match(text.strip())
    if fenced:
        text = fenced.group("body")
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        match = _HEADING_LINE.match(line)
        if match:
            key = _key(match.group("hashed") or match.group("bold") or "")
            heading = _CANONICAL.get(key)
            if heading is not None:
                current = sections.setdefault(heading, [])
                continue
            if key == _LEDGER_KEY:
                current = None  # ctxpack writes the ledger itself, from the turns
                continue
        if current is not None:
            current.append(line)
    missing = [h for h in HEADINGS if h not in sections]
    if missing:
        raise SummaryFailed(f"the reply lacks the headings: {', '.join(missing)}")
    return "\n\n".join(f"## {h}\n{_trim_lines(sections[h]) or 'None.'}" for h in HEADINGS)


def _trim_lines(lines: list[str]) -> str:
    return "\n".join(line.rstrip() for line in lines).strip("\n").rstrip()
