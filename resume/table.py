"""The rows of the real-client check: one per client, fixture and variant,
what makes each one ok, and the table they are printed as."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Row:
    client: str
    fixture: str
    variant: str
    skip: str = ""
    accepted: bool = False
    records: int = 0
    order: str = ""  # empty when in order, else what is out of place
    pairs: str = ""
    prompt_last: bool = False
    warnings: list[str] = field(default_factory=list)
    detail: str = ""
    note: str = ""  # a ctxpack problem found while making this variant
    # The recall row only: '' when the tool result held the archived output,
    # else what went wrong; None on every other row.
    recall: str | None = None
    recalled: int = 0  # bytes of archived output the tool result held

    @property
    def ok(self) -> bool:
        if self.skip:
            return True
        if self.note:
            return False
        if self.recall is not None:
            ran = self.accepted and not self.pairs and self.prompt_last and not self.warnings
            return ran and not self.recall
        want = 0 if self.variant == "original" else 1
        return (
            self.accepted
            and self.records == want
            and not self.order
            and not self.pairs
            and self.prompt_last
            and not self.warnings
        )


def _mark(good: bool) -> str:
    return "ok" if good else "FAIL"


def table(rows: list[Row]) -> str:
    head = (
        "client",
        "fixture",
        "variant",
        "accepted",
        "record once",
        "order ok",
        "pairs ok",
        "prompt last",
        "recall",
        "warnings",
    )
    lines = [head]
    for r in rows:
        if r.skip:
            lines.append((r.client, r.fixture, r.variant, "skip", "-", "-", "-", "-", "-", r.skip))
            continue
        want = 0 if r.variant == "original" else 1
        if r.recall is None:
            records, order, recalled = f"{_mark(r.records == want)} ({r.records})", "", "-"
        else:
            # The recall run checks the tool result, not the compaction.
            records, order = "-", "-"
            recalled = f"{_mark(not r.recall)} ({r.recalled:,} bytes)"
        lines.append(
            (
                r.client,
                r.fixture[:48],
                r.variant,
                _mark(r.accepted),
                records,
                order or _mark(not r.order),
                _mark(not r.pairs),
                _mark(r.prompt_last),
                recalled,
                str(len(r.warnings)) + (" (ctxpack: see above)" if r.note else ""),
            )
        )
    widths = [
        max(len(line[i]) for line in lines[:1] + [ln for ln in lines if ln[3] != "skip"])
        for i in range(len(head))
    ]
    out = []
    for line in lines:
        cells = [c.ljust(w) for c, w in zip(line[:-1], widths[:-1], strict=True)] + [line[-1]]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)
