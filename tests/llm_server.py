"""A real HTTP server on 127.0.0.1 that speaks POST /v1/chat/completions.

Tests script its replies (status, JSON body, delay, a connection cut
mid-body, invalid JSON) and read back every request it received, so the LLM
path runs through the real openai client with no network and no mocks.

Use it in a test module with:
    from tests.llm_server import llm_server_fixture  # noqa: F401
and name `llm_server` as a test parameter (the fixture registers under that
name; importing it under another name keeps ruff's F811 quiet).
"""

from __future__ import annotations

import importlib
import json
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ctxpack.summarize.ledger import LEDGER_HEADING
from ctxpack.summarize.llm.settings import LLMSettings
from ctxpack.summarize.protocol import HEADINGS

# Tells the openai client how long to wait before a retry: keeps tests fast.
FAST_RETRY = {"retry-after-ms": "5"}


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # JSON-encoded unless `raw` is given
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering (cut short when the server stops)
    cut_mid_body: bool = False  # promise a long body, send a few bytes, close


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any

    def user_text(self) -> str:
        return "\n".join(
            str(msg.get("content", "")) for msg in self.body["messages"] if msg["role"] == "user"
        )

    def all_text(self) -> str:
        return "\n".join(str(msg.get("content", "")) for msg in self.body["messages"])


def summary_text(marker: str = "", *, actions: int = 2) -> str:
    """A reply body with every template heading filled."""
    sections = []
    for heading in HEADINGS:
        if heading == "Completed Actions":
            lines = "\n".join(
                f"{n}. RAN pytest -q — {n} failures left [tool: bash]"
                for n in range(1, actions + 1)
            )
        else:
            lines = f"{heading} notes. {marker}".strip()
        sections.append(f"## {heading}\n{lines}")
    return "\n\n".join(sections)


def model_part(record: str) -> str:
    """A record without the user ledger ctxpack appends to the model's reply."""
    return record.split(f"\n\n## {LEDGER_HEADING}\n", 1)[0]


def completion(content: str | None, *, finish_reason: str = "stop", model: str = "m") -> Any:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish_reason,
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    }


def ok(marker: str = "", **kwargs: Any) -> Reply:
    return Reply(body=completion(summary_text(marker, **kwargs)))


def error(status: int, message: str, *, code: str | None = None, **headers: str) -> Reply:
    body = {"error": {"message": message, "type": "error", "code": code}}
    return Reply(status=status, body=body, headers=dict(headers))


def settings_for(server: FakeLLM, **overrides: Any) -> LLMSettings:
    """Settings pointing at the fake server: no retries, short timeout, no cache."""
    values: dict[str, Any] = {
        "model": "test-model",
        "base_url": server.base_url,
        "api_key": "test-key",
        "timeout": 2.0,
        "max_retries": 0,
        "use_cache": False,
    }
    values.update(overrides)
    return LLMSettings(**values)


class FakeLLM(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.replies: deque[Reply] = deque()
        # Answers requests once the queue is empty; gets the request body.
        self.responder: Callable[[Any], Reply] | None = None
        self.received: list[Received] = []
        self.stopping = threading.Event()
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def next_reply(self, body: Any) -> Reply:
        with self._lock:
            if self.replies:
                return self.replies.popleft()
        if self.responder is not None:
            return self.responder(body)
        return error(500, "no reply scripted", **{"x-should-retry": "false"})


class _Handler(BaseHTTPRequestHandler):
    server: FakeLLM
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(length)
        try:
            body: Any = json.loads(data)
        except ValueError:
            body = data.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.received.append(Received(self.path, headers, body))
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(error(404, f"no route {self.path}"))
            return
        reply = self.server.next_reply(body)
        if reply.delay and self.server.stopping.wait(reply.delay):
            return
        self._send(reply)

    def _send(self, reply: Reply) -> None:
        payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if reply.cut_mid_body:
                self.send_header("Content-Length", str(len(payload) + 1000))
                self.end_headers()
                self.wfile.write(payload[: max(len(payload) // 2, 1)])
                self.wfile.flush()
                self.close_connection = True
                return
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (timeout): fine


@pytest.fixture(name="llm_server")
def llm_server_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLM]:
    # Keep the loopback request off any proxy the environment names, and keep
    # the developer's real OpenAI settings out of the tests.
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_CUSTOM_HEADERS", "OPENAI_ORG_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    # Import the client here, so its one-time import cost is not billed to a test body.
    importlib.import_module("openai")
    server = FakeLLM()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
