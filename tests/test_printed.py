"""What a command printed, read the same for every agent: its output without
the agent's wrapper, status lines and colour codes, "" when it printed
nothing. A command that did not fail says in its action what it printed: a
short output whole, a longer one by its count of lines and its last line
with a word in it. A search says what it returned: a short answer whole, a
longer one by its first line, where searches say how many they found.
A stand-in quotes what the command printed too, and says the exit status
only as its ending."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxpack import formats, toolpairs
from ctxpack import messages as m
from ctxpack.facts.extract import extract_facts
from ctxpack.printed import _status_line, parse_json, printed, printed_of, unwrap
from ctxpack.prune.oneliners import one_liner
from ctxpack.summarize.offline.actions import make_action
from ctxpack.tooloutput import result_flagged_error
from tests.builders import result
from tests.conftest import FIXTURES, SHARED
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


# The same answer (diff found the files differ, exit 1) as each agent writes
# it: the exit status in a footer, a header or a field of its own.
DIFF = "1c1\n< a\n---\n> b"


@pytest.mark.parametrize(
    "output",
    [
        f"{DIFF}\n\n\nCommand exited with code 1",  # pi
        f"Exit code 1\n{DIFF}",  # Claude Code
        f"Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 1\nOutput:\n{DIFF}\n",
        f"{DIFF}\n[The command completed with exit code 1.]",  # OpenHands
        f"Output: {DIFF}\nError: (none)\nExit Code: 1\nSignal: (none)",  # Gemini CLI
        f"{DIFF}\nexit status 1",
        f"Debugger attached.\n{DIFF}\nWaiting for the debugger to disconnect...\n"
        "\nCommand exited with code 1",
    ],
)
def test_a_stand_in_quotes_the_last_line_the_command_printed(output: str) -> None:
    """The exit status is said once, as the ending; the quote and the count
    of lines are of what the command printed, whichever agent wrapped it."""
    stand_in = one_liner(name="bash", arguments='{"command": "diff a.txt b.txt"}', output=output)
    assert stand_in == (
        "[ctxpack pruned] bash `diff a.txt b.txt` → exit 1, not a failure;"
        f' output was 4 lines, {len(output):,} chars; last: "> b"'
    )


@pytest.mark.parametrize(
    ("command", "output", "ending"),
    [
        ("grep -n x a.py", "Command exited with code 1", "exit 1, nothing printed"),
        ("grep -n x a.py", "(no output)\n\nCommand exited with code 1", "exit 1, nothing printed"),
        ("grep -n x a.py", "Exit code 1\n", "exit 1, nothing printed"),
        ("make", "Command exited with code 2", "exit 2"),
        ("make", "Process exited with code 2\nOutput:\n", "exit 2"),
        ("make", "\n[The command completed with exit code 2.]", "exit 2"),
    ],
)
def test_a_stand_in_of_an_output_that_printed_nothing_quotes_nothing(
    command: str, output: str, ending: str
) -> None:
    """Its agent's status line is no line the command printed: neither the
    quote nor the error of a failure."""
    args = json.dumps({"command": command})
    stand_in = one_liner(name="bash", arguments=args, output=output)
    assert stand_in == (
        f"[ctxpack pruned] bash `{command}` → {ending}; output was 0 lines, {len(output):,} chars"
    )
    assert action("bash", {"command": command}, result("c1", output)).outcome == ending


COPY_FAILED = (
    "Debugger attached.\nWaiting for the debugger to disconnect...\n"
    "cp: /opt/homebrew/lib/node_modules/@mariozechner/pi-coding-agent/dist/theme/dark.json:"
    " No such file or directory\n\n\nCommand exited with code 1"
)


@pytest.mark.parametrize(
    ("output", "outcome"),
    [
        ("Command exited with code 2", "exit 2"),
        ("  \nstep 1 of 3 done\nstopped\n\nCommand exited with code 2", "exit 2, step 1 of 3 done"),
        (COPY_FAILED, "exit 1, " + COPY_FAILED.split("\n")[2]),
    ],
)
def test_a_failure_without_an_error_line_is_remembered_by_what_it_printed(
    output: str, outcome: str
) -> None:
    """The first line the command printed, not the debugger's word around it
    nor the footer that only says the exit status."""
    assert action("bash", {"command": "make"}, result("c1", output)).outcome == outcome


PI_LARGE = SHARED / "pi-agent" / "pi-mono__test__fixtures__large-session.jsonl"


@pytest.mark.skipif(not PI_LARGE.is_file(), reason=f"{PI_LARGE} is absent")
def test_the_real_pi_session_s_stand_ins_quote_what_its_commands_printed() -> None:
    """pi's footer and node's debugger lines are the agent's and the editor's:
    the stand-ins, the action and the facts quote what the command printed."""
    messages = formats.read(PI_LARGE.read_bytes(), path=str(PI_LARGE)).sessions[0].messages
    copy = messages[679]
    output = m.text(copy)
    assert output == COPY_FAILED
    use = toolpairs.link_results(messages)[679]
    error = COPY_FAILED.split("\n")[2]
    stand_in = one_liner(
        name=use.name, arguments=use.arguments, output=output, is_error=result_flagged_error(copy)
    )
    assert stand_in.endswith(f'→ exit 1; output was 1 line, 202 chars; error: "{error}"')
    assert make_action(use, [copy], seen=set()).outcome == f"exit 1, {error}"
    assert extract_facts(messages[679:680]).errors == [error]
    # A search that found nothing: pi's footer is all its output holds.
    grep = messages[37]
    assert m.text(grep) == "Command exited with code 1"
    use = toolpairs.link_results(messages)[37]
    stand_in = one_liner(name=use.name, arguments=use.arguments, output=m.text(grep))
    assert stand_in.endswith("→ exit 1, nothing printed; output was 0 lines, 26 chars")


_PIECES = [
    "",
    "\n",
    "exit code 1",
    "Exit code: 2",
    "Command exited with code 1",
    "Debugger attached.",
    "(no output)",
    "hello",
    "  ",
    "\r\n",
    "exit status 3",
    "Process exited with code 0",
]


@given(st.lists(st.sampled_from(_PIECES), max_size=10), st.lists(st.booleans(), max_size=10))
def test_what_a_command_printed_is_its_lines_between_the_status_lines(
    pieces: list[str], breaks: list[bool]
) -> None:
    # The lines between those at either end that only state a status, as
    # splitting the output into lines and dropping them one by one gives.
    output = "".join(p + ("\n" if b else "") for p, b in zip(pieces, breaks, strict=False))
    value = parse_json(output)
    lines = unwrap(output, value).split("\n")
    while lines and _status_line(lines[0]):
        lines.pop(0)
    while lines and _status_line(lines[-1]):
        lines.pop()
    kept = "\n".join(lines).strip()
    assert printed_of(output, value) == ("" if kept == "(no output)" else kept)
