"""Writing a Claude Code session log back.

Edits happen in place: a changed message rewrites only its own lines (a
pruned tool result rewrites its `tool_result` block and trims the
`toolUseResult` copy to the same text; changed arguments rewrite the
`tool_use` input), and a line whose parent changed gets the new `parentUuid`.

A compaction is written the way Claude Code resumes one, without the history
it replaces (ctxpack's archive keeps the original bytes), in the order the
conversation happened: head, record, tail.

* a `system`/`compact_boundary` line (no parent) goes just before the first
  kept tail line. Claude Code's loader walks `parentUuid` from the leaf and
  gives the model only what follows the last boundary, so everything the
  model must see comes after it;
* the kept head messages follow the boundary as copies with fresh uuids, then
  a `user` line with `isCompactSummary: true` carrying the record, then the
  kept tail lines, re-chained in place. This is the shape Claude Code itself
  writes when a partial compaction keeps the earliest turns (the preserved
  prefix hangs off the boundary and the summary follows it): the client loads
  it, and following `parentUuid` from the last line yields exactly the
  compacted conversation in order (head, record, tail). A plain chain with
  no boundary would load in that order too; the boundary stays so the client
  knows the session was compacted (it says so and prunes anything before it);
* every other line of the conversation's chain goes: the summarized turns,
  the originals of the copied head lines, the notices riding on them, and
  the history an earlier compaction in the chain had already summarized.
  Lines outside the chain (snapshots, queue operations, titles, other
  branches and sidechains) stay where they were, byte for byte.

Without a new summary, tail lines a stage removed (stripped calls, orphan
results) are deleted so no stale leaf can hide the new one, and everything
else stays byte for byte. New lines get stable uuids (`claude_code_ids`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ctxpack import messages as m
from ctxpack.formats import blocks, jsoncodec, jsonl
from ctxpack.formats.base import context_of, layout_of
from ctxpack.formats.claude_code import (
    ClaudeCodeContext,
    ClaudeCodeLayout,
    history_behind,
    line,
    passengers,
)
from ctxpack.formats.claude_code_ids import LineIds
from ctxpack.formats.origins import first_new_summary, pairs
from ctxpack.refs import sha256_hex
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message, Session, Transcript

ENVELOPE = (
    "isSidechain",
    "userType",
    "cwd",
    "sessionId",
    "version",
    "gitBranch",
    "slug",
    "agentId",
    "entrypoint",
)
EPOCH = "1970-01-01T00:00:00.000Z"
SYNTHETIC_MODEL = "<synthetic>"

Obj = dict[str, Any]
Emission = tuple[str, Any]  # ("line", index) or ("new", line object)


@dataclass
class Slot:
    obj: Obj
    line: int | None


def write(
    transcript: Transcript, *, counter: TokenCounter, writer: type[SessionWriter] | None = None
) -> bytes:
    layout = layout_of(transcript, ClaudeCodeLayout)
    doc = layout.doc if layout else jsonl.Lines.empty()
    edits = jsonl.Edits()
    for number, session in enumerate(transcript.sessions):
        if session.unchanged() and context_of(session, ClaudeCodeContext) is not None:
            continue
        make = writer or SessionWriter
        make(doc, session, number, transcript.last_timestamp or EPOCH, counter).run(edits)
    return edits.apply(doc)


class SessionWriter:
    """Rewrites one conversation chain; subclasses change the line shapes."""

    def __init__(
        self, doc: jsonl.Lines, session: Session, number: int, stamp: str, counter: TokenCounter
    ) -> None:
        ctx = context_of(session, ClaudeCodeContext) or ClaudeCodeContext()
        self.doc = doc
        self.counter = counter
        self.session = session
        self.chain = ctx.chain
        self.units = ctx.units
        self.where = ctx.where
        self.ids = LineIds(doc, self.chain, number)
        self.seen: dict[str, int] = {}
        self.stamp = stamp
        self.state: dict[int, Obj | None] = {}
        self.plans: dict[int, list[Emission]] = {}
        self.fate: dict[int, Message] = {}
        # New turns take their envelope from the last line, the markers from
        # the first kept tail line (set once the cut is known).
        self.last_ref: Obj = line(doc, self.chain[-1]) if self.chain else {}
        self.env_ref = self.last_ref

    def run(self, edits: jsonl.Edits) -> None:
        items = pairs(self.session)
        self.fate = {id(orig): msg for msg, orig in items if orig is not None}
        for source, _ in self.session.originals:
            self._plan(source, self.fate.get(id(source)))
        cut = first_new_summary(items)
        head, tail = (items[:cut], items[cut + 1 :]) if cut is not None else ([], items)
        tail_lines = [
            e[1]
            for _, orig in tail
            if orig is not None
            for e in self.plans.get(id(orig), [])
            if e[0] == "line"
        ]
        if tail_lines:
            self.env_ref = line(self.doc, tail_lines[0])
        seq: list[Slot] = []
        message_lines = {i for _, lines in self.where.values() for i in lines}
        leading, trailing = passengers(self.chain, message_lines, set(tail_lines))
        if cut is not None:
            boundary, record = self._markers(items[cut][0])
            seq += [boundary, *self._copies(head), record]
        else:
            seq += [Slot(line(self.doc, i), i) for i in leading]
        emitted: set[int] = set()
        for msg, orig in tail:
            for kind, value in self._emissions(msg, orig):
                if kind == "new":
                    seq.append(Slot(value, None))
                elif value not in emitted:
                    emitted.add(value)
                    kept = self.state.get(value)
                    seq.append(Slot(kept if kept is not None else line(self.doc, value), value))
                    seq += [Slot(line(self.doc, i), i) for i in trailing.get(value, [])]
        self._link(seq, compacted=cut is not None)
        self._place(seq, edits, compacted=cut is not None)

    # -- planning ---------------------------------------------------------

    def _plan(self, orig: Message, new: Message | None) -> None:
        kind, lines = self.where[id(orig)]
        if kind == "user":
            index = lines[0]
            if index not in self.state:
                self.state[index] = self._user_line(index)
            self.plans[id(orig)] = [("line", index)] if self.state[index] is not None else []
            return
        if new is orig:
            for index in lines:
                self.state[index] = line(self.doc, index)
            self.plans[id(orig)] = [("line", index) for index in lines]
            return
        flat = [(i, b) for i in lines for b in _content(line(self.doc, i))]
        plan: list[Emission] = []
        per_line: dict[int, list[Any]] = {}
        if new is not None:
            template = lines[0]
            found = blocks.assistant_blocks([b for _, b in flat], orig, new)
            for k, (source, block) in enumerate(found):
                if source is None:
                    plan.append(("new", self._clone(template, [block], key=f"{template}/{k}")))
                    continue
                template = flat[source][0]
                if template not in per_line:
                    per_line[template] = []
                    plan.append(("line", template))
                per_line[template].append(block)
        for index in lines:
            obj = line(self.doc, index)
            kept = per_line.get(index)
            if kept is None:
                self.state[index] = None
            elif len(kept) == len(_content(obj)) and all(
                a is b for a, b in zip(kept, _content(obj), strict=True)
            ):
                self.state[index] = obj
            else:
                self.state[index] = {**obj, "message": {**obj["message"], "content": kept}}
        self.plans[id(orig)] = plan

    def _user_line(self, index: int) -> Obj | None:
        obj = line(self.doc, index)
        derived = self.units[index]
        fate = {id(orig): self.fate.get(id(orig)) for orig, _ in derived}
        content = obj["message"].get("content")
        new = blocks.user_blocks(content, derived, fate)
        if new is None:
            return None
        if new is content:
            return obj
        out = {**obj, "message": {**obj["message"], "content": new}}
        changed = [f for o, _ in derived if (f := fate[id(o)]) is not None and f is not o]
        results = [f for f in changed if m.role(f) == "tool"]
        for key in ("toolUseResult", "tool_use_result"):
            # The structured copy of the output must not outlive its pruning.
            if results and key in obj:
                out[key] = m.text(results[0])
        return out

    def _emissions(self, msg: Message, orig: Message | None) -> list[Emission]:
        if orig is not None:
            return self.plans.get(id(orig), [])
        if id(msg) not in self.plans:
            digest = sha256_hex(jsoncodec.dumps(msg))[:20]
            self.seen[digest] = self.seen.get(digest, 0) + 1
            key = f"new/{digest}/{self.seen[digest]}"
            self.plans[id(msg)] = [("new", obj) for obj in self._new_lines(msg, key)]
        return self.plans[id(msg)]

    # -- building lines ---------------------------------------------------

    def _envelope(self, ref: Obj) -> Obj:
        env = {k: ref[k] for k in ENVELOPE if k in ref}
        env.setdefault("isSidechain", False)
        env.setdefault("sessionId", str(self.ids.derived()))
        return env

    def _timestamp(self, ref: Obj) -> str:
        stamp = ref.get("timestamp")
        return stamp if isinstance(stamp, str) else self.stamp

    def _user(self, content: Any, *, key: str, ref: Obj, **extra: Any) -> Obj:
        return {
            "parentUuid": None,
            **self._envelope(ref),
            "type": "user",
            "message": {"role": "user", "content": content},
            **extra,
            "uuid": self.ids.new(key),
            "timestamp": self._timestamp(ref),
        }

    def _new_lines(self, msg: Message, key: str) -> list[Obj]:
        role, ref = m.role(msg), self.last_ref
        if role == "tool":
            return [self._user([blocks.result_block(None, msg)], key=key, ref=ref)]
        if role == "assistant":
            message_id = f"msg_ctxpack_{self.ids.derived(key).hex}"
            out = []
            for k, (_, block) in enumerate(blocks.assistant_blocks([], None, msg)):
                body = {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": SYNTHETIC_MODEL,
                    "content": [block],
                }
                out.append(self._assistant(body, key=f"{key}/{k}", ref=ref))
            return out
        content = msg.get("content")
        value = content if isinstance(content, str) else blocks.content_to_blocks(content)
        if role in ("system", "developer"):
            return [self._user(value, key=key, ref=ref, isMeta=True)]
        return [self._user(value, key=key, ref=ref)]

    def _assistant(self, body: Obj, *, key: str, ref: Obj) -> Obj:
        return {
            "parentUuid": None,
            **self._envelope(ref),
            "message": body,
            "type": "assistant",
            "uuid": self.ids.new(key),
            "timestamp": self._timestamp(ref),
        }

    def _copy(self, obj: Obj) -> Obj:
        """A kept head line repeated after the summary, under a fresh uuid."""
        return {**obj, "uuid": self.ids.new(f"copy/{obj.get('uuid')}")}

    def _clone(self, index: int, content: list[Any], *, key: str) -> Obj:
        obj = line(self.doc, index)
        fresh = self.ids.new(f"clone/{key}")
        return {**obj, "message": {**obj["message"], "content": content}, "uuid": fresh}

    def _markers(self, summary: Message) -> tuple[Slot, Slot]:
        ref = self.env_ref
        boundary = {
            "parentUuid": None,
            # The lines before the boundary leave the file (the archive keeps
            # them); a back-pointer to a missing line trips some readers.
            "logicalParentUuid": None,
            **self._envelope(ref),
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "isMeta": False,
            "timestamp": self._timestamp(ref),
            "uuid": self.ids.new("boundary"),
            "level": "info",
            # No preTokens: the count before the summary depends on whether
            # pruning ran in the same command or an earlier one, and the
            # output must not.
            "compactMetadata": {"trigger": "manual", "postTokens": self.post_tokens()},
        }
        text = m.text(summary)
        note = self._user(
            text, key="summary", ref=ref, isVisibleInTranscriptOnly=True, isCompactSummary=True
        )
        return Slot(boundary, None), Slot(note, None)

    def post_tokens(self) -> int:
        return self.counter.messages(self.session.messages)

    def _copies(self, head: list[tuple[Message, Message | None]]) -> list[Slot]:
        out: list[Slot] = []
        remap: dict[str, str] = {}
        copied: set[int] = set()
        for msg, orig in head:
            for kind, value in self._emissions(msg, orig):
                if kind == "line" and value in copied:
                    continue
                if kind == "line":
                    copied.add(value)
                # A new line is copied too: written by an earlier run, it
                # would be an old line here, copied under the same uuid.
                state = value if kind == "new" else self.state.get(value) or line(self.doc, value)
                copy = self._copy(state)
                if isinstance(state.get("uuid"), str):
                    remap[state["uuid"]] = copy["uuid"]
                out.append(Slot(copy, None))
        for slot in out:
            source = slot.obj.get("sourceToolAssistantUUID")
            if isinstance(source, str) and source in remap:
                slot.obj["sourceToolAssistantUUID"] = remap[source]
        return out

    # -- chain and placement ----------------------------------------------

    def _link(self, seq: list[Slot], *, compacted: bool) -> None:
        previous: str | None = None
        for n, slot in enumerate(seq):
            if n == 0:
                keep = not compacted and self.chain and slot.line == self.chain[0]
                parent = slot.obj.get("parentUuid") if keep else None
            else:
                parent = previous
            if "parentUuid" not in slot.obj:
                slot.obj = {"parentUuid": parent, **slot.obj}
            elif slot.obj["parentUuid"] != parent:
                slot.obj = {**slot.obj, "parentUuid": parent}
            previous = slot.obj.get("uuid")

    def _place(self, seq: list[Slot], edits: jsonl.Edits, *, compacted: bool) -> None:
        existing = [n for n, slot in enumerate(seq) if slot.line is not None]
        for n, slot in enumerate(seq):
            if slot.line is not None:
                if slot.obj is not self.doc.objs[slot.line]:
                    edits.replace[slot.line] = jsonl.dump(slot.obj, like=self.doc.raw[slot.line])
                continue
            data = jsonl.dump(slot.obj)
            after_n = next((k for k in existing if k > n), None)
            before_n = next((k for k in reversed(existing) if k < n), None)
            if after_n is not None:
                edits.insert([data], before=seq[after_n].line)
            elif before_n is not None:
                edits.insert([data], before=None, after=seq[before_n].line)
            else:
                edits.insert([data], before=None)
        placed = {slot.line for slot in seq if slot.line is not None}
        if compacted:
            edits.delete.update(i for i in self.chain if i not in placed and self.replaced(i))
            edits.delete.update(self.earlier_history())
        elif placed:
            cut = min(placed)
            edits.delete.update(i for i in self.chain if i > cut and i not in placed)

    def replaced(self, index: int) -> bool:
        """Whether a chain line left out of a compaction leaves the file."""
        return True

    def earlier_history(self) -> set[int]:
        return history_behind(self.doc, self.chain)


def _content(obj: Obj) -> list[Any]:
    content = obj["message"].get("content")
    return content if isinstance(content, list) else [{"type": "text", "text": content}]
