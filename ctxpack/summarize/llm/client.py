"""The LLM summarizer: one non-streaming chat.completions call on any
OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp server, LiteLLM).

A middle longer than the summarizer's context (or one the server rejects as
too long) is cut into chunks that are folded in order: the first chunk is
summarized, each next one updates that partial summary. `openai` is imported
only when a request is made, so commands that never call a model stay quick.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ctxpack.redact import redact
from ctxpack.summarize.ledger import with_user_ledger
from ctxpack.summarize.llm import cache as llm_cache
from ctxpack.summarize.llm.errors import ContextOverflow, SummaryFailed, classify
from ctxpack.summarize.llm.prompts import SYSTEM_PROMPT, build_messages, effective_request
from ctxpack.summarize.llm.reply import parse_reply
from ctxpack.summarize.llm.settings import (
    LLMSettings,
)
from ctxpack.summarize.protocol import SummaryRequest, SummaryResult
from ctxpack.summarize.serialize import MAX_TOTAL_CHARS, bound_blocks, join_blocks, serialize_blocks
from ctxpack.tokens.counter import TokenCounter

if TYPE_CHECKING:
    from openai import OpenAI


# Room for the user-prompt wording around the turns (the system prompt is counted).
PROMPT_FRAME_TOKENS = 400
MIN_CHUNK_TOKENS = 1000
# How often a chunk the server still rejects may be halved again.
MAX_SPLIT_DEPTH = 6


def output_limit(budget_tokens: int) -> int:
    """The token limit sent with a request: the budget plus headroom, so a
    summary that runs slightly long is not cut off (finish_reason=length)."""
    return budget_tokens + max(1024, budget_tokens // 2)


class LLMSummarizer:
    name = "llm"

    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings
        self._client: OpenAI | None = None

    def dump_request(self, request: SummaryRequest) -> dict[str, Any]:
        """The exact body of the (first) request `summarize` would send."""
        request = effective_request(request)
        return self._body(request, join_blocks(self._blocks(request)))

    def summarize(self, request: SummaryRequest, *, counter: TokenCounter) -> SummaryResult:
        request = effective_request(request)
        result = self._summarize(request, counter)
        # The user's own words never depend on what the model kept of them.
        result.text = with_user_ledger(result.text, request=request, counter=counter)
        return result

    def _summarize(self, request: SummaryRequest, counter: TokenCounter) -> SummaryResult:
        blocks = self._blocks(request)
        serialized = join_blocks(blocks)
        body = self._body(request, serialized)
        key = None
        if self.settings.use_cache:
            key = llm_cache.cache_key(
                body,
                base_url=self.settings.base_url,
                summarizer_context=self.settings.summarizer_context,
            )
            cached = llm_cache.load(key)
            if cached is not None:
                return SummaryResult(text=cached, source="llm", model=self.settings.model)
        warnings: list[str] = []
        try:
            room = self._input_room(request, counter)
            tokens = counter.text(serialized)
            if tokens > room:
                text = self._fold(request, blocks, counter, room, warnings)
            else:
                try:
                    text = self._complete(body)
                except ContextOverflow:
                    limit = max(min(room, tokens // 2), 1)
                    text = self._fold(request, blocks, counter, limit, warnings)
        finally:
            self.close()
        if key is not None:
            llm_cache.store(key, text, model=self.settings.model)
        return SummaryResult(text=text, source="llm", model=self.settings.model, warnings=warnings)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _blocks(self, request: SummaryRequest) -> list[str]:
        return bound_blocks(serialize_blocks(request.middle), max_total_chars=MAX_TOTAL_CHARS)

    def _body(self, request: SummaryRequest, serialized: str) -> dict[str, Any]:
        if request.previous_summary is not None:
            # A summary written before --redact existed, or by another tool.
            request = replace(request, previous_summary=redact(request.previous_summary)[0])
        body: dict[str, Any] = {
            "model": self.settings.model,
            "messages": build_messages(request, serialized),
            self.settings.token_param: output_limit(request.budget_tokens),
        }
        if self.settings.temperature is not None:
            body["temperature"] = self.settings.temperature
        return body

    def _input_room(self, request: SummaryRequest, counter: TokenCounter) -> int:
        """Tokens of serialized turns one request may carry within the summarizer context."""
        previous = counter.text(request.previous_summary or "")
        # After the first chunk, a partial summary of about the budget rides along.
        carried = max(previous, request.budget_tokens)
        fixed = counter.text(SYSTEM_PROMPT) + PROMPT_FRAME_TOKENS
        room = (
            self.settings.summarizer_context - fixed - output_limit(request.budget_tokens) - carried
        )
        return max(room, MIN_CHUNK_TOKENS)

    def _fold(
        self,
        request: SummaryRequest,
        blocks: list[str],
        counter: TokenCounter,
        limit: int,
        warnings: list[str],
        depth: int = 0,
    ) -> str:
        chunks = chunk_blocks(blocks, counter=counter, limit=limit)
        if depth == 0:
            warnings.append(
                f"the middle was summarized in {len(chunks)} chunks to fit the summarizer "
                f"context ({self.settings.summarizer_context} tokens)"
            )
        partial = request.previous_summary
        for chunk in chunks:
            step = replace(request, previous_summary=partial)
            text = join_blocks(chunk)
            try:
                partial = self._complete(self._body(step, text))
            except ContextOverflow as exc:
                if len(chunk) < 2 or depth >= MAX_SPLIT_DEPTH:
                    raise SummaryFailed(
                        f"the input is too long for the summarizer model even in chunks "
                        f"({exc.message})"
                    ) from exc
                half = max(counter.text(text) // 2, 1)
                partial = self._fold(step, chunk, counter, half, warnings, depth + 1)
        assert partial is not None  # at least one chunk was summarized
        return partial

    def _complete(self, body: dict[str, Any]) -> str:
        """One request; the validated summary text, or a classified failure."""
        client = self._open()
        try:
            response = client.chat.completions.with_raw_response.create(**body)
            raw = response.http_response.text
        except Exception as exc:
            raise classify(exc) from exc
        return parse_reply(raw)

    def _open(self) -> OpenAI:
        if self._client is None:
            from openai import OpenAI

            key = self.settings.api_key
            self._client = OpenAI(
                api_key=key,
                base_url=self.settings.base_url,
                timeout=self.settings.timeout,
                max_retries=self.settings.max_retries,
                # Explicit, so an Authorization line in OPENAI_CUSTOM_HEADERS
                # can never reach an endpoint it was not meant for.
                default_headers={"Authorization": f"Bearer {key}"},
            )
        return self._client


def chunk_blocks(blocks: list[str], *, counter: TokenCounter, limit: int) -> list[list[str]]:
    """Consecutive groups of blocks, each within `limit` tokens where a block allows."""
    chunks: list[list[str]] = []
    current: list[str] = []
    used = 0
    for block in blocks:
        tokens = counter.text(block) + 1
        if current and used + tokens > limit:
            chunks.append(current)
            current, used = [], 0
        current.append(block)
        used += tokens
    if current or not chunks:
        chunks.append(current)
    return chunks
