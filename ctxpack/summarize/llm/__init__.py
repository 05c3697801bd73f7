"""The LLM summarizer: any OpenAI-compatible endpoint."""
