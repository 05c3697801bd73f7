"""What the record says of a file the agent moved or put back as committed.
`mv SRC DST` (and `git mv`) takes SRC away and makes DST, or DST/SRC's name
where DST is a folder; where the command cannot say whether DST is a folder,
or whether the move happened at all (`mv -n`, a variable's name), the record
does not guess (filechanges.shell_writes). `git checkout -- FILE` and `git
restore FILE` put FILE back as committed: it reads "reverted" until a change
since, as "removed" reads until the file is there again, whether the record
is written at once or updated round after round."""

from __future__ import annotations

import pytest

from ctxpack.filechanges import shell_writes
from ctxpack.summarize.offline.summarizer import OfflineSummarizer
from ctxpack.summarize.protocol import SummaryRequest
from ctxpack.summarize.template import parse
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message
from tests.builders import call, result

# Real commands: the openagents session (claude-stream-json) accepted its
# snapshots by renaming each in a loop; the pi-mono session (pi-agent)
# unstaged a file before committing the others.
SNAPSHOTS_LOOP = (
    "cd crates/autopilot/src/tests/snapshots && for f in *.snap.new; do"
    ' [ -f "$f" ] && mv "$f" "${f%.new}"; done && ls *.snap 2>/dev/null | wc -l'
)
SNAPSHOTS_READ = (
    "cd crates/autopilot/src/tests/snapshots && ls *.snap.new | while read f;"
    ' do base="${f%.new}"; mv "$f" "$base"; done && ls *.snap | wc -l'
)
UNSTAGED = (
    "cd /Users/badlogic/workspaces/pi-mono && git restore --staged"
    " .github/workflows/build-binaries.yml && git add packages/agent/src/types.ts"
)


@pytest.mark.parametrize(
    ("command", "changes"),
    [
        ("mv notes.md docs/notes.md", [("notes.md", "remove"), ("docs/notes.md", "move")]),
        ("git mv -f src/a.py src/b.py", [("src/a.py", "remove"), ("src/b.py", "move")]),
        ("mv src/a.py lib/", [("src/a.py", "remove"), ("lib/a.py", "move")]),
        ("mv ../a.py .", [("../a.py", "remove"), ("a.py", "move")]),
        (
            "mv a.py b.md lib",
            [("a.py", "remove"), ("b.md", "remove"), ("lib/a.py", "move"), ("lib/b.md", "move")],
        ),
        ("mv -t lib src/a.py", [("src/a.py", "remove"), ("lib/a.py", "move")]),
        ("mv -T build dist", [("build", "remove"), ("dist", "move")]),
        (
            "jq . f.json > tmp.json && mv tmp.json f.json",
            [("tmp.json", "write"), ("tmp.json", "remove"), ("f.json", "move")],
        ),
        # A folder or a file's new name: either; a directory given a "/"
        # target that is not there is renamed to it.
        ("mv src/a.py lib", [("src/a.py", "remove")]),
        ("mv build dist/", [("build", "remove")]),
        # It may not move: -n keeps a target that is there, -i asks, git mv -n only tells.
        ("mv -n a.py b.py", []),
        ("mv -vi a.py b.py", []),
        ("git mv -n a.py b.py", []),
        ("mv a.py", []),
        (SNAPSHOTS_LOOP, []),
        (SNAPSHOTS_READ, []),
    ],
)
def test_a_command_moves_the_files_it_names(command: str, changes: list[tuple[str, str]]) -> None:
    assert shell_writes(command) == changes


@pytest.mark.parametrize(
    ("command", "reverted"),
    [
        ("git checkout -- src/a.py", ["src/a.py"]),
        ("git checkout HEAD -- a.py b.md", ["a.py", "b.md"]),
        ("git restore src/a.py", ["src/a.py"]),
        ("git restore --staged --worktree a.py", ["a.py"]),
        ("git restore -s HEAD -- a.py", ["a.py"]),
        # Only unstages: the file keeps its edits.
        (UNSTAGED, []),
        # Another commit's text, part of the edits, a branch's name, a pattern.
        ("git checkout main -- a.py", []),
        ("git restore --source=HEAD~1 a.py", []),
        ("git restore -p a.py", []),
        ("git checkout src/a.py", []),
        ("git checkout -- '*.py'", []),
    ],
)
def test_a_command_puts_back_as_committed_the_files_it_reverts(
    command: str, reverted: list[str]
) -> None:
    assert shell_writes(command) == [(path, "revert") for path in reverted]


def _summary(middle: list[Message], *, previous: str | None = None) -> str:
    request = SummaryRequest(middle=middle, budget_tokens=2000, previous_summary=previous)
    return OfflineSummarizer().summarize(request, counter=TokenCounter()).text


def _files(middle: list[Message], *, previous: str | None = None) -> list[str]:
    return parse(_summary(middle, previous=previous))["Relevant Files"]


def _run(call_id: str, command: str) -> list[Message]:
    return [call(call_id, "bash", {"command": command}), result(call_id, "")]


WRITE = [
    call("c1", "write", {"file_path": "notes.md", "content": "# notes"}),
    result("c1", "File created"),
]


# A file written under its full name and removed under its short one is one file.
SCRATCH = [
    call("s1", "write", {"file_path": "/repo/scratch.py", "content": "x"}),
    result("s1", "File created"),
]


@pytest.mark.parametrize(
    ("turns", "files"),
    [
        (
            [*WRITE, *_run("m1", "mv notes.md docs/notes.md")],
            ["- notes.md — created, removed", "- docs/notes.md — created"],
        ),
        (
            [*WRITE, *_run("m2", "git mv notes.md docs/")],
            ["- notes.md — created, removed", "- docs/notes.md — created"],
        ),
        ([*SCRATCH, *_run("s3", "rm scratch.py")], ["- /repo/scratch.py — created, removed"]),
        (
            [*WRITE, *_run("m3", "mv -n notes.md old.md")],
            ["- notes.md — created", "- old.md — mentioned"],
        ),
    ],
)
def test_the_record_says_where_a_moved_file_is(turns: list[Message], files: list[str]) -> None:
    assert _files(turns) == files


EDIT = [
    call("c2", "edit", {"file_path": "notes.md", "old_string": "#", "new_string": "##"}),
    result("c2", "ok"),
]
READ = [call("c3", "read", {"file_path": "notes.md"}), result("c3", "# notes")]
REVERT = _run("c4", "git checkout -- notes.md")


@pytest.mark.parametrize(
    ("turns", "item"),
    [
        ([*WRITE, *EDIT, *REVERT], "- notes.md — created, edited, reverted"),
        ([*WRITE, *EDIT, *REVERT, *READ], "- notes.md — created, edited, read, reverted"),
        ([*WRITE, *REVERT, *EDIT], "- notes.md — created, edited"),
        ([*WRITE, *_run("r1", "rm notes.md"), *REVERT], "- notes.md — created, reverted"),
        ([*WRITE, *_run("r2", "git restore --staged notes.md")], "- notes.md — created"),
    ],
)
def test_a_reverted_file_reads_so_until_a_change_since(turns: list[Message], item: str) -> None:
    assert _files(turns) == [item]


def test_an_update_keeps_a_revert_until_the_new_turns_change_the_file() -> None:
    earlier = _summary([*WRITE, *EDIT, *REVERT])
    assert _files(READ, previous=earlier) == ["- notes.md — created, edited, read, reverted"]
    assert _files(EDIT, previous=earlier) == ["- notes.md — created, edited"]
    assert _files(_run("r3", "rm notes.md"), previous=earlier) == [
        "- notes.md — created, edited, removed"
    ]
    removed = _summary([*WRITE, *_run("r4", "rm notes.md")])
    assert _files(REVERT, previous=removed) == ["- notes.md — created, reverted"]


def test_an_update_keeps_a_moved_file_apart_from_where_it_went() -> None:
    earlier = _summary([*WRITE, *_run("m4", "mv notes.md docs/")])
    assert _files(_run("l1", "ls docs/"), previous=earlier) == [
        "- notes.md — created, removed",
        "- docs/notes.md — created",
    ]
    removed = _run("s2", "rm scratch.py")
    assert _files(removed, previous=_summary(SCRATCH)) == ["- /repo/scratch.py — created, removed"]
