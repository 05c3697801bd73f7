"""How a failed LLM call is classified: fall back, chunk, or stop.

- SummaryFailed: the summary cannot be had from the LLM now (rate limits and
  server errors after the client's retries, timeouts, unusable replies); the
  offline summarizer may stand in.
- ContextOverflow: the input is too long for the model; the caller splits it.
- SummarizerError (ctxpack.errors): credentials were refused; falling back
  would hide a configuration mistake, so the run stops.
"""

from __future__ import annotations

import json
from typing import Any

from ctxpack.errors import CtxpackError, SummarizerError
from ctxpack.redact import redact


class SummaryFailed(CtxpackError):
    """The LLM gave no usable summary; the offline summarizer may be used instead."""


class ContextOverflow(SummaryFailed):
    """The request did not fit the summarizer model's context window."""


# How OpenAI, vLLM, llama.cpp, LiteLLM and others word a context overflow.
OVERFLOW_PHRASES = (
    "context_length_exceeded",
    "maximum context length",
    "exceeds the available context size",
    "context size",
    "context window",
    "contextwindowexceedederror",
    "context length",
    "prompt is too long",
    "input is too long",
    "too many tokens",
    "reduce the length of the messages",
)

MESSAGE_CHARS = 300


def is_overflow(text: str) -> bool:
    lowered = text.lower()
    return any(phrase in lowered for phrase in OVERFLOW_PHRASES)


def describe_body(body: Any) -> str:
    """A short, redacted description of an error body for a warning or message."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            message = inner.get("message")
            text = message if isinstance(message, str) else json.dumps(inner)
        else:
            text = str(inner)
    elif body is None:
        text = ""
    else:
        text = str(body)
    text = " ".join(text.split())
    if len(text) > MESSAGE_CHARS:
        text = text[:MESSAGE_CHARS] + "…"
    return redact(text)[0]


def classify(exc: Exception) -> CtxpackError:
    """The ctxpack error an openai client exception stands for."""
    import openai

    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        detail = describe_body(exc.body) or describe_body(exc.response.text)
        raw = f"{exc.body!r} {exc.message}"
        if status == 413 or is_overflow(raw):
            return ContextOverflow(f"HTTP {status}: {detail}")
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            return SummarizerError(
                f"the summarizer endpoint refused the credentials (HTTP {status}: {detail}); "
                "check --api-key / CTXPACK_API_KEY"
            )
        if isinstance(exc, openai.RateLimitError):
            return SummaryFailed(f"rate limited after retries (HTTP {status}: {detail})")
        if status >= 500:
            return SummaryFailed(f"server error after retries (HTTP {status}: {detail})")
        return SummaryFailed(f"request rejected (HTTP {status}: {detail})")
    if isinstance(exc, openai.APITimeoutError):
        return SummaryFailed("the request timed out")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        reason = f": {type(cause).__name__}" if cause is not None else ""
        return SummaryFailed(f"could not reach the summarizer endpoint{reason}")
    if isinstance(exc, openai.OpenAIError | ValueError):
        return SummaryFailed(f"{type(exc).__name__}: {describe_body(str(exc))}")
    raise exc
