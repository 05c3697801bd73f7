"""`ctxpack prune` (not written yet)."""
