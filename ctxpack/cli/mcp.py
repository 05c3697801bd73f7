"""`ctxpack mcp`: serve the archive to the model that resumes a compacted
session, over MCP on stdio (register it with an agent: see the README)."""

from __future__ import annotations

from ctxpack.cli.app import app
from ctxpack.cli.settings import ArchiveOpt
from ctxpack.errors import UsageError


@app.command(
    epilog="Examples:\n\n  claude mcp add ctxpack -- ctxpack mcp"
    "\n\n  ctxpack mcp --archive ci-archive.db"
)
def mcp(archive: ArchiveOpt = None) -> None:
    """Serve the archive over MCP on stdio: tools recall(ref), search(query), compactions().

    Read-only: it never changes what the archive records (it keeps a full-text
    index beside it). Needs the optional extra: pip install 'ctxpack[mcp]'.
    """
    try:
        from ctxpack.archive.server import serve
    except ModuleNotFoundError as exc:
        if exc.name is None or not exc.name.startswith("mcp"):
            raise
        raise UsageError("`ctxpack mcp` needs the MCP SDK: pip install 'ctxpack[mcp]'") from None
    serve(archive)
