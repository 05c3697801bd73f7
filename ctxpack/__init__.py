"""ctxpack: offline compactor for AI-agent conversation transcripts."""

__version__ = "0.1.0"
