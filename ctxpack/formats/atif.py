"""The `atif` format (read only): Harbor's Agent Trajectory Interchange Format.

A trajectory is `{schema_version: "ATIF-v1.x", session_id, agent, steps}`.
A step's `source` says whose turn it is: a system step becomes a system
message, a user step a user message, an agent step an assistant message with
its `reasoning_content` and `tool_calls` (`{tool_call_id, function_name,
arguments}`, the arguments as JSON text). The results of a step's
`observation` follow as tool messages. A result names its call by
`source_call_id`; one without answers its own step's open calls in order,
then the calls whose execution was logged (below), then the oldest open call;
a result that answers no call is environment feedback, a user message. A step
with nothing to say (no text, reasoning or calls) adds no message of its own.

A message is a string or (v1.6) a list of text and image parts. Some
exporters log the raw LLM exchange instead: an OpenAI chat message (its
content and reasoning are read), or a whole request (`{"messages": [...]}`:
its system and user turns after its last assistant turn are the new input;
its tool turns are there as observations already). They also log each tool
execution as an agent step of its own, with no message, repeating an open
call (same function, same arguments) under a new id: such a step adds no
call; it sets the order in which results without ids answer.
"""

from __future__ import annotations

from typing import Any

from ctxpack import toolpairs
from ctxpack.errors import InputError
from ctxpack.formats import jsoncodec
from ctxpack.formats.base import BOM, Format, ReadOptions
from ctxpack.formats.docpos import ItemError, each_item, item_input_error, load_document
from ctxpack.transcript import Message, Session, Transcript

ROLES = {"system": "system", "user": "user", "agent": "assistant"}


class _Calls:
    """Open calls in the order they were made, and those whose execution was logged."""

    def __init__(self) -> None:
        self.open: list[tuple[str, str, dict[str, Any]]] = []
        self.ran: list[str] = []
        self.made = 0

    def call(self, call: dict[str, Any]) -> None:
        fn = call["function"]
        self.open.append((call["id"], fn["name"], toolpairs.parse_arguments(fn["arguments"])))

    def executions(self, calls: list[dict[str, Any]]) -> list[str] | None:
        """The open calls these repeat, in order; None when any of them is new."""
        taken: list[str] = []
        for call in calls:
            fn = call["function"]
            key = (fn["name"], toolpairs.parse_arguments(fn["arguments"]))
            match = next(
                (
                    call_id
                    for call_id, name, args in self.open
                    if (name, args) == key and call_id not in taken and call_id not in self.ran
                ),
                None,
            )
            if match is None:
                return None
            taken.append(match)
        self.ran += taken
        return taken

    def answer(self, named: Any, own: list[str]) -> tuple[str, str] | None:
        names = {call_id: name for call_id, name, _ in self.open}
        pick = named if isinstance(named, str) and named in names else None
        for candidates in (own, self.ran, list(names)):
            pick = pick or next((c for c in candidates if c in names), None)
        if pick is None:
            return None
        self.open = [c for c in self.open if c[0] != pick]
        self.ran = [c for c in self.ran if c != pick]
        return pick, names[pick]


def content_of(value: Any) -> str | list[dict[str, Any]] | None:
    """ATIF content (a string, or text and image parts) as OpenAI content."""
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise ValueError(f"message must be a string, a list of parts or an object, not {value!r}")
    parts: list[dict[str, Any]] = []
    for part in value:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            parts.append({"type": "text", "text": str(part.get("text") or "")})
        elif kind == "image":
            source = part.get("source") if isinstance(part.get("source"), dict) else {}
            parts.append({"type": "image_url", "image_url": {"url": str(source.get("path", ""))}})
        else:
            raise ValueError(f"a content part must have type text or image, not {kind!r}")
    return parts


def _empty(content: Any) -> bool:
    return content is None or content == "" or content == []


def _request_turns(messages: list[Any]) -> list[Message]:
    said = [x for x in messages if isinstance(x, dict)]
    last = max((n for n, x in enumerate(said) if x.get("role") == "assistant"), default=-1)
    return [
        {"role": x["role"], "content": x.get("content")}
        for x in said[last + 1 :]
        if x.get("role") in ("system", "developer", "user") and not _empty(x.get("content"))
    ]


def _tool_calls(step: dict[str, Any], calls: _Calls) -> list[dict[str, Any]]:
    listed = step.get("tool_calls") or []
    if not isinstance(listed, list):
        raise ValueError("tool_calls must be a list")
    out: list[dict[str, Any]] = []
    for call in listed:
        if not isinstance(call, dict) or not isinstance(call.get("function_name"), str):
            raise ValueError("each tool call must be an object with a function_name")
        calls.made += 1
        args = call.get("arguments", {})
        out.append(
            {
                "id": str(call.get("tool_call_id") or f"atif-call-{calls.made}"),
                "type": "function",
                "function": {
                    "name": call["function_name"],
                    "arguments": args if isinstance(args, str) else jsoncodec.dumps(args).decode(),
                },
            }
        )
    return out


def _agent_message(step: dict[str, Any], calls: _Calls) -> tuple[list[Message], list[str]]:
    """The assistant message of an agent step (none for a logged execution), and its calls."""
    said = step.get("message")
    reasoning = step.get("reasoning_content")
    if isinstance(said, dict):
        content = said.get("content") if isinstance(said.get("content"), str | list) else None
        reasoning = reasoning or said.get("reasoning_content") or said.get("reasoning")
    else:
        content = content_of(said)
    made = _tool_calls(step, calls)
    if made and _empty(content) and not reasoning:
        ran = calls.executions(made)
        if ran is not None:
            return [], ran
    msg: Message = {"role": "assistant", "content": None if _empty(content) else content}
    if isinstance(reasoning, str) and reasoning:
        msg["reasoning_content"] = reasoning
    if made:
        msg["tool_calls"] = made
        for call in made:
            calls.call(call)
    elif len(msg) == 2 and msg["content"] is None:
        return [], []
    return [msg], [c["id"] for c in made]


def _turns(step: dict[str, Any], role: str) -> list[Message]:
    said = step.get("message")
    if isinstance(said, dict) and isinstance(said.get("messages"), list):
        return _request_turns(said["messages"])
    content = said.get("content") if isinstance(said, dict) else content_of(said)
    return [] if _empty(content) else [{"role": role, "content": content}]


def _result_text(result: dict[str, Any]) -> str | list[dict[str, Any]]:
    content = content_of(result.get("content"))
    if content is not None:
        return content
    refs = result.get("subagent_trajectory_ref")
    lines = [
        f"subagent trajectory {ref.get('session_id', '')} {ref.get('trajectory_path') or ''}"
        for ref in refs or []
        if isinstance(ref, dict)
    ]
    return "\n".join(line.rstrip() for line in lines)


def _results(step: dict[str, Any], own: list[str], calls: _Calls) -> list[Message]:
    observation = step.get("observation")
    if observation is None:
        return []
    results = observation.get("results") if isinstance(observation, dict) else None
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        raise ValueError("observation must hold a list of result objects")
    out: list[Message] = []
    for result in results:
        text = _result_text(result)
        answered = calls.answer(result.get("source_call_id"), own)
        if answered is None:
            out.append({"role": "user", "content": text})
        else:
            out.append(
                {"role": "tool", "tool_call_id": answered[0], "name": answered[1], "content": text}
            )
    return out


def steps_messages(steps: list[Any]) -> list[Message]:
    calls = _Calls()

    def convert(step: Any) -> list[Message]:
        source = step.get("source") if isinstance(step, dict) else None
        if source == "agent":
            said, own = _agent_message(step, calls)
        elif source in ROLES:
            said, own = _turns(step, ROLES[source]), []
        else:
            raise ValueError(f"source must be system, user or agent, not {source!r}")
        return said + _results(step, own, calls)

    return each_item(steps, convert, what="step")


class ATIFFormat(Format, name="atif", writable=False):
    """Agent Trajectory Interchange Format (Harbor ATIF-v1.x steps; read only)"""

    def read(self, data: bytes, *, path: str, options: ReadOptions) -> Transcript:
        body = data.removeprefix(BOM)
        doc = load_document(body, path=path)
        steps = doc.get("steps") if isinstance(doc, dict) else None
        if not isinstance(steps, list):
            raise InputError("not an ATIF trajectory (no steps list)", path=path)
        try:
            messages = steps_messages(steps)
        except ItemError as bad:
            raise item_input_error(bad, body=body, path=path, key="steps") from None
        session = Session(
            messages=messages,
            originals=[(x, b"") for x in messages],
            label=str(doc.get("session_id") or ""),
        )
        stamps = [s["timestamp"] for s in steps if isinstance(s.get("timestamp"), str)]
        layout: dict[str, Any] = {"last_timestamp": stamps[-1]} if stamps else {}
        return Transcript(self.name, [session], path=path, raw=data, layout=layout)
