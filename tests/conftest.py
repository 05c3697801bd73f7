"""Shared test fixtures: the real transcripts, a token counter, no network."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from ctxpack.cli import register
from ctxpack.tokens.counter import TokenCounter

# Tests drive the Typer app directly: every command on it, as `--help` has.
register()

# CI explores the same examples on every run: a red build means a real regression,
# never an unlucky draw. Locally each run still searches fresh examples.
settings.register_profile("ci", derandomize=True, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TAU_BENCH = FIXTURES / "openai-chat" / "tau-bench__historical_trajectories__gpt-4o-airline.json"
TOOLBENCH = FIXTURES / "openai-chat" / "ToolBench__G2_answer__52_ChatGPT_DFS_woFilter_w2.json"
OPENAI_FIXTURES = sorted((FIXTURES / "openai-chat").glob("*.json"))
# What the format tests write with: the default encoding, as a run without options.
COUNTER = TokenCounter()

# More real transcripts, shared by every checkout next to the repository (may be absent).
SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "real-transcripts"


@pytest.fixture(scope="session")
def counter() -> TokenCounter:
    return TokenCounter()


@pytest.fixture(scope="session")
def archived_session(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 300 KB JSONL session of real turns, compressed with a small tail into
    an archive of its own: its source, output and archive."""
    from typer.testing import CliRunner

    from bench.run import build_input
    from ctxpack.cli import app

    where = tmp_path_factory.mktemp("archived")
    source, out, archive = where / "s.jsonl", where / "c.jsonl", where / "a.db"
    build_input(300_000, source)
    small_tail = ("--tail-tokens", "2000", "--protect-last", "4")
    args = ["compress", "--force", "--offline", *small_tail, str(source), "-o", str(out)]
    done = CliRunner().invoke(app, [*args, "--archive", str(archive)])
    assert done.exit_code == 0, done.output
    return {"source": source, "out": out, "archive": archive}


def assert_restores_and_checks(archived: dict[str, Path]) -> None:
    """The archived session's output restores to its source byte for byte, and
    `archive check` finds no problem (through the CLI)."""
    from typer.testing import CliRunner

    from ctxpack.cli import app

    runner, archive = CliRunner(), str(archived["archive"])
    restored = archived["out"].parent / "restored.jsonl"
    done = runner.invoke(
        app, ["restore", str(archived["out"]), "-o", str(restored), "--archive", archive]
    )
    assert done.exit_code == 0 and restored.read_bytes() == archived["source"].read_bytes()
    check = runner.invoke(app, ["archive", "check", "--archive", archive])
    assert check.exit_code == 0 and "no problems" in " ".join(check.stderr.split())


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any attempt to open a non-loopback connection fails the test."""
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: object) -> object:
        host = address[0] if isinstance(address, tuple) else address
        if host not in ("127.0.0.1", "::1", "localhost") and not isinstance(host, bytes):
            raise AssertionError(f"network access attempted: {address!r}")
        return real_connect(self, address)  # type: ignore[arg-type]

    real_getaddrinfo = socket.getaddrinfo

    def lookup(host: object, *args: object, **kwargs: object) -> object:
        if host not in ("127.0.0.1", "::1", "localhost"):
            raise AssertionError(f"DNS lookup attempted: {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", guarded)
    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    yield


@pytest.fixture(autouse=True)
def private_state(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests never touch the user's archive or summary cache."""
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("CTXPACK_ARCHIVE", str(state / "archive.db"))
    monkeypatch.setenv("XDG_DATA_HOME", str(state / "data"))
    for name in (
        "CTXPACK_MODEL",
        "CTXPACK_BASE_URL",
        "CTXPACK_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)


# A plugin package with its own entry points (engines and summarizers).
PLUGIN = Path(__file__).resolve().parent / "plugins" / "ctxpack_testplugin"


@pytest.fixture
def plugin(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> str:
    """The test plugin installed as pip would leave it for importlib.metadata: a
    dist-info folder (METADATA, entry_points.txt from its pyproject) on sys.path,
    next to its source. Returns the PYTHONPATH a child process needs to see it."""
    import tomllib

    project = tomllib.loads((PLUGIN / "pyproject.toml").read_text())["project"]
    site = tmp_path_factory.mktemp("site")
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in entries.items())
            for group, entries in project["entry-points"].items()
        )
    )
    monkeypatch.syspath_prepend(str(PLUGIN))
    monkeypatch.syspath_prepend(str(site))
    return os.pathsep.join([str(site), str(PLUGIN)])
