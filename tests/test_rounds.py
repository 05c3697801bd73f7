"""A record keeps what it kept, round after round: an update's budget is no
less than the record it updates (within the cap every record has), so the
user's constraints and the work done do not fall out of it one compaction
at a time, and what the user asked since the previous record reads as such."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxpack.align.budget import Budget
from tests.conftest import SHARED
from tests.test_tool_rules import cli_record

PI_LARGE = SHARED / "pi-agent" / "pi-mono__test__fixtures__large-session.jsonl"


@pytest.mark.parametrize(
    ("budget", "middle", "previous", "tokens"),
    [
        (Budget(), 1_000, 0, 2_000),
        (Budget(), 30_000, 0, 6_000),
        (Budget(), 10_000, 7_000, 7_000),
        (Budget(), 50_000, 3_000, 10_000),
        (Budget(), 10_000, 50_000, 10_000),
        # 40% of a 16,000-token threshold.
        (Budget(context_length=32_000), 1_000, 9_000, 6_400),
    ],
)
def test_an_update_s_budget_is_no_less_than_the_record_it_updates(
    budget: Budget, middle: int, previous: int, tokens: int
) -> None:
    assert budget.summary_budget(middle, previous_tokens=previous) == tokens


def test_the_large_pi_session_keeps_its_constraints_in_a_second_round(tmp_path: Path) -> None:
    first = cli_record(PI_LARGE, tmp_path, name="first.jsonl")
    second = cli_record(tmp_path / "first.jsonl", tmp_path, name="second.jsonl")
    constraints = first["Constraints & Preferences"]
    assert len(constraints) == 10 and not any("more)" in c for c in constraints)
    assert second["Constraints & Preferences"] == constraints
    # The ask the second round's turns hold follows the goal the first record holds.
    assert second["Goal"][: len(first["Goal"])] == first["Goal"]
    assert second["Goal"][-1].startswith(
        '- In the turns since the previous record, the user asked: "+314 - Tips for creating'
    )
    # Every action the first record named, the second names too.
    assert len(first["Completed Actions"]) >= 70
    assert set(first["Completed Actions"]) <= set(second["Completed Actions"])
