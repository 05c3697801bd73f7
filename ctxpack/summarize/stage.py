"""Stage 3/4 orchestration: the LLM summary when an endpoint is configured,
the offline summary otherwise, and the fallback rules between them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from ctxpack.errors import StrictFallbackError, SummarizerError
from ctxpack.summarize.llm.prompts import effective_request
from ctxpack.summarize.protocol import Summarizer, SummaryRequest, SummaryResult

if TYPE_CHECKING:
    from ctxpack.summarize.llm.settings import LLMSettings
    from ctxpack.tokens.counter import TokenCounter

# What an LLM failure that could fall back does: use the offline summary and
# warn, exit 3 (--strict), or stop and write nothing (--abort-on-failure).
OnFailure = Literal["fallback", "strict", "abort"]


def run_summary(
    request: SummaryRequest,
    *,
    counter: TokenCounter,
    llm: LLMSettings | None,
    on_failure: OnFailure,
    offline: Summarizer,
    chosen: Summarizer | None = None,
) -> SummaryResult:
    """The summary of `request.middle`.

    `chosen`, a summarizer named by the user (a plugin), writes it alone:
    its failures are its own to report, with no fallback.

    An LLM failure that may fall back (SummaryFailed) uses `offline` and says
    so in the warnings, unless `on_failure` is "strict" (StrictFallbackError,
    exit 3) or "abort" (SummarizerError). Refused credentials always
    raise SummarizerError: a fallback would hide the misconfiguration.
    """
    request = effective_request(request)
    if chosen is not None:
        return chosen.summarize(request, counter=counter)
    if llm is None:
        return offline.summarize(request, counter=counter)
    # The client and its reply parser are imported only when an endpoint is set.
    from ctxpack.summarize.llm.client import LLMSummarizer
    from ctxpack.summarize.llm.errors import SummaryFailed

    try:
        return LLMSummarizer(llm).summarize(request, counter=counter)
    except SummaryFailed as exc:
        reason = exc.message
        if on_failure == "strict":
            raise StrictFallbackError(
                f"LLM summary failed ({reason}); --strict forbids the offline fallback"
            ) from exc
        if on_failure == "abort":
            raise SummarizerError(
                f"LLM summary failed ({reason}); stopped (--abort-on-failure), nothing written"
            ) from exc
    result = offline.summarize(request, counter=counter)
    warning = f"LLM summary failed ({reason}); used the offline summarizer"
    return SummaryResult(
        text=result.text,
        source=result.source,
        model=result.model,
        warnings=[warning, *result.warnings],
    )
