"""The `codex` format: OpenAI Codex CLI rollouts (~/.codex/sessions/**/rollout-*.jsonl).

Every line is `{"timestamp", "type", "payload"}`; since Codex 0.171 an
`ordinal` (the line's number, 0 upward) sits after the timestamp, and a
resumed rollout must keep the numbers contiguous or Codex skips lines. `response_item` lines are
the model history (Responses API items); `session_meta.base_instructions` is
the system prompt; `event_msg` lines are UI copies (`exec_command_end` repeats
a command's whole output). A `compacted` line replaces the history with its
`replacement_history`; later `response_item` lines continue from there.

Mapping: consecutive assistant-side items (reasoning, assistant text,
function/custom tool calls) form one assistant message; `function_call_output`
and `custom_tool_call_output` become `tool` messages; reasoning items ride
along verbatim in the assistant message's `reasoning` list (their summary text
counts as reasoning). A custom tool call's raw input becomes the arguments
`{"input": raw}`. An opaque server-side compaction item is presented as a
summary message noting that its text is not available.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ctxpack import markers
from ctxpack.formats import jsoncodec, jsonl, signs
from ctxpack.formats.base import (
    BOM,
    Format,
    ReadOptions,
    is_blank,
    join_lines,
    layout_of,
    split_lines,
)
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message, Session, Transcript

_ORDINAL = re.compile(signs.CODEX_LINE_START)
CALL_TYPES = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
OUTPUT_TYPES = frozenset(
    {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}
)
COMPACTION_TYPES = frozenset({"compaction", "compaction_summary"})
OPAQUE_NOTE = (
    "(An earlier Codex compaction kept its summary server-side in encrypted form; "
    "its text is not available here.)"
)

# Where a message came from: (line index, index in that line's
# replacement_history or None for the line's own payload).
Loc = tuple[int, int | None]


@dataclass
class Source:
    kind: str  # "meta", "item", "group", "compacted"
    locs: list[Loc]


@dataclass(frozen=True)
class CodexLayout:
    """The rollout's lines as read: the writer edits them in place."""

    doc: jsonl.Lines


@dataclass(frozen=True)
class CodexContext:
    """Where the session's messages came from in the rollout."""

    where: dict[int, Source] = field(default_factory=dict)  # by id(message)
    # The `exec_command_end` event lines that repeat each call's output.
    mirrors: dict[str, list[int]] = field(default_factory=dict)
    # The line of the last `compacted` entry; -1 when there is none.
    compacted_at: int = -1


def first_ordinal(doc: jsonl.Lines) -> int | None:
    """The number of the rollout's first numbered line; None when Codex wrote
    no ordinals (before 0.171), and then a writer adds none."""
    for obj in doc.objs:
        if obj is not None and isinstance(obj.get("ordinal"), int):
            return int(obj["ordinal"])
    return None


def numbered(data: bytes, *, first: int) -> bytes:
    """Every record line numbered first, first + 1, ... in file order, the
    ordinal right after the timestamp as Codex writes it: Codex skips a line
    without one and warns at every gap. Blank and unparsable lines take no
    number (Codex skips them too); a line whose number is right is kept as is."""
    bom = data.startswith(BOM)
    lines, final_newline = split_lines(data[len(BOM) :] if bom else data)
    n = first
    for index, line in enumerate(lines):
        if is_blank(line):
            continue
        found = _ORDINAL.match(line)
        tag = b'"ordinal":%d,' % n
        if found and found.group("ordinal"):
            if int(found.group("n")) != n:
                lines[index] = line[: found.start("ordinal")] + tag + line[found.end("ordinal") :]
        elif found:
            lines[index] = line[: found.end()] + tag + line[found.end() :]
        else:
            try:
                obj = jsoncodec.loads(line)
            except jsoncodec.JSONError:
                continue
            if not isinstance(obj, dict):
                continue
            lead = {k: obj[k] for k in ("timestamp", "ordinal", "type", "payload") if k in obj}
            lines[index] = jsonl.dump({**lead, **obj, "ordinal": n}, like=line)
        n += 1
    return (BOM if bom else b"") + join_lines(lines, final_newline=final_newline)


def payload_at(doc: jsonl.Lines, loc: Loc) -> dict[str, Any]:
    obj = doc.objs[loc[0]]
    assert obj is not None
    payload = obj["payload"]
    if loc[1] is not None:
        payload = payload["replacement_history"][loc[1]]
    assert isinstance(payload, dict)
    return payload


def content_of(parts: Any) -> Any:
    """Responses content parts -> chat content (one text part -> a string)."""
    if not isinstance(parts, list):
        return parts if isinstance(parts, str) else ""
    texts = [p for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
    if len(parts) == 1 and len(texts) == 1:
        return texts[0]["text"]
    out: list[Any] = []
    for part in parts:
        if isinstance(part, dict) and part.get("type") == "input_image":
            out.append({"type": "image_url", "image_url": {"url": part.get("image_url", "")}})
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            out.append({"type": "text", "text": part["text"]})
        else:
            out.append(part)
    return out


def output_of(output: Any) -> Any:
    if isinstance(output, str):
        return output
    if isinstance(output, dict) and "content" in output:
        return output_of(output["content"])
    if isinstance(output, list):
        return content_of(output)
    return jsoncodec.dumps(output).decode("utf-8")


def call_of(payload: dict[str, Any]) -> dict[str, Any]:
    kind = payload.get("type")
    if kind == "custom_tool_call":
        arguments = jsoncodec.dumps({"input": payload.get("input", "")}).decode("utf-8")
    elif kind == "local_shell_call":
        arguments = jsoncodec.dumps(payload.get("action", {})).decode("utf-8")
    else:
        raw = payload.get("arguments", "")
        arguments = raw if isinstance(raw, str) else jsoncodec.dumps(raw).decode("utf-8")
    return {
        "id": str(payload.get("call_id") or payload.get("id") or ""),
        "type": "function",
        "function": {"name": str(payload.get("name", "local_shell")), "arguments": arguments},
    }


def summary_text(message: Any) -> str:
    if isinstance(message, str) and message.strip():
        if markers.is_summary({"role": "user", "content": message}):
            return message
        body = message.strip()
    else:
        body = OPAQUE_NOTE
    return f"{markers.SUMMARY_PREFIX}\n\n{body}\n{markers.SUMMARY_END}"


@dataclass
class _Builder:
    doc: jsonl.Lines
    messages: list[Message] = field(default_factory=list)
    where: dict[int, Source] = field(default_factory=dict)
    group: dict[str, Any] | None = None
    last_line: int = -1

    def add(self, msg: Message, source: Source) -> None:
        self.messages.append(msg)
        self.where[id(msg)] = source

    def item(self, payload: dict[str, Any], loc: Loc) -> None:
        kind = payload.get("type")
        if kind == "message" and payload.get("role") != "assistant":
            self.flush()
            msg = {
                "role": str(payload.get("role", "user")),
                "content": content_of(payload.get("content")),
            }
            self.add(msg, Source("item", [loc]))
        elif kind in OUTPUT_TYPES:
            self.flush()
            msg = {
                "role": "tool",
                "tool_call_id": str(payload.get("call_id", "")),
                "content": output_of(payload.get("output")),
            }
            self.add(msg, Source("item", [loc]))
        elif kind in COMPACTION_TYPES:
            self.flush()
        else:
            group = self.group
            if group is None:
                group = self.group = {"texts": [], "calls": [], "reasoning": [], "locs": []}
            group["locs"].append(loc)
            if kind == "message":
                content = content_of(payload.get("content"))
                group["texts"].extend(
                    [content] if isinstance(content, str) else [p for p in content if p]
                )
            elif kind in CALL_TYPES:
                group["calls"].append(call_of(payload))
            elif kind == "reasoning":
                group["reasoning"].append(payload)
        self.last_line = max(self.last_line, loc[0])

    def flush(self) -> None:
        group, self.group = self.group, None
        if group is None or not (group["texts"] or group["calls"] or group["reasoning"]):
            return
        texts = group["texts"]
        content: Any = None
        if len(texts) == 1 and isinstance(texts[0], str):
            content = texts[0]
        elif texts:
            content = [{"type": "text", "text": t} if isinstance(t, str) else t for t in texts]
        msg: Message = {"role": "assistant", "content": content}
        if group["calls"]:
            msg["tool_calls"] = group["calls"]
        if group["reasoning"]:
            msg["reasoning"] = group["reasoning"]
        self.add(msg, Source("group", group["locs"]))

    def compacted(self, payload: dict[str, Any], index: int) -> None:
        self.flush()
        system = [msg for msg in self.messages if self.where[id(msg)].kind == "meta"]
        self.messages = system
        history = payload.get("replacement_history")
        found_summary = False
        if isinstance(history, list):
            for k, item in enumerate(history):
                if not isinstance(item, dict):
                    continue
                if item.get("type") in COMPACTION_TYPES:
                    self.flush()
                    if not found_summary:
                        msg = {"role": "user", "content": summary_text(payload.get("message"))}
                        self.add(msg, Source("compacted", [(index, k)]))
                        found_summary = True
                    continue
                self.item(item, (index, k))
                if self.messages and markers.is_summary(self.messages[-1]):
                    found_summary = True
            self.flush()
        if not found_summary:
            msg = {"role": "user", "content": summary_text(payload.get("message"))}
            self.add(msg, Source("compacted", [(index, None)]))
        self.last_line = index


def read_doc(doc: jsonl.Lines) -> tuple[Session, str | None]:
    builder = _Builder(doc)
    mirrors: dict[str, list[int]] = {}
    compacted_at = -1
    for index, obj in enumerate(doc.objs):
        if obj is None or not isinstance(obj.get("payload"), dict):
            continue
        kind, payload = obj.get("type"), obj["payload"]
        if kind == "session_meta" and not any(s.kind == "meta" for s in builder.where.values()):
            instructions = payload.get("base_instructions")
            text = instructions.get("text") if isinstance(instructions, dict) else instructions
            if isinstance(text, str) and text:
                builder.add({"role": "system", "content": text}, Source("meta", [(index, None)]))
        elif kind == "response_item":
            builder.item(payload, (index, None))
        elif kind == "compacted":
            builder.compacted(payload, index)
            compacted_at = index
        elif kind == "event_msg" and payload.get("type") == "exec_command_end":
            mirrors.setdefault(str(payload.get("call_id", "")), []).append(index)
    builder.flush()
    messages = builder.messages
    session = Session(
        messages=messages,
        originals=[(msg, b"") for msg in messages],
        context=CodexContext(where=builder.where, mirrors=mirrors, compacted_at=compacted_at),
    )
    stamp = (doc.objs[builder.last_line] or {}).get("timestamp") if builder.last_line >= 0 else None
    return session, stamp if isinstance(stamp, str) else None


class CodexFormat(Format, name="codex", writable=True):
    """OpenAI Codex CLI rollout (JSONL of response items; compacted markers)"""

    def read(self, data: bytes, *, path: str, options: ReadOptions) -> Transcript:
        doc = jsonl.parse(data, path=path, options=options)
        session, stamp = read_doc(doc)
        return Transcript(
            self.name,
            [session],
            path=path,
            raw=data,
            skipped_lines=doc.skipped,
            layout=CodexLayout(doc),
            last_timestamp=stamp,
        )

    def write(self, transcript: Transcript, *, counter: TokenCounter) -> bytes:
        from ctxpack.formats.codex_write import write

        if transcript.unchanged() and layout_of(transcript, CodexLayout) is not None:
            return transcript.raw
        return write(transcript)
