"""The retention gate: `--min-retention` thresholds and whether reports meet them."""

from __future__ import annotations

from ctxpack.errors import UsageError
from ctxpack.evaluate.retention import CATEGORIES, OVERALL, EvalReport, combine


def parse_min_retention(text: str) -> dict[str, float]:
    """ "0.9" -> {"overall": 0.9}; "paths=1,commands=0.9" -> per category."""
    thresholds: dict[str, float] = {}
    spec = text.strip()
    if not spec:
        raise UsageError("--min-retention needs a value, e.g. 0.9 or paths=1.0,commands=0.9")
    for part in spec.split(","):
        key, sep, value = part.partition("=")
        if not sep:
            key, value = OVERALL, part
        key = key.strip().lower()
        if key not in (*CATEGORIES, OVERALL):
            raise UsageError(
                f"--min-retention: unknown category {key!r}; known: "
                f"{', '.join((*CATEGORIES, OVERALL))}"
            )
        if key in thresholds:
            raise UsageError(f"--min-retention: {key} given twice")
        thresholds[key] = _share(value)
    return thresholds


def _share(value: str) -> float:
    text = value.strip()
    percent = text.endswith("%")
    try:
        number = float(text.removesuffix("%"))
    except ValueError:
        raise UsageError(f"--min-retention: {value.strip()!r} is not a number") from None
    if percent:
        number /= 100
    if not 0.0 <= number <= 1.0:
        raise UsageError(
            f"--min-retention: {value.strip()} is outside 0..1 (write 0.9 or 90%, not 90)"
        )
    return number


def gate(reports: list[EvalReport], thresholds: dict[str, float]) -> list[str]:
    """Why the reports fail the gate (empty: they pass). Retention is judged over
    all reports together; a failed check in any report fails too."""
    failures: list[str] = []
    whole = combine(reports) if reports else None
    for key, minimum in thresholds.items():
        if whole is None or not whole.found(key):
            continue
        found, kept = whole.found(key), whole.kept(key)
        # Unrounded: 19,999 of 20,000 must not pass a gate of 1.0.
        if kept / found < minimum:
            failures.append(
                f"{key} retention {kept / found:.1%} ({kept} of {found}) is below {minimum:.1%}"
            )
    for report in reports:
        for check in report.failed_checks:
            where = f"{report.label}: " if report.label else ""
            failures.append(f"{where}{check.name} failed: {check.detail}")
    return failures
