"""`redact=True` masks secrets in the written transcript, not only in LLM requests.

Secrets of every kind the redactor knows are planted into a real Claude Code
session (converted to OpenAI JSONL): in the protected head, in the middle
that gets summarized, in the verbatim tail, in texts, reasoning, tool output
and tool-call arguments. With redaction none of them reaches the written
bytes; without it those in verbatim turns are written as they were.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ctxpack import formats
from ctxpack.align.budget import Budget
from ctxpack.formats import jsoncodec
from ctxpack.pipeline.compaction import CompressSettings, compress_transcript, summarize_transcript
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message, Transcript
from tests.conftest import COUNTER, FIXTURES

HAIKU = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"

OPENAI_KEY = "sk-proj-Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1Jh0"
GITHUB_TOKEN = "ghp_" + "k9J8h7G6f5" * 3 + "d4S3a2"
AWS_KEY = "AKIAQ3ZL5N7P9R2T4V6X"
KEY_BODY = "MIIEowIBAAKCAQEA7bqT2ZkGm0nRa8Lq"
PRIVATE_KEY = (
    f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\nWx4cVb9NpQ2rS7tU1vY3zA5bC8dE\n"
    "-----END RSA PRIVATE KEY-----"
)
PASSWORD = "Hunter2-Correct-Horse"
URL_PASSWORD = "s3cr3t-Pa55"

# What must never be written, and the marker kind that stands in its place.
SECRETS = {
    OPENAI_KEY: "openai-key",
    GITHUB_TOKEN: "github-token",
    AWS_KEY: "aws-key",
    KEY_BODY: "private-key",
    PASSWORD: "password",
    URL_PASSWORD: "url-credentials",
}


def _with_text(msg: Message, extra: str) -> Message:
    return {**msg, "content": f"{msg.get('content') or ''}\n{extra}"}


def _with_reasoning(msg: Message, extra: str) -> Message:
    return {**msg, "reasoning_content": f"{msg.get('reasoning_content') or ''}\n{extra}"}


def _with_command(msg: Message, command: str) -> Message:
    call = msg["tool_calls"][0]
    arguments = json.dumps({"command": command})
    return {
        **msg,
        "tool_calls": [{**call, "function": {**call["function"], "arguments": arguments}}],
    }


# index in the session -> how the secret goes in (head: 0; tail: 61-63; the rest is middle).
PLANTS: dict[int, Any] = {
    0: lambda msg: _with_text(msg, f"Push with the token {GITHUB_TOKEN} when done."),
    3: lambda msg: _with_reasoning(msg, f"The CI user has key {AWS_KEY}."),
    7: lambda msg: _with_command(
        msg, f"git clone https://deploy:{URL_PASSWORD}@git.internal.test/regex.git"
    ),
    24: lambda msg: _with_text(msg, PRIVATE_KEY),
    32: lambda msg: _with_text(msg, f"db settings: password={PASSWORD}"),
    61: lambda msg: _with_command(msg, f"OPENAI_API_KEY={OPENAI_KEY} python report.py"),
    62: lambda msg: _with_text(
        msg, f"mirror: https://ci:{URL_PASSWORD}@mirror.internal.test/ as {AWS_KEY}"
    ),
    63: lambda msg: _with_text(msg, f"Key file:\n{PRIVATE_KEY}\nand password={PASSWORD}"),
}


@pytest.fixture(scope="module")
def planted() -> bytes:
    """The session as OpenAI JSONL, with the secrets planted."""
    session = formats.read(HAIKU.read_bytes(), path=str(HAIKU)).sessions[0].messages
    assert len(session) == 64
    messages = [PLANTS[i](msg) if i in PLANTS else msg for i, msg in enumerate(session)]
    return b"".join(jsoncodec.dumps(msg) + b"\n" for msg in messages)


def _read(data: bytes) -> Transcript:
    return formats.read(data, path="planted.jsonl", fmt="openai")


def _forced(*, redact: bool) -> CompressSettings:
    budget = Budget(tail_tokens=2000, protect_last=3)
    return CompressSettings(force=True, budget=budget, redact=redact)


def _leaks(data: bytes) -> list[str]:
    return [kind for secret, kind in SECRETS.items() if secret.encode() in data]


def test_planted_transcript_holds_every_secret(planted: bytes) -> None:
    assert sorted(_leaks(planted)) == sorted(SECRETS.values())


def test_redacted_output_holds_no_secret(planted: bytes, counter: TokenCounter) -> None:
    result, report = compress_transcript(
        _read(planted), counter=counter, settings=_forced(redact=True)
    )
    written = formats.write(result, counter=COUNTER)
    assert report.sessions[0].status == "compacted"
    assert _leaks(written) == []
    for kind in set(SECRETS.values()) - {"url-credentials", "password"}:
        assert f"[REDACTED:{kind}]".encode() in written, kind
    assert b"https://[REDACTED:url-credentials]@" in written
    assert b"password=[REDACTED:password]" in written
    # The arguments stay valid JSON.
    for msg in result.sessions[0].messages:
        for call in msg.get("tool_calls") or []:
            json.loads(call["function"]["arguments"])
    assert any("masked" in note and "(--redact)" in note for note in report.sessions[0].notes)


def test_without_redact_the_verbatim_turns_keep_their_secrets(
    planted: bytes, counter: TokenCounter
) -> None:
    original = _read(planted)
    result, _ = compress_transcript(original, counter=counter, settings=_forced(redact=False))
    written = formats.write(result, counter=COUNTER)
    kept = {id(msg) for msg in result.sessions[0].messages}
    verbatim = [i for i in PLANTS if id(original.sessions[0].messages[i]) in kept]
    # The head's first message and the whole tail were written as they came.
    assert {0, 61, 62, 63} <= set(verbatim)
    assert set(_leaks(written)) == set(SECRETS.values())


def test_redaction_replaces_only_the_messages_holding_secrets(
    planted: bytes, counter: TokenCounter
) -> None:
    plain, _ = compress_transcript(_read(planted), counter=counter, settings=_forced(redact=False))
    masked, _ = compress_transcript(_read(planted), counter=counter, settings=_forced(redact=True))
    pairs = list(zip(plain.sessions[0].messages, masked.sessions[0].messages, strict=True))
    original = {id(msg) for msg in _read(planted).sessions[0].messages}
    for before, after in pairs:
        line = jsoncodec.dumps(before)
        if _leaks(line):
            assert after is not before and not _leaks(jsoncodec.dumps(after))
        elif id(before) in original:
            assert after is before


def test_under_the_threshold_only_secret_lines_change(
    planted: bytes, counter: TokenCounter
) -> None:
    settings = CompressSettings(redact=True)  # 50k tokens: far under the default threshold
    result, report = compress_transcript(_read(planted), counter=counter, settings=settings)
    assert report.sessions[0].status == "under-threshold"
    written = formats.write(result, counter=COUNTER)
    assert _leaks(written) == []
    before, after = planted.splitlines(), written.splitlines()
    assert len(before) == len(after)
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert changed == sorted(PLANTS)


def test_nothing_to_mask_keeps_the_very_same_messages(counter: TokenCounter) -> None:
    data = formats.write(
        formats.read(HAIKU.read_bytes(), path=str(HAIKU)), fmt="openai", counter=COUNTER
    )
    transcript = _read(data)
    result, _ = compress_transcript(
        transcript, counter=counter, settings=CompressSettings(redact=True)
    )
    assert result.sessions[0].messages is transcript.sessions[0].messages
    assert formats.write(result, counter=COUNTER) == data


def test_summarize_redacts_its_output_too(planted: bytes, counter: TokenCounter) -> None:
    result, _ = summarize_transcript(_read(planted), counter=counter, settings=_forced(redact=True))
    assert _leaks(formats.write(result, counter=COUNTER)) == []
