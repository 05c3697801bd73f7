"""Budgeted compaction: the whole output at or under a token budget (`--fit`)."""
