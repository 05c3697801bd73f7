"""What the assistant last said, as the record quotes it: its first two
sentences, none of them a list's number, and none past a sentence that
ends in a colon (what follows it, a list or a block, reads wrong out of it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxpack.facts.text import sentences
from ctxpack.summarize.offline.said import last_note
from tests.conftest import TAU_BENCH
from tests.test_tool_rules import cli_record

FLIGHTS = (
    "Here are the available direct flights from New York (JFK) to Seattle (SEA) on May 20th:"
    "\n\n1. **Flight HAT069**\n   - Departure: 06:00 AM EST\n\n2. **Flight HAT083**\n"
    "   - Departure: 01:00 AM EST\n\nPlease let me know which flight you would like."
)


def test_a_numbered_list_s_marker_is_no_sentence() -> None:
    assert list(sentences(FLIGHTS)) == [
        "Here are the available direct flights from New York (JFK) to Seattle (SEA) on May 20th:",
        "Flight HAT069",
        "Departure: 06:00 AM EST",
        "Flight HAT083",
        "Departure: 01:00 AM EST",
        "Please let me know which flight you would like.",
    ]
    assert list(sentences("Step 1. Run it. It took 2.")) == ["Step 1.", "Run it.", "It took 2."]


@pytest.mark.parametrize(
    ("bodies", "note"),
    [
        ([FLIGHTS], FLIGHTS.split("\n")[0]),
        (["Done. All 83 tests pass. Next, the docs."], "Done. All 83 tests pass."),
        (
            ["I checked the logs: nothing new. The build is green."],
            "I checked the logs: nothing new. The build is green.",
        ),
        (["Found it:", "1. "], "Found it:"),
        (["x" * 800, ""], None),
    ],
)
def test_the_last_note_quotes_up_to_two_sentences(bodies: list[str], note: str | None) -> None:
    assert last_note(bodies) == note


def test_the_cli_record_of_tau_bench_quotes_the_flights_line(tmp_path: Path) -> None:
    record = cli_record(TAU_BENCH, tmp_path)
    assert record["Historical In-Progress State"] == [
        "- The assistant's last message in these turns said: \"Here are the available direct"
        ' flights from New York (JFK) to Seattle (SEA) on May 20th:"'
    ]
