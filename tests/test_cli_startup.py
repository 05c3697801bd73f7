"""A run loads only the command it names, and ends without taking the
interpreter apart, losing nothing; help still lists every command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxpack.cli import COMMAND_MODULES, COMMANDS, app, modules_for
from tests.conftest import FIXTURES


def test_every_command_on_the_app_is_mapped_to_its_module() -> None:
    names = {command.name or command.callback.__name__ for command in app.registered_commands}
    names |= {group.name for group in app.registered_groups}
    assert names == set(COMMANDS)
    assert set(COMMANDS.values()) == set(COMMAND_MODULES)


@pytest.mark.parametrize(
    ("argv", "modules"),
    [
        (["count", "s.jsonl"], ("count",)),
        (["update", "-", "--offline"], ("summarize",)),
        (["config"], ("compress",)),
        (["archive", "check"], ("archive",)),
        (["--version"], ()),
        (["--version", "--help"], COMMAND_MODULES),
        (["--help"], COMMAND_MODULES),
        ([], COMMAND_MODULES),
        (["cuont", "s.jsonl"], COMMAND_MODULES),
    ],
)
def test_modules_for_a_command_line(argv: list[str], modules: tuple[str, ...]) -> None:
    assert modules_for(argv) == modules


def _loaded_after(argv: list[str], prefixes: tuple[str, ...] = ("ctxpack.cli.",)) -> set[str]:
    code = (
        "import sys\n"
        f"sys.argv = ['ctxpack', *{argv!r}]\n"
        "from ctxpack.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print('LOADED', *(m for m in sys.modules if m.startswith({prefixes!r})))\n"
    )
    # stderr is a pipe here, and nothing forces a terminal's colours on it.
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    last = done.stdout.splitlines()[-1].split()
    assert last[0] == "LOADED"
    return set(last[1:])


def test_version_loads_no_command_and_a_command_loads_only_its_own() -> None:
    commands = {f"ctxpack.cli.{name}" for name in COMMAND_MODULES}
    assert _loaded_after(["--version"]) & commands == set()
    assert _loaded_after(["formats", "--json"]) & commands == {"ctxpack.cli.formats"}


def test_help_lists_every_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ctxpack", "--help"], capture_output=True, text=True, check=True
    )
    for name in COMMANDS:
        assert name in done.stdout


def test_a_batch_off_a_terminal_loads_no_rich(tmp_path: Path) -> None:
    # Its progress bar is drawn only on a terminal; the table is written plainly.
    batch = ["compress", str(FIXTURES / "codex"), "-o", str(tmp_path / "out"), "--jobs", "2"]
    argv = [*batch, "--offline", "--force", "--archive", str(tmp_path / "a.db")]
    assert _loaded_after(argv, ("rich.progress", "rich.console", "rich.table")) == set()


def test_only_the_ray_runner_loads_ray(tmp_path: Path) -> None:
    heavy = ("ray", "pyarrow", "ctxpack.distributed")
    batch = ["compress", str(FIXTURES / "codex"), "-o", str(tmp_path / "out"), "--jobs", "2"]
    for argv in (
        [*batch, "--offline", "--force", "--archive", str(tmp_path / "a.db")],
        ["config"],
        ["compress", "--help"],
    ):
        assert _loaded_after(argv, heavy) == set(), argv


@pytest.mark.parametrize(
    "argv",
    [
        ["count"],
        ["compress", "--offline", "--force", "--no-archive", "-o", "-"],
        ["prune", "--dry-run", "--protect-last", "4"],
    ],
    ids=" ".join,
)
def test_a_small_input_loads_neither_pydantic_nor_tiktoken(argv: list[str]) -> None:
    # typer's pydantic coercion and tiktoken's encoder each cost more than the
    # whole count of a small session (the first run may build the token table).
    path = str(FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl")
    _loaded_after(["count", path], ("tiktoken",))
    assert _loaded_after([*argv, path], ("pydantic", "tiktoken")) == set()


def test_a_small_call_loads_no_module_it_does_not_use(tmp_path: Path) -> None:
    # regex splits only text beyond ASCII and common symbols; hashlib loads
    # OpenSSL; rich's console and tables draw only on a terminal (a pipe gets
    # the same lines written plainly); worker processes are only started for
    # a batch, and threads only to pack a large file into the archive (their
    # module loads logging); no format's adapter is imported but the file's.
    path = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"
    unused = ("regex", "hashlib", "_hashlib", "gzip", "importlib.resources", "rich.console")
    unused += ("ctxpack.formats.codex", "ctxpack.formats.sharegpt", "ctxpack.formats.openai")
    assert _loaded_after(["count", str(path)], unused) == set()
    compress = ["compress", "--offline", "--force", str(path), "-o", str(tmp_path / "out.jsonl")]
    assert (
        _loaded_after(
            [*compress, "--archive", str(tmp_path / "a.db")],
            ("rich.console", "rich.table", "multiprocessing", "concurrent.futures", "logging"),
        )
        == set()
    )


def test_a_prune_run_loads_none_of_the_compaction_stages() -> None:
    path = str(FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl")
    compaction = ("ctxpack.pipeline.stages", "ctxpack.evaluate", "ctxpack.engines")
    assert _loaded_after(["prune", "--dry-run", path], compaction) == set()
    assert _loaded_after(
        ["compress", "--offline", "--force", "--no-archive", "-o", "-", path],
        ("ctxpack.pipeline.stages",),
    ) == {"ctxpack.pipeline.stages"}


def _entry(code: str) -> subprocess.CompletedProcess[str]:
    """`code`, then the entry point `ctxpack` runs, in a process of its own."""
    script = f"import sys\n{code}\nfrom ctxpack.__main__ import main\nmain()\n"
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)


def test_the_entry_point_writes_everything_and_exits_with_the_command_code() -> None:
    path = str(FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl")
    argv = f"sys.argv = ['ctxpack', 'prune', '--dry-run', '--json', {path!r}]"
    whole = _entry(argv)
    assert whole.returncode == 0
    # The command line itself, ended by Python's own exit.
    reference = subprocess.run(
        [sys.executable, "-c", f"import sys\n{argv}\nfrom ctxpack.cli import main\nmain()\n"],
        capture_output=True,
        text=True,
    )
    assert reference.returncode == 0
    assert whole.stdout == reference.stdout and whole.stdout.endswith("\n")
    missing = _entry("sys.argv = ['ctxpack', 'count', '/no/such/session.jsonl']")
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr.startswith("error: /no/such/session.jsonl")
    assert _entry("sys.argv = ['ctxpack', 'count', '--no-such-option']").returncode == 2


def test_the_entry_point_runs_exit_hooks_and_waits_for_a_running_thread() -> None:
    hooked = _entry(
        "import atexit\n"
        "atexit.register(lambda: print('hook ran', flush=True))\n"
        "sys.argv = ['ctxpack', '--version']"
    )
    assert (hooked.returncode, hooked.stdout.split("\n")[1:]) == (0, ["hook ran", ""])
    # A thread still running is waited for, as Python's own exit does.
    threaded = _entry(
        "import threading, time\n"
        "threading.Thread(target=lambda: (time.sleep(0.3), print('thread done'))).start()\n"
        "sys.argv = ['ctxpack', '--version']"
    )
    assert threaded.returncode == 0 and threaded.stdout.endswith("thread done\n")
