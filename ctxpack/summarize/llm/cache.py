"""LLM summaries cached on disk, so re-running the same compaction is free and identical.

The key is the sha256 of everything that shapes the answer: the exact request
body (serialized middle, previous summary, focus, model, token limit,
temperature), the prompt version and the endpoint. A damaged entry is a miss.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ctxpack.refs import sha256_hex
from ctxpack.summarize.llm.prompts import PROMPT_VERSION
from ctxpack.tokens.encodings import cache_dir


def summaries_dir() -> Path:
    return cache_dir() / "summaries"


def cache_key(body: dict[str, Any], *, base_url: str, summarizer_context: int) -> str:
    material = {
        "prompt_version": PROMPT_VERSION,
        "base_url": base_url,
        "summarizer_context": summarizer_context,
        "body": body,
    }
    encoded = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return sha256_hex(encoded.encode("utf-8"))


def load(key: str) -> str | None:
    path = summaries_dir() / f"{key}.json"
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    text = entry.get("text") if isinstance(entry, dict) else None
    return text if isinstance(text, str) and text.strip() else None


def store(key: str, text: str, *, model: str) -> None:
    """Write the entry atomically; a cache that cannot be written is skipped."""
    directory = summaries_dir()
    entry = {"text": text, "model": model, "prompt_version": PROMPT_VERSION}
    tmp = directory / f"{key}.{os.getpid()}.tmp"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(entry, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, directory / f"{key}.json")
    except OSError:
        tmp.unlink(missing_ok=True)
