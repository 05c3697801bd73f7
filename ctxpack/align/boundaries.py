"""Stage 2: where the verbatim head ends and the verbatim tail begins.

Everything between the two boundaries (the middle) is what the summarizer
replaces. The rules, in the order they apply:

1. Head: the leading system/developer messages plus the first
   `protect_first` others. When the transcript already holds a compaction
   summary, the head is everything before the first one: those turns were
   the head of the earlier compaction (the user's original task) and stay
   verbatim round after round. The (latest) summary is summarized again as
   the previous summary (`previous_summary_index`), so compaction updates
   the record in place instead of nesting a second one.
2. The middle never starts on a tool result: the head grows forward over them.
3. Tail: walk back from the end summing message tokens and stop before the
   message that would pass 1.5 x the tail budget. When everything after the
   head fits, walk again with the plain budget so a forced run still has
   something to compress.
4. The tail keeps at least max(3, min(protect_last, 8)) messages (`floor`),
   but leaves at least 2 messages to compress (`min-middle`); a tail below 3
   messages means there is nothing to compress.
5. The tail never starts on a tool result: it moves back to the assistant
   message that made the calls. No boundary separates a call from a result.
6. Anchors: the latest real user message and the latest assistant message
   with visible text move into the tail. An anchor that cannot move there
   without leaving fewer than 2 messages to compress (it is the first or
   second message after the head) or without pulling the previous summary
   into the tail is not kept alone on the far side of the cut: its whole turn
   (the user message, the assistant reply and that reply's tool results; for
   assistant text, the message and its results) goes into the middle, and the
   tail starts no earlier than the end of that turn (`turn-to-middle`).
   The summary then carries that request; `latest_user_index` tells the
   summarizer it is the active one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxpack import messages as m
from ctxpack.align.budget import Budget
from ctxpack.align.plan import (
    Adjustment,
    AdjustmentKind,
    AlignPlan,
)
from ctxpack.align.protect import head_end as protected_head
from ctxpack.align.protect import walk_back
from ctxpack.markers import is_summary, summary_indexes
from ctxpack.tokens.counter import TokenCounter
from ctxpack.toolpairs import pair
from ctxpack.transcript import Message

if TYPE_CHECKING:
    from ctxpack.sessionindex import SessionIndex

SOFT_CEILING_FACTOR = 1.5
MIN_MIDDLE = 2
FLOOR_CAP = 8


def plan_boundaries(
    messages: list[Message],
    *,
    counter: TokenCounter,
    budget: Budget,
    index: SessionIndex | None = None,
) -> AlignPlan:
    """`index`: the run's index of the session `messages` is (or a version of),
    whose pairing and records the plan reads."""
    return _Planner(messages, counter=counter, budget=budget, index=index).plan()


def latest_user_index(messages: list[Message]) -> int | None:
    """The latest real user message: a user turn with something in it (text or an
    image), not a summary or a tool result."""
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if (
            m.role(msg) == "user"
            and not is_summary(msg)
            and (m.has_visible_text(msg) or m.image_count(msg))
        ):
            return i
    return None


def latest_assistant_text_index(messages: list[Message]) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if m.role(msg) == "assistant" and m.has_visible_text(msg) and not is_summary(msg):
            return i
    return None


class _Planner:
    def __init__(
        self,
        messages: list[Message],
        *,
        counter: TokenCounter,
        budget: Budget,
        index: SessionIndex | None,
    ) -> None:
        self.messages = messages
        self.n = len(messages)
        self.budget = budget
        # The pairing and the records need no counts: on a large session they
        # are found while child processes count.
        with counter.counting(messages):
            if index is None:
                links, records = pair(messages).links, summary_indexes(messages)
            else:
                links, records = index.pairing_of(messages).links, index.summaries(messages)
        self.tokens = [counter.message(msg) for msg in messages]
        # (call index, last result index) for every call that has a result.
        spans: dict[int, int] = {}
        for result, use in links.items():
            if use.index < result:
                spans[use.index] = max(spans.get(use.index, result), result)
        self.spans = sorted(spans.items())
        self.links = {r: use.index for r, use in links.items()}
        self.adjustments: list[Adjustment] = []
        self.prev = records[-1] if records else None
        self.first = records[0] if records else None
        self.tail_budget = budget.tail_budget
        self.min_tail = budget.min_tail
        self.ceiling = int(SOFT_CEILING_FACTOR * self.tail_budget)

    def _adjust(self, kind: AdjustmentKind, reason: str, old: int, new: int) -> None:
        self.adjustments.append(Adjustment(kind, reason, old, new))

    def _forward(self, b: int) -> int:
        """First boundary at or after b that starts on no tool result and cuts no pair."""
        while b < self.n:
            if m.is_tool_result(self.messages[b]):
                b += 1
                continue
            reach = [r for c, r in self.spans if c < b <= r]
            if not reach:
                break
            b = max(reach) + 1
        return b

    def _back(self, b: int) -> int:
        """Last boundary at or before b that starts on no tool result and cuts no pair."""
        while 0 < b < self.n:
            if m.is_tool_result(self.messages[b]):
                call = self.links.get(b)
                b = call if call is not None and call < b else b - 1
                continue
            callers = [c for c, r in self.spans if c < b <= r]
            if not callers:
                break
            b = min(callers)
        return b

    def _walk(self, start: int, ceiling: int) -> int:
        return walk_back(self.n, stop=start, ceiling=ceiling, tokens=self.tokens.__getitem__)

    def _head(self) -> int:
        if self.first is not None:
            head_end = self.first
        else:
            head_end = protected_head(self.messages, protect_first=self.budget.protect_first)
        aligned = self._forward(head_end)
        if aligned != head_end:
            self._adjust(
                "aligned-forward",
                f"the middle would start on tool result #{head_end}; the head takes the "
                f"results of its calls",
                head_end,
                aligned,
            )
        return aligned

    def _turn_end(self, k: int) -> int:
        """End (exclusive) of the turn that starts at k: the message, the assistant
        reply when k is a user message, and that reply's tool results."""
        j = k + 1
        replied = j < self.n and m.role(self.messages[j]) == "assistant"
        if m.role(self.messages[k]) == "user" and replied:
            j += 1
        return self._forward(j)

    def _anchorable(self, k: int, head_end: int) -> bool:
        if k < head_end + MIN_MIDDLE:
            return False
        return self.prev is None or k > self.prev

    def _why_not(self, k: int, head_end: int) -> str:
        if self.prev is not None and k < self.prev:
            return f"it precedes the existing summary #{self.prev}"
        return (
            f"it is message {k - head_end + 1} after the head and keeping it would leave "
            f"fewer than {MIN_MIDDLE} messages to compress"
        )

    def plan(self) -> AlignPlan:
        head_end = self._head()
        user = latest_user_index(self.messages)
        text = latest_assistant_text_index(self.messages)
        rest = self.n - head_end
        if rest < MIN_MIDDLE + self.min_tail:
            return self._finish(
                head_end,
                head_end,
                user,
                text,
                f"nothing to compress: {rest} message(s) after the head; at least "
                f"{MIN_MIDDLE + self.min_tail} are needed ({MIN_MIDDLE} to compress, "
                f"{self.min_tail} to keep)",
            )
        cut = self._tail(head_end)
        cut, turn = self._anchor_user(cut, head_end, user)
        cut = self._anchor_text(cut, head_end, text, user, turn)
        aligned = self._back(cut)
        if aligned != cut:
            self._adjust(
                "aligned-back",
                f"the tail would split the calls before #{cut} from their results",
                cut,
                aligned,
            )
            cut = aligned
        return self._finish(head_end, cut, user, text, self._verdict(head_end, cut))

    def _tail(self, head_end: int) -> int:
        cut = self._walk(head_end, self.ceiling)
        if cut <= head_end:
            raw = self._walk(head_end, self.tail_budget)
            self._adjust(
                "all-fits",
                f"all {self.n - head_end} messages after the head fit in the soft ceiling "
                f"({self.ceiling:,} tokens); walked again with the tail budget itself "
                f"({self.tail_budget:,})",
                cut,
                raw,
            )
            self.ceiling = self.tail_budget
            cut = raw
        floor = max(self.min_tail, min(self.budget.protect_last, FLOOR_CAP))
        floored = max(self.n - floor, head_end)
        if floored < cut:
            why = f"the tail keeps at least {floor} messages"
            if floored == head_end:
                why += " (here: everything after the head)"
            self._adjust("floor", why, cut, floored)
            cut = floored
        if cut < head_end + MIN_MIDDLE:
            self._adjust(
                "min-middle",
                f"at least {MIN_MIDDLE} messages are left to compress",
                cut,
                head_end + MIN_MIDDLE,
            )
            cut = head_end + MIN_MIDDLE
        aligned = self._back(cut)
        if aligned != cut and aligned < head_end + MIN_MIDDLE:
            # Moving back would leave too little to compress: take the whole tool
            # group into the middle instead and start the tail after it.
            ahead = self._forward(cut)
            if ahead < self.n - self.min_tail + 1:
                self._adjust(
                    "aligned-forward",
                    f"the tail would start inside the tool group at #{cut}; moving back "
                    f"would leave under {MIN_MIDDLE} messages to compress, so it starts "
                    f"after the group",
                    cut,
                    ahead,
                )
                aligned = cut = ahead
        if aligned != cut:
            self._adjust(
                "aligned-back",
                f"the tail would start on tool result #{cut} or split a call from its "
                f"results; it starts at the assistant that made the calls",
                cut,
                aligned,
            )
            cut = aligned
        if self.prev is not None and cut <= self.prev:
            after = self._forward(self.prev + 1)
            self._adjust(
                "previous-summary",
                f"the existing summary #{self.prev} is summarized again, so the tail "
                f"starts after it",
                cut,
                after,
            )
            cut = after
        return cut

    def _anchor_user(
        self, cut: int, head_end: int, user: int | None
    ) -> tuple[int, tuple[int, int] | None]:
        if user is None or user < head_end or user >= cut:
            return cut, None
        if self._anchorable(user, head_end):
            self._adjust(
                "anchor-user",
                f"the latest user message #{user} stays in the tail",
                cut,
                user,
            )
            return user, None
        end = self._turn_end(user)
        new = max(cut, end)
        self._adjust(
            "turn-to-middle",
            f"the latest user message #{user} cannot stay in the tail "
            f"({self._why_not(user, head_end)}); its turn "
            f"#{user}-#{end - 1} goes into the middle together, and the summary carries "
            f"it as the active request",
            cut,
            new,
        )
        return new, (user, end)

    def _anchor_text(
        self,
        cut: int,
        head_end: int,
        text: int | None,
        user: int | None,
        turn: tuple[int, int] | None,
    ) -> int:
        if text is None or text < head_end or text >= cut:
            return cut
        if turn is not None and text < turn[1]:
            where = "belongs to" if text >= turn[0] else "precedes"
            self._adjust(
                "turn-to-middle",
                f"the latest assistant text #{text} {where} the summarized turn of user "
                f"message #{user}; it is summarized too",
                cut,
                cut,
            )
            return cut
        if self._anchorable(text, head_end):
            self._adjust(
                "anchor-assistant",
                f"the latest assistant message with visible text #{text} stays in the tail",
                cut,
                text,
            )
            return text
        end = self._turn_end(text)
        new = max(cut, end)
        self._adjust(
            "turn-to-middle",
            f"the latest assistant text #{text} cannot stay in the tail "
            f"({self._why_not(text, head_end)}); it goes into the middle with its "
            f"results (#{text}-#{end - 1})",
            cut,
            new,
        )
        return new

    def _verdict(self, head_end: int, cut: int) -> str:
        if cut - head_end < MIN_MIDDLE:
            return (
                f"nothing to compress: the boundaries leave {max(cut - head_end, 0)} "
                f"message(s) in the middle; at least {MIN_MIDDLE} are needed"
            )
        if self.n - cut < self.min_tail:
            return (
                f"nothing to compress: the boundaries leave {self.n - cut} message(s) in the "
                f"tail; at least {self.min_tail} are needed"
            )
        if self.prev is not None and not head_end <= self.prev < cut:
            return f"nothing to compress: the existing summary #{self.prev} would stay verbatim"
        return ""

    def _finish(
        self, head_end: int, cut: int, user: int | None, text: int | None, note: str
    ) -> AlignPlan:
        if note:
            # Nothing is summarized: the middle is empty and everything after the
            # head stays verbatim.
            cut = head_end
        return AlignPlan(
            total=self.n,
            head_end=head_end,
            tail_start=cut,
            tokens_head=sum(self.tokens[:head_end]),
            tokens_middle=sum(self.tokens[head_end:cut]),
            tokens_tail=sum(self.tokens[cut:]),
            tail_budget=self.tail_budget,
            soft_ceiling=self.ceiling,
            compressible=not note,
            previous_summary_index=self.prev,
            latest_user_index=user,
            latest_assistant_text_index=text,
            note=note,
            adjustments=list(self.adjustments),
        )
