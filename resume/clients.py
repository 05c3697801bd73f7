"""How each real client is pointed at the stub, where its sessions live, and
how it is resumed non-interactively.

Every run gets its own HOME (under .resume/runs, not /tmp: Codex refuses to
set up its helpers under a temporary directory and says so on stderr).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resume.requests import Item, anthropic_items, responses_items

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".resume"
BIN = CACHE / "node_modules" / ".bin"
RUNS = CACHE / "runs"


@dataclass(frozen=True)
class Run:
    argv: list[str]
    env: dict[str, str]

    def __call__(self, *, cwd: Path, timeout: float) -> tuple[int, str]:
        """Run it with no stdin; (exit status, stderr), -1 when it timed out."""
        try:
            done = subprocess.run(
                self.argv,
                cwd=cwd,
                env=self.env,
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as exc:
            err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else ""
            return -1, err
        return done.returncode, done.stderr


def _base_env(home: Path) -> dict[str, str]:
    return {
        "PATH": f"{BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
    }


def _claude_env(home: Path, base_url: str) -> dict[str, str]:
    return _base_env(home) | {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-ant-stub",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        # Wait for MCP servers before the first request (by default a -p run
        # sends it at once and names a server still starting as "connecting"),
        # and for up to a minute, not 5 s: on a loaded machine importing the
        # MCP SDK alone can take longer.
        "MCP_CONNECTION_NONBLOCKING": "0",
        "MCP_CONNECT_TIMEOUT_MS": "60000",
    }


def claude_mcp_add(*, home: Path, name: str, argv: list[str]) -> Run:
    """`claude mcp add NAME -- ARGV...`, as a user registers a stdio MCP server:
    it goes into this run's HOME, for the project of the cwd it runs in."""
    return Run(["claude", "mcp", "add", name, "--", *argv], _claude_env(home, ""))


def _first(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row: dict[str, Any] = json.loads(line)
                return row
    raise ValueError(f"{path}: empty session")


@dataclass(frozen=True)
class Client:
    name: str
    api: str  # "anthropic" or "responses": which stub endpoint it calls
    parse: Callable[[dict[str, Any]], list[Item]]
    # stderr lines that come from talking to a stub or from where the check
    # runs, not from reading the session
    noise: tuple[str, ...]

    def session_id(self, session: Path) -> str:
        if self.name == "claude-code":
            with session.open(encoding="utf-8") as fh:
                for line in fh:
                    sid = json.loads(line).get("sessionId") if line.strip() else None
                    if sid:
                        return str(sid)
            raise ValueError(f"{session}: no sessionId")
        if self.name == "codex":
            return str(_first(session)["payload"]["id"])
        return str(_first(session)["id"])

    def place(self, *, session: Path, home: Path, cwd: Path) -> str:
        """Copy `session` to where the client looks for it; return its id."""
        sid = self.session_id(session)
        if self.name == "claude-code":
            # Claude Code names a project folder after the cwd, every
            # non-alphanumeric character turned into '-'.
            folder = home / ".claude" / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", str(cwd))
            dest = folder / f"{sid}.jsonl"
        elif self.name == "codex":
            stamp = str(_first(session)["payload"].get("timestamp") or "2026-01-01T00:00:00")
            day, clock = stamp[:10], stamp[11:19].replace(":", "-")
            folder = home / ".codex" / "sessions" / day.replace("-", "/")
            dest = folder / f"rollout-{day}T{clock}-{sid}.jsonl"
        else:
            folder = home / ".pi" / "agent" / "sessions" / f"-{str(cwd).replace('/', '-')}--"
            dest = folder / session.name
        folder.mkdir(parents=True, exist_ok=True)
        if self.name == "pi":
            # pi refuses a session whose recorded cwd is missing: the header
            # names this run's cwd instead; every other line is copied as is.
            first, rest = session.read_text(encoding="utf-8").split("\n", 1)
            header = json.loads(first) | {"cwd": str(cwd)}
            dest.write_text(json.dumps(header) + "\n" + rest, encoding="utf-8")
        else:
            shutil.copyfile(session, dest)
        return sid

    def command(
        self,
        *,
        home: Path,
        base_url: str,
        prompt: str,
        sid: str | None,
        model: str,
        allow: tuple[str, ...] = (),
    ) -> Run:
        """The non-interactive command: resume `sid` (or start fresh) with
        `prompt`; Claude Code runs Bash and the `allow` tools without asking."""
        env = _base_env(home)
        if self.name == "claude-code":
            resume = ["--resume", sid] if sid else []
            argv = ["claude", "-p", prompt, *resume, "--allowedTools", "Bash", *allow]
            return Run(argv, _claude_env(home, base_url))
        if self.name == "codex":
            env |= {"OPENAI_API_KEY": "sk-stub", "CODEX_API_KEY": "sk-stub"}
            config = home / ".codex" / "config.toml"
            config.parent.mkdir(parents=True, exist_ok=True)
            # The provider stays `openai` (Codex refuses a provider change on
            # resume); only its base URL moves to the stub.
            config.write_text(
                f'openai_base_url = "{base_url}/v1"\nmodel = "{model}"\n'
                "check_for_update_on_startup = false\n"
                "[features]\nresponses_websockets = false\nresponses_websockets_v2 = false\n"
                "[analytics]\nenabled = false\n",
                encoding="utf-8",
            )
            flags = ["--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]
            if sid:
                return Run(["codex", "exec", "resume", *flags, sid, prompt], env)
            return Run(["codex", "exec", *flags, prompt], env)
        env |= {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0"}
        agent = home / ".pi" / "agent"
        agent.mkdir(parents=True, exist_ok=True)
        provider = {
            "baseUrl": base_url,
            "api": "anthropic-messages",
            "apiKey": "sk-ant-stub",
            "models": [{"id": model, "contextWindow": 200000, "maxTokens": 4096}],
        }
        models = {"providers": {"stub": provider}}
        (agent / "models.json").write_text(json.dumps(models), encoding="utf-8")
        resume = ["--session", sid] if sid else []
        return Run(["pi", "--model", f"stub/{model}", *resume, "-p", prompt], env)

    def model(self, session: Path | None) -> str:
        """The model to resume with: the session's own, so no client warns of a switch."""
        if self.name == "codex":
            found = "gpt-5.5"
            if session is not None:
                with session.open(encoding="utf-8") as fh:
                    for line in fh:
                        row = json.loads(line) if line.strip() else {}
                        if row.get("type") == "turn_context":
                            found = str(row["payload"].get("model") or found)
            return found
        return "stub-model"


CLIENTS = {
    "claude-code": Client("claude-code", "anthropic", anthropic_items, ()),
    "codex": Client(
        "codex",
        "responses",
        responses_items,
        (
            # The stub speaks no WebSocket: Codex tries once, then uses HTTPS.
            "ERROR codex_api::endpoint::responses_websocket: failed to connect",
            # The stub serves no model catalog.
            "Defaulting to fallback metadata",
            # A checkout under the system's temporary folder (a fresh clone
            # made with mktemp -d) puts the run's HOME there, where Codex
            # makes no helper binaries: a word on the folder, not the session.
            "could not create PATH aliases",
        ),
    ),
    "pi": Client("pi", "anthropic", anthropic_items, ()),
}
