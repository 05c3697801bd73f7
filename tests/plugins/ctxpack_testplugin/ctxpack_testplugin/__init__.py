"""Engines and summarizers that exercise ctxpack's plugin interface."""
