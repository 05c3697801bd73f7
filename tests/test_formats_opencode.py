"""The `opencode` adapter: `opencode export` documents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from ctxpack import formats, markers, toolpairs
from ctxpack import messages as m
from ctxpack.cli import app
from ctxpack.tokens.counter import KINDS, TokenCounter
from tests.conftest import COUNTER, FIXTURES
from tests.test_formats_support import assert_counted, compact, tok

EXPORT = FIXTURES / "opencode" / "opencode-1.18.33__stub-numbers.json"
runner = CliRunner()


def _expected_kinds(doc: dict[str, Any]) -> dict[str, int]:
    """Tokens by kind straight from the export, by the counter's rules."""
    kinds = dict.fromkeys(KINDS, 0)
    messages = 0
    for item in doc["messages"]:
        parts = item["parts"]
        text = "\n".join(p["text"] for p in parts if p["type"] == "text" and p["text"])
        messages += 1
        if item["info"]["role"] == "user":
            kinds["user_text"] += tok(text)
            continue
        kinds["assistant_text"] += tok(text)
        for tool in (p for p in parts if p["type"] == "tool"):
            messages += 1
            kinds["tool_calls"] += tok(tool["tool"]) + tok(compact(tool["state"]["input"]))
            kinds["tool_results"] += tok(tool["state"]["output"])
    kinds["overhead"] = 4 * messages
    return kinds


def test_an_export_is_detected_and_round_trips() -> None:
    data = EXPORT.read_bytes()
    assert formats.detect(data, path="export.json").name == "opencode"
    transcript = formats.read(data, path=str(EXPORT))
    msgs = transcript.sessions[0].messages
    assert [m.role(x) for x in msgs[:4]] == ["user", "assistant", "tool", "assistant"]
    assert toolpairs.orphans(msgs) == ([], [])
    assert formats.write(transcript, counter=COUNTER) == data


def test_count_matches_a_direct_tiktoken_count(counter: TokenCounter) -> None:
    expected = _expected_kinds(json.loads(EXPORT.read_bytes()))
    assert expected["tool_calls"] and expected["tool_results"] and expected["user_text"]
    assert_counted(EXPORT, expected, counter)


def test_compress_writes_an_export_ctxpack_reads_back(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    args = ["compress", "--offline", "--force", "--context-length", "1500", "--no-archive"]
    result = runner.invoke(app, [*args, str(EXPORT), "-o", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_bytes())
    original = json.loads(EXPORT.read_bytes())
    assert doc["info"] == original["info"] and len(doc["messages"]) < len(original["messages"])
    written = formats.read(out.read_bytes(), path=str(out))
    assert written.format == "opencode"
    msgs = written.sessions[0].messages
    assert len([x for x in msgs if markers.is_summary(x)]) == 1
    assert toolpairs.orphans(msgs) == ([], [])
    # Messages the run kept whole are the very bytes of the export.
    kept = [item for item in doc["messages"] if item in original["messages"]]
    assert kept and all(
        json.dumps(item, indent=2).replace("\n", "\n    ").encode() in EXPORT.read_bytes()
        for item in kept[-1:]
    )
