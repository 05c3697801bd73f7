"""The lossless archive: every compaction can be undone."""
