"""Stage 1: old tool output out, without an LLM."""
