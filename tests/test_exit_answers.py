"""Exit status 1 that answers: `diff` and `cmp` found the files differ and
printed where, `grep -c` counted no line and printed 0. The action is no
failure, nor the stand-in that replaces its output, nor the action read back
from that stand-in. Exit status 2, or exit 1 with anything else printed (a
`cd` before the command that failed), stays a failure."""

from __future__ import annotations

import json

import pytest

from ctxpack.prune.oneliners import duplicate_note, one_liner
from tests.test_prune import result
from tests.test_tool_rules import action

DIFF = "1c1\n< a\n---\n> b\n"
UNIFIED = "--- a.txt\n+++ b.txt\n@@ -1,2 +1,2 @@\n-a\n+b\n same\n"
RECURSIVE = "Only in a: x.txt\ndiff -r a/y.txt b/y.txt\n1c1\n< a\n---\n> b\n"
GIT_DIFF = (
    "diff --git a/src/app.py b/src/app.py\nindex 3b18e51..a4f9c2d 100644\n"
    "--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-a\n+b\n"
)


def pi(output: str, code: int) -> str:
    """An output as pi writes it, the exit status in a footer."""
    return f"{output}\n\nCommand exited with code {code}"


def claude(output: str, code: int) -> str:
    """An output as Claude Code writes it, the exit status in a header."""
    return f"Exit code {code}\n{output}"


@pytest.mark.parametrize(
    ("command", "output", "failed"),
    [
        # diff: the files differ, in each of diff's forms.
        ("diff a.txt b.txt", pi(DIFF, 1), False),
        ("diff -u a.txt b.txt", claude(UNIFIED, 1), False),
        ("diff -q a.txt b.txt", pi("Files a.txt and b.txt differ", 1), False),
        ("diff -r a b", pi(RECURSIVE, 1), False),
        ("cd src && diff a.txt b.txt 2>&1", pi(DIFF, 1), False),
        ("diff a.txt b.txt", pi("diff: b.txt: No such file or directory", 2), True),
        # The exit status 1 of the `cd`, not of diff.
        (
            "cd srcc && diff a.txt b.txt",
            pi("bash: line 1: cd: srcc: No such file or directory", 1),
            True,
        ),
        # cmp: where the files differ, or where the shorter one ends.
        ("cmp a.bin b.bin", pi("a.bin b.bin differ: byte 5, line 1", 1), False),
        ("cmp a.bin b.bin", claude("cmp: EOF on a.bin after byte 4, line 1", 1), False),
        ("cmp a.bin b.bin", pi("cmp: b.bin: No such file or directory", 2), True),
        # git diff, when told to answer with its status.
        ("git diff --exit-code src/app.py", claude(GIT_DIFF, 1), False),
        ("git diff --no-index a.txt b.txt", pi(GIT_DIFF, 1), False),
        ("git diff --quiet", pi("(no output)", 1), False),
        ("git diff --exit-code", pi("fatal: not a git repository", 128), True),
        # Without --exit-code its exit status 1 is an error.
        ("git diff src/app.py", pi(GIT_DIFF, 1), True),
        # grep -c: no line counted, in one file or in several.
        ("grep -c 'TODO' src/app.py", pi("0", 1), False),
        ("grep -rc 'a|b' src", pi("src/a.py:0\nsrc/b.py:0", 1), False),
        ("grep --count TODO src/app.py", claude("0", 1), False),
        ("grep -c TODO a.py b.py", pi("a.py:0\ngrep: b.py: No such file or directory", 2), True),
        # Exit 1 printing a count from a command that does not answer so.
        ("python count.py", pi("0", 1), True),
        ("grep -n TODO src/app.py", pi("0", 1), True),
        # test and [ print nothing when false; what they print is an error.
        ("test -f a.txt", pi("(no output)", 1), False),
        ("[ -f a b ]", pi("bash: [: a: binary operator expected", 2), True),
    ],
)
def test_an_exit_status_1_that_answers_is_no_failure_for_every_stage(
    command: str, output: str, failed: bool
) -> None:
    args = {"command": command}
    ran = action("bash", args, result("c1", output, is_error=True))
    assert ran.failed is failed
    line = one_liner(name="bash", arguments=json.dumps(args), output=output, is_error=True)
    read_back = action("bash", args, result("c1", line))
    assert read_back.failed is failed
    if not failed and "(no output)" not in output:
        assert ran.outcome.startswith("exit 1, printed ")
        assert " → exit 1, not a failure; output was " in line
        assert read_back.outcome == "exit 1, not a failure"


def test_a_difference_is_said_as_printed() -> None:
    ran = action("bash", {"command": "diff a.txt b.txt"}, result("c1", pi(DIFF, 1), is_error=True))
    assert ran.line() == 'Ran `diff a.txt b.txt` — exit 1, printed "1c1 < a --- > b" [tool: bash]'


def test_the_copy_of_a_difference_is_no_failure() -> None:
    """An output repeated later is replaced by a note that says how it ended."""
    command = "diff a.txt b.txt"
    note = duplicate_note(
        later=7, label=f"bash `{command}`", output=pi(DIFF, 1), is_error=True, command=command
    )
    assert note.endswith(" → exit 1, not a failure")
    assert not action("bash", {"command": command}, result("c1", note)).failed
