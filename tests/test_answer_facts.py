"""The facts of an exit status 1 that answers (`diff` printing the
differences, `cmp` where the files differ, `grep -c` its 0): no error. Every
reader of a result's facts reads it knowing its call's command: the facts
of a list, the memo (by message and by content), the record's Preserved
Facts and the retention check that `ctxpack eval` counts. The same text
printed by a command whose exit status 1 is a failure, or an exit status 2,
keeps its error."""

from __future__ import annotations

import pytest

from ctxpack import markers
from ctxpack.evaluate.retention import evaluate
from ctxpack.facts.extract import FactMemo, extract_facts, message_facts
from ctxpack.pipeline.compaction import CompressSettings, compress_messages
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message
from tests.builders import call, result

# What `diff -c` prints of two logs: a removed line says "- " before it.
CONTEXT_DIFF = (
    "*** expected.log\t2026-01-02 10:00:00\n"
    "--- actual.log\t2026-01-02 10:00:05\n"
    "***************\n"
    "*** 1,2 ****\n"
    "- Error: port 8080 is taken\n"
    "  started\n"
    "--- 1 ----\n"
)
DIFF = "1c1\n< a\n---\n> b"


def claude(output: str, code: int) -> str:
    """An output as Claude Code writes it, the exit status in a header."""
    return f"Exit code {code}\n{output}"


def codex(output: str, code: int) -> str:
    """An output as Codex writes it, the exit status in a header."""
    return f"Exit code: {code}\nWall time: 0.1 seconds\nOutput:\n{output}"


def errors_of(command: str, output: str) -> list[str]:
    # Claude Code flags every non-zero exit status as an error.
    ran = [call("c1", "Bash", {"command": command}), result("c1", output, is_error=True)]
    return extract_facts(ran).errors


@pytest.mark.parametrize(
    ("command", "output", "errors"),
    [
        # Answers: what the command printed is no error.
        ("diff a.txt b.txt", claude(DIFF, 1), []),
        ("diff a.txt b.txt", codex(DIFF, 1), []),
        ("diff -c expected.log actual.log", claude(CONTEXT_DIFF, 1), []),
        ("cmp a.bin b.bin", claude("a.bin b.bin differ: byte 5, line 1", 1), []),
        ("grep -c TODO src/app.py", codex("0", 1), []),
        # The same text from a command whose exit status 1 is a failure.
        ("python compare.py", claude(DIFF, 1), ["1c1"]),
        ("python compare.py", codex(DIFF, 1), ["1c1"]),
        ("python compare.py", claude(CONTEXT_DIFF, 1), ["Error: port 8080 is taken"]),
        ("grep -n TODO src/app.py", codex("0", 1), ["0"]),
        # The exit status 1 of the `cd` before diff.
        (
            "cd srcc && diff a.txt b.txt",
            claude("bash: line 1: cd: srcc: No such file or directory", 1),
            ["bash: line 1: cd: srcc: No such file or directory"],
        ),
        # diff's own failure exits 2.
        (
            "diff a.txt b.txt",
            claude("diff: b.txt: No such file or directory", 2),
            ["diff: b.txt: No such file or directory"],
        ),
        ("diff -c expected.log actual.log", claude(CONTEXT_DIFF, 2), ["Error: port 8080 is taken"]),
    ],
)
def test_an_exit_status_1_that_answers_is_no_error_fact(
    command: str, output: str, errors: list[str]
) -> None:
    assert errors_of(command, output) == errors
    facts = message_facts(result("c1", output, is_error=True), command=command)
    assert [items for name, items, _ in facts if name == "errors"] == (
        [tuple(errors)] if errors else []
    )


def test_the_memo_reads_the_same_text_apart_for_each_command() -> None:
    output = claude(CONTEXT_DIFF, 1)
    memo = FactMemo()
    for command, errors in [
        ("diff -c expected.log actual.log", []),
        ("python compare.py", [("Error: port 8080 is taken",)]),
        ("diff -c expected.log actual.log", []),
    ]:
        facts = memo.found(result("c1", output), command=command)
        assert [items for name, items, _ in facts if name == "errors"] == errors


def test_the_facts_found_beside_know_each_result_s_command() -> None:
    answered, failed = result("c1", claude(DIFF, 1)), result("c2", claude(DIFF, 1))
    memo = FactMemo()
    with memo.learned_beside([(answered, "diff a.txt b.txt"), (failed, "python compare.py")]):
        pass
    assert memo.known(answered) == ()
    assert memo.known(failed) == (("errors", ("1c1",), ("1c1",)),)


def session(command: str) -> list[Message]:
    """A session whose second turn (compacted) ran `command`, which printed
    CONTEXT_DIFF and exited 1."""
    messages: list[Message] = [
        {"role": "user", "content": "Get the service to start as it did yesterday."},
        {"role": "assistant", "content": "I will compare its logs first."},
        {"role": "user", "content": "Compare expected.log with actual.log."},
        call("c1", "Bash", {"command": command}),
        result("c1", claude(CONTEXT_DIFF, 1), is_error=True),
        {"role": "assistant", "content": "The logs differ in their first line."},
    ]
    for turn in range(2, 14):
        messages += [
            {"role": "user", "content": f"Now look at part {turn} of the notes. " * 40},
            call(f"c{turn}", "Bash", {"command": f"cat notes/part{turn}.txt"}),
            result(f"c{turn}", f"part {turn}: nothing new here. " * 60),
            {"role": "assistant", "content": f"Part {turn} adds nothing. " * 30},
        ]
    return messages


@pytest.mark.parametrize(
    ("command", "errors"),
    [
        ("diff -c expected.log actual.log", []),
        # The failed action names its error: the record holds it there.
        ("python compare.py", ["Error: port 8080 is taken"]),
    ],
)
def test_the_record_and_eval_hold_no_error_an_answer_printed(
    counter: TokenCounter, command: str, errors: list[str]
) -> None:
    original = session(command)
    out, _ = compress_messages(original, counter=counter, settings=CompressSettings(force=True))
    record = next(markers.summary_body(msg) for msg in out if markers.is_summary(msg))
    assert ("Error: port 8080 is taken" in record) is bool(errors)
    report = evaluate(original, out, counter=counter)
    for scope in ("region", "transcript"):
        assert report.category("errors", scope=scope).found == errors
        assert report.category("errors", scope=scope).kept == errors
