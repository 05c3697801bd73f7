"""What the record says was done to each file. A file the agent removed is
listed as removed, for as long as nothing done to it since brought it back;
a removal chained to other commands is not read as the file's last state
(filechanges.removes_files), whether the record is written at once or updated round
after round. A patch that changes several files marks each by what it did to
it (filechanges.patch_changes), and a command that writes a file through the shell
(`cat > f.py << 'EOF'`, `cp a b`) made it, though its program only reads,
and `sed -i` edited its files (filechanges.shell_writes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxpack import formats, markers
from ctxpack.align.budget import Budget
from ctxpack.cli import app
from ctxpack.filechanges import patch_changes, removes_files, shell_writes
from ctxpack.pipeline.compaction import CompressSettings, compress_messages
from ctxpack.summarize.offline.summarizer import OfflineSummarizer
from ctxpack.summarize.protocol import SummaryRequest
from ctxpack.summarize.template import parse
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message
from tests.builders import call, result
from tests.conftest import SHARED

CODEX = SHARED / "codex" / "Trezo-Ai__codex-session.jsonl"

PI_LARGE = SHARED / "pi-agent" / "pi-mono__test__fixtures__large-session.jsonl"
# The user had the agent copy themes in (`cp`), try them and delete them again.
PI_REMOVED = [
    "- ~/.pi/agent/themes/custom.json — created, removed",
    "- ~/.pi/agent/themes/nord.json — created, edited, read, removed",
    "- ~/.pi/agent/themes/test.json — created, removed",
]
# Scripts the agent wrote with `cat > /tmp/… << 'EOF'`.
PI_WRITTEN = [
    "- /tmp/fix_markdown3.py — created",
    "- /tmp/fix_markdown2.py — created",
    "- /tmp/fix_markdown.py — created",
    "- /tmp/fix-markdown.sed — created",
]


@pytest.mark.parametrize(
    ("command", "removes"),
    [
        ("rm ~/.pi/agent/themes/nord.json", True),
        ("rm -f a.txt b/c.py", True),
        ("rm -f a.txt 2>/dev/null || true", True),
        ("rm -rf build/ || :", True),
        ("git rm src/old.py", True),
        ("unlink run/app.sock", True),
        ("rmdir empty/", True),
        # Keeps the file on disk: only the index forgets it.
        ("git rm --cached src/old.py", False),
        # Made again at once.
        ("cd /tmp && rm -rf skills && git clone https://example.com/skills.git", False),
        ("rm out.txt; make out.txt", False),
        ("rm -f $(find . -name '*.pyc')", False),
        ("find . -name '*.pyc' | xargs rm", False),
        ("rmate notes.txt", False),
        ("git rmx", False),
        ("", False),
    ],
)
def test_a_command_that_only_removes_files(command: str, removes: bool) -> None:
    assert removes_files(command) is removes


@pytest.mark.parametrize(
    ("command", "writes"),
    [
        ("cat > /tmp/fix.py << 'EOF'\nif a > b:\n    pass\nEOF", [("/tmp/fix.py", "write")]),
        ("cd pkg && cat > /tmp/fix.sed << 'EOF'\ns/a/b/\nEOF", [("/tmp/fix.sed", "write")]),
        ("echo done >> notes.md", [("notes.md", "edit")]),
        ("grep -n TODO src/a.py>todo.txt", [("todo.txt", "write")]),
        ("python run.py > out.log 2>&1", [("out.log", "write")]),
        ('echo "a > b" > c.txt', [("c.txt", "write")]),
        ("make 2> errors.txt", []),
        ("make &> build.log", []),
        ("echo oops >&2", []),
        ("ls > /dev/null", []),
        ("python -c 'print(1 > 0)'", []),
        ("cat src/a.py", []),
        (
            "sed -i '' 's/new Editor()/new Editor(defaultEditorTheme)/g' packages/tui/test/e.ts",
            [("packages/tui/test/e.ts", "edit")],
        ),
        ("sed -i.bak -e s/a/b/ -e s/c/d/ x.txt y.txt", [("x.txt", "edit"), ("y.txt", "edit")]),
        ("sed -n 1,20p a.txt", []),
        ("mkdir -p themes && cp src/dark.json themes/nord.json", [("themes/nord.json", "write")]),
        ("cp -r a b dir/", []),
    ],
)
def test_a_command_writes_the_files_it_redirects_into(
    command: str, writes: list[tuple[str, str]]
) -> None:
    assert shell_writes(command) == writes


def _files(middle: list[Message], *, previous: str | None = None) -> list[str]:
    request = SummaryRequest(middle=middle, budget_tokens=2000, previous_summary=previous)
    text = OfflineSummarizer().summarize(request, counter=TokenCounter()).text
    return parse(text)["Relevant Files"]


def _turn(call_id: str, name: str, args: dict[str, str], out: str = "ok") -> list[Message]:
    return [call(call_id, name, args), result(call_id, out)]


WRITE = _turn("c1", "write", {"file_path": "notes.md", "content": "# notes"}, "File created")
EDIT = _turn("c2", "edit", {"file_path": "notes.md", "old_string": "#", "new_string": "##"})
REMOVE = _turn("c3", "bash", {"command": "rm notes.md"}, "")
READ_GONE = [
    call("c4", "read", {"file_path": "notes.md"}),
    result("c4", "Error: ENOENT: no such file or directory, open 'notes.md'", is_error=True),
]
WRITTEN = "- notes.md — created"
WRITE_AGAIN = _turn("c5", "write", {"file_path": "notes.md", "content": "# new"}, "File created")


@pytest.mark.parametrize(
    ("turns", "item"),
    [
        ([*WRITE, *EDIT, *REMOVE], "- notes.md — created, edited, removed"),
        # A failed read of the removed file does not bring it back.
        ([*WRITE, *REMOVE, *READ_GONE], "- notes.md — created, read failed, removed"),
        ([*WRITE, *REMOVE, *WRITE_AGAIN], "- notes.md — created"),
        (_turn("c6", "delete_file", {"path": "notes.md"}), "- notes.md — removed"),
        (_turn("c7", "bash", {"command": "git rm --cached notes.md"}), "- notes.md — mentioned"),
        (_turn("c9", "bash", {"command": "cat > notes.md << 'EOF'\n# notes\nEOF"}), WRITTEN),
        (_turn("c9", "bash", {"command": "echo '- more' >> notes.md"}), "- notes.md — edited"),
        ([*WRITE, *REMOVE, *_turn("c9", "bash", {"command": "echo x > notes.md"})], WRITTEN),
    ],
)
def test_a_file_is_removed_while_nothing_done_since_brought_it_back(
    turns: list[Message], item: str
) -> None:
    assert _files(turns) == [item]


def test_an_update_keeps_a_removal_until_the_new_turns_bring_the_file_back() -> None:
    earlier = OfflineSummarizer().summarize(
        SummaryRequest(middle=[*WRITE, *REMOVE], budget_tokens=2000), counter=TokenCounter()
    )
    assert parse(earlier.text)["Relevant Files"] == ["- notes.md — created, removed"]
    unrelated = _turn("c8", "bash", {"command": "ls docs/"}, "a.md")
    assert "- notes.md — created, removed" in _files(unrelated, previous=earlier.text)
    assert _files(WRITE_AGAIN, previous=earlier.text) == ["- notes.md — created"]
    edited = OfflineSummarizer().summarize(
        SummaryRequest(middle=[*WRITE, *EDIT], budget_tokens=2000), counter=TokenCounter()
    )
    assert _files(REMOVE, previous=edited.text) == ["- notes.md — created, edited, removed"]


def _record(messages: list[Message]) -> list[str]:
    body = next(markers.summary_body(msg) for msg in messages if markers.is_summary(msg))
    return parse(body)["Relevant Files"]


def test_the_pi_themes_the_agent_deleted_are_listed_as_removed() -> None:
    messages = formats.read(PI_LARGE.read_bytes(), path=str(PI_LARGE)).sessions[0].messages
    settings = CompressSettings(budget=Budget(context_length=32000), force=True)
    compacted, _ = compress_messages(messages, counter=TokenCounter(), settings=settings)
    files = _record(compacted)
    assert [item for item in files if "removed" in item] == PI_REMOVED
    assert [item for item in files if "/tmp/fix" in item] == PI_WRITTEN


def test_the_cli_lists_the_pi_themes_the_agent_deleted_as_removed(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    args = ["compress", "--offline", "--force", "--context-length", "32000", str(PI_LARGE)]
    args += ["-o", str(out), "--archive", str(tmp_path / "a.db")]
    run = CliRunner().invoke(app, args)
    assert run.exit_code == 0, run.output
    messages = formats.read(out.read_bytes(), path=str(out)).sessions[0].messages
    files = _record(messages)
    assert [item for item in files if "removed" in item] == PI_REMOVED
    assert [item for item in files if "/tmp/fix" in item] == PI_WRITTEN


PATCH = """*** Begin Patch
*** Update File: src/a.py
@@
-x = 1
+x = 2
*** Delete File: src/old.py
*** Add File: src/new.py
+hello = 1
*** Update File: src/m.py
*** Move to: src/n.py
@@
-a = 1
+a = 2
*** End Patch"""
PATCHED = [
    "- src/a.py — edited",
    "- src/old.py — removed",
    "- src/new.py — created",
    "- src/m.py — removed",
    "- src/n.py — created",
]


def test_a_patch_says_how_it_changes_each_file() -> None:
    assert patch_changes(PATCH) == [
        ("src/a.py", "update"),
        ("src/old.py", "delete"),
        ("src/new.py", "add"),
        ("src/m.py", "delete"),
        ("src/n.py", "add"),
    ]


@pytest.mark.parametrize(
    ("out", "failed", "files"),
    [
        ("Success. Updated the following files:\nM src/a.py", False, PATCHED),
        (
            "apply_patch verification failed: Failed to find expected lines in src/a.py",
            True,
            [item.split(" — ")[0] + " — edit failed" for item in PATCHED],
        ),
    ],
)
def test_a_patch_marks_each_file_by_what_it_did_to_it(
    out: str, failed: bool, files: list[str]
) -> None:
    turn = [call("p1", "apply_patch", {"input": PATCH}), result("p1", out, is_error=failed)]
    assert _files(turn) == files


def _with_patch(path: Path) -> bytes:
    """The real Codex session with one patch call, as Codex logs it, after
    the tenth command's output (in the turns a compaction summarizes)."""
    lines = path.read_bytes().splitlines(keepends=True)
    outputs = [i for i, line in enumerate(lines) if b'"type":"function_call_output"' in line]
    at = outputs[9] + 1
    patch = [
        {"type": "custom_tool_call", "call_id": "p1", "name": "apply_patch", "input": PATCH},
        {"type": "custom_tool_call_output", "call_id": "p1", "output": "Success."},
    ]
    added = [
        json.dumps(
            {"timestamp": "2026-04-20T10:20:08.000Z", "type": "response_item", "payload": p}
        ).encode()
        + b"\n"
        for p in patch
    ]
    return b"".join([*lines[:at], *added, *lines[at:]])


def test_the_cli_marks_each_file_of_a_codex_patch(tmp_path: Path) -> None:
    session = tmp_path / "rollout.jsonl"
    session.write_bytes(_with_patch(CODEX))
    out = tmp_path / "out.jsonl"
    args = ["compress", "--offline", "--force", "--context-length", "16000", str(session)]
    run = CliRunner().invoke(app, [*args, "-o", str(out), "--archive", str(tmp_path / "a.db")])
    assert run.exit_code == 0, run.output
    messages = formats.read(out.read_bytes(), path=str(out)).sessions[0].messages
    files = _record(messages)
    assert [item for item in files if item.startswith("- src/")] == PATCHED
