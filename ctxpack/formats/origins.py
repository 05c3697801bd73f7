"""Which parsed message each output message stands for.

Stages keep unchanged messages as the very objects the reader produced and
replace changed ones with new dicts. A writer that must edit the source lines
of a changed message finds its original here: by identity first, then by the
ids a tool exchange carries, then by its unchanged text, then by position
between matched neighbours. Originals follow the output's order, so a writer
that edits lines in place never moves a message past another.
A summary inserted by the pipeline has no original (unless it was merged into
a tail message, whose text then starts the merged text).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ctxpack import markers
from ctxpack import messages as m
from ctxpack.transcript import Message, Session


@dataclass
class Resolved:
    # For each output message, the original it replaces (None: a new message).
    origin: list[Message | None]
    # id(original) -> the output message that replaces it (absent: dropped).
    output_of: dict[int, Message]

    def fate(self, original: Message) -> Message | None:
        return self.output_of.get(id(original))


def resolve(session: Session) -> Resolved:
    originals = [msg for msg, _ in session.originals]
    position = {id(msg): i for i, msg in enumerate(originals)}
    by_result: dict[str, int] = {}
    by_call: dict[str, int] = {}
    for i, msg in enumerate(originals):
        tcid = m.result_call_id(msg)
        if tcid and m.is_tool_result(msg):
            by_result.setdefault(tcid, i)
        for call in m.tool_calls(msg):
            if m.call_id(call):
                by_call.setdefault(m.call_id(call), i)
    out = session.messages
    found: list[int | None] = [None] * len(out)
    used: set[int] = set()
    for k, msg in enumerate(out):
        same = position.get(id(msg))
        if same is not None and originals[same] is msg and same not in used:
            found[k] = same
            used.add(same)
    for k, msg in enumerate(out):
        if found[k] is not None:
            continue
        linked = _by_ids(msg, by_result, by_call)
        if linked is not None and linked not in used and m.role(originals[linked]) == m.role(msg):
            found[k] = linked
            used.add(linked)
    _match_text(out, originals, found, used)
    _match_position(out, originals, found, used)
    origin = [originals[i] if i is not None else None for i in found]
    output_of = {id(orig): msg for orig, msg in zip(origin, out, strict=True) if orig is not None}
    return Resolved(origin=origin, output_of=output_of)


def _by_ids(msg: Message, by_result: dict[str, int], by_call: dict[str, int]) -> int | None:
    if m.is_tool_result(msg):
        return by_result.get(m.result_call_id(msg))
    for call in m.tool_calls(msg):
        if m.call_id(call) in by_call:
            return by_call[m.call_id(call)]
    return None


def _next_found(found: list[int | None], end: int) -> list[int]:
    """For each output message, the original of the next matched one after it."""
    nxt = [end] * len(found)
    last = end
    for k in range(len(found) - 1, -1, -1):
        nxt[k] = last
        at = found[k]
        if at is not None:
            last = at
    return nxt


def _unmatched(
    out: list[Message], found: list[int | None]
) -> Iterator[tuple[int, Message, int, bool]]:
    """(k, message, floor, past a new summary) for each output message with no
    original yet, in order. `floor` is the original of the last message matched
    before it, those the caller matches during the walk (by setting `found[k]`)
    included: a match above it keeps the output's order. Past a new summary
    that took no original, turns line up with the end (the tail), not the start."""
    floor, past_summary = -1, False
    for k, msg in enumerate(out):
        at = found[k]
        if at is not None:
            floor, past_summary = max(floor, at), False
            continue
        yield k, msg, floor, past_summary
        placed = found[k]
        if placed is not None:
            floor = placed
        elif markers.is_summary(msg):
            past_summary = True


def _match_text(
    out: list[Message], originals: list[Message], found: list[int | None], used: set[int]
) -> None:
    """A message a stage rebuilt with its text intact (its calls or reasoning
    stripped) is the unused original with that text between its neighbours'
    originals; past a new summary the search runs from the end."""
    high = _next_found(found, len(originals))
    texts: dict[int, str] = {}
    for k, msg, floor, past_summary in _unmatched(out, found):
        text = "" if markers.is_summary(msg) else m.text(msg)
        if not text.strip():
            continue
        window = range(floor + 1, high[k])
        for i in reversed(window) if past_summary else window:
            if i in used or m.role(originals[i]) != m.role(msg):
                continue
            if i not in texts:
                texts[i] = m.text(originals[i])
            if texts[i] == text:
                found[k] = i
                used.add(i)
                break


def _match_position(
    out: list[Message], originals: list[Message], found: list[int | None], used: set[int]
) -> None:
    """The rest take the nearest unused original of their role from their
    offset: counting on from the matched message before them or, past a new
    summary, back from the one after them. A turn found by its text when read
    back from an edited file is thus found by its place when the edit was not
    written, and a compaction gives the same file either way."""
    anchors = list(found)
    prev_k: list[int | None] = []
    last: int | None = None
    for k in range(len(out)):
        prev_k.append(last)
        if anchors[k] is not None:
            last = k
    next_k: list[int | None] = [None] * len(out)
    last = None
    for k in range(len(out) - 1, -1, -1):
        next_k[k] = last
        if anchors[k] is not None:
            last = k
    for k, msg, floor, past_summary in _unmatched(out, found):
        before_k, after_k = prev_k[k], next_k[k]
        low = anchors[before_k] if before_k is not None else -1
        high = anchors[after_k] if after_k is not None else len(originals)
        assert low is not None and high is not None
        if markers.is_summary(msg):
            placed = _merged_into(msg, originals, used, floor, high)
        else:
            after = max(low + (k - (before_k if before_k is not None else -1)), floor + 1)
            before = min(high - ((after_k if after_k is not None else len(out)) - k), high - 1)
            tries = range(before, floor, -1) if past_summary else range(after, high)
            placed = next(
                (i for i in tries if i not in used and m.role(originals[i]) == m.role(msg)),
                None,
            )
        if placed is not None:
            found[k] = placed
            used.add(placed)


def _merged_into(
    msg: Message, originals: list[Message], used: set[int], low: int, high: int
) -> int | None:
    """The tail message a summary was merged into: its own text comes after
    the summary (or before it, in a file an earlier version wrote)."""
    text = m.text(msg)
    for i in range(low + 1, high):
        own = m.text(originals[i])
        if (
            i not in used
            and m.role(originals[i]) == m.role(msg)
            and own.strip()
            and len(text) > len(own)
            and (text.endswith(own) or text.startswith(own))
        ):
            return i
    return None


def merged_summary(msg: Message, original: Message) -> str | None:
    """The summary text a stage merged into an original message, if it did:
    before the message's own text, or after it in a file an earlier version wrote."""
    text, own = m.text(msg), m.text(original)
    if not markers.is_summary(msg):
        return None
    if not own.strip():
        # A turn with no text of its own (only calls or reasoning) took the summary.
        rest = text.strip("\n")
    elif text.endswith(own) and len(text) > len(own):
        rest = text[: -len(own)].rstrip("\n")
    elif text.startswith(own):
        rest = text[len(own) :].lstrip("\n")
    else:
        return None
    return rest if markers.is_summary({"role": "user", "content": rest}) else None


def pairs(session: Session) -> list[tuple[Message, Message | None]]:
    """(output message, its original) in output order; a summary a stage merged
    into a tail message is split back out in front of that message's original,
    for formats that keep summaries in lines of their own."""
    res = resolve(session)
    items: list[tuple[Message, Message | None]] = []
    for msg, orig in zip(session.messages, res.origin, strict=True):
        summary = merged_summary(msg, orig) if orig is not None and msg is not orig else None
        if orig is not None and summary is not None:
            # The message keeps any other edit a stage made; only its text returns.
            own = {**msg, "content": orig.get("content")}
            items += [
                ({"role": "user", "content": summary}, None),
                (own if own != orig else orig, orig),
            ]
        else:
            items.append((msg, orig))
    return items


def first_new_summary(items: list[tuple[Message, Message | None]]) -> int | None:
    return next(
        (k for k, (msg, orig) in enumerate(items) if orig is None and markers.is_summary(msg)),
        None,
    )
