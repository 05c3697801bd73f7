"""Stage 3 orchestration: LLM when configured, offline otherwise, and the fallback rules."""

from __future__ import annotations

from typing import Any

import pytest

from ctxpack import markers
from ctxpack.errors import StrictFallbackError, SummarizerError
from ctxpack.summarize.protocol import HEADINGS, SummaryRequest, SummaryResult
from ctxpack.summarize.stage import run_summary
from ctxpack.tokens.counter import TokenCounter
from tests.llm_server import (
    FAST_RETRY,
    FakeLLM,
    Reply,
    completion,
    error,
    llm_server_fixture,  # noqa: F401
    model_part,
    ok,
    settings_for,
    summary_text,
)

MIDDLE = [
    {"role": "user", "content": "Rename the config loader and keep the old name as an alias."},
    {"role": "assistant", "content": "Renamed load_cfg to load_config in app/config.py."},
]
REQUEST = SummaryRequest(middle=MIDDLE, budget_tokens=2000)
OFFLINE_TEXT = "\n\n".join(f"## {h}\n(offline)" for h in HEADINGS)


class StubOffline:
    """Stands in for the offline summarizer and records what it was asked."""

    name = "offline"

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest, *, counter: TokenCounter) -> SummaryResult:
        self.requests.append(request)
        return SummaryResult(text=OFFLINE_TEXT, source="offline", warnings=["offline note"])


def _run(settings: Any, counter: TokenCounter, **kwargs: Any) -> tuple[SummaryResult, StubOffline]:
    offline = StubOffline()
    options: dict[str, Any] = {"on_failure": "fallback"}
    options.update(kwargs)
    result = run_summary(REQUEST, counter=counter, llm=settings, offline=offline, **options)
    return result, offline


def test_no_endpoint_uses_the_offline_summarizer(counter: TokenCounter) -> None:
    result, offline = _run(None, counter)
    assert result.source == "offline" and result.text == OFFLINE_TEXT
    assert result.warnings == ["offline note"]
    assert offline.requests == [REQUEST]


def test_llm_success_needs_no_offline(llm_server: FakeLLM, counter: TokenCounter) -> None:
    llm_server.script(ok("llm"))
    result, offline = _run(settings_for(llm_server), counter)
    assert (result.source, result.model) == ("llm", "test-model")
    assert model_part(result.text) == summary_text("llm")
    assert result.warnings == [] and offline.requests == []


def test_server_errors_on_every_try_fall_back_with_a_warning(
    llm_server: FakeLLM, counter: TokenCounter
) -> None:
    llm_server.responder = lambda body: error(500, "upstream exploded", **FAST_RETRY)
    result, offline = _run(settings_for(llm_server, max_retries=2), counter)
    assert len(llm_server.received) == 3  # the first try and the client's two retries
    assert result.source == "offline" and result.text == OFFLINE_TEXT
    assert result.warnings == [
        "LLM summary failed (server error after retries (HTTP 500: upstream exploded)); "
        "used the offline summarizer",
        "offline note",
    ]
    assert len(offline.requests) == 1


def test_rate_limits_after_retries_fall_back(llm_server: FakeLLM, counter: TokenCounter) -> None:
    llm_server.responder = lambda body: error(429, "quota", **FAST_RETRY)
    result, _ = _run(settings_for(llm_server, max_retries=1), counter)
    assert result.source == "offline"
    assert result.warnings[0].startswith("LLM summary failed (rate limited after retries (HTTP 429")


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply(body=completion("")), "the reply was empty"),
        (
            Reply(body=completion(summary_text(), finish_reason="length")),
            "the reply was cut off at the token limit",
        ),
        (Reply(body=completion("Sure! Here you go.")), "the reply lacks the headings"),
        (Reply(raw=b'{"choices": [{"message": '), "the reply is not valid JSON"),
        (Reply(body={"error": {"message": "bad things"}}), "the reply reports an error: bad"),
        (Reply(body=completion(summary_text()), cut_mid_body=True), "could not reach"),
        (Reply(body=completion(summary_text()), delay=5), "the request timed out"),
    ],
    ids=["empty", "length", "no-headings", "invalid-json", "error-body", "cut", "timeout"],
)
def test_unusable_replies_fall_back(
    llm_server: FakeLLM, counter: TokenCounter, reply: Reply, reason: str
) -> None:
    llm_server.script(reply)
    result, offline = _run(settings_for(llm_server, timeout=0.3), counter)
    assert result.source == "offline" and len(offline.requests) == 1
    assert result.warnings[0].startswith(f"LLM summary failed ({reason}")
    assert result.warnings[0].endswith("; used the offline summarizer")


def test_refused_key_never_falls_back(llm_server: FakeLLM, counter: TokenCounter) -> None:
    llm_server.script(error(401, "invalid api key"))
    offline = StubOffline()
    with pytest.raises(SummarizerError, match="refused the credentials"):
        run_summary(
            REQUEST,
            counter=counter,
            llm=settings_for(llm_server),
            on_failure="fallback",
            offline=offline,
        )
    assert offline.requests == []


def test_strict_turns_a_fallback_into_exit_3(llm_server: FakeLLM, counter: TokenCounter) -> None:
    llm_server.script(Reply(body=completion("")))
    with pytest.raises(StrictFallbackError) as info:
        _run(settings_for(llm_server), counter, on_failure="strict")
    assert info.value.exit_code == 3
    assert "the reply was empty" in info.value.message


def test_abort_on_failure_stops_instead_of_falling_back(
    llm_server: FakeLLM, counter: TokenCounter
) -> None:
    llm_server.script(Reply(body=completion("")))
    with pytest.raises(SummarizerError) as info:
        _run(settings_for(llm_server), counter, on_failure="abort")
    assert info.value.exit_code == 1
    assert "--abort-on-failure" in info.value.message


def test_think_blocks_in_the_reply_are_dropped(llm_server: FakeLLM, counter: TokenCounter) -> None:
    llm_server.script(Reply(body=completion("<think>draft...</think>\n" + summary_text("x"))))
    result, _ = _run(settings_for(llm_server), counter)
    assert model_part(result.text) == summary_text("x")


def test_fallback_gets_the_summary_out_of_the_turns(
    llm_server: FakeLLM, counter: TokenCounter
) -> None:
    previous = summary_text("before")
    old = {"role": "user", "content": f"{markers.SUMMARY_PREFIX}\n\n{previous}\n\n"}
    request = SummaryRequest(middle=[old, *MIDDLE], budget_tokens=2000)
    llm_server.script(error(503, "busy", **{"x-should-retry": "false"}))
    offline = StubOffline()
    run_summary(
        request,
        counter=counter,
        llm=settings_for(llm_server),
        on_failure="fallback",
        offline=offline,
    )
    (seen,) = offline.requests
    assert seen.middle == MIDDLE and seen.previous_summary == previous
