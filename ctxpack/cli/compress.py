"""`ctxpack compress` (not written yet)."""
