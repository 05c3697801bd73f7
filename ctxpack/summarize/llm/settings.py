"""Which endpoint, model and key the LLM summarizer uses.

The values come resolved and checked (ctxpack.settings); this module only
reads OPENAI_API_KEY and OPENAI_BASE_URL. A user's OPENAI_API_KEY only ever
goes to OpenAI itself or to the endpoint that OPENAI_BASE_URL names: never to
some other URL given to ctxpack.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

from ctxpack.errors import UsageError
from ctxpack.settings import DEFAULT_MAX_RETRIES, DEFAULT_SUMMARIZER_CONTEXT, DEFAULT_TIMEOUT

OPENAI_BASE_URL = "https://api.openai.com/v1"
# Local servers (Ollama, llama.cpp, vLLM) ignore the key; the client needs one.
PLACEHOLDER_KEY = "not-needed"

TokenParam = Literal["max_tokens", "max_completion_tokens"]
TOKEN_PARAMS: tuple[TokenParam, ...] = ("max_tokens", "max_completion_tokens")


@dataclass(frozen=True)
class LLMSettings:
    model: str
    base_url: str = OPENAI_BASE_URL
    api_key: str = field(default=PLACEHOLDER_KEY, repr=False)
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES
    temperature: float | None = None  # None: the parameter is not sent at all
    token_param: TokenParam = "max_tokens"
    # Tokens the summarizer model can take; longer inputs are summarized in chunks.
    summarizer_context: int = DEFAULT_SUMMARIZER_CONTEXT
    use_cache: bool = True


def is_openai_endpoint(base_url: str) -> bool:
    parts = urlsplit(base_url)
    return parts.scheme == "https" and parts.hostname == "api.openai.com"


def normalize_url(url: str) -> str:
    return url.strip().rstrip("/")


def resolve_llm_settings(
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_retries: int = DEFAULT_MAX_RETRIES,
    temperature: float | None = None,
    token_param: str | None = None,
    summarizer_context: int = DEFAULT_SUMMARIZER_CONTEXT,
    use_cache: bool = True,
    env: Mapping[str, str],
) -> LLMSettings | None:
    """Settings for the LLM summarizer, or None when no model is configured (offline)."""
    if not model:
        if base_url or api_key:
            raise UsageError("an endpoint or API key was given without a model: add --model")
        return None
    url = normalize_url(base_url or env.get("OPENAI_BASE_URL") or OPENAI_BASE_URL)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--base-url must be an http(s) URL, got {url!r}")
    key = api_key or _openai_key_for(url, env)
    if not key:
        if is_openai_endpoint(url):
            raise UsageError(
                f"no API key for {url}: set OPENAI_API_KEY or CTXPACK_API_KEY, or pass --api-key"
            )
        key = PLACEHOLDER_KEY
    return LLMSettings(
        model=model,
        base_url=url,
        api_key=key,
        timeout=float(timeout),
        max_retries=max_retries,
        temperature=temperature,
        token_param=_token_param(token_param, url),
        summarizer_context=summarizer_context,
        use_cache=use_cache,
    )


def _openai_key_for(url: str, env: Mapping[str, str]) -> str | None:
    key = env.get("OPENAI_API_KEY")
    if not key:
        return None
    own_url = env.get("OPENAI_BASE_URL")
    if is_openai_endpoint(url) or (own_url and normalize_url(own_url) == url):
        return key
    return None


def _token_param(value: str | None, url: str) -> TokenParam:
    if value is None or value == "auto":
        # OpenAI's reasoning models reject max_tokens; most other servers only
        # know max_tokens.
        return "max_completion_tokens" if is_openai_endpoint(url) else "max_tokens"
    for known in TOKEN_PARAMS:
        if value == known:
            return known
    raise UsageError(
        f"token parameter must be auto, max_tokens or max_completion_tokens: {value!r}"
    )
