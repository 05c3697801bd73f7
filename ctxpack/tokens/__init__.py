"""Exact token counts and tallies."""
