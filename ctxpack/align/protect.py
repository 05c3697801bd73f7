"""The protected head and tail: what pruning leaves alone, and where alignment
starts before it moves the boundaries (ctxpack.align.boundaries).

- Head: the leading system/developer messages plus the first `protect_first`
  other messages.
- Tail walk: back from the end, the messages whose tokens add up to no more
  than a ceiling; the walk never enters the head.
- Pruning protects that head and the tail the walk finds under the tail
  budget, and never fewer than the last `protect_last` messages.
"""

from __future__ import annotations

from collections.abc import Callable

from ctxpack import messages as m
from ctxpack.align.budget import Budget
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message


def system_prefix_end(messages: list[Message]) -> int:
    """End of the leading run of system/developer messages."""
    end = 0
    while end < len(messages) and m.is_system(messages[end]):
        end += 1
    return end


def head_end(messages: list[Message], *, protect_first: int) -> int:
    return min(len(messages), system_prefix_end(messages) + protect_first)


def walk_back(count: int, *, stop: int, ceiling: int, tokens: Callable[[int], int]) -> int:
    """Start of the longest run of messages ending at `count` (not reaching
    below `stop`) whose tokens add up to at most `ceiling`. `tokens(i)` is asked
    only for the messages walked over."""
    start, total = count, 0
    while start > stop:
        cost = tokens(start - 1)
        if total + cost > ceiling:
            break
        total += cost
        start -= 1
    return start


def prune_bounds(
    messages: list[Message], *, counter: TokenCounter, budget: Budget
) -> tuple[int, int]:
    """(end of the head, start of the tail) that pruning leaves alone."""
    head = head_end(messages, protect_first=budget.protect_first)
    walked = walk_back(
        len(messages),
        stop=head,
        ceiling=budget.tail_budget,
        tokens=lambda i: counter.message(messages[i]),
    )
    return head, max(head, min(walked, len(messages) - budget.protect_last))
