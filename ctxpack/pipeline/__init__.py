"""The whole run: read, stages, write, archive, report."""
