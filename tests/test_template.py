"""The 13-heading template: rendering and parsing (ours and a model's)."""

from __future__ import annotations

import re

from ctxpack.summarize.protocol import HEADINGS, PRESERVED_FACTS_HEADING
from ctxpack.summarize.template import (
    EMPTY_LINE,
    PREAMBLE,
    item_key,
    max_number,
    parse,
    render,
)

# Strings from the Codex fixture (Trezo-Ai__codex-session.jsonl).
CARGO = "cargo test -p cfo_oracle"
MANIFEST = (
    "error: failed to load manifest for workspace member "
    "`/Users/anmolbhardwaj/Documents/New project/apps/process_tui`"
)
SECTIONS = {
    "Goal": [
        '- The user first asked: "help me apply for the agentic engineering grant by Superteam"'
    ],
    "Completed Actions": [
        "1. Ran `pwd` — exit 0 [tool: exec_command]",
        f"2. Ran `{CARGO}` — exit 101, {MANIFEST} [tool: exec_command]",
    ],
    "Blocked": [f"- Ran `{CARGO}` — exit 101; not resolved later [tool: exec_command]"],
    "Critical Context": [
        "- Command:\n```\nrsync -a src/ /tmp/cfo_oracle_grant_check/ &&\n  cargo test\n```",
        "- URL: https://superteam.fun/earn/grants/agentic-engineering",
    ],
}


def headings_of(text: str) -> list[str]:
    return re.findall(r"^## (.+)$", text, flags=re.MULTILINE)


def test_render_writes_every_heading_in_order_and_marks_empty_sections() -> None:
    text = render(SECTIONS)
    assert headings_of(text) == list(HEADINGS)
    goal = text.split("## Goal\n", 1)[1].split("\n\n", 1)[0]
    assert goal == SECTIONS["Goal"][0]
    snapshot = text.split("## Historical Task Snapshot\n", 1)[1].split("\n\n", 1)[0]
    assert snapshot == EMPTY_LINE


def test_parse_round_trips_items_including_fenced_multiline_ones() -> None:
    parsed = parse(render(SECTIONS))
    assert list(parsed) == list(HEADINGS)
    for heading in HEADINGS:
        assert parsed[heading] == SECTIONS.get(heading, [])


def test_parse_drops_placeholders_and_keeps_unknown_headings() -> None:
    text = (
        "Summary of earlier work.\n\n"
        "# goal\nShip the grant draft.\n\n"
        "**Completed Actions**\n1. Ran `pwd`\n2. Ran `ls`\n- (+3 other actions not shown)\n\n"
        "### Blocked\nNone.\n\n"
        f"## {PRESERVED_FACTS_HEADING}\n- Path: /tmp/cfo_oracle_grant_check/Cargo.toml\n"
    )
    parsed = parse(text)
    assert parsed[PREAMBLE] == ["Summary of earlier work."]
    assert parsed["Goal"] == ["Ship the grant draft."]
    assert parsed["Completed Actions"] == ["1. Ran `pwd`", "2. Ran `ls`"]
    assert parsed["Blocked"] == []
    assert parsed[PRESERVED_FACTS_HEADING] == ["- Path: /tmp/cfo_oracle_grant_check/Cargo.toml"]


def test_numbering_helpers() -> None:
    items = SECTIONS["Completed Actions"]
    assert max_number(items) == 2
    assert item_key("12.  Ran   `pwd`") == item_key("- ran `pwd`") == "ran `pwd`"
