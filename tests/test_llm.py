"""The LLM summarizer through the real openai client against a local HTTP server."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxpack import markers
from ctxpack.errors import SummarizerError, UsageError
from ctxpack.summarize.ledger import LEDGER_INTRO
from ctxpack.summarize.llm.client import LLMSummarizer, output_limit
from ctxpack.summarize.llm.errors import SummaryFailed
from ctxpack.summarize.llm.prompts import PROMPT_VERSION
from ctxpack.summarize.llm.reply import normalize_summary
from ctxpack.summarize.llm.settings import PLACEHOLDER_KEY, resolve_llm_settings
from ctxpack.summarize.protocol import HEADINGS, SummaryRequest
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

OPENAI_KEY = "sk-proj-Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1"
GH_TOKEN = "ghp_" + "k9J8h7G6f5" * 3 + "d4S3a2"

MIDDLE = [
    {"role": "user", "content": f"Deploy with key {OPENAI_KEY} and fix tests/test_api.py"},
    {
        "role": "assistant",
        "content": "Running the tests.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": "pytest -q"})},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": f"FAILED tests/test_api.py GH={GH_TOKEN}"},
    {"role": "assistant", "content": "One test fails in tests/test_api.py."},
]


def _request(**kwargs: Any) -> SummaryRequest:
    values: dict[str, Any] = {"middle": MIDDLE, "budget_tokens": 2000}
    values.update(kwargs)
    return SummaryRequest(**values)


# --- settings --------------------------------------------------------------


def test_no_model_anywhere_means_offline() -> None:
    assert resolve_llm_settings(env={"OPENAI_API_KEY": OPENAI_KEY}) is None


def test_a_local_endpoint_gets_the_defaults() -> None:
    settings = resolve_llm_settings(model="qwen3:8b", base_url="http://localhost:11434/v1/", env={})
    assert settings is not None
    assert (settings.model, settings.base_url) == ("qwen3:8b", "http://localhost:11434/v1")
    assert settings.api_key == PLACEHOLDER_KEY
    assert (settings.timeout, settings.max_retries, settings.temperature) == (120.0, 2, None)
    assert settings.token_param == "max_tokens"
    assert settings.summarizer_context == 32_000 and settings.use_cache


def test_openai_key_goes_only_to_openai_or_its_own_base_url() -> None:
    official = resolve_llm_settings(model="gpt-4o-mini", env={"OPENAI_API_KEY": OPENAI_KEY})
    assert official is not None
    assert official.api_key == OPENAI_KEY
    assert official.token_param == "max_completion_tokens"
    custom = resolve_llm_settings(
        model="m", base_url="http://evil.example:8000/v1", env={"OPENAI_API_KEY": OPENAI_KEY}
    )
    assert custom is not None and custom.api_key == PLACEHOLDER_KEY
    own = resolve_llm_settings(
        model="m",
        base_url="https://proxy.example/v1",
        env={"OPENAI_API_KEY": OPENAI_KEY, "OPENAI_BASE_URL": "https://proxy.example/v1/"},
    )
    assert own is not None and own.api_key == OPENAI_KEY


def test_token_param_override_and_key_hidden_from_repr() -> None:
    settings = resolve_llm_settings(
        model="m",
        base_url="http://h:1/v1",
        api_key="hush-1234",
        token_param="max_completion_tokens",
        env={},
    )
    assert settings is not None and settings.token_param == "max_completion_tokens"
    assert "hush-1234" not in repr(settings)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"base_url": "http://h:1/v1"}, "without a model"),
        ({"model": "gpt-4o"}, "no API key"),
        ({"model": "m", "base_url": "ftp://h/v1"}, "http(s) URL"),
        ({"model": "m", "base_url": "http://h/v1", "token_param": "max"}, "token parameter"),
    ],
)
def test_bad_settings_are_usage_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError) as info:
        resolve_llm_settings(env={}, **kwargs)
    assert message in info.value.message


# --- requests --------------------------------------------------------------


def test_success_and_the_exact_request_body(llm_server: FakeLLM, counter: TokenCounter) -> None:
    llm_server.script(ok("done"))
    summarizer = LLMSummarizer(settings_for(llm_server))
    result = summarizer.summarize(_request(), counter=counter)
    assert result.source == "llm" and result.model == "test-model" and result.warnings == []
    # The model's record as it replied, then the user's own words (the ledger).
    assert result.text == (
        f"{summary_text('done')}\n\n## User Messages\n{LEDGER_INTRO}\n"
        '- "Deploy with key [REDACTED:openai-key] and fix tests/test_api.py"'
    )
    (received,) = llm_server.received
    assert received.path == "/v1/chat/completions"
    assert received.body == summarizer.dump_request(_request())
    body = received.body
    assert body["model"] == "test-model"
    assert "temperature" not in body and "stream" not in body
    assert body["max_tokens"] == output_limit(2000)
    assert [msg["role"] for msg in body["messages"]] == ["system", "user"]
    raw = json.dumps(body)
    assert OPENAI_KEY not in raw and GH_TOKEN not in raw
    assert "[REDACTED:openai-key]" in raw and "[REDACTED:github-token]" in raw
    user = received.user_text()
    assert "[TOOL RESULT: bash]: FAILED tests/test_api.py" in user
    assert '→ bash({"command": "pytest -q"})' in user
    system = body["messages"][0]["content"]
    assert [line[3:] for line in system.splitlines() if line.startswith("## ")] == list(HEADINGS)


def test_temperature_and_completion_token_param_when_asked(
    llm_server: FakeLLM, counter: TokenCounter
) -> None:
    llm_server.script(ok())
    settings = settings_for(llm_server, temperature=0.2, token_param="max_completion_tokens")
    LLMSummarizer(settings).summarize(_request(), counter=counter)
    body = llm_server.received[0].body
    assert body["temperature"] == 0.2
    assert body["max_completion_tokens"] == output_limit(2000) and "max_tokens" not in body


def test_focus_and_date_reach_the_prompt(llm_server: FakeLLM, counter: TokenCounter) -> None:
    llm_server.script(ok())
    request = _request(focus="the flaky API test", last_timestamp="2025-03-14T09:26:53Z")
    LLMSummarizer(settings_for(llm_server)).summarize(request, counter=counter)
    user = llm_server.received[0].user_text()
    assert "'the flaky API test'" in user and "two thirds" in user
    assert "2025-03-14T09:26:53Z" in user


def test_rate_limit_then_success_is_retried_by_the_client(
    llm_server: FakeLLM, counter: TokenCounter
) -> None:
    llm_server.script(error(429, "slow down", **FAST_RETRY), ok("second"))
    settings = settings_for(llm_server, max_retries=2)
    result = LLMSummarizer(settings).summarize(_request(), counter=counter)
    assert model_part(result.text) == summary_text("second")
    assert len(llm_server.received) == 2
    assert llm_server.received[1].headers["x-stainless-retry-count"] == "1"


@pytest.mark.parametrize("status", [401, 403])
def test_refused_credentials_are_not_fallbackable(
    llm_server: FakeLLM, counter: TokenCounter, status: int
) -> None:
    llm_server.script(error(status, f"Incorrect API key provided: {OPENAI_KEY}"))
    with pytest.raises(SummarizerError) as info:
        LLMSummarizer(settings_for(llm_server)).summarize(_request(), counter=counter)
    assert not isinstance(info.value, SummaryFailed)
    assert f"HTTP {status}" in info.value.message
    assert OPENAI_KEY not in info.value.message


def test_user_openai_key_never_reaches_a_custom_url(
    llm_server: FakeLLM, counter: TokenCounter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", f"Authorization: Bearer {OPENAI_KEY}")
    import os

    settings = resolve_llm_settings(
        model="m", base_url=llm_server.base_url, max_retries=0, use_cache=False, env=os.environ
    )
    assert settings is not None
    llm_server.script(ok())
    LLMSummarizer(settings).summarize(_request(), counter=counter)
    headers = llm_server.received[0].headers
    assert headers["authorization"] == f"Bearer {PLACEHOLDER_KEY}"
    assert all(OPENAI_KEY not in value for value in headers.values())


def test_explicit_key_is_sent(llm_server: FakeLLM, counter: TokenCounter) -> None:
    llm_server.script(ok())
    LLMSummarizer(settings_for(llm_server, api_key="local-secret")).summarize(
        _request(), counter=counter
    )
    assert llm_server.received[0].headers["authorization"] == "Bearer local-secret"


# --- updates ---------------------------------------------------------------

PREVIOUS = summary_text("earlier-record", actions=7)


def test_update_sends_previous_summary_once_and_continues_numbering(
    llm_server: FakeLLM, counter: TokenCounter
) -> None:
    llm_server.script(ok())
    request = _request(previous_summary=PREVIOUS)
    LLMSummarizer(settings_for(llm_server)).summarize(request, counter=counter)
    received = llm_server.received[0]
    assert received.all_text().count(PREVIOUS) == 1
    assert "number the new ones from 8 on" in received.user_text()
    assert "<new_turns>\n[USER]: Deploy with key" in received.user_text()


def test_a_summary_left_in_the_middle_is_not_sent_as_a_turn(
    llm_server: FakeLLM, counter: TokenCounter
) -> None:
    old = {
        "role": "user",
        "content": f"{markers.SUMMARY_PREFIX}\n\n{PREVIOUS}\n\n{markers.SUMMARY_END}",
    }
    llm_server.script(ok())
    request = _request(middle=[old, *MIDDLE])
    LLMSummarizer(settings_for(llm_server)).summarize(request, counter=counter)
    text = llm_server.received[0].all_text()
    assert text.count(PREVIOUS) == 1
    assert f"<previous_summary>\n{PREVIOUS}\n</previous_summary>" in text
    assert markers.SUMMARY_PREFIX.split("\n")[0] not in text


# --- context overflow: chunk and fold ---------------------------------------

OVERFLOW_AT = 9_000  # characters of user prompt the fake model accepts


def _long_middle(n: int = 12) -> list[dict[str, Any]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"msg-{i:02d} " + "lorem " * 300}
        for i in range(n)
    ]


def _overflowing_model(server: FakeLLM) -> list[str]:
    """A model that rejects long prompts; returns the list of prompts it accepted."""
    accepted: list[str] = []

    def respond(body: Any) -> Reply:
        user = "".join(m["content"] for m in body["messages"] if m["role"] == "user")
        if len(user) > OVERFLOW_AT:
            return error(
                400,
                "This model's maximum context length is 4096 tokens. However, your messages "
                "resulted in 5000 tokens.",
                code="context_length_exceeded",
            )
        accepted.append(user)
        return ok(f"partial-{len(accepted)}")

    server.responder = respond
    return accepted


@pytest.mark.parametrize(
    "message",
    [
        "This model's maximum context length is 4096 tokens.",
        "the request exceeds the available context size, try increasing it",
        "litellm.ContextWindowExceededError: prompt too large",
    ],
)
def test_overflow_phrasings_of_common_servers_trigger_chunking(
    llm_server: FakeLLM, counter: TokenCounter, message: str
) -> None:
    llm_server.script(error(400, message))
    llm_server.responder = lambda body: ok("chunk")
    result = LLMSummarizer(settings_for(llm_server)).summarize(
        _request(middle=_long_middle(4)), counter=counter
    )
    _first, second, third, *_ = llm_server.received
    assert "<previous_summary>" not in second.user_text()
    assert summary_text("chunk") in third.user_text()
    assert model_part(result.text) == summary_text("chunk")


def test_context_overflow_is_folded_chunk_by_chunk(
    llm_server: FakeLLM, counter: TokenCounter
) -> None:
    accepted = _overflowing_model(llm_server)
    middle = _long_middle()
    result = LLMSummarizer(settings_for(llm_server)).summarize(
        _request(middle=middle), counter=counter
    )
    first = llm_server.received[0].user_text()
    assert len(first) > OVERFLOW_AT and len(accepted) >= 2
    assert all(len(chunk) < len(first) for chunk in accepted)
    # Every message went out in exactly one accepted chunk, in order.
    seen = [f"msg-{i:02d}" for chunk in accepted for i in range(12) if f"msg-{i:02d}" in chunk]
    assert seen == [f"msg-{i:02d}" for i in range(12)]
    # Each later chunk is an update carrying the partial summary before it, once.
    assert "<previous_summary>" not in accepted[0]
    for n, later in enumerate(accepted[1:], start=1):
        assert later.count(summary_text(f"partial-{n}")) == 1
        assert f"<previous_summary>\n{summary_text(f'partial-{n}')}\n</previous_summary>" in later
    assert model_part(result.text) == summary_text(f"partial-{len(accepted)}")
    (warning,) = result.warnings
    found = re.fullmatch(
        r"the middle was summarized in (\d+) chunks to fit the summarizer context \(32000 tokens\)",
        warning,
    )
    assert found is not None and int(found.group(1)) >= 2


def test_a_small_summarizer_context_chunks_before_any_request(
    llm_server: FakeLLM, counter: TokenCounter
) -> None:
    llm_server.responder = lambda body: ok("fits")
    settings = settings_for(llm_server, summarizer_context=4000)
    LLMSummarizer(settings).summarize(_request(middle=_long_middle()), counter=counter)
    assert len(llm_server.received) >= 3
    for received in llm_server.received:
        turns = received.user_text().split("turns>\n", 1)[1]
        assert counter.text(turns) < 1100


def test_a_single_message_too_big_for_the_model_fails(
    llm_server: FakeLLM, counter: TokenCounter
) -> None:
    llm_server.responder = lambda body: error(400, "maximum context length exceeded")
    with pytest.raises(SummaryFailed, match="too long for the summarizer model even in chunks"):
        LLMSummarizer(settings_for(llm_server)).summarize(
            _request(middle=_long_middle(2)), counter=counter
        )


# --- replies ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply(body=completion("")), "the reply was empty"),
        (Reply(body=completion("<think>only thoughts</think>")), "the reply was empty"),
        (Reply(body=completion(summary_text(), finish_reason="length")), "finish_reason=length"),
        (Reply(body=completion("## Goal\nfix it")), "lacks the headings: Historical Task"),
        (Reply(raw=b"<html>bad gateway</html>"), "not valid JSON"),
        (Reply(body={"error": {"message": "model overloaded"}}), "model overloaded"),
        (Reply(body={"id": "x", "choices": []}), "no choices"),
    ],
)
def test_unusable_replies_fail_with_a_reason(
    llm_server: FakeLLM, counter: TokenCounter, reply: Reply, reason: str
) -> None:
    llm_server.script(reply)
    with pytest.raises(SummaryFailed) as info:
        LLMSummarizer(settings_for(llm_server)).summarize(_request(), counter=counter)
    assert reason in info.value.message


def test_reply_is_normalized_to_template_order() -> None:
    shuffled = [f"**{h}:**\nabout {h}" for h in reversed(HEADINGS)]
    reply = "<think>plan</think>Here is the record:\n\n" + "\n\n".join(shuffled)
    assert normalize_summary(reply.replace("<think>plan</think>", "")) == "\n\n".join(
        f"## {h}\nabout {h}" for h in HEADINGS
    )


def test_empty_sections_and_code_fences_are_tidied() -> None:
    body = "\n".join(f"### {i + 1}. {h}" for i, h in enumerate(HEADINGS))
    assert normalize_summary(f"```markdown\n{body}\n```") == "\n\n".join(
        f"## {h}\nNone." for h in HEADINGS
    )


# --- cache ------------------------------------------------------------------


def test_cache_hit_makes_no_second_request(
    llm_server: FakeLLM, counter: TokenCounter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXPACK_CACHE_DIR", str(tmp_path))
    llm_server.script(ok("first"), ok("second"), ok("third"))
    settings = settings_for(llm_server, use_cache=True)
    one = LLMSummarizer(settings).summarize(_request(), counter=counter)
    two = LLMSummarizer(settings).summarize(_request(), counter=counter)
    assert len(llm_server.received) == 1
    assert one.text == two.text and model_part(one.text) == summary_text("first")
    (entry,) = (tmp_path / "summaries").glob("*.json")
    assert json.loads(entry.read_text())["prompt_version"] == PROMPT_VERSION
    # Another model or another middle is another key.
    LLMSummarizer(settings_for(llm_server, use_cache=True, model="other")).summarize(
        _request(), counter=counter
    )
    LLMSummarizer(settings).summarize(_request(middle=MIDDLE[:2]), counter=counter)
    assert len(llm_server.received) == 3


def test_failures_are_not_cached(
    llm_server: FakeLLM, counter: TokenCounter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXPACK_CACHE_DIR", str(tmp_path))
    llm_server.script(Reply(body=completion("")), ok("good"))
    settings = settings_for(llm_server, use_cache=True)
    with pytest.raises(SummaryFailed):
        LLMSummarizer(settings).summarize(_request(), counter=counter)
    text = LLMSummarizer(settings).summarize(_request(), counter=counter).text
    assert model_part(text) == summary_text("good")


def test_importing_the_summarizer_does_not_import_openai() -> None:
    code = (
        "import sys, ctxpack.summarize.stage, ctxpack.summarize.llm.client;"
        " sys.exit('openai' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
