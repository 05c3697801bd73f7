"""The MCP server of `ctxpack mcp`: the recall, search and compactions tools
over one archive, on stdio, built on the official MCP Python SDK.

Each call opens the archive afresh (it may not exist yet when the server
starts, and compactions keep adding to it) and closes it again. Anything a
call cannot do is a tool error with a message the model can act on; the
server goes on serving.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import orjson
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from ctxpack.archive.recall import (
    DEFAULT_COMPACTIONS,
    DEFAULT_HITS,
    DEFAULT_LINES,
    MAX_COMPACTIONS,
    MAX_HITS,
    MAX_LINES,
    PAGE_CHARS,
    Recall,
)
from ctxpack.errors import CtxpackError
from ctxpack.markers import RECALL_TOOL

SERVER_NAME = "ctxpack"
INSTRUCTIONS = (
    "ctxpack compacted this conversation: old tool outputs became one-line "
    "placeholders and older turns a summary record, each citing a ref like "
    "ctxpack:1a2b3c4d5e. recall(ref) returns that full text, a page at a time; "
    "search(query) finds archived lines when the ref is not known; "
    "compactions() lists what was compacted."
)
READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)


def _tool_errors(fn: Callable[..., CallToolResult]) -> Callable[..., CallToolResult]:
    """ctxpack's own errors (a bad ref, a missing archive) as tool errors."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> CallToolResult:
        try:
            return fn(*args, **kwargs)
        except CtxpackError as exc:
            raise ToolError(exc.describe()) from None

    return run


def _json(value: Any) -> CallToolResult:
    text = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    structured = value if isinstance(value, dict) else {"result": value}
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=structured
    )


RECALL_HELP = (
    "The full text that a ctxpack placeholder or summary record cites by ref"
    " (ctxpack:<hex>): a pruned tool output, the summarized turns, an original"
    " transcript. Long texts come a page at a time (max_lines, at most"
    f" {MAX_LINES:,}, about {PAGE_CHARS:,} characters): the first block says where the"
    " text came from (session, message, tool, command or path), which lines of how"
    " many this page holds and the call for the next page; the second block is"
    " the text itself, exactly as archived."
)
SEARCH_HELP = (
    "Full-text search over what compaction set aside (pruned tool outputs,"
    " summarized turns), for when the ref is not known. Every word of the query"
    ' must be on the line; "words in quotes" must appear together; a word ending'
    " in * is a prefix. session narrows it to one transcript (its path, file name"
    f" or session id); limit is at most {MAX_HITS}. Returns the best lines: ref,"
    " line number, snippet and where the text came from; read on with"
    " recall(ref, start_line=line)."
)
COMPACTIONS_HELP = (
    "The compactions recorded for a transcript (its path, file name or session"
    f" id), or for all, newest first (limit at most {MAX_COMPACTIONS}): when,"
    " tokens before and after, the original's ref and size, and the ref, size and"
    " origin of every text each one set aside."
)


def build(archive: str | os.PathLike[str] | None) -> MCPServer[Any]:
    """The server, serving the archive at `archive` (None: the default archive)."""
    server: MCPServer[Any] = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS)

    @server.tool(name=RECALL_TOOL, description=RECALL_HELP, annotations=READ_ONLY)
    @_tool_errors
    def recall(ref: str, start_line: int = 1, max_lines: int = DEFAULT_LINES) -> CallToolResult:
        with Recall.open(archive) as store:
            page = store.page(ref=ref, start_line=start_line, max_lines=max_lines)
        return CallToolResult(
            content=[
                TextContent(type="text", text=page.header()),
                TextContent(type="text", text=page.text),
            ]
        )

    @server.tool(description=SEARCH_HELP, annotations=READ_ONLY)
    @_tool_errors
    def search(query: str, session: str | None = None, limit: int = DEFAULT_HITS) -> CallToolResult:
        with Recall.open(archive) as store:
            hits = store.search(query=query, session=session, limit=limit)
        return _json({"query": query, "hits": [hit.to_dict() for hit in hits]})

    @server.tool(description=COMPACTIONS_HELP, annotations=READ_ONLY)
    @_tool_errors
    def compactions(session: str | None = None, limit: int = DEFAULT_COMPACTIONS) -> CallToolResult:
        with Recall.open(archive) as store:
            entries = store.compactions(session=session, limit=limit)
        return _json({"compactions": entries})

    return server


def serve(archive: str | os.PathLike[str] | None) -> None:
    """Serve on stdin/stdout until the client closes them."""
    build(archive).run("stdio")
