"""One-liner forms for each tool family, exit-code patterns and command
normalisation, on small realistic outputs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ctxpack.calls import describe, normalize_command
from ctxpack.prune.oneliners import duplicate_note, one_liner
from ctxpack.standin import PRUNED_PREFIX, is_pruned
from ctxpack.tooloutput import exit_code, result_failed


def test_todo_write_and_web_tools() -> None:
    todos = {
        "todos": [
            {"content": "a", "status": "completed"},
            {"content": "b", "status": "in_progress"},
            {"content": "c", "status": "pending"},
        ]
    }
    text = one_liner(name="TodoWrite", arguments=json.dumps(todos), output="Todos updated " * 20)
    assert "TodoWrite (3 items: 1 completed, 1 in_progress, 1 pending)" in text
    page = "# Example Domain\n\nThis domain is for use in illustrative examples.\n" * 10
    text = one_liner(
        name="WebFetch", arguments='{"url": "https://example.com/", "prompt": "x"}', output=page
    )
    assert "WebFetch https://example.com/" in text and '"# Example Domain"' in text
    text = one_liner(name="WebSearch", arguments='{"query": "tiktoken offline"}', output=page)
    assert "WebSearch tiktoken offline" in text


def test_generic_tool_keeps_name_args_and_size() -> None:
    output = "row one\n" + "x" * 300 + "\nrow three"
    text = one_liner(name="frobnicate", arguments='{"level": 3, "target": "db"}', output=output)
    assert (
        'frobnicate(level=3, target="db") → output was 3 lines, 318 chars; first: "row one"' in text
    )


@pytest.mark.parametrize(
    ("output", "code"),
    [
        ("Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 2\nOutput:\nx", 2),
        ("Exit code 1\n===== test session starts =====", 1),
        ("Exit code: 3\nWall time: 0.2 seconds\nOutput:\n", 3),
        ("boom\n[exit code: 4]", 4),
        ('{"output": "x", "metadata": {"exit_code": 5, "duration_seconds": 0.1}}', 5),
        ("Serving\n[The command completed with exit code 130.]", 130),
        ("Command `ls` executed with exit code 0.", 0),
        ("plain output with no status", None),
    ],
)
def test_exit_code_patterns(output: str, code: int | None) -> None:
    assert exit_code(output) == code


def test_duplicate_note_is_short_and_recognisable() -> None:
    note = duplicate_note(later=57, label="Bash `ls -la`", output="x" * 12_345)
    assert note == f"{PRUNED_PREFIX} duplicate: same output as #57 (Bash `ls -la`; 12,345 chars)"
    assert is_pruned(note) and len(note) < 200


# The real Gemini session tried one edit twice, and both failed alike.
FAILED_EDIT = (
    "Failed to edit, 0 occurrences found for old_string in packages/cli/src/ui/components/"
    "TeamCreatorWizard.tsx. Ensure you're not escaping content incorrectly."
)


@pytest.mark.parametrize(
    ("output", "is_error", "ended", "failed"),
    [
        (FAILED_EDIT, False, " → error", True),
        ("anything at all", True, " → error", True),
        ("build broke\nExit code: 2", False, " → exit 2", True),
        ("all fine\n" * 40, False, "", False),
    ],
)
def test_a_duplicate_says_how_its_output_ended(
    output: str, is_error: bool, ended: str, failed: bool
) -> None:
    """The copy of a failed run reads as failed wherever a stand-in is read."""
    note = duplicate_note(later=9, label="replace a.tsx", output=output, is_error=is_error)
    assert note.endswith(f"chars){ended}")
    assert result_failed(f"{note}; ctxpack:0123456789") is failed


@pytest.mark.parametrize(
    ("command", "normal"),
    [
        ("pytest  -x\ntests/", "pytest -x tests/"),
        ("python -m pytest t.py -v --tb=no | tail -20", "python -m pytest t.py -v --tb=no"),
        ("cargo build 2>&1 | head -n 50", "cargo build"),
        ("git status", "git status"),
    ],
)
def test_normalize_command(command: str, normal: str) -> None:
    assert normalize_command(command) == normal


def test_describe_families() -> None:
    cases: dict[str, tuple[str, dict[str, Any]]] = {
        "command": ("execute_bash", {"command": "ls"}),
        "read": ("str_replace_editor", {"command": "view", "path": "/a.py"}),
        "write": ("str_replace_editor", {"command": "str_replace", "path": "/a.py"}),
        "search": ("search_dir", {"search_term": "foo", "dir": "src"}),
        "web": ("web_search", {"query": "x"}),
        "agent": ("Agent", {"description": "explore"}),
        "todo": ("update_plan", {"plan": []}),
        "other": ("cancel_reservation", {"reservation_id": "X1"}),
    }
    for family, (name, args) in cases.items():
        assert describe(name, json.dumps(args)).family == family, name


@pytest.mark.parametrize(
    ("name", "args", "output", "expected"),
    [
        (
            "MultiEdit",
            {"file_path": "/r/a.py", "edits": [{"old_string": "a"}, {"old_string": "b"}]},
            "Applied 2 edits to /r/a.py:\n" + "\n".join(f"{i:6d}→x = {i}" for i in range(3, 40)),
            "MultiEdit /r/a.py (2 edits) → lines 3-39",
        ),
        (
            "Agent",
            {"description": "Find the config loader", "subagent_type": "Explore"},
            "The loader lives in src/config.py.\n" + "detail\n" * 60,
            'Agent "Find the config loader" [Explore] → output was 61 lines',
        ),
        (
            "write_file",
            {"path": "/r/notes.md", "content": "x" * 50},
            json.dumps({"bytes_written": 5120, "dirs_created": True, "warning": "w" * 200}),
            "write_file /r/notes.md → output was 1 line",
        ),
        (
            "web_search",
            {"query": "hermes agent context compression"},
            json.dumps({"results": [{"title": "t", "url": "u" * 80}] * 5}),
            "web_search hermes agent context compression → output was 1 line",
        ),
        (
            "str_replace_editor",
            {"command": "view", "path": "/workspace/app.py", "view_range": [10, 40]},
            "Here's the result of running `cat -n` on /workspace/app.py:\n"
            + "\n".join(f"{i:6d}\tline" for i in range(10, 41)),
            "str_replace_editor view /workspace/app.py (lines 10-40) → lines 10-40",
        ),
        (
            "str_replace_editor",
            {"command": "str_replace", "path": "/workspace/app.py", "old_str": "a", "new_str": "b"},
            "The file /workspace/app.py has been edited. Here's the result of running `cat -n`:\n"
            + "\n".join(f"{i:6d}\tline" for i in range(5, 25)),
            "str_replace_editor str_replace /workspace/app.py → lines 5-24",
        ),
        (
            "str_replace_editor",
            {"command": "insert", "path": "/workspace/app.py", "insert_line": 3},
            "The file /workspace/app.py has been edited.\n"
            + "\n".join(f"{i:6d}\tl" for i in range(1, 40)),
            "str_replace_editor insert /workspace/app.py → lines 1-39",
        ),
        (
            "search_dir",
            {"search_term": "TimeDelta", "dir": "src"},
            'Found 12 matches for "TimeDelta" in /testbed/src:\n'
            "/testbed/src/fields.py (12 matches)\n"
            'End of matches for "TimeDelta" in /testbed/src\n' + " " * 200,
            'search_dir "TimeDelta" in src → 12 matches',
        ),
    ],
)
def test_more_named_forms(name: str, args: dict[str, Any], output: str, expected: str) -> None:
    text = one_liner(name=name, arguments=json.dumps(args), output=output)
    assert text.startswith(f"{PRUNED_PREFIX} {expected}"), text
    assert f"{len(output):,} chars" in text
