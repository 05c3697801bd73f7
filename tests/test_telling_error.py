"""Which error line a failed run is remembered by: one rule
(tooloutput.telling_error) for the stand-in that replaces its output and for
the record's action on the output itself, so a run reads the same pruned or
not. Outputs are real where a bundled transcript holds one."""

from __future__ import annotations

import json

import pytest

from ctxpack import formats
from ctxpack.facts.extract import extract_facts
from ctxpack.formats.base import ReadOptions
from ctxpack.standin import quoted_error, shortened
from ctxpack.summarize.offline.actions import make_action
from ctxpack.summarize.offline.sections import unresolved_failures
from ctxpack.tooloutput import error_lines, result_failed
from ctxpack.toolpairs import ToolUse
from tests.test_oneliners import CLAUDE_STREAM, Result, _claude_results, _find, _line

# npm 7 and later, the whole report of a failed script.
_NPM_REPORT = (
    "npm error Lifecycle script `check` failed with error:\n"
    "npm error code 2\n"
    "npm error path /repo/packages/coding-agent\n"
    "npm error workspace @acme/coding-agent@0.7.29\n"
    "npm error location /repo/packages/coding-agent\n"
    "npm error command failed\n"
    "npm error command sh -c tsgo --noEmit\n"
)
# npm 6.
_NPM_ERR_REPORT = (
    "npm ERR! code ELIFECYCLE\n"
    "npm ERR! errno 2\n"
    "npm ERR! app@1.0.0 check: `tsc --noEmit`\n"
    "npm ERR! Exit status 2\n"
    "npm ERR! \n"
    "npm ERR! Failed at the app@1.0.0 check script.\n"
    "npm ERR! This is probably not a problem with npm.\n\n"
    "npm ERR! A complete log of this run can be found in:\n"
    "npm ERR!     /root/.npm/_logs/2024-01-01T00_00_00_000Z-debug.log"
)
# The large pi session's test run, which the user stopped while Node waited for a debugger.
_ABORTED_TEST_RUN = (
    "Debugger attached.\n\n> @mariozechner/pi-tui@0.7.29 test\n"
    "> node --test --import tsx test/*.test.ts truncated-text.test.ts\n\n"
    "Error in the js-debug bootloader, please report to https://aka.ms/js-dbg-issue:"
    " This Environment was initialized without a V8::Inspector\n"
    "Debugger attached.\n\n\nCommand aborted"
)


def _remembered_by(result: Result) -> tuple[str | None, str]:
    """The error a failed run's stand-in quotes, and its action's outcome on
    the output itself (the record of an unpruned run)."""
    name, args, output, is_error = result
    reply = {"role": "tool", "content": output, "is_error": is_error}
    done = make_action(ToolUse(0, "c1", name, args), [reply], seen=set())
    assert done.failed
    return quoted_error(_line(result)), done.outcome


def test_a_failed_build_is_remembered_by_the_compiler_not_node_s_wrapper() -> None:
    """Node's "Error: Command failed: <command>" names what failed; the
    compiler's line above it says why (the real Gemini CLI session's build)."""
    why = "src/config/config.ts:897:35 - error TS2339: Property 'activeTeam' does not exist"
    output = (
        f"Output: \n> @google/gemini-cli build\n> node build.js\n\n{why}\n\n"
        "897     activeTeam: settings.general?.activeTeam,\n\n"
        "Error: Command failed: tsc --build\nExit Code: 1"
    )
    arguments = '{"command": "npm run build -w @google/gemini-cli"}'
    quoted, outcome = _remembered_by(("run_shell_command", arguments, output, False))
    assert quoted == why and outcome == f"exit 1, {why}"


def test_a_message_git_writes_over_two_lines_is_quoted_from_its_first() -> None:
    """git says what failed on its first "error:" line and what to do on the
    next: the first is the cause, pruned or not."""
    result = _find(_claude_results(CLAUDE_STREAM), "Bash", "git pull --rebase")
    assert result[2].endswith(
        "error: cannot pull with rebase: You have unstaged changes.\n"
        "error: Please commit or stash them."
    )
    quoted, outcome = _remembered_by(result)
    assert quoted == "error: cannot pull with rebase: You have unstaged changes."
    assert outcome == "exit 128, error: cannot pull with rebase: You have unstaged changes."


def test_a_failed_cargo_build_is_remembered_by_rustc_s_error_not_cargo_s_last_word() -> None:
    """cargo ends a failed build with "error: could not compile ...", which
    names what failed; the rustc error above it says why."""
    result = _find(_claude_results(CLAUDE_STREAM), "Bash", 'grep -A 5 \\"E0614\\"')
    assert "error: could not compile `autopilot`" in result[2]
    quoted, outcome = _remembered_by(result)
    assert quoted == "error[E0614]: type `i32` cannot be dereferenced"
    assert outcome == "failed, error[E0614]: type `i32` cannot be dereferenced"


def test_a_failed_npm_script_is_remembered_by_its_error_not_npm_s_report() -> None:
    why = "TypeError: Cannot read properties of undefined (reading 'map')"
    output = (
        f"/app/src/list.js:12\n    return items.map(render)\n                 ^\n\n{why}\n"
        "    at render (/app/src/list.js:12:18)\nnpm ERR! code ELIFECYCLE\nnpm ERR! errno 1\n"
        "npm ERR! app@1.0.0 test: `node test.js`\nnpm ERR! Exit status 1\n"
        "npm ERR! A complete log of this run can be found in:\n"
        "npm ERR!     /root/.npm/_logs/2024-01-01T00_00_00_000Z-debug.log"
    )
    quoted, outcome = _remembered_by(("Bash", '{"command": "npm test"}', output, True))
    assert quoted == why and outcome == f"exit 1, {why}"


@pytest.mark.parametrize(
    ("output", "how", "why"),
    [
        (_NPM_REPORT, "failed", "npm error Lifecycle script `check` failed with error:"),
        # Cut by `| tail -4`, as the real pi session ran it.
        (
            "".join(_NPM_REPORT.splitlines(keepends=True)[-4:]),
            "failed",
            "npm error command failed",
        ),
        # npm 6 says the exit status.
        (_NPM_ERR_REPORT, "exit 2", "npm ERR! app@1.0.0 check: `tsc --noEmit`"),
    ],
)
def test_an_output_cut_to_npm_s_report_is_remembered_by_what_failed(
    output: str, how: str, why: str
) -> None:
    """npm's report places the failure (exit code, package, folder, log) after
    the script's own errors; cut down to the report, a run is remembered by
    the line that says what failed, not by the first line of the place."""
    assert error_lines(output) == [why]
    quoted, outcome = _remembered_by(("bash", '{"command": "npm run check"}', output, False))
    assert quoted == why and outcome == f"{how}, {why}"


def test_a_command_that_timed_out_is_remembered_by_the_time_out() -> None:
    """What it printed before it was stopped is where it had got to; the
    time-out is why it failed."""
    output = "Compiling...\n\nCommand timed out after 30 seconds"
    quoted, outcome = _remembered_by(("bash", '{"command": "make"}', output, True))
    assert quoted == "Command timed out after 30 seconds"
    assert outcome == "failed, Command timed out after 30 seconds"


@pytest.mark.parametrize(
    "output", [_ABORTED_TEST_RUN, "Command aborted", "aborted by user after 33.4s"]
)
def test_a_command_the_user_aborted_is_no_error_to_fix(output: str) -> None:
    """The user stopped it: its action says so, pruned or not, quotes no
    error, and the record does not list it as blocked."""
    use = ToolUse(0, "c1", "bash", '{"command": "npm test"}')
    stand_in = _line(("bash", use.arguments, output, True))
    assert " → aborted; " in stand_in
    for text in (output, stand_in):
        reply = {"role": "tool", "content": text, "is_error": True}
        done = make_action(use, [reply], seen=set())
        assert done.failed and done.aborted and done.outcome == "aborted"
        assert error_lines(text, flagged=True) == []
        assert unresolved_failures([done]) == []


def test_a_compiler_s_list_of_errors_is_remembered_by_its_first() -> None:
    """A type check's errors one per line: the first is where the fixing
    starts, the ones after it often its consequences."""
    first = (
        "src/theme/theme.ts(5,15): error TS2305: Module '\"@x/tui\"' has no exported member 'A'."
    )
    output = "\n".join(
        [
            "> @x/agent@0.8.0 build",
            "",
            first,
            "src/theme/theme.ts(5,28): error TS2305: Module '\"@x/tui\"' has no member 'B'.",
            "src/tui/footer.ts(46,70): error TS2554: Expected 0-4 arguments, but got 5.",
            "npm error code 1",
            "Command exited with code 1",
        ]
    )
    quoted, outcome = _remembered_by(("bash", '{"command": "npm run build"}', output, True))
    assert quoted == first and outcome == f"exit 1, {first}"


def test_a_python_error_raised_while_handling_another_is_remembered_by_the_last() -> None:
    output = (
        'Traceback (most recent call last):\n  File "a.py", line 3, in <module>\n'
        "KeyError: 'name'\n\nDuring handling of the above exception, another exception"
        ' occurred:\n\nTraceback (most recent call last):\n  File "a.py", line 5, in'
        " <module>\nValueError: no name given\n"
    )
    quoted, outcome = _remembered_by(("Bash", '{"command": "python a.py"}', output, True))
    assert quoted == "ValueError: no name given"
    assert outcome == "failed, ValueError: no name given"


_TS2339 = (
    "src/config/config.ts:897:35 - error TS2339: Property 'activeTeam' does not exist on type"
    ' \'InferMergedSettings<{ readonly general: { readonly type: "object"; readonly label:'
    ' "General"; }; }>\'.'
)


@pytest.mark.parametrize(
    ("line", "limit", "quoted"),
    [
        # The Gemini session's failed builds: what is wrong stays, the types are cut.
        (_TS2339, 120, _TS2339[: _TS2339.index("'Infer") + 11] + "…'."),
        (
            "src/ui/components/TeamCreatorWizard.tsx:724:46 - error TS2322: Type '{ children:"
            " (string | Element)[]; color: string; marginLeft: number; }' is not assignable to"
            " type 'IntrinsicAttributes & TextProps'.",
            160,
            "src/ui/components/TeamCreatorWizard.tsx:724:46 - error TS2322: Type '{ children…'"
            " is not assignable to type 'IntrinsicAttributes & TextProps'.",
        ),
        # An error line cut at 300 characters may end inside the type.
        (_TS2339[:150], 120, _TS2339[: _TS2339.index("'Infer") + 11] + "…"),
        # An apostrophe inside a word opens no quote.
        (
            "Error: can't find module 'foo/bar/baz/qux/quux/corge/grault/garply/waldo/fred/plugh'"
            " because it's not installed in this project at all, so check package.json",
            120,
            "Error: can't find module 'foo/bar/ba…' because it's not installed in this project"
            " at all, so check package.json",
        ),
        ("error: short enough", 120, "error: short enough"),
        ("E" * 130, 120, "E" * 119 + "…"),
    ],
)
def test_a_long_error_line_is_quoted_with_its_types_cut_short(
    line: str, limit: int, quoted: str
) -> None:
    assert shortened(line, limit) == quoted
    assert len(quoted) <= limit


def test_a_stand_in_and_the_record_quote_a_long_error_alike() -> None:
    output = f"> build\n\n{_TS2339}\n\nError: Command failed: tsc --build\nExit Code: 1"
    quoted, outcome = _remembered_by(
        ("run_shell_command", '{"command": "npm run build"}', output, False)
    )
    assert quoted == shortened(_TS2339, 160)
    assert outcome == f"exit 1, {shortened(_TS2339, 120)}"


def _cargo_test_output(command: str) -> str:
    """What the Claude Code session's cargo test run `command` printed."""
    return next(
        output
        for name, args, output, _ in _claude_results(CLAUDE_STREAM)
        if name == "Bash" and json.loads(args)["command"] == command
    )


_CARGO = "cargo test -p autopilot --lib"
_NO_BUILD = "error: could not compile `autopilot`"
_FAILED_RUN = "error: test failed, to rerun pass `-p autopilot --lib`"


@pytest.mark.parametrize(
    ("output", "errors"),
    [
        # cargo counts the failures of a run that had none too.
        (
            _cargo_test_output(
                f"{_CARGO} tool_patterns::tests::test_detect_tool_patterns 2>&1 | tail -5"
            ),
            [],
        ),
        (
            "running 12 tests\n" + "test t ... ok\n" * 12 + "\ntest result: ok. 12 passed; "
            "0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.02s",
            [],
        ),
        ("===== 3 passed in 0.12s =====", []),
        (_cargo_test_output(f"{_CARGO} 2>&1 | tail -3"), [_FAILED_RUN]),
        (
            "test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 182 filtered out;"
            " finished in 0.07s",
            [
                "test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 182 filtered out;"
                " finished in 0.07s"
            ],
        ),
        (
            _cargo_test_output(f'{_CARGO} state::tests 2>&1 | grep "error\\[E"'),
            ["error[E0432]: unresolved import `nostr::secp256k1`"],
        ),
        (
            "FAILED tests/test_app.py::test_total - assert 3 == 4\n"
            "===== 1 failed, 10 passed in 0.31s =====",
            ["FAILED tests/test_app.py::test_total - assert 3 == 4"],
        ),
    ],
)
def test_a_test_run_failed_only_when_a_test_failed_or_an_error_is_printed(
    output: str, errors: list[str]
) -> None:
    """A runner's progress ("running 1 test") and its counts of a clean run
    ("test result: ok. 1 passed; 0 failed") are no failure; a count of failed
    tests or an error line is."""
    assert result_failed(output) == bool(errors)
    assert error_lines(output) == errors


def test_a_passing_cargo_run_is_no_error_fact_of_the_session() -> None:
    """The Claude Code session's passing cargo run, before its compaction,
    leaves no error fact; the failed runs and builds around it do."""
    read = formats.read(
        CLAUDE_STREAM.read_bytes(), path=str(CLAUDE_STREAM), options=ReadOptions(whole_history=True)
    )
    assert extract_facts(read.sessions[0].messages).errors == [
        f"{_NO_BUILD} (lib test) due to 1 previous error; 5 warnings emitted",
        _FAILED_RUN,
        f"{_NO_BUILD} (lib test) due to 2 previous errors; 1 warning emitted",
        "error[E0433]: failed to resolve: use of unresolved module or unlinked crate `nostr_core`",
        "error[E0432]: unresolved import `secp256k1`",
        f"{_NO_BUILD} (lib test) due to 1 previous error; 1 warning emitted",
        "error[E0432]: unresolved import `nostr::secp256k1`",
        "error[E0308]: mismatched types",
        "Path does not exist: crates/nostr/core/src/nip01",
        "error: unexpected argument '--accept' found",
        "mv: cannot stat '': No such file or directory",
        "bash: command not found: base=",
        "error: Interactive review requires a terminal. For non-interactive snapshot management:",
        "Path does not exist: crates/autopilot/src/main.rs",
        "Found 2 matches of the string to replace, but replace_all is false. To replace all"
        " occurrences, set replace_all to true. To replace only one occurrence, please provide"
        " more context to uniquely identify the instance.",
        'error: could not compile `autopilot` (bin "autopilot") due to 2 previous errors',
        "error[E0614]: type `i32` cannot be dereferenced",
        'error: could not compile `autopilot` (bin "autopilot") due to 1 previous error',
        "error: failed to push some refs to 'github.com:OpenAgentsInc/openagents.git'",
        "error: cannot pull with rebase: You have unstaged changes.",
        "error: Please commit or stash them.",
        "fatal: pathspec 'docs/logs/20251222/175115-call-issue-ready-now-to.rlog' did not match"
        " any files",
        "fatal: pathspec 'docs/logs/20251222/175115-call-issue-ready-now-to.jsonl' did not match"
        " any files",
    ]
