"""`ctxpack formats` (not written yet)."""
