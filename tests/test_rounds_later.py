"""Round after round, a record goes on from the one it updates: its actions
are numbered after every action that record counted, shown or not."""

from __future__ import annotations

from pathlib import Path

from ctxpack import formats, markers
from ctxpack.align.budget import Budget
from ctxpack.formats.base import ReadOptions
from ctxpack.pipeline.compaction import CompressSettings, compress_messages
from ctxpack.summarize.ledger import user_words
from ctxpack.summarize.offline.progress import first_new_number
from ctxpack.summarize.offline.sections import PROGRESS_RE, progress_line
from ctxpack.summarize.template import COMPLETED_ACTIONS, max_number, parse
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message
from tests.conftest import SHARED

GEMINI = SHARED / "gemini" / "gemini-cli__ntm-agentteamscli__trajectory.json"


def _rounds(path: Path, window: int, parts: int) -> list[dict[str, list[str]]]:
    """The session compacted up to each of its `parts` user messages (the
    last part to its end), each round the output of the one before and the
    turns since: every round's record."""
    data = formats.read(path.read_bytes(), path=str(path), options=ReadOptions(skip_invalid=True))
    messages = max(data.sessions, key=lambda s: len(s.messages)).messages
    said = [i for i, msg in enumerate(messages) if user_words(msg) is not None]
    cuts = [said[len(said) * k // parts] for k in range(1, parts)] + [len(messages)]
    settings = CompressSettings(budget=Budget(context_length=window), force=True)
    out: list[Message] = []
    records = []
    start = 0
    for cut in cuts:
        out, _ = compress_messages(
            [*out, *messages[start:cut]], counter=TokenCounter(), settings=settings
        )
        start = cut
        record = next(markers.summary_body(m) for m in out if markers.is_summary(m))
        records.append(parse(record))
    return records


def _counted(record: dict[str, list[str]]) -> int:
    [found] = [m for m in map(PROGRESS_RE.match, record["Historical Task Snapshot"]) if m]
    return int(found.group(1))


def test_an_update_numbers_on_after_every_action_the_earlier_record_counted() -> None:
    # A record that had no room for its last two actions (a repeat of an
    # earlier one gives way first) shows up to 12 of the 14 it counted:
    # numbered from 13, the new actions would take the numbers the archived
    # turns gave those two, and the list would end short of the count.
    snapshot = [f"{progress_line(14, 2)}; the last: Read a.py — ok"]
    shown = [f"{n}. Read src/m{n}.py — ok" for n in range(1, 13)]
    earlier = {"Historical Task Snapshot": snapshot, COMPLETED_ACTIONS: shown}
    assert first_new_number(earlier) == 15
    # Where it showed every one, or counted none, the highest number shown leads.
    assert first_new_number({**earlier, COMPLETED_ACTIONS: [*shown, "14. Ran make — ok"]}) == 15
    assert first_new_number({COMPLETED_ACTIONS: shown}) == 13


def test_every_round_of_the_gemini_session_ends_its_list_at_its_count() -> None:
    for record in _rounds(GEMINI, 32_000, 2):
        assert max_number(record[COMPLETED_ACTIONS]) == _counted(record)


def test_a_question_in_an_ask_the_earlier_record_left_pending_is_shown_answered() -> None:
    # The first record quotes the ask clipped, and says it had no reply; the
    # assistant replied in the turns since, so the update shows the question
    # in it answered, as a single record of the whole session asks it, with
    # the reply those turns open with.
    first, second = _rounds(GEMINI, 32_000, 2)
    ask = first["Historical Pending User Asks"][0]
    assert ask.startswith('- "- Please stop grouping build & commit BUT first see below - ')
    assert ask.endswith(
        ' maybe we drop the borders around the…" (no reply recorded in these turns)'
    )
    assert second["Resolved Questions"] == [
        '- Q: "There seems like some rendering breaks with the bulleted list?"'
        " — A: \"I've updated the `TeamCreatorWizard` UI to refine the Roster step and align"
        " it with your feedback: Refined Roster UI: Removed Borders: Dropped the extra border"
        ' around the agent list for a cleaner, l… (+2 more)"'
    ]
    assert not any("borders" in item for item in second["Historical Pending User Asks"])


PI_LARGE = SHARED / "pi-agent" / "pi-mono__test__fixtures__large-session.jsonl"


def test_a_third_round_leads_only_its_own_turns_first_ask_as_since_the_previous_record() -> None:
    _, second, third = _rounds(PI_LARGE, 16_000, 3)
    dim = (
        "\"omfg that's it, now shit renders the same. ok, let's modify the grays in the"
        ' dark theme, the dim is too dim"'
    )
    assert f"- In the turns since the previous record, the user asked: {dim}" in second["Goal"]
    # The second round's ask came before the record the third updates. Where
    # room is short, the new turns' ask and state are kept before the earlier
    # Goal's later items: the first round's "The user stated: "we need to fix
    # the tui test sources."" gives way.
    assert third["Goal"][1:] == [
        f"- In turns before the previous record, the user asked: {dim}",
        '- The user stated: "ok, now we need to adjust the light theme accordingly."',
        "- In the turns since the previous record, the user asked:"
        ' "ok, copy the dark theme over to the .pi/agent/themes folder and let me try the'
        ' live edit"',
    ]


def test_an_update_ranks_the_files_edited_earlier_before_those_the_new_turns_only_mention() -> None:
    # Ranked as one round ranks its files (those the tools named, most recent
    # first, then those only words named), the third round of the large pi
    # session has room for the tests and the selector the earlier rounds
    # edited, not for an installed copy of a theme, a folder and screenshots
    # its turns only mention.
    *_, third = _rounds(PI_LARGE, 32000, 3)
    files = third["Relevant Files"]
    for edited in (
        "- packages/tui/test/editor.test.ts — edited, read",
        "- packages/tui/test/wrap-ansi.test.ts — edited, read",
        "- packages/coding-agent/src/tui/user-message-selector.ts — edited, read",
    ):
        assert edited in files
    dark = "/opt/homebrew/lib/node_modules/@mariozechner/pi-coding-agent/dist/theme/dark.json"
    assert f"- {dark} — mentioned" not in files
    assert "- ~/workspaces/pi-mono — mentioned" not in files
    assert not [text for text in files if "Screenshot" in text]
