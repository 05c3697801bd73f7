"""`ctxpack summarize` (not written yet)."""
