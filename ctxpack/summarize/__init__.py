"""Stages 3 and 4: the record of the compacted middle, and its assembly."""
