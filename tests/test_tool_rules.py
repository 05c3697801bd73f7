"""Each rule about a tool call has one answer, whichever stage asks: the
family of a tool, the exit code an output reports, whether a result failed,
and which secrets are masked. Every case runs through pruning (the one-liner
that replaces an output), the offline summary (the action it records) and
fact extraction (what evaluation measures)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ctxpack import formats, markers
from ctxpack import messages as m
from ctxpack.calls import describe
from ctxpack.cli import app
from ctxpack.facts.extract import extract_facts
from ctxpack.facts.preserved import fact_line
from ctxpack.printed import open_file
from ctxpack.prune.oneliners import one_liner
from ctxpack.standin import quoted_error
from ctxpack.summarize.offline.actions import Action, clip, make_action
from ctxpack.summarize.serialize import serialize_middle
from ctxpack.summarize.template import parse
from ctxpack.tokens.counter import TokenCounter
from ctxpack.tooloutput import running_session
from ctxpack.toolpairs import ToolUse
from ctxpack.tools import Family, thought_of
from ctxpack.transcript import Message
from tests.conftest import FIXTURES, SHARED, TAU_BENCH
from tests.test_prune import call, convo, file_view, prune, result

SWE_AGENT = (
    FIXTURES
    / "swe-agent"
    / "SWE-agent__function_calling__install-1__marshmallow-code__marshmallow-1867.traj"
)


def action(name: str, args: dict[str, Any], output: Message) -> Action:
    use = ToolUse(index=0, call_id="c1", name=name, arguments=json.dumps(args))
    return make_action(use, [output], seen=set())


@pytest.mark.parametrize(
    ("name", "args", "output", "family", "kind", "shown"),
    [
        (
            "view",
            {"path": "src/app.py"},
            file_view(30),
            Family.READ,
            "read",
            "view src/app.py → lines 1-30",
        ),
        (
            "replace",
            {"file_path": "src/app.py", "old_string": "a = 1", "new_string": "a = 2"},
            "The file src/app.py has been updated.\n" + file_view(20, start=5),
            Family.WRITE,
            "edit",
            "replace src/app.py → lines 5-24",
        ),
        (
            "list_directory",
            {"path": "src"},
            "\n".join(f"src/module_{i}.py" for i in range(12)),
            Family.SEARCH,
            "search",
            "list_directory in src → 12 files",
        ),
    ],
)
def test_a_tool_has_one_family_for_pruning_and_the_offline_summary(
    name: str, args: dict[str, Any], output: str, family: Family, kind: str, shown: str
) -> None:
    arguments = json.dumps(args)
    assert describe(name, arguments).family == family
    assert shown in one_liner(name=name, arguments=arguments, output=output)
    assert action(name, args, result("c1", output)).kind == kind


GO_TEST = (
    "--- FAIL: TestParse (0.00s)\n"
    "    parse_test.go:14: got 2, want 3\n"
    "FAIL\n"
    "exit status 3\n"
    "FAIL\texample.com/parse\t0.004s\n"
)


def test_exit_status_is_the_exit_code_for_pruning_the_summary_and_the_facts() -> None:
    args = {"command": "go test ./parse"}
    line = one_liner(name="Bash", arguments=json.dumps(args), output=GO_TEST)
    assert "Bash `go test ./parse` → exit 3;" in line
    ran = action("Bash", args, result("c1", GO_TEST))
    assert (ran.exit, ran.failed) == (3, True)
    assert ran.outcome.startswith("exit 3")
    # A failed output with no recognised error line is known by its first line.
    facts = extract_facts([call("c1", "Bash", args), result("c1", GO_TEST)])
    assert facts.errors == ["--- FAIL: TestParse (0.00s)"]


@pytest.mark.parametrize("flag", [{"isError": True}, {"status": "error"}, {"is_error": True}])
def test_a_result_flagged_as_an_error_failed_for_every_stage(
    flag: dict[str, Any], counter: TokenCounter
) -> None:
    output = "Permission denied while opening the cache\n" + "  at cache.open\n" * 30
    failed = {**result("c1", output), **flag}
    msgs = convo(
        call("c1", "read_cache", {"key": "models"}),
        failed,
        {"role": "assistant", "content": "The cache cannot be opened."},
    )
    pruned = prune(msgs, counter).messages[5]["content"]
    assert pruned.startswith('[ctxpack pruned] read_cache(key="models") → error; output was')
    assert 'error: "Permission denied while opening the cache"' in pruned
    assert action("read_cache", {"key": "models"}, failed).failed
    assert extract_facts(msgs).errors == ["Permission denied while opening the cache"]


@pytest.mark.parametrize(
    ("secret", "marker"),
    [
        (
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlF",
            "[REDACTED:jwt]",
        ),
        ("postgres://admin:s3cretpass@db.internal:5432/app", "[REDACTED:url-credentials]@"),
    ],
)
def test_a_secret_is_masked_the_same_in_facts_the_summary_and_the_model_input(
    secret: str, marker: str
) -> None:
    command = f"psql --url {secret} -c 'select 1'"
    for shown in (
        fact_line("commands", command),
        clip(command, 200),
        serialize_middle([call("c1", "Bash", {"command": command})]),
    ):
        assert secret not in shown and marker in shown


def test_an_edit_swe_agent_refused_failed_for_every_stage_and_names_the_open_file() -> None:
    """The real SWE-agent session: its editor refused the first edit of fields.py
    (the linter found an IndentationError, nothing was applied); the retry was
    applied. Neither call names the file: the editor changes the one it has open,
    and the pruned output, the action and the record name that one."""
    msgs = formats.read(SWE_AGENT.read_bytes(), path=str(SWE_AGENT)).sessions[0].messages
    refused, applied = msgs[14:16], msgs[16:18]
    fields = "/testbed/src/marshmallow/fields.py"
    assert open_file(m.text(refused[1])) == open_file(m.text(applied[1])) == fields
    assert open_file("344\n(Open file: n/a)\n(Current directory: /testbed)\nbash-$") is None
    outcomes = []
    for turn, output in (refused, applied):
        use = ToolUse(0, "c1", "edit", m.call_arguments(m.tool_calls(turn)[0]))
        done = make_action(use, [output], seen=set())
        outcomes.append((done.target, done.paths, done.failed, done.outcome))
        line = one_liner(name="edit", arguments=use.arguments, output=m.text(output))
        assert line.startswith(f"[ctxpack pruned] edit {fields} → ")
        assert ("→ error" in line) is done.failed
    assert outcomes == [
        (fields, [fields], True, "failed, IndentationError: unexpected indent"),
        (fields, [fields], False, "ok"),
    ]
    assert extract_facts(refused).errors == ["IndentationError: unexpected indent"]


def cli_record(
    session: Path, tmp_path: Path, *options: str, name: str = "out.jsonl", at: int = 0
) -> dict[str, list[str]]:
    """The sections of the record `compress --offline --force [options]`
    writes for `session` (the file's session number `at`), into `name` in
    `tmp_path`."""
    out = tmp_path / name
    args = ["compress", "--offline", "--force", "--no-archive", *options, str(session)]
    args += ["-o", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    written = formats.read(out.read_bytes(), path=str(out)).sessions[at].messages
    return parse(next(markers.summary_body(x) for x in written if markers.is_summary(x)))


def test_a_note_to_self_is_read_as_the_assistants_words_not_as_an_action(
    tmp_path: Path,
) -> None:
    """tau-bench's agent calls `think` with its reasoning: it does nothing to
    the world, and the reasoning is the plan that the reply before it left out."""
    thinking = {"thought": "Try the cache first.", "thoughtNumber": 1}
    assert thought_of("mcp__sequential-thinking__sequentialthinking", thinking) == (
        "Try the cache first."
    )
    assert thought_of("search_direct_flight", {"origin": "BOS"}) is None
    record = cli_record(TAU_BENCH, tmp_path, at=64)
    assert [line.split(" — ")[0] for line in record["Completed Actions"]] == [
        "1. Called get_reservation_details(reservation_id=YAX4DR)",
        "2. Called search_direct_flight(origin=BOS, destination=MCO, date=2024-05-18)",
    ]
    assert record["Historical In-Progress State"] == [
        "- The assistant's last message in these turns said: \"The reservation is in economy"
        ' class, and the user wants to upgrade to business class." (action 2 followed)'
    ]
    assert record["Historical Remaining Work"][-1] == (
        '- The assistant planned: "I need to calculate the price difference for the upgrade."'
        " (action 2 followed)"
    )


def test_the_cli_record_of_the_swe_agent_session_lists_files_only(tmp_path: Path) -> None:
    record = cli_record(SWE_AGENT, tmp_path)
    assert record["Completed Actions"][-1] == (
        "6. Edited /testbed/src/marshmallow/fields.py — failed,"
        " IndentationError: unexpected indent [tool: edit]"
    )
    files = record["Relevant Files"]
    assert "- /testbed/src/marshmallow/fields.py — read, edit failed" in files
    assert "- /testbed/reproduce.py — edited" in files
    assert not [line for line in files if "replacement_text" in line]


CODEX_LISTING = "\n".join(f"/home/dev/app/src/module_{i}.py" for i in range(40))
PYTEST_FAILED = (
    "tests/test_parse.py ..F.\n\n"
    "FAILED tests/test_parse.py::test_dates - AssertionError: got 2, want 3\n"
    "===== 1 failed, 3 passed in 0.52s =====\n"
)


@pytest.mark.parametrize(
    ("name", "args", "output", "is_error", "ended"),
    [
        ("Bash", {"command": "go test ./parse"}, GO_TEST, False, (3, True, False)),
        (
            "exec_command",
            {"cmd": "find src -name '*.py'"},
            "Chunk ID: 4067f7\nWall time: 0.0001 seconds\nProcess exited with code 0\n"
            "Original token count: 400\nOutput:\n" + CODEX_LISTING,
            False,
            (0, False, False),
        ),
        (
            "exec_command",
            {"cmd": "cargo build"},
            "Chunk ID: 15c55d\nWall time: 1.0012 seconds\nProcess running with session ID 3587\n"
            "Original token count: 400\nOutput:\n" + CODEX_LISTING,
            False,
            (None, False, True),
        ),
        (
            "Bash",
            {"command": "pytest tests/test_parse.py"},
            PYTEST_FAILED,
            False,
            (None, True, False),
        ),
        (
            "read_cache",
            {"key": "models"},
            "Permission denied while opening the cache\n" + "  at cache.open\n" * 30,
            True,
            (None, True, False),
        ),
        (
            "run_shell_command",
            {"command": "git commit -am 'fix: ask every boot'"},
            "[Operation Cancelled] Reason: User denied execution.",
            False,
            (None, True, False),
        ),
        ("view", {"path": "src/app.py"}, file_view(30), False, (None, False, False)),
    ],
)
def test_a_pruned_output_tells_every_later_stage_how_it_ended(
    name: str,
    args: dict[str, Any],
    output: str,
    is_error: bool,
    ended: tuple[int | None, bool, bool],
) -> None:
    """The summary is made from pruned turns: the stand-in alone, without the
    result's own error flag, says what the output said of its exit code,
    failure and a command still running."""
    stand_in = one_liner(name=name, arguments=json.dumps(args), output=output, is_error=is_error)
    original = action(name, args, result("c1", output, is_error=is_error))
    pruned = action(name, args, result("c1", stand_in))
    assert (original.exit, original.failed, original.pending) == ended
    assert (pruned.exit, pruned.failed, pruned.pending) == ended, stand_in
    assert pruned.outcome.split(",")[0] == original.outcome.split(",")[0]
    assert running_session(stand_in) == running_session(output)
    if original.failed:
        assert quoted_error(stand_in) is not None and quoted_error(stand_in) in pruned.outcome
    assert extract_facts([call("c1", name, args), result("c1", stand_in)]).errors == []


GEMINI = SHARED / "gemini" / "gemini-cli__ntm-agentteamscli__trajectory.json"


@pytest.mark.skipif(not GEMINI.is_file(), reason=f"{SHARED} is absent")
def test_the_record_of_the_real_gemini_session_says_which_commands_failed(
    tmp_path: Path,
) -> None:
    """Its first build-and-commit failed to compile (exit 1): the record quotes
    tsc's error, not Node's "Error: Command failed: tsc --build" under it, with
    the type it spells out cut short. The user denied the second. Both outputs
    are pruned before the summary reads them."""
    record = cli_record(GEMINI, tmp_path)
    commits = [line for line in record["Completed Actions"] if "git commit" in line]
    assert [line.split(" — ")[1] for line in commits] == [
        "exit 1, src/config/config.ts:897:35 - error TS2339: Property 'activeTeam' does not"
        " exist on type 'InferMerge… [tool: run_shell_command]",
        "failed, [Operation Cancelled] Reason: User denied execution. [tool: run_shell_command]",
    ]
    assert "18 tool actions were recorded (2 failed)" in "\n".join(
        record["Historical Task Snapshot"]
    )


@pytest.mark.parametrize(
    ("output", "failed"),
    [
        ("npm error command failed\nnpm error workspace @acme/cli@0.7.29", True),
        ("npm ERR! code ELIFECYCLE\nnpm ERR! errno 1", True),
        ("ENOENT: no such file or directory, access '/repo/src/index.html'", True),
        ("EACCES: permission denied, open '/etc/shadow'", True),
        ("[Operation Cancelled] Reason: User denied execution.", True),
        ("Failed to edit, 0 occurrences found for old_string in src/app.tsx.", True),
        ("EXAMPLES: see docs/usage.md", False),
        ("npm warn deprecated glob@7.2.3\nadded 12 packages", False),
        ("Found 2 failed runs in the log\nrun 14: timeout", False),
    ],
)
def test_an_output_that_opens_with_a_failure_failed_for_every_stage(
    output: str, failed: bool
) -> None:
    args = {"command": "npm run build"}
    line = one_liner(name="Bash", arguments=json.dumps(args), output=output)
    assert ("→ error" in line) is failed
    assert action("Bash", args, result("c1", output)).failed is failed
    assert action("Bash", args, result("c1", line)).failed is failed
    assert bool(extract_facts([call("c1", "Bash", args), result("c1", output)]).errors) is failed


def test_what_a_call_returned_is_quoted_from_its_output_never_from_its_stand_in() -> None:
    args = {"summary": "Removing active team persistence", "title": "Non-Persistent Team"}
    output = 'Current topic: "Non-Persistent Team Selection"\n' + "Topic history:\n- setup\n" * 40
    stand_in = one_liner(name="update_topic", arguments=json.dumps(args), output=output)
    original = action("update_topic", args, result("c1", output))
    pruned = action("update_topic", args, result("c1", stand_in))
    assert (
        original.outcome
        == 'ok, returned Current topic: "Non-Persistent Team Selection" Topic histor…'
    )
    assert pruned.outcome == "ok"


CODEX_HEAD = "Chunk ID: 9e6f68\nWall time: 0.0000 seconds\nProcess exited with code {code}\n"


@pytest.mark.parametrize(
    ("output", "flagged", "failed"),
    [
        ("Command exited with code 1", True, False),
        ("(no output)\n\nCommand exited with code 1", True, False),
        ("Output: (empty)\nExit Code: 1\nProcess Group PGID: 90089", False, False),
        (CODEX_HEAD.format(code=1) + "Original token count: 0\nOutput:\n", False, False),
        ("Exit code 1\n", True, False),
        ("[The command completed with exit code 1.]", False, False),
        (
            "grep: src/editor.ts: No such file or directory\n\nCommand exited with code 2",
            True,
            True,
        ),
        (
            "grep: src/editor.ts: No such file or directory\n\nCommand exited with code 1",
            True,
            True,
        ),
        (CODEX_HEAD.format(code=1) + "Output:\nTraceback (most recent call last):\n", False, True),
        (CODEX_HEAD.format(code=2) + "Original token count: 0\nOutput:\n", False, True),
    ],
)
def test_exit_1_with_nothing_printed_is_an_answer_for_every_stage(
    output: str, flagged: bool, failed: bool
) -> None:
    """`grep` that found no line, `test -f` that was false: exit status 1 and
    nothing printed, which pi and Claude Code flag as an error all the same."""
    args = {"command": 'grep -n "invalidate" src/text.ts'}
    line = one_liner(name="bash", arguments=json.dumps(args), output=output, is_error=flagged)
    assert ("→ exit 1, nothing printed;" in line) is not failed
    ran = action("bash", args, result("c1", output, is_error=flagged))
    assert ran.failed is failed and ran.exit in (1, 2)
    assert action("bash", args, result("c1", line)).failed is failed
    if not failed:
        assert ran.outcome == "exit 1, nothing printed"
        assert action("bash", args, result("c1", line)).outcome == ran.outcome
    msgs = [call("c1", "bash", args), result("c1", output, is_error=flagged)]
    # A failure that printed nothing has no error line to keep.
    printed = "No such file" in output or "Traceback" in output
    assert bool(extract_facts(msgs).errors) is (failed and printed)
