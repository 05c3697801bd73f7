"""The middle of a transcript as plain text for the summarizer.

Every message becomes one `[ROLE]: text` block; a tool call reads `→ name`
with one `key: value` line per argument (a multi-line string, such as a
heredoc command or a file's content, keeps its real lines) and tool results
carry the name of the tool that produced them. Reasoning text never goes out
(neither reasoning fields nor `<think>` blocks); a note says how much was left
out. Secrets are masked before a block is cut to size (so a cut can never
expose half a key), and the whole text is bounded by abbreviating, then
dropping, the oldest blocks.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ctxpack import markers
from ctxpack import messages as m
from ctxpack.redact import redact, redact_arguments
from ctxpack.toolpairs import link_results
from ctxpack.transcript import Message

MAX_CHARS_PER_MESSAGE = 6000
HEAD_CHARS = 4000
TAIL_CHARS = 1500
# About 120k tokens: a safety net; the summarizer chunks long inputs anyway.
MAX_TOTAL_CHARS = 480_000
ABBREVIATED_CHARS = 200
# Text masked beyond each cut point of a huge block (longer than any single key).
REDACT_MARGIN = 2000
NOTE_ROOM = 120  # the note about what was cut must fit too
BLOCK_SEPARATOR = "\n\n"
# Opening turns after the first user message are context only: clipped to a few lines.
HEAD_TURN_CHARS = 1200
ONE_LINE_ARGUMENTS = 160
REASONING_PART_TYPES = frozenset({"reasoning", "thinking", "redacted_thinking"})

_THINK_RE = re.compile(r"<(think|thinking|reasoning)>.*?</\1>\s*", re.DOTALL | re.IGNORECASE)


def strip_think(text: str) -> str:
    """Text without `<think>...</think>` (and `<thinking>`, `<reasoning>`) blocks."""
    return _THINK_RE.sub("", text)


def serialize_middle(
    messages: list[Message],
    *,
    max_chars_per_message: int = MAX_CHARS_PER_MESSAGE,
    head_chars: int = HEAD_CHARS,
    tail_chars: int = TAIL_CHARS,
    max_total_chars: int = MAX_TOTAL_CHARS,
) -> str:
    """The messages as `[ROLE]: text` blocks, capped, bounded and redacted."""
    blocks = serialize_blocks(
        messages,
        max_chars_per_message=max_chars_per_message,
        head_chars=head_chars,
        tail_chars=tail_chars,
    )
    return join_blocks(bound_blocks(blocks, max_total_chars=max_total_chars))


def serialize_blocks(
    messages: list[Message],
    *,
    max_chars_per_message: int = MAX_CHARS_PER_MESSAGE,
    head_chars: int = HEAD_CHARS,
    tail_chars: int = TAIL_CHARS,
) -> list[str]:
    """One redacted, capped block per message that has anything to say."""
    links = link_results(messages)
    blocks: list[str] = []
    for index, msg in enumerate(messages):
        tool_name = links[index].name if index in links else _own_name(msg)
        block = _block(msg, tool_name)
        if block is None:
            continue
        blocks.append(
            _redact_and_cap(
                block, max_chars=max_chars_per_message, head=head_chars, tail=tail_chars
            )
        )
    return blocks


def serialize_head(messages: list[Message], *, max_chars: int) -> str:
    """The opening turns as context: the first user message whole (up to
    `max_chars`), the other turns clipped, later turns left out past the cap."""
    turns = [msg for msg in messages if not markers.is_summary(msg)]
    first_user = next(
        (msg for msg in turns if m.role(msg) == "user" and not m.is_tool_result(msg)), None
    )
    blocks = serialize_blocks(
        turns,
        max_chars_per_message=max_chars,
        head_chars=max_chars * 3 // 4,
        tail_chars=max_chars // 5,
    )
    shown = [msg for msg in turns if _block(msg, "") is not None]
    out: list[str] = []
    used = 0
    for msg, block in zip(shown, blocks, strict=True):
        if msg is not first_user:
            third = HEAD_TURN_CHARS // 3
            block = cap(block, max_chars=HEAD_TURN_CHARS, head=HEAD_TURN_CHARS - third, tail=third)
        if out and used + len(block) > max_chars:
            out.append(f"[NOTE]: {len(blocks) - len(out)} later opening turns are not shown.")
            break
        out.append(block)
        used += len(block) + len(BLOCK_SEPARATOR)
    return join_blocks(out)


def _redact_and_cap(block: str, *, max_chars: int, head: int, tail: int) -> str:
    """Mask secrets, then cut; a huge block is masked only around the parts kept.

    The margin means a secret crossing a cut point is still seen whole (or,
    for a long key block, by its BEGIN line), so no fragment survives the cut.
    """
    if len(block) <= max_chars + 2 * REDACT_MARGIN:
        return cap(redact(block)[0], max_chars=max_chars, head=head, tail=tail)
    kept_head = _masked_end(block, head, from_start=True)
    kept_tail = _masked_end(block, tail, from_start=False)
    omitted = len(block) - head - tail
    return f"{kept_head}\n…[{omitted} chars omitted]…\n{kept_tail}"


def _masked_end(text: str, size: int, *, from_start: bool) -> str:
    """The first (or last) `size` chars of `text` with secrets masked.

    A slice is masked with a margin past the cut; masking shrinks text, so the
    slice grows until the margin is still there after masking.
    """
    span = size + REDACT_MARGIN
    while True:
        piece = text[:span] if from_start else text[max(len(text) - span, 0) :]
        masked = redact(piece)[0]
        if span >= len(text) or len(masked) >= size + REDACT_MARGIN // 2:
            return masked[:size] if from_start else masked[len(masked) - size :]
        span *= 2


def join_blocks(blocks: list[str]) -> str:
    return BLOCK_SEPARATOR.join(blocks)


def cap(text: str, *, max_chars: int, head: int, tail: int) -> str:
    """`text` cut to its head and tail with a mark saying how much went missing."""
    if len(text) <= max_chars:
        return text
    omitted = len(text) - head - tail
    return f"{text[:head]}\n…[{omitted} chars omitted]…\n{text[len(text) - tail :]}"


def bound_blocks(blocks: list[str], *, max_total_chars: int) -> list[str]:
    """Blocks fitting `max_total_chars`: the oldest are abbreviated, then dropped.

    The newest turns matter most for continuing the work, so they keep their text.
    """
    if _joined_length(blocks) <= max_total_chars:
        return blocks
    room = max_total_chars - NOTE_ROOM
    sep = len(BLOCK_SEPARATOR)
    short = [_abbreviate(block) for block in blocks]
    total = sum(len(block) + sep for block in blocks)
    # Abbreviate oldest first, but the newest message always keeps its text.
    cut = 0
    while cut < len(blocks) - 1 and total > room:
        total -= len(blocks[cut]) - len(short[cut])
        cut += 1
    out = short[:cut] + blocks[cut:]
    dropped = 0
    while len(out) > 1 and total > room:
        total -= len(out.pop(0)) + sep
        dropped += 1
    abbreviated = sum(1 for i in range(dropped, cut) if short[i] != blocks[i])
    parts = []
    if dropped:
        parts.append(f"the {dropped} oldest messages were left out")
    if abbreviated:
        parts.append(f"{abbreviated} older messages were cut to their first line")
    if not parts:
        return out
    return [f"[NOTE]: to fit the summarizer input, {' and '.join(parts)}.", *out]


def _joined_length(blocks: list[str]) -> int:
    return sum(len(b) for b in blocks) + len(BLOCK_SEPARATOR) * max(len(blocks) - 1, 0)


def _abbreviate(block: str) -> str:
    first = block.split("\n", 1)[0]
    if len(first) > ABBREVIATED_CHARS:
        first = first[:ABBREVIATED_CHARS]
    return first + " …[abbreviated]" if len(first) < len(block) else block


def _own_name(msg: Message) -> str:
    name = msg.get("name")
    return name if isinstance(name, str) and m.is_tool_result(msg) else ""


def _block(msg: Message, tool_name: str) -> str | None:
    role = m.role(msg) or "unknown"
    raw = m.text(msg)
    body = strip_think(raw).strip()
    images = m.image_count(msg)
    if images:
        body = f"{body}\n[{images} image(s)]".strip()
    reasoning = _reasoning_chars(msg) + len(raw) - len(strip_think(raw))
    if reasoning:
        body = f"{body}\n[reasoning omitted: {reasoning} characters]".strip()
    if m.is_tool_result(msg):
        label = f"TOOL RESULT: {tool_name}" if tool_name else "TOOL RESULT"
        return f"[{label}]: {body or '(no output)'}"
    lines = [body] if body else []
    for use_name, arguments in _calls(msg):
        lines.append(f"→ {use_name}{_arguments(arguments)}")
    if not lines:
        return None
    return f"[{role.upper()}]: " + "\n".join(lines)


def _calls(msg: Message) -> list[tuple[str, str]]:
    calls = [(m.call_name(c) or "tool", m.call_arguments(c)) for c in m.tool_calls(msg)]
    legacy = m.legacy_function_call(msg)
    if legacy is not None:
        name, arguments = legacy.get("name"), legacy.get("arguments")
        calls.append(
            (
                name if isinstance(name, str) and name else "function",
                arguments if isinstance(arguments, str) else "",
            )
        )
    return calls


def _reasoning_chars(msg: Message) -> int:
    """Characters of reasoning the message carries outside its visible text."""
    total = sum(len(text) for text in m.reasoning_texts(msg))
    content = msg.get("content")
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") in REASONING_PART_TYPES:
                total += sum(len(text) for text in m.reasoning_texts({"reasoning": part}))
    return total


def _arguments(arguments: str) -> str:
    """`(raw)` for arguments that are not a JSON object, else `key: value` pairs:
    on one line when short, one line per key otherwise."""
    # Masked while still JSON, so a key named "password" hides its value even
    # though the escaped text would hide the assignment from a plain-text scan.
    masked, _count = redact_arguments(arguments.strip())
    try:
        value = json.loads(masked)
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict):
        return f"({masked})"
    pairs = [_argument(str(key), item) for key, item in value.items()]
    one_line = ", ".join(pairs)
    if "\n" not in one_line and len(one_line) <= ONE_LINE_ARGUMENTS:
        return f"({one_line})"
    return "(\n" + "".join(f"  {pair}\n" for pair in pairs) + ")"


def _argument(key: str, value: Any) -> str:
    if isinstance(value, str) and "\n" in value.strip("\n"):
        # A heredoc or a file's content reads as the lines it is, not as `\n` escapes.
        text = value.strip("\n").replace("\n", "\n    ")
        return f"{key}: |\n    {text}"
    if isinstance(value, str):
        return f"{key}: {value.strip()}"
    return f"{key}: {json.dumps(value, ensure_ascii=False)}"
