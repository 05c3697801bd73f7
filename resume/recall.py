"""The recall row of the real-client check: Claude Code, with `ctxpack mcp`
registered as the README tells users to, resumes a session compacted with
--recall; the stub model's first answer calls the recall tool on a ref a
placeholder of that session cites, and the tool result Claude Code sends back
in its next request must hold the archived output byte for byte.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from resume.clients import ROOT
from resume.requests import Item, file_strings

# A session Claude Code itself recorded: its shell outputs are pruned into
# placeholders at a context length that keeps them in the tail.
FIXTURE = ROOT / "resume" / "fixtures" / "claude-code" / "claude-code-2.1.332__stub-tally.jsonl"
SERVER = "ctxpack"
# Claude Code names a tool of an MCP server mcp__<server>__<tool>.
TOOL = f"mcp__{SERVER}__recall"
PLACEHOLDER = re.compile(r"\[ctxpack pruned\][^\n]*?full text: recall\('(ctxpack:[0-9a-f]+)'\)")


def cited_ref(session: Path) -> str:
    """The ref the first recall placeholder of a compacted session cites, or ''."""
    found = PLACEHOLDER.search(file_strings(str(session)))
    return found.group(1) if found else ""


def recall_call_at(items: list[Item], *, ref: str) -> int | None:
    """Where the request holds the stub's recall call on `ref`."""
    args = json.dumps({"ref": ref})
    return next((i for i, it in enumerate(items) if it.kind == "call" and it.text == args), None)


def result_problem(items: list[Item], *, ref: str, blob: str) -> str:
    """'' when the result of the recall call is the archived `blob` under a
    header naming `ref`, else what is wrong."""
    at = recall_call_at(items, ref=ref)
    if at is None:
        return f"no request holds the {TOOL} call on {ref}"
    call_id = items[at].call_id
    result = next((it for it in items if it.kind == "result" and it.call_id == call_id), None)
    if result is None:
        return f"no tool result for the {TOOL} call"
    if result.error:
        return f"tool error: {result.text[:300]}"
    if len(result.parts) != 2 or not result.parts[0].startswith(f"{ref}:"):
        return f"not a recall page of {ref}: {result.text[:300]!r}"
    text = result.parts[1]
    if text != blob:
        return (
            f"the page is not the archived output: {len(text.encode())} bytes,"
            f" archived {len(blob.encode())}; starts {text[:80]!r}"
        )
    return ""
