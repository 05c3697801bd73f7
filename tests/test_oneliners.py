"""One-liners keep the facts of the outputs they replace: the tool, its key
argument, the exit code, the counts and the line that matters. Outputs are
taken verbatim from the real transcripts in fixtures/ where one exists."""

from __future__ import annotations

import json
from pathlib import Path

from ctxpack.prune.oneliners import one_liner
from ctxpack.standin import PRUNED_PREFIX, is_pruned, quoted_error
from ctxpack.summarize.offline.actions import make_action
from ctxpack.toolpairs import ToolUse
from tests.conftest import FIXTURES, TAU_BENCH
from tests.test_tool_rules import cli_record

CLAUDE = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"
CLAUDE_SUB = FIXTURES / "claude-code" / "openagents__regex-log__subagents__agent-a028728.jsonl"
CLAUDE_STREAM = (
    FIXTURES
    / "claude-stream-json"
    / "openagents__logs__20251222_175115-call-issue-ready-now-to.jsonl"
)
CODEX = FIXTURES / "codex" / "Trezo-Ai__codex-session.jsonl"
SWE = (
    FIXTURES
    / "swe-agent"
    / "SWE-agent__function_calling__install-1__marshmallow-code__marshmallow-1867.traj"
)
OPENHANDS = FIXTURES / "openhands" / "OpenHands__tests__runtime__trajs__basic_gui_mode.json"
GLAIVE = FIXTURES / "sharegpt" / "LLaMA-Factory__data__glaive_toolcall_en_demo.json"

Result = tuple[str, str, str, bool]  # tool name, arguments JSON, output text, is_error


def _claude_results(path: Path) -> list[Result]:
    """(name, arguments, output, is_error) of every tool_result in a Claude Code log."""
    uses: dict[str, tuple[str, str]] = {}
    out: list[Result] = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        message = json.loads(line).get("message")
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                uses[block["id"]] = (block["name"], json.dumps(block["input"]))
            elif block.get("type") == "tool_result":
                body = block.get("content")
                if isinstance(body, list):
                    body = "\n".join(part.get("text", "") for part in body)
                name, args = uses[block["tool_use_id"]]
                out.append((name, args, body, bool(block.get("is_error"))))
    return out


def _codex_results() -> list[Result]:
    calls: dict[str, tuple[str, str]] = {}
    out: list[Result] = []
    for line in CODEX.read_text().splitlines():
        payload = json.loads(line)["payload"]
        if payload.get("type") == "function_call":
            calls[payload["call_id"]] = (payload["name"], payload["arguments"])
        elif payload.get("type") == "function_call_output":
            name, args = calls[payload["call_id"]]
            out.append((name, args, payload["output"], False))
    return out


def _swe_results() -> list[Result]:
    calls: dict[str, tuple[str, str]] = {}
    out: list[Result] = []
    for msg in json.loads(SWE.read_text())["history"]:
        for call in msg.get("tool_calls") or []:
            calls[call["id"]] = (call["function"]["name"], call["function"]["arguments"])
        if msg["role"] == "tool":
            name, args = calls[msg["tool_call_ids"][0]]
            out.append((name, args, msg["content"], False))
    return out


def _find(results: list[Result], name: str, needle: str) -> Result:
    """The first result of tool `name` whose arguments contain `needle`."""
    return next(r for r in results if r[0] == name and needle in r[1])


def _line(result: Result) -> str:
    name, args, output, is_error = result
    text = one_liner(name=name, arguments=args, output=output, is_error=is_error)
    assert text.startswith(PRUNED_PREFIX) and is_pruned(text)
    assert "\n" not in text
    assert f"{len(output):,} chars" in text
    return text


# --- Claude Code ------------------------------------------------------------------


def test_claude_bash_failing_pytest_keeps_command_exit_and_summary() -> None:
    result = _find(_claude_results(CLAUDE), "Bash", 'pytest testgen_tests.py -v --tb=no"')
    assert result[2].startswith("Exit code 1\n") and result[3] is True
    text = _line(result)
    assert "Bash `python -m pytest testgen_tests.py -v --tb=no`" in text
    assert "exit 1" in text
    # the output minus Claude's "Exit code 1" line
    assert f"{result[2].count(chr(10)):,} lines" in text
    assert '"2 failed, 80 passed in 0.03s"' in text


def test_claude_failing_pytest_digest_ends_with_its_last_error_line() -> None:
    result = _find(_claude_results(CLAUDE), "Bash", 'pytest testgen_tests.py -v --tb=no"')
    text = _line(result)
    last = (
        "FAILED testgen_tests.py::TestDateIPv4Regex::"
        + "test_integration_multiple_valid_dates_with_ipv4"
    )
    # The last of its error lines, above the summary banner.
    banner = "=" * 25 + " 2 failed, 80 passed in 0.03s " + "=" * 25
    assert result[2].splitlines()[-2:] == [last, banner]
    assert text == (
        "[ctxpack pruned] Bash `python -m pytest testgen_tests.py -v --tb=no` → exit 1; "
        'output was 93 lines, 7,481 chars; last: "2 failed, 80 passed in 0.03s"; '
        f'error: "{last}"'
    )
    assert quoted_error(text) == last


def test_a_failed_test_s_stand_in_says_why_where_pytest_s_summary_only_names_it() -> None:
    """pytest -x ends with "FAILED <test> - ..." (its reason cut) or "FAILED <test>":
    the assertion above it is what a resumed model must fix."""
    for test, why in [
        ("test_c4_ipv4_too_many_5_octets", "assert '2021-01-15' not in ['2021-01-15']"),
        (
            "test_integration_multiple_valid_dates_with_ipv4",
            "assert '2021-03-30' in ['2021-01-15', '2021-02-25']",
        ),
    ]:
        result = _find(_claude_results(CLAUDE), "Bash", f"{test} -xvs")
        assert f"FAILED testgen_tests.py::TestDateIPv4Regex::{test}" in result[2]
        assert quoted_error(_line(result)) == f"AssertionError: {why}"


def test_the_cli_record_of_a_pruned_failed_test_says_why(tmp_path: Path) -> None:
    actions = cli_record(CLAUDE, tmp_path, "--context-length", "32000")["Completed Actions"]
    assert (
        "13. Ran `python -m pytest testgen_tests.py::TestDateIPv4Regex::"
        "test_c4_ipv4_too_many_5_octets -xvs` — exit 1, 1 failed, AssertionError: assert"
        " '2021-01-15' not in ['2021-01-15'] [tool: Bash]"
    ) in actions


def test_a_long_error_line_is_clipped_to_160_chars() -> None:
    line = "ValueError: " + "x" * 300
    text = one_liner(name="Bash", arguments='{"command": "make"}', output=f"Exit code 2\n{line}")
    quote = quoted_error(text)
    assert quote == line[:159] + "…" and "\n" not in text


def test_an_unpruned_text_quotes_no_error() -> None:
    assert quoted_error('error: "ValueError: bad"') is None
    assert quoted_error(f"{PRUNED_PREFIX} Read a.py → lines 1-3; output was 3 lines") is None


def test_claude_read_keeps_path_and_line_span() -> None:
    name, args, output, err = _find(_claude_results(CLAUDE), "Read", "testgen_instruction")
    text = _line((name, args, output, err))
    assert "Read /tmp/testgen_instruction.txt" in text
    assert "lines 1-119" in text


def test_claude_partial_read_reports_the_lines_it_showed() -> None:
    text = _line(_find(_claude_results(CLAUDE_SUB), "Read", '"offset": 314'))
    assert "Read /tmp/regex-log-test/app/testgen_tests.py" in text
    assert "lines 314-324" in text  # the file ended at line 324
    assert "11 lines" in text  # Claude's <system-reminder> trailer is not output


def test_claude_grep_keeps_pattern_path_and_count() -> None:
    result = _find(_claude_results(CLAUDE_STREAM), "Grep", "fn encrypt_state")
    text = _line(result)
    assert 'Grep "fn encrypt_state" in crates/autopilot/src/state.rs' in text
    lines = len([x for x in result[2].splitlines() if x.strip()])
    assert f"{lines} result lines" in text


def test_claude_grep_files_mode_counts_files() -> None:
    output = "Found 3 files\nsrc/a.py\nsrc/b.py\ntests/test_a.py"
    text = one_liner(name="Grep", arguments='{"pattern": "def main"}', output=output)
    assert 'Grep "def main"' in text and "3 files" in text


def test_claude_glob_with_nothing_found() -> None:
    name, args, output, err = _find(_claude_results(CLAUDE_SUB), "Glob", "pattern")
    text = one_liner(name=name, arguments=args, output=output, is_error=err)
    assert 'Glob "**/*.{txt,json,log,test,spec}"' in text and "0 files" in text


def test_claude_edit_and_failed_write() -> None:
    results = _claude_results(CLAUDE)
    text = _line(_find(results, "Edit", "test_c1_valid_m"))
    assert "Edit /tmp/regex-log-test/app/testgen_tests.py" in text
    assert "lines 15-82" in text  # the snippet Claude showed after the edit
    name, args, output, err = _find(results, "Write", '"/app/testgen_tests.py"')
    text = one_liner(name=name, arguments=args, output=output, is_error=err)
    assert "Write /app/testgen_tests.py → error" in text
    assert "EACCES: permission denied, mkdir '/app'" in text


def test_claude_task_keeps_description_and_agent_type() -> None:
    text = _line(_find(_claude_results(CLAUDE), "Task", "Review test coverage"))
    assert 'Task "Review test coverage completeness" [general-purpose]' in text
    # The agent id it ends with is how the session resumes that agent.
    assert text.endswith("; ids: a028728")


def test_claude_bash_failure_quotes_the_error_not_a_later_banner() -> None:
    result = next(
        r
        for r in _claude_results(CLAUDE_STREAM)
        if r[0] == "Bash" and '"git push origin main"' in r[1] and "rejected" in r[2]
    )
    # The output ends with a hook banner "Build check passed (no errors or warnings)".
    assert "no errors or warnings" in result[2].splitlines()[-1]
    text = _line(result)
    assert "Bash `git push origin main` → exit 1" in text
    assert 'error: "error: failed to push some refs to' in text


# --- Codex --------------------------------------------------------------------------


def test_codex_exec_command_keeps_cmd_and_exit_code() -> None:
    result = _find(_codex_results(), "exec_command", "cargo test -p cfo_oracle")
    text = _line(result)
    assert "exec_command `cargo test -p cfo_oracle`" in text
    assert "exit 101" in text
    assert "No such file or directory (os error 2)" in text or "process_tui" in text


def test_codex_exec_command_still_running() -> None:
    result = _find(_codex_results(), "exec_command", "rg --files -g 'idea-context.md'")
    text = _line(result)
    assert "still running (session 3587)" in text


def test_codex_header_is_not_counted_as_output() -> None:
    result = _find(_codex_results(), "exec_command", "wc -l")
    text = _line(result)
    body = result[2].split("\nOutput:\n", 1)[1]
    assert f"{body.count(chr(10))} lines" in text
    assert '"1108 total"' in text


def test_codex_apply_patch_and_shell() -> None:
    patch = (
        "*** Begin Patch\n*** Update File: src/app.py\n@@\n-old\n+new\n"
        "*** Add File: src/new.py\n+print(1)\n*** End Patch"
    )
    output = json.dumps(
        {
            "output": "Success. Updated the following files:\nM src/app.py\nA src/new.py\n",
            "metadata": {"exit_code": 0, "duration_seconds": 0.0},
        }
    )
    text = one_liner(name="apply_patch", arguments=patch, output=output)  # custom tool: raw input
    assert "apply_patch src/app.py, src/new.py → exit 0" in text
    args = json.dumps({"command": ["bash", "-lc", "git status"], "workdir": "/repo"})
    output = json.dumps({"output": "fatal: not a git repository\n", "metadata": {"exit_code": 128}})
    text = one_liner(name="shell", arguments=args, output=output)
    assert "shell `git status` → exit 128" in text
    assert '"fatal: not a git repository"' in text


# --- Hermes (ShareGPT trajectories) -------------------------------------------------


def test_hermes_terminal_read_search_patch() -> None:
    out = json.dumps(
        {"output": "collected 12 items\n\n11 passed, 1 failed in 0.4s", "exit_code": 1}
    )
    text = one_liner(name="terminal", arguments='{"command": "pytest -q"}', output=out)
    assert "terminal `pytest -q` → exit 1" in text and '"11 passed, 1 failed in 0.4s"' in text
    numbered = "\n".join(f"{i:6d}|line {i}" for i in range(1, 41))
    out = json.dumps({"content": numbered, "total_lines": 40, "file_size": 900})
    text = one_liner(name="read_file", arguments='{"path": "src/app.py"}', output=out)
    assert "read_file src/app.py → lines 1-40" in text
    matches = [{"path": "a.py", "line": i, "content": "TODO"} for i in range(7)]
    out = json.dumps({"total_count": 7, "matches": matches})
    text = one_liner(
        name="search_files", arguments='{"pattern": "TODO", "path": "src"}', output=out
    )
    assert 'search_files "TODO" in src → 7 matches' in text
    out = json.dumps({"success": False, "error": "Could not find old_string in src/app.py"})
    text = one_liner(
        name="patch", arguments='{"mode": "replace", "path": "src/app.py"}', output=out
    )
    assert "patch src/app.py → error" in text and "Could not find old_string" in text


def test_sharegpt_function_call_json_api() -> None:
    records = json.loads(GLAIVE.read_text())
    turns = next(
        r["conversations"]
        for r in records
        if any(t["from"] == "observation" and len(t["value"]) > 400 for t in r["conversations"])
    )
    i = next(n for n, t in enumerate(turns) if t["from"] == "observation" and len(t["value"]) > 400)
    call = json.loads(turns[i - 1]["value"])
    text = one_liner(
        name=call["name"], arguments=json.dumps(call["arguments"]), output=turns[i]["value"]
    )
    assert text.startswith(f"{PRUNED_PREFIX} {call['name']}(")
    assert "JSON object" in text and f"{len(turns[i]['value']):,} chars" in text


# --- SWE-agent and OpenHands --------------------------------------------------------


def test_swe_agent_open_edit_find_and_bash() -> None:
    results = _swe_results()
    text = _line(_find(results, "open", "fields.py"))
    assert "open src/marshmallow/fields.py → 1,997 lines total" in text
    text = _line(next(r for r in results if r[0] == "edit" and "syntax error" in r[2]))
    # The editor refused the edit (nothing applied): it failed, on the file it has open.
    assert "edit /testbed/src/marshmallow/fields.py → error, 1,997 lines total;" in text
    assert text.endswith('; error: "IndentationError: unexpected indent"')
    text = one_liner(
        name="find_file",
        arguments=_find(results, "find_file", "")[1],
        output=_find(results, "find_file", "")[2],
    )
    assert 'find_file "fields.py" in src → 1 file;' in text
    text = one_liner(
        name="bash",
        arguments='{"command":"python reproduce.py"}',
        output=_find(results, "bash", "reproduce")[2],
    )
    assert "bash `python reproduce.py`" in text and 'last: "344"' in text


def test_openhands_execute_bash_and_editor() -> None:
    events = json.loads(OPENHANDS.read_text())
    outputs: list[tuple[str, str, str]] = []
    for event in events:
        meta = event.get("tool_call_metadata")
        if event.get("observation") in ("run", "edit") and meta:
            fn = meta["model_response"]["choices"][0]["message"]["tool_calls"][0]["function"]
            suffix = event["extras"].get("metadata", {}).get("suffix", "")
            outputs.append((fn["name"], fn["arguments"], event["content"] + suffix))
    name, args, output = outputs[0]
    text = one_liner(name=name, arguments=args, output=output)
    assert "execute_bash `mkdir -p /workspace/todo-app` → exit 0" in text
    name, args, output = outputs[1]
    text = one_liner(name=name, arguments=args, output=output)
    assert "str_replace_editor create /workspace/todo-app/index.html" in text
    assert f"{len(output):,} chars" in text


# --- tau-bench style JSON APIs and unknown tools --------------------------------------


def test_tau_bench_json_api_output() -> None:
    traj = json.loads(TAU_BENCH.read_text())[0]["traj"]
    call = traj[6]["tool_calls"][0]["function"]
    text = one_liner(name=call["name"], arguments=call["arguments"], output=traj[7]["content"])
    assert 'get_user_details(user_id="mia_li_3668")' in text
    assert "JSON object (8 keys)" in text and "membership=gold" in text
    call = traj[8]["tool_calls"][0]["function"]
    text = one_liner(name=call["name"], arguments=call["arguments"], output=traj[9]["content"])
    assert 'search_direct_flight(origin="JFK", destination="SEA", date="2024-05-20")' in text
    assert "JSON list of 2 (flight_number: HAT069, HAT083)" in text


def _tau_call(session: int, at: int) -> tuple[str, str, str]:
    """(name, arguments, output) of the call at `at` in a tau-bench session."""
    traj = json.loads(TAU_BENCH.read_text())[session]["traj"]
    call = traj[at]["tool_calls"][0]["function"]
    return call["name"], call["arguments"], traj[at + 1]["content"]


def test_what_a_call_returned_reads_the_same_in_its_stand_in_and_in_the_record() -> None:
    """One rule (printed.json_shape) says what a JSON result holds: its first
    short fields (a short list of ids among them), less the ones the call was
    asked with, or each listed item's id, a connection's flights joined."""
    for (session, at), shape in [
        (
            (0, 6),
            "JSON object (8 keys): email=mia.li3818@example.com, dob=1990-04-05,"
            " membership=gold, reservations=[NO6JO3, AIXC49, HKEG34], …",
        ),
        (
            (2, 6),
            "JSON object (13 keys): user_id=omar_davis_3817, origin=MCO, destination=CLT,"
            " flight_type=one_way, …",
        ),
        (
            (0, 12),
            "JSON list of 4 (flight_number: HAT057+HAT039, HAT136+HAT039, HAT218+HAT039,"
            " HAT268+HAT039)",
        ),
    ]:
        name, args, output = _tau_call(session, at)
        assert f"→ {shape}; output was" in one_liner(name=name, arguments=args, output=output)
        reply = {"role": "tool", "content": output}
        done = make_action(ToolUse(0, "c1", name, args), [reply], seen=set())
        assert done.outcome == f"ok, returned {shape}"


def test_the_cli_record_says_where_each_reservation_goes(tmp_path: Path) -> None:
    actions = cli_record(TAU_BENCH, tmp_path, at=2)["Completed Actions"]
    routes = [line.split("origin=")[1].split(", flight_type")[0] for line in actions[1:]]
    assert routes == ["MCO, destination=CLT", "SFO, destination=MCO", "DEN, destination=DEN"]
