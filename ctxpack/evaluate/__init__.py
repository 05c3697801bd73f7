"""What a compaction kept, and whether that is enough."""
