"""What a command printed, read the same for every agent: its output without
the agent's wrapper, status lines and colour codes, "" when it printed
nothing. A command that did not fail says in its action what it printed: a
short output whole, a longer one by its count of lines and its last line
with a word in it. A search says what it returned: a short answer whole, a
longer one by its first line, where searches say how many they found."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxpack.printed import printed
from ctxpack.prune.oneliners import one_liner
from tests.builders import result
from tests.conftest import FIXTURES
from tests.test_tool_rules import action, cli_record

CODEX_HEAD = "Chunk ID: 4067f7\nWall time: 0.0001 seconds\nProcess exited with code {code}\n"
GEMINI_OLD = (
    "Command: ls\nDirectory: (root)\nStdout: a.py\nStderr: (empty)\nError: (none)\n"
    "Exit Code: 0\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 7"
)


@pytest.mark.parametrize(
    ("output", "text"),
    [
        (
            CODEX_HEAD.format(code=0) + "Original token count: 6\nOutput:\n/Users/dev\n",
            "/Users/dev",
        ),
        (CODEX_HEAD.format(code=1) + "Original token count: 0\nOutput:\n", ""),
        ("Exit code 1\n", ""),
        ("hello\n", "hello"),
        ("(no output)\n\nCommand exited with code 1", ""),
        ("77\n", "77"),
        (
            "Output: \n> app build\n> tsc\n\nDone.\nProcess Group PGID: 90089",
            "> app build\n> tsc\n\nDone.",
        ),
        ("Output: (empty)\nExit Code: 1\nProcess Group PGID: 5", ""),
        (GEMINI_OLD, "a.py"),
        ("344\n(Open file: /t/r.py)\n(Current directory: /t)\nbash-$", "344"),
        (
            "Your command ran successfully and did not produce any output.\n"
            "(Open file: /t/r.py)\n(Current directory: /t)\nbash-$",
            "",
        ),
        ("hi\n[The command completed with exit code 0.]", "hi"),
        ('{"output": "3 files\\n", "exit_code": 0, "error": null}', "3 files"),
        ("Debugger attached.\nbuilt\nWaiting for the debugger to disconnect...\n", "built"),
        ("\x1b[32m✓\x1b[0m built in \x1b[1m2s\x1b[22m\n", "✓ built in 2s"),
        # Status words inside the output are the output's own.
        ("a\nexit code 3 is reserved\nb\nexit status 0", "a\nexit code 3 is reserved\nb"),
    ],
)
def test_what_a_command_printed_is_read_alike_for_every_agent(output: str, text: str) -> None:
    assert printed(output) == text


def outcome(command: str, output: str) -> str:
    return action("bash", {"command": command}, result("c1", output)).outcome


GIT_STATUS = "On branch main\nYour branch is up to date.\n\nnothing to commit, working tree clean\n"
PYTEST_OK = "tests/test_a.py ..\n\n===== 2 passed in 0.10s =====\n"


@pytest.mark.parametrize(
    ("command", "output", "expected"),
    [
        ("test -f a && echo yes || echo no", "no\n", 'ok, printed "no"'),
        (
            "git status",
            GIT_STATUS,
            'ok, printed 3 lines, the last "nothing to commit, working tree clean"',
        ),
        (
            "grep -A3 'render(' a.ts",
            "render(width: number): string[] {\n  const lines = this.wrap(width);\n"
            "  return lines;\n}\n",
            'ok, printed 4 lines, the last "return lines;"',
        ),
        (
            "seq 1 40 | tr '\\n' ' '",
            " ".join(map(str, range(1, 41))),
            'ok, printed "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23…"',
        ),
        # rg searches as grep does: what it found is what it came to.
        (
            "rg --files src -g '*.toml'",
            "src/app/Cargo.toml\nsrc/Anchor.toml\nsrc/Cargo.toml\n",
            'ok, printed "src/app/Cargo.toml src/Anchor.toml src/Cargo.toml"',
        ),
        ("grep -n x a.py", "(no output)\n\nCommand exited with code 1", "exit 1, nothing printed"),
        ("mkdir -p out", "", "ok"),
        # A file read says so in its files; its text is not what it came to.
        ("cat a.py", "print(1)\n", "ok"),
        ("pytest -q", PYTEST_OK, "2 passed"),
        (
            "make",
            "make: *** [all] Error 2\n\nCommand exited with code 2",
            "exit 2, make: *** [all] Error 2",
        ),
        ("npm run dev", "Process running with session ID 7\nready", "still running"),
    ],
)
def test_an_action_says_what_its_command_printed(command: str, output: str, expected: str) -> None:
    assert outcome(command, output) == expected


@pytest.mark.parametrize(
    "output", ["no\n", GIT_STATUS, "(no output)\n\nCommand exited with code 0"]
)
def test_a_stand_in_keeps_no_output_to_quote(output: str) -> None:
    args: dict[str, Any] = {"command": "git status"}
    stand_in = one_liner(name="bash", arguments=json.dumps(args), output=output * 400)
    assert outcome("git status", stand_in) in ("ok", "exit 0")


SWE_FIND = (
    'Found 1 matches for "fields.py" in /testbed/src:\r\n/testbed/src/marshmallow/fields.py\n'
    "(Open file: /testbed/reproduce.py)\n(Current directory: /testbed)\nbash-$"
)


@pytest.mark.parametrize(
    ("name", "args", "output", "expected"),
    [
        ("Glob", {"pattern": "**/*.log"}, "No files found", 'ok, returned "No files found"'),
        (
            "Grep",
            {"pattern": "parse_date", "output_mode": "files_with_matches"},
            "Found 3 files\nsrc/dates.py\nsrc/cli.py\ntests/test_dates.py\n",
            'ok, returned "Found 3 files src/dates.py src/cli.py tests/test_dates.py"',
        ),
        (
            "Grep",
            {"pattern": "parse_date", "output_mode": "files_with_matches"},
            "Found 5 files\n" + "\n".join(f"src/dates/module_{i}.py" for i in range(5)),
            'ok, found 5 files, the first "src/dates/module_0.py"',
        ),
        # SWE-agent's footer is no part of the answer; its count is in its words.
        (
            "find_file",
            {"file_name": "fields.py", "dir": "src"},
            SWE_FIND,
            'ok, found 1 match: "/testbed/src/marshmallow/fields.py"',
        ),
        # A long answer with no count is told by its lines.
        (
            "Glob",
            {"pattern": "src/**/*.py"},
            "\n".join(f"src/dates/module_{i}.py" for i in range(5)),
            'ok, returned 5 lines, the first "src/dates/module_0.py"',
        ),
        ("grep_search", {"pattern": "activeTeam"}, "", "ok"),
    ],
)
def test_a_search_says_what_it_returned(
    name: str, args: dict[str, Any], output: str, expected: str
) -> None:
    assert action(name, args, result("c1", output)).outcome == expected


def test_a_pruned_search_keeps_no_answer_to_quote() -> None:
    args: dict[str, Any] = {"pattern": "parse_date"}
    listing = "\n".join(f"src/module_{i}.py" for i in range(2000))
    stand_in = one_liner(name="Grep", arguments=json.dumps(args), output=listing)
    assert action("Grep", args, result("c1", stand_in)).outcome == "ok"


PI_TALLY = FIXTURES / "pi" / "pi-0.73.1__stub-tally.jsonl"
CODEX_SESSION = FIXTURES / "codex" / "Trezo-Ai__codex-session.jsonl"


def test_the_cli_records_of_real_sessions_say_what_commands_printed(tmp_path: Path) -> None:
    pi = cli_record(PI_TALLY, tmp_path)["Completed Actions"]
    assert (
        pi[0] == "1. Ran `seq 1 300 > tally.txt && wc -l tally.txt` — ok,"
        ' printed "300 tally.txt" [tool: bash]'
    )
    assert (
        "3. Ran `awk '$1 % 2 == 0' tally.txt | tr '\\n' ' '; echo; awk '$1 % 2 == 0' tally.txt"
        ' | wc -l` — ok, printed 2 lines, the last "150" [tool: bash]'
    ) in pi
    codex = cli_record(CODEX_SESSION, tmp_path)["Completed Actions"]
    assert codex[0] == (
        "1. Ran `test -f /Users/anmolbhardwaj/.superstack/.telemetry-prompted && echo yes"
        ' || echo no` — exit 0, printed "yes" [tool: exec_command]'
    )
