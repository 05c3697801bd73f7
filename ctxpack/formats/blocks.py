"""Anthropic content blocks <-> OpenAI chat messages (Messages API, Claude Code).

Reading: a user turn's `tool_result` blocks become `tool` messages, its other
blocks one `user` message; an assistant turn's text becomes `content`,
`tool_use` becomes `tool_calls` (arguments = compact JSON of the input) and
`thinking` becomes `reasoning_content`. Base64 images become `image_url`
parts with a data URL. Blocks without an OpenAI counterpart (redacted
thinking, server tool blocks, documents) stay in the source for write-back.

Writing a changed message keeps every original block object that still says
the same thing, so callers can tell kept blocks (same object) from rewritten
ones (a new dict) and from new ones.
"""

from __future__ import annotations

import re
from typing import Any

from ctxpack import messages as m
from ctxpack.formats import jsoncodec
from ctxpack.toolpairs import parse_arguments
from ctxpack.transcript import Message

Block = dict[str, Any]
_DATA_URL = re.compile(r"data:([^;,]+);base64,(.*)", re.S)


def args_json(value: Any) -> str:
    return jsoncodec.dumps(value).decode("utf-8") if not isinstance(value, str) else value


def block_to_part(block: Any) -> Any:
    if not isinstance(block, dict):
        return block
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block.get("text", "")}
    if kind == "image":
        source = block.get("source")
        if isinstance(source, dict):
            if source.get("type") == "base64":
                url = (
                    f"data:{source.get('media_type', 'image/png')};base64,{source.get('data', '')}"
                )
                return {"type": "image_url", "image_url": {"url": url}}
            if source.get("type") == "url":
                return {"type": "image_url", "image_url": {"url": source.get("url", "")}}
    return block


def part_to_block(part: Any) -> Any:
    if isinstance(part, str):
        return {"type": "text", "text": part}
    if not isinstance(part, dict):
        return part
    kind = part.get("type")
    if kind in m.TEXT_PART_TYPES:
        return {"type": "text", "text": part.get("text", "")}
    if kind == "image_url":
        image = part.get("image_url")
        url = image.get("url", "") if isinstance(image, dict) else str(image or "")
        found = _DATA_URL.fullmatch(url)
        if found:
            source = {"type": "base64", "media_type": found.group(1), "data": found.group(2)}
            return {"type": "image", "source": source}
        return {"type": "image", "source": {"type": "url", "url": url}}
    return part


def content_to_blocks(content: Any) -> Any:
    """OpenAI content -> Anthropic content (a string stays a string)."""
    if content is None:
        return ""
    if isinstance(content, list):
        return [part_to_block(p) for p in content]
    return content


def result_content(block: Block) -> Any:
    content = block.get("content")
    if content is None:
        return ""
    if isinstance(content, list):
        return [block_to_part(b) for b in content]
    return content


def user_messages(content: Any) -> list[tuple[Message, list[int]]]:
    """The messages one user turn holds, each with the block indexes it came from."""
    if not isinstance(content, list):
        return [({"role": "user", "content": content if content is not None else ""}, [])]
    out: list[tuple[Message, list[int]]] = []
    run: list[int] = []

    def flush() -> None:
        if run:
            parts = [block_to_part(content[i]) for i in run]
            out.append(({"role": "user", "content": parts}, list(run)))
            run.clear()

    for i, block in enumerate(content):
        if isinstance(block, dict) and block.get("type") == "tool_result":
            flush()
            msg: Message = {
                "role": "tool",
                "tool_call_id": str(block.get("tool_use_id", "")),
                "content": result_content(block),
            }
            if block.get("is_error"):
                msg["is_error"] = True
            out.append((msg, [i]))
        else:
            run.append(i)
    flush()
    return out


def assistant_message(blocks: list[Any]) -> Message:
    texts: list[str] = []
    thinking: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind == "thinking" and block.get("thinking"):
            thinking.append(str(block["thinking"]))
        elif kind == "tool_use":
            calls.append(
                {
                    "id": str(block.get("id", "")),
                    "type": "function",
                    "function": {
                        "name": str(block.get("name", "")),
                        "arguments": args_json(block.get("input", {})),
                    },
                }
            )
    msg: Message = {"role": "assistant", "content": _joined_content(texts)}
    if calls:
        msg["tool_calls"] = calls
    if thinking:
        msg["reasoning_content"] = "\n".join(thinking)
    return msg


def _joined_content(texts: list[str]) -> Any:
    if not texts:
        return None
    if len(texts) == 1:
        return texts[0]
    return [{"type": "text", "text": t} for t in texts]


def _texts(msg: Message) -> list[str]:
    content = msg.get("content")
    if content is None:
        return []
    if isinstance(content, str):
        return [content] if content else []
    return list(m.text_parts(msg))


def _reasoning(msg: Message) -> str:
    value = msg.get("reasoning_content")
    if isinstance(value, str):
        return value
    return "\n".join(m.reasoning_texts(msg))


def assistant_blocks(
    original: list[Any], before: Message | None, after: Message
) -> list[tuple[int | None, Any]]:
    """Blocks for `after`, as (index of the original block it keeps or rewrites, block)."""
    out: list[tuple[int | None, Any]] = []
    old = before if before is not None else {"role": "assistant", "content": None}
    same_text = _texts(old) == _texts(after)
    same_reasoning = _reasoning(old) == _reasoning(after)
    new_texts = _texts(after)
    calls = {m.call_id(c): c for c in m.tool_calls(after)}
    placed_text = False
    for i, block in enumerate(original):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind in ("thinking", "redacted_thinking"):
            if same_reasoning:
                out.append((i, block))
        elif kind == "text":
            if same_text:
                out.append((i, block))
            elif not placed_text and new_texts:
                out.append((i, {**block, "text": new_texts[0]}))
                out.extend((None, {"type": "text", "text": t}) for t in new_texts[1:])
                placed_text = True
        elif kind == "tool_use":
            call = calls.pop(str(block.get("id", "")), None)
            if call is None:
                continue
            if m.call_arguments(call) == args_json(block.get("input", {})):
                out.append((i, block))
            else:
                out.append((i, {**block, "input": _input_of(call)}))
        else:
            out.append((i, block))
    if not same_reasoning and _reasoning(after):
        out.insert(0, (None, {"type": "thinking", "thinking": _reasoning(after)}))
    if not same_text and not placed_text and new_texts:
        at = next((k for k, (_, b) in enumerate(out) if b.get("type") == "tool_use"), len(out))
        out[at:at] = [(None, {"type": "text", "text": t}) for t in new_texts]
    for call in calls.values():
        out.append(
            (
                None,
                {
                    "type": "tool_use",
                    "id": m.call_id(call),
                    "name": m.call_name(call),
                    "input": _input_of(call),
                },
            )
        )
    return out


def _input_of(call: dict[str, Any]) -> dict[str, Any]:
    raw = m.call_arguments(call)
    parsed = parse_arguments(raw)
    if parsed or raw.strip() in ("{}", ""):
        return parsed
    return {"arguments": raw}


def result_block(before: Block | None, msg: Message) -> Block:
    block: Block = dict(before) if before is not None else {"type": "tool_result"}
    block["tool_use_id"] = m.result_call_id(msg)
    block["content"] = content_to_blocks(msg.get("content"))
    if msg.get("is_error"):
        block["is_error"] = True
    return block


def user_blocks(
    content: Any, derived: list[tuple[Message, list[int]]], fate: dict[int, Message | None]
) -> Any:
    """The user turn rebuilt from the fates of the messages it held.

    `fate` maps id(original message) to its replacement (the same object when
    unchanged) or None when it was dropped. Returns the original content object
    when nothing changed, and None when nothing is left.
    """
    if all(fate.get(id(orig)) is orig for orig, _ in derived):
        return content
    if not isinstance(content, list):
        new = fate.get(id(derived[0][0]))
        if new is None:
            return None
        value = new.get("content")
        return value if isinstance(value, str) else content_to_blocks(value)
    out: list[Any] = []
    for orig, indexes in derived:
        new = fate.get(id(orig))
        if new is None:
            continue
        if new is orig:
            out.extend(content[i] for i in indexes)
        elif m.role(orig) == "tool":
            block = content[indexes[0]]
            if isinstance(block, dict) and block.get("type") == "text":
                # A result the agent returned as plain text (Cline).
                out.append({**block, "text": m.text(new)})
            else:
                out.append(result_block(block, new))
        else:
            value = new.get("content")
            out.extend(
                [{"type": "text", "text": value}]
                if isinstance(value, str)
                else content_to_blocks(value)
            )
    return out or None
