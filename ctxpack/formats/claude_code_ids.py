"""The uuids a writer gives the lines it adds to a Claude Code log.

A new uuid derives from the chain's root and what the line is for (the
boundary, a copy of line X, a new turn with this content), so an edit gets
the same uuid whether one run writes it or an earlier one did; a uuid the
file already holds is never given again.
"""

from __future__ import annotations

import uuid

from ctxpack.formats import jsonl
from ctxpack.formats.claude_code import line

NAMESPACE = uuid.UUID("6f1c3c2e-52a4-4c8e-9a63-2f0d0c6b7a11")


class LineIds:
    """The uuids of one conversation chain (the `number`th of its file)."""

    def __init__(self, doc: jsonl.Lines, chain: list[int], number: int) -> None:
        root = line(doc, chain[0]).get("uuid") if chain else None
        root = root if isinstance(root, str) else f"line-{chain[0] if chain else 0}"
        self.seed = f"{root}/{number}"
        self.taken = {
            str(obj["uuid"])
            for obj in doc.objs
            if obj is not None and isinstance(obj.get("uuid"), str)
        }

    def derived(self, key: str | None = None) -> uuid.UUID:
        """What `key` (or the chain itself) derives to, taken or not."""
        return uuid.uuid5(NAMESPACE, self.seed if key is None else f"{self.seed}/{key}")

    def new(self, key: str) -> str:
        """A uuid no line holds yet, the same for the same key on every run."""
        fresh = str(self.derived(key))
        bump = 0
        while fresh in self.taken:
            bump += 1
            fresh = str(self.derived(f"{key}/{bump}"))
        self.taken.add(fresh)
        return fresh
