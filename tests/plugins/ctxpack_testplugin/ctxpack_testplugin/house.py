"""A ctxpack summarizer that asks our own model, with our house prompt."""

from openai import OpenAI

from ctxpack.summarize.llm.settings import LLMSettings
from ctxpack.summarize.protocol import HEADINGS, SummaryRequest, SummaryResult
from ctxpack.summarize.serialize import serialize_middle
from ctxpack.tokens.counter import TokenCounter

HOUSE_PROMPT = (
    "You write hand-over notes for the next engineer on this task. Use these headings,"
    " in this order, with short bullets; write 'None.' under an empty one: {headings}."
    " Quote paths, commands and error messages exactly. Never invent a result."
)


class HouseSummarizer:
    name = "house"

    def __init__(self, *, llm: LLMSettings | None) -> None:
        if llm is None:
            raise ValueError("the house summarizer needs --model (and --base-url)")
        self.llm = llm
        self.client = OpenAI(base_url=llm.base_url, api_key=llm.api_key, timeout=llm.timeout)

    def summarize(self, request: SummaryRequest, *, counter: TokenCounter) -> SummaryResult:
        turns = serialize_middle(request.middle)
        if request.previous_summary:
            turns = f"Notes so far:\n{request.previous_summary}\n\nSince then:\n{turns}"
        reply = self.client.chat.completions.create(
            model=self.llm.model,
            max_tokens=request.budget_tokens,
            messages=[
                {"role": "system", "content": HOUSE_PROMPT.format(headings=", ".join(HEADINGS))},
                {"role": "user", "content": turns},
            ],
        )
        text = reply.choices[0].message.content or ""
        return SummaryResult(text=text, source=self.name, model=self.llm.model)
