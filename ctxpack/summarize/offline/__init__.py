"""The deterministic offline summarizer."""
