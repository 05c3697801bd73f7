"""Stub model servers on 127.0.0.1 for the real agent clients.

One server speaks both the Anthropic Messages API (Claude Code, pi) and the
OpenAI Responses API (Codex), streamed as SSE. It records every request body
and answers with a short final text; when asked to, it first answers a fresh
user turn with one shell tool call, so a recorded session holds a real
call/result pair, or (Anthropic clients) with a call of another tool the
client offers, such as an MCP server's. It stops by itself after `lifetime`
seconds, so a client that hangs cannot keep it alive.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FINAL_TEXT = "Resumed: I have the earlier context and will continue from here."


@dataclass
class Request:
    method: str
    path: str
    body: Any


@dataclass
class Stub:
    """What the server answers, and every request it received."""

    tool_command: str | None = None  # answer a fresh user turn with this shell command
    # Anthropic clients: answer a fresh user turn with this (tool name, input)
    # instead, when the client offers that tool.
    tool_use: tuple[str, dict[str, Any]] | None = None
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    port: int = 0
    # Ids unique across servers: a recorded session spans one server per turn.
    tag: str = field(default_factory=lambda: secrets.token_hex(4))

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def record(self, request: Request) -> str:
        with self.lock:
            self.requests.append(request)
            return f"{self.tag}{len(self.requests)}"


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _anthropic_call(body: dict[str, Any], stub: Stub) -> tuple[str, dict[str, Any]] | None:
    """The tool call that answers this request, if any: only a fresh user turn
    gets one, and only with a tool the client offered."""
    # Claude Code may end the list with a system-role note; the turn is the
    # last user or assistant message.
    turns = [m for m in body.get("messages") or [] if m.get("role") in ("user", "assistant")]
    if not turns or turns[-1].get("role") != "user":
        return None
    content = turns[-1].get("content")
    if isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    ):
        return None
    names = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    # Claude Code defers MCP tools: it names them in a message for its
    # ToolSearch tool instead of listing them, and runs a direct call anyway.
    if stub.tool_use is not None and (
        stub.tool_use[0] in names or stub.tool_use[0] in json.dumps(body.get("messages"))
    ):
        return stub.tool_use
    if stub.tool_command is not None:
        for name in ("Bash", "bash"):
            if name in names:
                return name, {"command": stub.tool_command, "description": "Run a command"}
    return None


def anthropic_events(
    body: dict[str, Any], *, n: str, call: tuple[str, dict[str, Any]] | None
) -> bytes:
    model = str(body.get("model", "stub"))
    start = {
        "type": "message_start",
        "message": {
            "id": f"msg_stub{n}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }
    out = [_sse("message_start", start)]
    if call is not None:
        block: dict[str, Any] = {
            "type": "tool_use",
            "id": f"toolu_stub{n}",
            "name": call[0],
            "input": {},
        }
        delta = {"type": "input_json_delta", "partial_json": json.dumps(call[1])}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": FINAL_TEXT}
        stop = "end_turn"
    out.append(
        _sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        )
    )
    out.append(
        _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
    )
    out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
    out.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 12},
            },
        )
    )
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


def _responses_tool(body: dict[str, Any], command: str) -> tuple[str, str] | None:
    """The shell tool Codex offered and arguments that run `command` with it."""
    for tool in body.get("tools") or []:
        name = tool.get("name") if isinstance(tool, dict) else None
        if name == "exec_command":
            return name, json.dumps({"cmd": command})
        if name == "shell_command":
            return name, json.dumps({"command": command})
        if name == "shell":
            return name, json.dumps({"command": ["bash", "-lc", command]})
    return None


def _responses_wants_tool(body: dict[str, Any]) -> bool:
    items = body.get("input") or []
    if not items:
        return False
    last = items[-1]
    return (
        isinstance(last, dict)
        and last.get("type", "message") == "message"
        and (last.get("role") == "user")
    )


def responses_events(body: dict[str, Any], *, n: str, tool_command: str | None) -> bytes:
    tool = None
    if tool_command is not None and _responses_wants_tool(body):
        tool = _responses_tool(body, tool_command)
    if tool is not None:
        item: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_stub{n}",
            "call_id": f"call_stub{n}",
            "name": tool[0],
            "arguments": tool[1],
            "status": "completed",
        }
    else:
        item = {
            "type": "message",
            "id": f"msg_stub{n}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": FINAL_TEXT, "annotations": []}],
        }
    response = {
        "id": f"resp_stub{n}",
        "object": "response",
        "status": "in_progress",
        "model": body.get("model", "stub"),
        "output": [],
    }
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 12,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 22,
    }
    out = [_sse("response.created", {"type": "response.created", "response": response})]
    out.append(
        _sse(
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 0, "item": item},
        )
    )
    if item["type"] == "message":
        out.append(
            _sse(
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": 0,
                    "content_index": 0,
                    "delta": FINAL_TEXT,
                },
            )
        )
    out.append(
        _sse(
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        )
    )
    done = {**response, "status": "completed", "output": [item], "usage": usage}
    out.append(_sse("response.completed", {"type": "response.completed", "response": done}))
    return b"".join(out)


def _handler(stub: Stub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the recorded requests are the log

        def _send(self, status: int, payload: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _json(self, payload: Any, status: int = 200) -> None:
            self._send(status, json.dumps(payload).encode(), "application/json")

        def do_HEAD(self) -> None:
            stub.record(Request("HEAD", self.path, None))
            self._send(200, b"", "text/plain")

        def do_GET(self) -> None:
            stub.record(Request("GET", self.path, None))
            path = self.path.split("?", 1)[0]
            if self.headers.get("Upgrade", "").lower() == "websocket":
                # 426 tells Codex at once to use plain HTTPS instead of retrying.
                self._send(426, b"", "text/plain")
            elif path.endswith("/models"):
                self._json({"object": "list", "data": [], "models": []})
            else:
                self._json({})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            n = stub.record(Request("POST", self.path, body))
            path = self.path.split("?", 1)[0]
            if not isinstance(body, dict):
                self._json({})
            elif path.endswith("/messages/count_tokens"):
                self._json({"input_tokens": 100})
            elif path.endswith("/messages"):
                payload = anthropic_events(body, n=n, call=_anthropic_call(body, stub))
                self._send(200, payload, "text/event-stream")
            elif path.endswith("/responses"):
                payload = responses_events(body, n=n, tool_command=stub.tool_command)
                self._send(200, payload, "text/event-stream")
            else:
                self._json({})

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client hanging up mid-request is not the stub's failure


@contextmanager
def serve(
    *,
    lifetime: float,
    tool_command: str | None = None,
    tool_use: tuple[str, dict[str, Any]] | None = None,
) -> Iterator[Stub]:
    """A running stub on a free loopback port; stops on exit or after `lifetime`."""
    stub = Stub(tool_command=tool_command, tool_use=tool_use)
    server = _Server(("127.0.0.1", 0), _handler(stub))
    stub.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    deadline = threading.Timer(lifetime, server.shutdown)
    deadline.daemon = True
    deadline.start()
    try:
        yield stub
    finally:
        deadline.cancel()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
