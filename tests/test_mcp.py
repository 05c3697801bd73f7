"""`ctxpack mcp` through the MCP SDK's own client, over stdio, against a real
server process: the tools it lists, recall of the exact archived bytes page by
page, search of a line only a pruned output holds, and errors that leave the
server serving."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ctxpack import formats
from ctxpack import messages as m
from ctxpack.archive.fts import lines_of
from ctxpack.archive.store import Archive
from ctxpack.cli import app
from tests.conftest import COUNTER, FIXTURES

mcp_client = pytest.importorskip("mcp.client.stdio", reason="the MCP SDK (ctxpack[mcp])")
from mcp import ClientSession  # noqa: E402
from mcp.types import CallToolResult, TextContent  # noqa: E402

pytestmark = pytest.mark.anyio
runner = CliRunner()
SOURCE = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"
FULL_REF = re.compile(r"full: (ctxpack:[0-9a-f]{10})")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def compacted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real fixture (as plain OpenAI messages) compressed with an archive."""
    where = tmp_path_factory.mktemp("mcp")
    session = where / "s.jsonl"
    session.write_bytes(
        formats.write(formats.read(SOURCE.read_bytes(), path="s"), fmt="openai", counter=COUNTER)
    )
    out, archive = where / "c.jsonl", where / "archive.db"
    done = runner.invoke(
        app,
        [
            "compress",
            "--force",
            "--offline",
            str(session),
            "-o",
            str(out),
            "--archive",
            str(archive),
        ],
    )
    assert done.exit_code == 0, done.output
    originals = [m.text(json.loads(line)) for line in session.read_bytes().splitlines()]
    written = out.read_text(encoding="utf-8")
    # Each pruned output's ref and the original text it replaced.
    pruned: dict[str, str] = {}
    for line in out.read_bytes().splitlines():
        text = m.text(json.loads(line))
        found = FULL_REF.search(text)
        if found:
            with Archive.open(archive, create=False) as store:
                blob = store.get_blob(found.group(1)).decode()
            assert blob in originals
            pruned[found.group(1)] = blob
    assert pruned
    return {"archive": archive, "pruned": pruned, "written": written, "dir": where}


@asynccontextmanager
async def server(archive: Path) -> AsyncIterator[ClientSession]:
    params = mcp_client.StdioServerParameters(
        command=sys.executable, args=["-m", "ctxpack", "mcp", "--archive", str(archive)]
    )
    async with mcp_client.stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        yield s


async def call(client: ClientSession, tool: str, **arguments: Any) -> CallToolResult:
    result = await client.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult)
    return result


def texts(result: CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


async def test_lists_the_three_read_only_tools(compacted: dict[str, Any]) -> None:
    async with server(compacted["archive"]) as session:
        listed = await session.list_tools()
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == {"recall", "search", "compactions"}
    assert set(tools["recall"].input_schema["properties"]) == {"ref", "start_line", "max_lines"}
    assert tools["recall"].input_schema["required"] == ["ref"]
    assert set(tools["search"].input_schema["properties"]) == {"query", "session", "limit"}
    assert all(tool.annotations and tool.annotations.read_only_hint for tool in tools.values())


async def test_recall_pages_concatenate_to_the_exact_archived_output(
    compacted: dict[str, Any],
) -> None:
    ref, original = max(compacted["pruned"].items(), key=lambda item: item[1].count("\n"))
    total = len(lines_of(original))
    assert total > 6
    pieces: list[str] = []
    start = 1
    async with server(compacted["archive"]) as session:
        whole = await call(session, "recall", ref=ref)
        while True:
            result = await call(session, "recall", ref=ref, start_line=start, max_lines=3)
            assert not result.is_error
            header, text = texts(result)
            end = min(start + 2, total)
            assert f"Lines {start}-{end} of {total}" in header
            assert "tool output of" in header and "message" in header
            pieces.append(text)
            following = re.search(r"start_line=(\d+)\)", header)
            if following is None:
                assert "end of the text" in header
                break
            start = int(following.group(1))
            assert start == end + 1
    assert "".join(pieces).encode() == original.encode()
    assert texts(whole)[1] == original
    assert len(pieces) == -(-total // 3)


async def test_search_finds_a_line_only_a_pruned_output_holds(compacted: dict[str, Any]) -> None:
    candidates = [
        (ref, number, line.strip())
        for ref, text in compacted["pruned"].items()
        for number, line in enumerate(lines_of(text), 1)
        if len(line.strip()) > 30 and line.strip() not in compacted["written"]
    ]
    assert candidates
    ref, number, line = candidates[0]
    words = re.findall(r"[A-Za-z0-9]{4,}", line)[:4]
    query = " ".join(words)
    async with server(compacted["archive"]) as session:
        result = await call(session, "search", query=query, limit=50)
    assert not result.is_error
    hits = json.loads(texts(result)[0])["hits"]
    assert {"ref": ref, "line": number} in [{"ref": h["ref"], "line": h["line"]} for h in hits]
    hit = next(h for h in hits if h["ref"] == ref and h["line"] == number)
    assert words[0] in hit["snippet"]
    assert hit["kind"] == "tool output"


async def test_compactions_lists_the_session_with_refs_and_sizes(
    compacted: dict[str, Any],
) -> None:
    async with server(compacted["archive"]) as session:
        result = await call(session, "compactions", session="s")
        none = await call(session, "compactions", session="no-such-session")
    entries = json.loads(texts(result)[0])["compactions"]
    assert len(entries) == 1
    refs = {blob["ref"]: blob["size"] for blob in entries[0]["blobs"]}
    for ref, text in compacted["pruned"].items():
        assert refs[ref] == len(text.encode())
    assert json.loads(texts(none)[0]) == {"compactions": []}


async def test_bad_refs_are_tool_errors_and_the_server_keeps_serving(
    compacted: dict[str, Any],
) -> None:
    ref = next(iter(compacted["pruned"]))
    async with server(compacted["archive"]) as session:
        unknown = await call(session, "recall", ref="ctxpack:0000000000")
        malformed = await call(session, "recall", ref="ctxpack:not-hex!")
        short = await call(session, "recall", ref="ctxpack:12")
        past = await call(session, "recall", ref=ref, start_line=10_000)
        later = await call(session, "recall", ref=ref)
    assert unknown.is_error and "no archived blob matches ctxpack:0000000000" in texts(unknown)[0]
    assert malformed.is_error and "is not a ctxpack ref" in texts(malformed)[0]
    assert short.is_error and "too short" in texts(short)[0]
    assert past.is_error and "past the end" in texts(past)[0]
    assert not later.is_error and texts(later)[1] == compacted["pruned"][ref]


async def test_a_missing_archive_is_a_tool_error_until_one_exists(
    compacted: dict[str, Any], tmp_path: Path
) -> None:
    archive = tmp_path / "later.db"
    session_file = compacted["dir"] / "s.jsonl"
    async with server(archive) as session:
        missing = await call(session, "search", query="anything")
        listed = await call(session, "compactions")
        args = ["compress", "--force", "--offline", str(session_file), "--archive", str(archive)]
        done = runner.invoke(app, [*args, "-o", str(tmp_path / "o.jsonl")])
        assert done.exit_code == 0, done.output
        now = await call(session, "compactions")
    assert missing.is_error and "no archive here yet" in texts(missing)[0]
    assert str(archive) in texts(missing)[0]
    assert listed.is_error
    assert not now.is_error and len(json.loads(texts(now)[0])["compactions"]) == 1
    assert not archive.with_name("later.db-journal").exists()
