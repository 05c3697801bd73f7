"""What the LLM summarizer is asked, read off the requests a loopback server records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxpack import formats
from ctxpack.errors import StrictFallbackError
from ctxpack.pipeline.compaction import CompressSettings, compress_transcript
from ctxpack.summarize.llm.client import LLMSummarizer
from ctxpack.summarize.llm.errors import SummaryFailed
from ctxpack.summarize.llm.prompts import SYSTEM_PROMPT
from ctxpack.summarize.offline.summarizer import OfflineSummarizer
from ctxpack.summarize.protocol import HEADINGS, SummaryRequest
from ctxpack.summarize.serialize import HEAD_TURN_CHARS
from ctxpack.summarize.stage import run_summary
from ctxpack.tokens.counter import TokenCounter
from tests.llm_server import (
    FakeLLM,
    Received,
    Reply,
    completion,
    llm_server_fixture,  # noqa: F401
    model_part,
    ok,
    settings_for,
    summary_text,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
HAIKU = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"

MIDDLE: list[dict[str, Any]] = [
    {"role": "user", "content": "Now make the retry test pass."},
    {"role": "assistant", "content": "Editing src/db.py."},
]


def _haiku_request(server: FakeLLM, counter: TokenCounter) -> Received:
    """The first request `compress` sends for a real Claude Code session."""
    server.responder = lambda body: ok("haiku")
    transcript = formats.read(HAIKU.read_bytes(), path=str(HAIKU))
    settings = CompressSettings(force=True, llm=settings_for(server))
    compress_transcript(transcript, counter=counter, settings=settings)
    return server.received[0]


def _send(server: FakeLLM, counter: TokenCounter, **kwargs: Any) -> Received:
    server.script(ok())
    values: dict[str, Any] = {"middle": MIDDLE, "budget_tokens": 2000, **kwargs}
    LLMSummarizer(settings_for(server)).summarize(SummaryRequest(**values), counter=counter)
    return server.received[-1]


def ok_text(text: str) -> Reply:
    return Reply(body=completion(text))


def _section(text: str, tag: str) -> str:
    return text.split(f"<{tag}>\n", 1)[1].split(f"\n</{tag}>", 1)[0]


# --- the opening turns ------------------------------------------------------


def test_a_real_sessions_opening_turns_go_as_context_not_as_turns(
    llm_server: FakeLLM, counter: TokenCounter
) -> None:
    user = _haiku_request(llm_server, counter).user_text()
    head = _section(user, "kept_opening_turns")
    assert head.startswith("[USER]: $(cat /tmp/testgen_instruction.txt)\n\n[ASSISTANT]: ")
    # The task file the agent read first, clipped like every later opening turn.
    assert "[TOOL RESULT: Read]: 1→# TestGen Protocol Active (v2)" in head
    assert "TestGen Protocol Active" not in _section(user, "turns")
    assert "stay in the transcript word for word, before your record: do not summarize" in user


def test_the_first_user_message_goes_whole_and_later_opening_turns_clipped(
    llm_server: FakeLLM, counter: TokenCounter
) -> None:
    task = "Port the billing exporter to the v2 API. " * 200  # 8,200 characters
    head = [
        {"role": "system", "content": "You are a coding agent. " * 200},
        {"role": "user", "content": task},
        {"role": "assistant", "content": "Reading the exporter. " * 200},
    ]
    user = _send(llm_server, counter, head=head).user_text()
    shown = _section(user, "kept_opening_turns").split("\n\n")
    system, first, reply = shown
    assert first == f"[USER]: {task.strip()}"
    assert len(system) < HEAD_TURN_CHARS + 40 and "chars omitted]…" in system
    assert len(reply) < HEAD_TURN_CHARS + 40 and "chars omitted]…" in reply


def test_opening_turns_past_their_share_of_the_context_are_left_out(
    llm_server: FakeLLM, counter: TokenCounter
) -> None:
    # A 4,000-token summarizer context leaves the opening turns 400 tokens, 1,600 characters.
    head = [{"role": "user", "content": f"turn {i}: " + "words " * 100} for i in range(6)]
    llm_server.script(ok())
    request = SummaryRequest(middle=MIDDLE, budget_tokens=500, head=head)
    settings = settings_for(llm_server, summarizer_context=4000)
    LLMSummarizer(settings).summarize(request, counter=counter)
    shown = _section(llm_server.received[0].user_text(), "kept_opening_turns")
    assert shown.startswith("[USER]: turn 0: words") and "turn 1: " in shown
    assert "turn 2: " not in shown
    assert shown.endswith("[NOTE]: 4 later opening turns are not shown.")


def test_no_opening_turns_means_no_such_section(llm_server: FakeLLM, counter: TokenCounter) -> None:
    assert "kept_opening_turns" not in _send(llm_server, counter).user_text()


# --- tool arguments and reasoning -------------------------------------------


def test_a_real_heredoc_reaches_the_model_as_its_own_lines(
    llm_server: FakeLLM, counter: TokenCounter
) -> None:
    turns = _section(_haiku_request(llm_server, counter).user_text(), "turns")
    assert "→ Bash(\n  command: |\n    python3 << 'EXPAND_EOF'\n    # Generate test cases" in turns
    assert "EXPAND_EOF\\n" not in turns and '"command":' not in turns


def test_arguments_are_key_value_lines_and_short_ones_stay_on_one_line(
    llm_server: FakeLLM, counter: TokenCounter
) -> None:
    content = "def retry():\n    return 3\n"
    calls = [
        {"name": "Write", "args": {"file_path": "src/db.py", "content": content}},
        {"name": "Grep", "args": {"pattern": "retry", "head_limit": 5, "multiline": False}},
    ]
    middle = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": f"c{i}",
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call["args"])},
                }
                for i, call in enumerate(calls)
            ],
        }
    ]
    turns = _section(_send(llm_server, counter, middle=middle).user_text(), "turns")
    assert turns == (
        "[ASSISTANT]: → Write(\n"
        "  file_path: src/db.py\n"
        "  content: |\n"
        "    def retry():\n"
        "        return 3\n"
        ")\n"
        "→ Grep(pattern: retry, head_limit: 5, multiline: false)"
    )


def test_omitted_reasoning_is_announced_not_sent(
    llm_server: FakeLLM, counter: TokenCounter
) -> None:
    thought = "The lock error means the retry must wrap the commit."
    middle = [
        {"role": "user", "content": "Why does it fail?"},
        {"role": "assistant", "content": "It is the lock.", "reasoning_content": thought},
    ]
    received = _send(llm_server, counter, middle=middle)
    turns = _section(received.user_text(), "turns")
    assert turns.endswith(
        f"[ASSISTANT]: It is the lock.\n[reasoning omitted: {len(thought)} characters]"
    )
    assert thought not in received.all_text()
    assert "`[reasoning omitted: N characters]`" in SYSTEM_PROMPT


def test_a_real_sessions_thinking_is_counted(llm_server: FakeLLM, counter: TokenCounter) -> None:
    turns = _section(_haiku_request(llm_server, counter).user_text(), "turns")
    assert "Let me generate the test scaffold using the deterministic script:\n" in turns
    assert "[reasoning omitted: 17412 characters]" in turns
    assert "The user wants me to follow the TestGen Protocol v2" not in turns


def test_refs_are_explained_once_and_sent_verbatim(
    llm_server: FakeLLM, counter: TokenCounter
) -> None:
    ref = "ctxpack:1a2b3c4d5e"
    middle = [*MIDDLE, {"role": "user", "content": f"[output pruned; full text: {ref}]"}]
    received = _send(llm_server, counter, middle=middle)
    assert SYSTEM_PROMPT.count("`ctxpack:") == 1
    assert "names the archived full text of a tool output" in SYSTEM_PROMPT
    assert f"[USER]: [output pruned; full text: {ref}]" in received.user_text()


# --- how long ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("messages", "budget", "asked"),
    [
        # Two short turns: the floor.
        (0, 2000, 400),
        # Eight turns of "[USER]: " + 4,990 characters, two-character gaps: 10,000 tokens; 40%.
        (8, 8000, 4000),
        # The same turns under a smaller budget: the budget.
        (8, 2000, 2000),
    ],
)
def test_the_length_asked_follows_the_turns(
    llm_server: FakeLLM, counter: TokenCounter, messages: int, budget: int, asked: int
) -> None:
    middle = [{"role": "user", "content": "x" * 4990}] * messages or MIDDLE
    user = _send(llm_server, counter, middle=middle, budget_tokens=budget).user_text()
    assert f"Length: about {asked} tokens (about {asked * 3 // 4} words) at most" in user


def test_an_update_asks_for_room_to_carry_the_earlier_record(
    llm_server: FakeLLM, counter: TokenCounter
) -> None:
    previous = summary_text("earlier " * 50)  # the record alone is over 1,000 tokens
    user = _send(llm_server, counter, previous_summary=previous, budget_tokens=5000).user_text()
    turns = len(_section(user, "new_turns"))
    expected = int(-(-turns // 4) * 0.4) + -(-len(previous) // 4)
    assert expected > 1000 and f"Length: about {expected} tokens" in user


# --- empty sections and the form of Completed Actions ------------------------


def test_an_empty_section_may_say_none_once(llm_server: FakeLLM, counter: TokenCounter) -> None:
    assert "a section with nothing to record gets one short line `None`" in SYSTEM_PROMPT
    assert "then write `None.`" not in SYSTEM_PROMPT
    reply = "\n\n".join(
        f"## {h}\n{'1. RAN pytest — passed' if h == 'Completed Actions' else '- None'}"
        if i % 2
        else f"## {h}\nNone"
        for i, h in enumerate(HEADINGS)
    )
    llm_server.script(ok_text(reply))
    result = LLMSummarizer(settings_for(llm_server)).summarize(
        SummaryRequest(middle=MIDDLE, budget_tokens=2000), counter=counter
    )
    assert model_part(result.text) == reply


BULLETED = summary_text().replace("1. RAN", "- RAN").replace("2. RAN", "- RAN")


def test_bulleted_completed_actions_are_refused(llm_server: FakeLLM, counter: TokenCounter) -> None:
    assert "Completed Actions is a numbered list (`1. ...`), never bullets." in SYSTEM_PROMPT
    llm_server.script(ok_text(BULLETED))
    with pytest.raises(SummaryFailed) as info:
        LLMSummarizer(settings_for(llm_server)).summarize(
            SummaryRequest(middle=MIDDLE, budget_tokens=2000), counter=counter
        )
    assert info.value.message == (
        "the reply's Completed Actions are not a numbered list ('- RAN pytest -q — 1 failures "
        "left [tool: bash]')"
    )


def test_a_bulleted_reply_falls_back_like_any_unusable_one(
    llm_server: FakeLLM, counter: TokenCounter
) -> None:
    request = SummaryRequest(middle=MIDDLE, budget_tokens=2000)
    llm_server.script(ok_text(BULLETED), ok_text(BULLETED))
    result = run_summary(
        request,
        counter=counter,
        llm=settings_for(llm_server),
        on_failure="fallback",
        offline=OfflineSummarizer(),
    )
    assert result.source == "offline"
    assert result.warnings[0].startswith(
        "LLM summary failed (the reply's Completed Actions are not a numbered list"
    )
    with pytest.raises(StrictFallbackError):
        run_summary(
            request,
            counter=counter,
            llm=settings_for(llm_server),
            on_failure="strict",
            offline=OfflineSummarizer(),
        )


def test_numbered_actions_may_carry_indented_and_fenced_lines(
    llm_server: FakeLLM, counter: TokenCounter
) -> None:
    actions = "1. RAN the migration [tool: bash]\n```\npsql -f up.sql\n```\n2. READ logs\n   (long)"
    reply = summary_text().replace(
        summary_text().split("## Completed Actions\n", 1)[1].split("\n\n", 1)[0], actions
    )
    llm_server.script(ok_text(reply))
    result = LLMSummarizer(settings_for(llm_server)).summarize(
        SummaryRequest(middle=MIDDLE, budget_tokens=2000), counter=counter
    )
    assert f"## Completed Actions\n{actions}\n\n" in model_part(result.text)
