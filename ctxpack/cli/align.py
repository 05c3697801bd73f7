"""`ctxpack align` (not written yet)."""
