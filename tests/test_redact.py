"""Secrets are masked before anything leaves the machine."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack.redact import redact, redact_arguments, redact_messages
from tests.conftest import FIXTURES, TOOLBENCH

OPENAI_KEY = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5" * 3 + "f6G7h8"
SECRETS = {
    "openai-key": [OPENAI_KEY, "sk-" + "a1B2c3D4e5" * 4 + "F6g7H8i9"],
    "anthropic-key": ["sk-ant-api03-" + "Zx9Yw8Vu7T" * 4],
    "github-token": [
        GITHUB_TOKEN,
        "gho_" + "q" * 20 + "1" * 16,
        "github_pat_11ABCDEFG0" + "x" * 40,
    ],
    "aws-key": ["AKIAIOSFODNN7EXAMPLE"],
    "slack-token": ["xoxb-2048-4096-AbCdEfGhIjKlMn"],
    "google-key": ["AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"],
    "jwt": [
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
    ],
}


@pytest.mark.parametrize(
    ("kind", "secret"),
    [(kind, secret) for kind, values in SECRETS.items() for secret in values],
)
def test_each_key_kind_is_masked_with_its_label(kind: str, secret: str) -> None:
    text, count = redact(f"before {secret} after")
    assert text == f"before [REDACTED:{kind}] after"
    assert count == 1


def test_private_key_block_is_masked_whole() -> None:
    block = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
        "-----END OPENSSH PRIVATE KEY-----"
    )
    assert redact(f"key:\n{block}\ndone") == ("key:\n[REDACTED:private-key]\ndone", 1)


def test_private_key_cut_before_its_end_line_is_still_masked() -> None:
    text, count = redact("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1L7VLPHCgcBIjz")
    assert (text, count) == ("[REDACTED:private-key]", 1)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("export GITHUB_TOKEN=abc123def456", "export GITHUB_TOKEN=[REDACTED:secret]"),
        ("DB_PASSWORD='correct horse'", "DB_PASSWORD='[REDACTED:password]'"),
        ("password: hunter2hunter2", "password: [REDACTED:password]"),
        ('{"api_key": "live_0123456789"}', '{"api_key": "[REDACTED:secret]"}'),
        ("client_secret = s3cr3tvalue", "client_secret = [REDACTED:secret]"),
        ("mysql --password hunter22 -u root", "mysql --password [REDACTED:password] -u root"),
        ("curl --token=abcdef123456", "curl --token=[REDACTED:secret]"),
        (
            "git clone https://bob:pa55word@git.example.com/r.git",
            "git clone https://[REDACTED:url-credentials]@git.example.com/r.git",
        ),
        (
            "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123",
            "Authorization: Bearer [REDACTED:bearer-token]",
        ),
    ],
)
def test_assignments_urls_and_headers(line: str, expected: str) -> None:
    assert redact(line) == (expected, 1)


@pytest.mark.parametrize(
    "line",
    [
        "max_tokens=4096 tokenizer=o200k_base token_count: 12345",
        "the password: is wrong",
        "SECRET_KEY=${SECRET_KEY} token=<your-token> api_key: os.environ['KEY']",
        "pip install scikit-learn; sk-learn-model-selection-helpers",
        "see https://example.com/path?q=1 and user@example.com",
        "AKIA is a prefix; the commit is 3f9a2b7c1d0e",
    ],
)
def test_ordinary_text_is_left_alone(line: str) -> None:
    assert redact(line) == (line, 0)


def test_a_key_inside_an_assignment_is_counted_once() -> None:
    assert redact(f"OPENAI_API_KEY={OPENAI_KEY}") == ("OPENAI_API_KEY=[REDACTED:openai-key]", 1)


def test_json_arguments_stay_valid_json_and_mask_by_key() -> None:
    args = json.dumps({"command": f"export T={GITHUB_TOKEN}", "password": "hunter2", "n": 3})
    masked, count = redact_arguments(args)
    assert count == 2
    assert json.loads(masked) == {
        "command": "export T=[REDACTED:github-token]",
        "password": "[REDACTED:password]",
        "n": 3,
    }
    untouched = '{"command":  "ls -la"}'
    assert redact_arguments(untouched) == (untouched, 0)


def test_redact_messages_copies_only_changed_messages() -> None:
    clean = {"role": "user", "content": "run the tests"}
    leaky = {"role": "user", "content": [{"type": "text", "text": f"key {OPENAI_KEY}"}]}
    call: dict[str, Any] = {
        "role": "assistant",
        "content": None,
        "reasoning_content": f"I should not echo {GITHUB_TOKEN}",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}},
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"token": "abcdef123"})},
            },
        ],
    }
    before = json.dumps([clean, leaky, call])
    out, count = redact_messages([clean, leaky, call])
    assert json.dumps([clean, leaky, call]) == before  # inputs never mutated
    assert count == 3
    assert out[0] is clean
    assert out[1] is not leaky
    assert out[1]["content"] == [{"type": "text", "text": "key [REDACTED:openai-key]"}]
    assert out[2]["reasoning_content"] == "I should not echo [REDACTED:github-token]"
    assert out[2]["tool_calls"][0] is call["tool_calls"][0]
    assert json.loads(out[2]["tool_calls"][1]["function"]["arguments"]) == {
        "token": "[REDACTED:secret]"
    }


_noise = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)


@settings(max_examples=60, deadline=None)
@given(
    before=_noise,
    after=_noise,
    secret=st.sampled_from([s for values in SECRETS.values() for s in values]),
)
def test_planted_secret_never_survives_and_redaction_is_idempotent(
    before: str, after: str, secret: str
) -> None:
    text, count = redact(f"{before} {secret} {after}")
    assert secret not in text
    assert count >= 1
    assert redact(text) == (text, 0)


@pytest.mark.parametrize(
    "text",
    [
        "a-" * 100_000,
        "a." * 100_000,
        "sk-" * 60_000,
        "eyJ" * 60_000,
        "-----BEGIN RSA PRIVATE KEY-----\n" * 6_000,
        "token: " * 30_000,
        "://a:" * 40_000,
        "--password " * 20_000,
    ],
    ids=["dashes", "dots", "sk", "eyJ", "begins", "token-colon", "schemes", "flags"],
)
def test_adversarial_text_is_redacted_in_linear_time(text: str) -> None:
    start = time.perf_counter()
    redact(text)
    assert time.perf_counter() - start < 1.5


def test_real_transcripts_keep_their_text_except_real_passwords() -> None:
    glaive = FIXTURES / "sharegpt" / "LLaMA-Factory__data__glaive_toolcall_en_demo.json"
    values = [
        turn["value"]
        for record in json.loads(glaive.read_text())
        for turn in record["conversations"]
    ]
    masked = [redact(value) for value in values]
    assert sum(count for _, count in masked) == 17
    joined = "\n".join(text for text, _ in masked)
    for password in ("aB3#fG7!kL9@", "a9B7$#fG3&Z1", "A1b2C3d4E5f6", "aBcD1234EfGh"):
        assert password in "\n".join(values) and password not in joined
    # A documentation placeholder is not a secret and stays readable.
    assert 'password="yourpassword"' in joined
    assert "Here is your new password: [REDACTED:password]. Please" in joined
    others = [TOOLBENCH, *sorted((FIXTURES / "codex").glob("*.jsonl"))]
    for path in [*others, *sorted((FIXTURES / "claude-code").glob("*opus*.jsonl"))]:
        text = path.read_text()
        assert redact(text) == (text, 0), path.name
