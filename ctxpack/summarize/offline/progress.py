"""How many actions the records of a session counted, round after round: an
update counts on from the earlier record's progress line, and numbers its own
actions after every one that record counted."""

from __future__ import annotations

import re
from dataclasses import replace

from ctxpack.summarize.offline.fit import Item
from ctxpack.summarize.offline.sections import PROGRESS_RE, progress_line
from ctxpack.summarize.template import COMPLETED_ACTIONS, Sections, max_number


def counted_on(snapshot: list[Item], old: list[str]) -> list[Item]:
    """The new snapshot with the earlier record's progress counted into its
    own: Completed Actions goes on from the earlier list, so the count is of
    every round's actions, not the new turns' alone. New turns with no
    action keep the earlier line as it was."""
    earlier = _progress(old)
    if not earlier:
        return snapshot
    recorded = sum(_count(found.group(1)) for found in earlier)
    failed = sum(_count(found.group(2)) for found in earlier)
    for at, item in enumerate(snapshot):
        found = PROGRESS_RE.match(item.text)
        if found:
            recorded += _count(found.group(1))
            failed += _count(found.group(2))
            counted = replace(item, text=progress_line(recorded, failed) + found.group(3))
            return [*snapshot[:at], counted, *snapshot[at + 1 :]]
    return [*snapshot, *(Item(found.group(0)) for found in earlier)]


def first_new_number(previous: Sections) -> int:
    """The number an update's first action takes: after every action the
    earlier record counted, shown or not. Where that record had no room for
    its last actions (a read gives way first), its highest number shown is
    lower than its count: numbered from there, the new actions would take
    numbers the archived turns gave others, and the list would end short of
    the count the snapshot states."""
    earlier = _progress(previous.get("Historical Task Snapshot", []))
    recorded = sum(_count(found.group(1)) for found in earlier)
    return max(recorded, max_number(previous.get(COMPLETED_ACTIONS, []))) + 1


def _progress(snapshot: list[str]) -> list[re.Match[str]]:
    """The progress lines of a record's snapshot: one, or more where an
    update carried an earlier round's line on."""
    return [found for found in map(PROGRESS_RE.match, snapshot) if found]


def _count(digits: str | None) -> int:
    return int(digits.replace(",", "")) if digits else 0
