"""The `pi` format: pi coding agent sessions (~/.pi/agent/sessions/*/*.jsonl).

The first line is the header `{"type": "session", "id", "cwd", ...}`. Current
pi (`version` 3) links entries into a tree by `id`/`parentId`; the
conversation is the path from the last entry (pi's leaf on load) back to the
root. The older layout (no `version`) has no ids: every entry is on the path,
in file order, and a compaction points at its first kept entry by index.

What the model sees, as pi builds it: `message` entries (user, assistant,
toolResult; a `bashExecution` reads as the user text pi sends for it; a
`custom` message as user text), `custom_message` and `branch_summary` entries
as user text; with a `compaction` on the path, its summary comes first, then
the entries from `firstKeptEntryId` up to the compaction, then those after.
Other entries (model and thinking level changes, labels) carry no message
and stay where they are.

Mapping: assistant `thinking` parts are the reasoning, `toolCall` parts the
tool calls (arguments as compact JSON); a `toolResult` is a `tool` message,
flagged `is_error` where pi marked it `isError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxpack import markers
from ctxpack.formats import jsoncodec, jsonl
from ctxpack.formats.base import Format, ReadOptions, layout_of
from ctxpack.formats.openhands import summary_message
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message, Session, Transcript

BRANCH_PREFIX = "The following is a summary of a branch that this conversation came back from:"


@dataclass(frozen=True)
class PiLayout:
    """The session file's lines as read: the writer edits them in place."""

    doc: jsonl.Lines
    # The header's `version`; 1 for the older layout without one.
    version: int


@dataclass(frozen=True)
class PiContext:
    """Where the conversation's messages came from in the file."""

    # The line indexes of the path, root first (file order).
    path: list[int] = field(default_factory=list)
    # id(message) -> the line of the entry it was read from.
    where: dict[int, int] = field(default_factory=dict)
    # Path lines before the latest compaction's first kept entry: pi shows none.
    hidden: set[int] = field(default_factory=set)


def content_of(content: Any) -> Any:
    """pi content -> chat content: one text part reads as a string."""
    only = content[0] if isinstance(content, list) and len(content) == 1 else None
    if isinstance(only, dict) and only.get("type") == "text" and isinstance(only.get("text"), str):
        return only["text"]
    return content if isinstance(content, str | list) else ""


def bash_text(msg: dict[str, Any]) -> str:
    """The user text pi sends the model for a command the user ran."""
    output = msg.get("output")
    text = f"Ran `{msg.get('command', '')}`\n"
    text += f"```\n{output}\n```" if output else "(no output)"
    if msg.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif isinstance(msg.get("exitCode"), int) and msg["exitCode"] != 0:
        text += f"\n\nCommand exited with code {msg['exitCode']}"
    if msg.get("truncated") and msg.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {msg['fullOutputPath']}]"
    return text


def assistant_of(msg: dict[str, Any]) -> Message:
    parts = msg.get("content")
    parts = parts if isinstance(parts, list) else []
    texts = [p["text"] for p in parts if p.get("type") == "text" and isinstance(p.get("text"), str)]
    thinking = [str(p.get("thinking", "")) for p in parts if p.get("type") == "thinking"]
    calls = [
        {
            "id": str(p.get("id", "")),
            "type": "function",
            "function": {
                "name": str(p.get("name", "")),
                "arguments": jsoncodec.dumps(p.get("arguments", {})).decode("utf-8"),
            },
        }
        for p in parts
        if p.get("type") == "toolCall"
    ]
    out: Message = {"role": "assistant", "content": texts[0] if len(texts) == 1 else None}
    if len(texts) > 1:
        out["content"] = [{"type": "text", "text": t} for t in texts]
    if calls:
        out["tool_calls"] = calls
    if any(thinking):
        out["reasoning_content"] = "\n".join(t for t in thinking if t)
    return out


def message_of(entry: dict[str, Any]) -> Message | None:
    """The message pi sends the model for an entry; None for one it sends none for."""
    kind = entry.get("type")
    if kind == "custom_message":
        return {"role": "user", "content": content_of(entry.get("content"))}
    if kind == "branch_summary" and entry.get("summary"):
        body = f"{BRANCH_PREFIX}\n\n<summary>\n{entry['summary']}</summary>"
        return {"role": "user", "content": body}
    msg = entry.get("message")
    if kind != "message" or not isinstance(msg, dict):
        return None
    role = msg.get("role")
    if role == "assistant":
        return assistant_of(msg)
    if role == "toolResult":
        result: Message = {
            "role": "tool",
            "tool_call_id": str(msg.get("toolCallId", "")),
            "content": content_of(msg.get("content")),
        }
        if msg.get("isError") is True:
            # The result's own error flag, as every stage reads one; pi's line
            # keeps its isError as it was when written back.
            result["is_error"] = True
        return result
    if role == "bashExecution":
        return (
            None if msg.get("excludeFromContext") else {"role": "user", "content": bash_text(msg)}
        )
    return {"role": "user", "content": content_of(msg.get("content"))}


def compaction_message(entry: dict[str, Any]) -> Message:
    text = str(entry.get("summary", ""))
    ours = {"role": "user", "content": text}
    return ours if markers.is_summary(ours) else summary_message(text)


def path_of(doc: jsonl.Lines, version: int) -> list[int]:
    lines = [
        i for i, obj in enumerate(doc.objs) if obj is not None and obj.get("type") != "session"
    ]
    if version < 2 or not lines:
        return lines
    by_id = {str(obj["id"]): i for i, obj in enumerate(doc.objs) if obj is not None and "id" in obj}
    path: list[int] = []
    index: int | None = lines[-1]
    while index is not None and index not in path:
        path.append(index)
        parent = (doc.objs[index] or {}).get("parentId")
        index = by_id.get(parent) if isinstance(parent, str) else None
    path.reverse()
    return path


def first_kept(doc: jsonl.Lines, entry: dict[str, Any], version: int) -> int | None:
    """The line of a compaction's first kept entry."""
    if version < 2:
        parsed = [i for i, obj in enumerate(doc.objs) if obj is not None]
        at = entry.get("firstKeptEntryIndex")
        return parsed[at] if isinstance(at, int) and 0 <= at < len(parsed) else None
    wanted = entry.get("firstKeptEntryId")
    return next(
        (i for i, o in enumerate(doc.objs) if o is not None and o.get("id") == wanted), None
    )


def read_doc(doc: jsonl.Lines, version: int) -> Session:
    path = path_of(doc, version)
    compactions = [i for i in path if (doc.objs[i] or {}).get("type") == "compaction"]
    hidden: set[int] = set()
    order = path
    if compactions:
        at = compactions[-1]
        before = path[: path.index(at)]
        kept_from = first_kept(doc, doc.objs[at] or {}, version)
        start = before.index(kept_from) if kept_from in before else len(before)
        hidden = set(before[:start])
        order = [at, *before[start:], *path[path.index(at) + 1 :]]
    messages: list[Message] = []
    where: dict[int, int] = {}
    for index in order:
        entry = doc.objs[index] or {}
        if index in compactions:
            msg: Message | None = compaction_message(entry) if index == order[0] else None
        else:
            msg = message_of(entry)
        if msg is not None:
            messages.append(msg)
            where[id(msg)] = index
    return Session(
        messages=messages,
        originals=[(msg, b"") for msg in messages],
        context=PiContext(path=path, where=where, hidden=hidden),
    )


class PiFormat(Format, name="pi", writable=True):
    """pi coding agent session (JSONL entries; v3 tree and compaction entries)"""

    def read(self, data: bytes, *, path: str, options: ReadOptions) -> Transcript:
        doc = jsonl.parse(data, path=path, options=options)
        header = next((o for o in doc.objs if o is not None and o.get("type") == "session"), {})
        version = header.get("version")
        layout = PiLayout(doc, version if isinstance(version, int) else 1)
        session = read_doc(doc, layout.version)
        where = session.context.where if isinstance(session.context, PiContext) else {}
        stamps = [(doc.objs[i] or {}).get("timestamp") for i in where.values()]
        stamp = max((s for s in stamps if isinstance(s, str)), default=None)
        return Transcript(
            self.name,
            [session],
            path=path,
            raw=data,
            skipped_lines=doc.skipped,
            layout=layout,
            last_timestamp=stamp,
        )

    def write(self, transcript: Transcript, *, counter: TokenCounter) -> bytes:
        from ctxpack.formats.pi_write import write

        if transcript.unchanged() and layout_of(transcript, PiLayout) is not None:
            return transcript.raw
        return write(transcript, counter=counter)
