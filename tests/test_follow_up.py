"""What a record says of the turns it replaces, read as the model that
resumes from it: the follow-up to a task kept before it, and what the
assistant's last words in it came to."""

from __future__ import annotations

from ctxpack import formats
from ctxpack import messages as m
from ctxpack.summarize.offline.summarizer import OfflineSummarizer
from ctxpack.summarize.protocol import SummaryRequest
from ctxpack.summarize.template import parse
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message
from tests.conftest import SHARED, TAU_BENCH

THEN_ASKED = "- The user's first ask is kept before this record; in these turns, they then asked: "
OPENHANDS = SHARED / "openhands" / "OpenHands__tests__runtime__trajs__basic_gui_mode.json"


def session(path: str, number: int) -> list[Message]:
    with open(path, "rb") as f:
        data = formats.read(f.read(), path=path)
    return data.sessions[number].messages


def record(
    head: list[Message], middle: list[Message], counter: TokenCounter
) -> dict[str, list[str]]:
    request = SummaryRequest(middle=middle, head=head, budget_tokens=3000)
    return parse(OfflineSummarizer().summarize(request, counter=counter).text)


def test_an_answer_that_only_hands_over_an_id_is_no_follow_up(counter: TokenCounter) -> None:
    messages = session(str(TAU_BENCH), 3)
    head, middle = messages[:4], messages[4:28]
    assert m.text(head[1]).startswith("Hi! I need to change my flight back from Denver")
    assert m.text(middle[1]) == "Sure, it's sofia_kim_7287."
    assert record(head, middle, counter)["Goal"][0] == (
        f'{THEN_ASKED}"The departure is on May 27 for the Houston to Denver trip, and I need'
        ' the fastest return trip to Houston on the same day."'
    )
    # The user ID was all these turns' first ask said: with no other ask, the
    # record names the task kept before it.
    assert record(head, middle[:18], counter)["Goal"] == [
        '- The user first asked, in the turns kept before this record: "Hi! I need to change'
        ' my flight back from Denver to Houston to be the quickest one on May 27."'
    ]


def test_the_last_words_say_which_actions_followed_them(counter: TokenCounter) -> None:
    messages = session(str(OPENHANDS), 0)
    head, middle = messages[:3], messages[3:5]
    assert m.text(middle[0]) == "Let's create the main HTML file:"
    sections = record(head, middle, counter)
    assert sections["Completed Actions"] == [
        "1. Created /workspace/todo-app/index.html — ok [tool: str_replace_editor]"
    ]
    assert sections["Historical In-Progress State"] == [
        "- The assistant's last message in these turns said:"
        ' "Let\'s create the main HTML file:" (action 1 followed)'
    ]
    # The search the text announced, and the one after it, followed it; the
    # list of flights they found is followed by none.
    messages = session(str(TAU_BENCH), 3)
    (note,) = record(messages[:4], messages[4:28], counter)["Historical In-Progress State"]
    assert note == (
        "- The assistant's last message in these turns said: \"Thank you for the clarification."
        " Let's first find the quickest return flight from Denver to Houston on May 27.\""
        " (actions 9–10 followed)"
    )
    (note,) = record(messages[:4], messages[4:29], counter)["Historical In-Progress State"]
    assert note.startswith(
        "- The assistant's last message in these turns said: \"Here are the available one-stop"
    )
    assert note.endswith('PM…"')
