"""The key facts of a stretch of conversation."""
