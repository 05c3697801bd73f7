"""Fact extraction on real transcript text: paths, commands, errors, ids,
URLs, values and user directives; what a summary missed; the preserved-facts
section."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxpack import formats
from ctxpack.facts.extract import Facts, extract_facts, message_facts, missing_facts
from ctxpack.facts.match import collapse
from ctxpack.facts.paths import clean_path, looks_like_path
from ctxpack.facts.preserved import PreservedFacts, fact_line, fact_of, preserved_facts_section
from ctxpack.summarize.protocol import PRESERVED_FACTS_HEADING
from ctxpack.tokens.counter import TokenCounter
from ctxpack.tools import command_of
from ctxpack.transcript import Message
from tests.builders import call, result
from tests.conftest import FIXTURES, SHARED, TAU_BENCH

CLAUDE = FIXTURES / "claude-code"
HAIKU = CLAUDE / "openagents__regex-log__haiku-testgen-v2.jsonl"
OPUS = CLAUDE / "openagents__regex-log__opus-raw.jsonl"
CODEX = FIXTURES / "codex" / "Trezo-Ai__codex-session.jsonl"
STREAM = (
    FIXTURES
    / "claude-stream-json"
    / "openagents__logs__20251222_175115-call-issue-ready-now-to.jsonl"
)
SWE = FIXTURES / "swe-agent"
OPENHANDS = FIXTURES / "openhands" / "OpenHands__tests__runtime__trajs__basic_gui_mode.json"
SHAREGPT = FIXTURES / "sharegpt" / "LLaMA-Factory__data__glaive_toolcall_en_demo.json"
PI_LARGE = SHARED / "pi-agent" / "pi-mono__test__fixtures__large-session.jsonl"


# ---- native records as OpenAI messages (the adapters are not used here) ----


def _block_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))


def claude_messages(path: Path) -> list[Message]:
    """Claude Code / stream-json lines: text, tool_use and tool_result blocks."""
    out: list[Message] = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        msg = record.get("message")
        if record.get("type") not in ("user", "assistant") or not isinstance(msg, dict):
            continue
        content: Any = msg.get("content")
        if isinstance(content, str):
            out.append({"role": msg["role"], "content": content})
            continue
        for block in content:
            kind = block.get("type")
            if kind == "text":
                out.append({"role": msg["role"], "content": block["text"]})
            elif kind == "tool_use":
                out.append(call(block["id"], block["name"], json.dumps(block["input"])))
            elif kind == "tool_result":
                text = _block_text(block.get("content") or "")
                out.append(result(block["tool_use_id"], text, is_error=bool(block.get("is_error"))))
    return out


def codex_messages(path: Path) -> list[Message]:
    """Codex rollout response items: messages, function calls and outputs."""
    out: list[Message] = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record["type"] != "response_item":
            continue
        item = record["payload"]
        if item["type"] == "message":
            out.append({"role": item["role"], "content": _block_text(item["content"])})
        elif item["type"] == "function_call":
            out.append(call(item["call_id"], item["name"], item["arguments"]))
        elif item["type"] == "function_call_output":
            out.append(result(item["call_id"], str(item["output"])))
    return out


def swe_messages(path: Path) -> list[Message]:
    history = json.loads(path.read_text())["history"]
    keep = ("role", "content", "tool_calls", "tool_call_ids")
    out: list[Message] = []
    for entry in history:
        msg = {k: v for k, v in entry.items() if k in keep}
        if msg["role"] == "tool" and entry.get("tool_call_ids"):
            msg["tool_call_id"] = entry["tool_call_ids"][0]
        if isinstance(msg.get("content"), list):
            msg["content"] = _block_text(msg["content"])
        out.append(msg)
    return out


# ---- paths -----------------------------------------------------------------


def test_paths_with_spaces_from_codex_shell_quoting_and_backticks() -> None:
    facts = extract_facts(codex_messages(CODEX))
    # `sed -n '1,240p' /Users/anmolbhardwaj/Documents/'New project'/README.md`
    assert "/Users/anmolbhardwaj/Documents/New project/README.md" in facts.paths
    # `ls -la /Users/anmolbhardwaj/Documents/'New project'`
    assert "/Users/anmolbhardwaj/Documents/New project" in facts.paths
    # assistant text: "`/Users/anmolbhardwaj/Documents/New project/codex-session.jsonl` is ready"
    assert "/Users/anmolbhardwaj/Documents/New project/codex-session.jsonl" in facts.paths
    assert "/Users/anmolbhardwaj/.codex/skills/apply-grant/SKILL.md" in facts.paths


def test_what_a_search_is_told_to_match_is_no_file_it_read() -> None:
    """The real Codex session ran `rg --files DIR -g 'package.json' -g
    'Anchor.toml' …`: a listing of the files of those names, none of them read."""
    facts = extract_facts(codex_messages(CODEX))
    assert not {"package.json", "Anchor.toml"} & set(facts.paths)
    assert "/Users/anmolbhardwaj/Documents/New project" in facts.paths
    cases = {
        "find . -name setup.py -o -iname 'README*'": [],
        "grep -rn main --include=app.py src/cli.py": ["src/cli.py"],
        # A one-letter pattern is not cut out of the paths around it.
        "grep -e a src/app.py": ["src/app.py"],
        "rg -g package.json --files && cat package.json": ["package.json"],
        "bash -e scripts/run.sh": ["scripts/run.sh"],
    }
    for command, paths in cases.items():
        assert extract_facts([call("c1", "Bash", {"command": command})]).paths == paths, command


def test_no_paths_from_tags_urls_or_half_quoted_words() -> None:
    facts = extract_facts(codex_messages(CODEX))
    # "</environment_context>" closes a tag; it is not a path.
    assert not [p for p in facts.paths if "environment_context" in p or "turn_aborted" in p]
    assert not [p for p in facts.paths if "superteam.fun" in p or "'" in p]
    assert len(facts.paths) == len(set(facts.paths))


def test_windows_paths_plain_and_quoted_with_spaces() -> None:
    # No fixture was recorded on Windows; the wording mimics a PowerShell session.
    msgs: list[Message] = [
        {
            "role": "user",
            "content": r'The script is C:\Users\x\y.py and the config lives in "C:\Program '
            r'Files\Acme Tool\settings.json".',
        }
    ]
    facts = extract_facts(msgs)
    assert facts.paths == [r"C:\Users\x\y.py", r"C:\Program Files\Acme Tool\settings.json"]


def test_relative_and_traceback_paths_from_swe_agent() -> None:
    facts = extract_facts(
        swe_messages(SWE / "SWE-agent__demonstrations__function_calling_simple.traj")
    )
    assert "tests/missing_colon.py" in facts.paths  # open(path=...) argument
    # The traceback: File "/Users/fuchur/.../tests/./missing_colon.py", line 4
    assert (
        "/Users/fuchur/Documents/24/git_sync/swe-agent-test-repo/tests/./missing_colon.py"
        in facts.paths
    )


@pytest.mark.parametrize(
    ("token", "is_path"),
    [
        ("src/app.py", True),
        ("crates/autopilot/src/state.rs", True),
        ("/tmp/regex-log-test/app/regex.txt", True),
        ("regex.txt", True),
        ("1.2.3", False),
        ("pytest-8.4.2", False),
        ("and/or", False),
        ("05/20/2024", False),
        ("mia.li3818@example.com", False),
        ("Node.js", False),
        ("text/html", False),
        ("Data/Compute/Skills", False),
        ("https://superteam.fun/earn/grants/agentic-engineering", False),
        # One word after a slash is a folder at the root only if it is one;
        # the pi session's "/theme", "/new" and a sed's "/g" are none.
        ("/theme", False),
        ("/g", False),
        ("/tmp", True),
        ("/testbed", True),
        ("/setup.sh", True),
    ],
)
def test_path_shapes(token: str, is_path: bool) -> None:
    assert looks_like_path(token) is is_path


def test_slash_commands_named_in_a_sentence_are_no_paths() -> None:
    text = "Type /theme to pick one, or /new to start over; the log is in /tmp/out.log"
    assert extract_facts([{"role": "assistant", "content": text}]).paths == ["/tmp/out.log"]


def test_locations_and_pytest_node_ids_name_their_file() -> None:
    assert clean_path("crates/autopilot/src/state.rs:293:13") == "crates/autopilot/src/state.rs"
    node = "testgen_tests.py::TestDateIPv4Regex::test_c1_valid_month_january"
    assert clean_path(node) == "testgen_tests.py"
    # An awk range from the stream-json fixture is no path.
    awk = "awk '/MetricsCommands::Alerts/,/^ }$/' crates/autopilot/src/main.rs | tail -10"
    assert extract_facts([call("c1", "Bash", json.dumps({"command": awk}))]).paths == [
        "crates/autopilot/src/main.rs"
    ]


def test_version_numbers_are_not_paths_but_the_interpreter_is() -> None:
    # A pytest header line from the Claude Code fixture.
    line = "platform linux -- Python 3.13.7, pytest-8.4.2, pluggy-1.6.0 -- /usr/bin/python"
    assert extract_facts([{"role": "assistant", "content": line}]).paths == ["/usr/bin/python"]


@pytest.mark.parametrize(
    ("text", "versions"),
    [
        ("upgrade to 2.2.1, then v1.2 and 0.36.0", ["2.2.1", "v1.2", "0.36.0"]),
        ("released 1.0.0-rc1", ["1.0.0-rc1"]),
        # A time in a screenshot's name, a date: no version has a leading zero.
        ("Screenshot 2025-11-21 at 01.27.21.png", []),
        ("on 2024.05.23 at 10.01.2", []),
        # A nested list's numbers (the pi session's markdown sample) are no versions;
        # a release beside its neighbour, or beside its line, still is.
        ("- Nested 2.1\n- Nested 2.2\n  - Double nested 2.2.1\n  - Double nested 2.2.2", []),
        ("from 2.0.1 to 2.0.2", ["2.0.1", "2.0.2"]),
        ("the 3.11 line: 3.11.4 and 3.11.5", ["3.11.4", "3.11.5"]),
        ("section 4.2 and 4.2.1", ["4.2.1"]),
    ],
)
def test_a_version_s_numbers_have_no_leading_zero(text: str, versions: list[str]) -> None:
    assert extract_facts([{"role": "assistant", "content": text}]).identifiers == versions


# ---- commands --------------------------------------------------------------


def test_codex_exec_command_cmd_and_claude_heredoc_known_by_its_first_line() -> None:
    codex = extract_facts(codex_messages(CODEX)).commands
    assert codex[0] == "pwd"
    assert "cargo test -p cfo_oracle" in codex
    haiku = claude_messages(HAIKU)
    heredoc = next(
        json.loads(m["tool_calls"][0]["function"]["arguments"])["command"]
        for m in haiku
        if m.get("tool_calls") and "EXPAND_EOF" in m["tool_calls"][0]["function"]["arguments"]
    )
    commands = extract_facts(haiku).commands
    assert heredoc.count("\n") > 20
    # A 50-line script is known, as the record names it, by its first line.
    assert "python3 << 'EXPAND_EOF'" in commands
    assert heredoc.strip() not in commands


def test_shell_argv_arrays_and_editor_subcommands() -> None:
    assert command_of({"command": ["bash", "-lc", "cargo test -p cfo_oracle"]}) == (
        "cargo test -p cfo_oracle"
    )
    assert command_of({"command": ["ls", "-la", "New project"]}) == "ls -la 'New project'"
    events = json.loads(OPENHANDS.read_text())
    calls = [
        e["tool_call_metadata"]["model_response"]["choices"][0]["message"]["tool_calls"][0]
        for e in events
        if "action" in e and e.get("tool_call_metadata")
    ]
    msgs = [call(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls]
    facts = extract_facts(msgs)
    # str_replace_editor's "create" is an editor sub-command, not a shell command.
    assert facts.commands == [
        "mkdir -p /workspace/todo-app",
        "cd /workspace/todo-app && python3 -m http.server 8000",
    ]
    assert "/workspace/todo-app/index.html" in facts.paths


# ---- errors ----------------------------------------------------------------


def test_python_errors_and_failed_lines_from_pytest_output() -> None:
    errors = extract_facts(claude_messages(HAIKU)).errors
    assert "AssertionError: assert '2021-01-15' not in ['2021-01-15']" in errors
    assert any(e.startswith("FAILED testgen_tests.py::TestDateIPv4Regex::") for e in errors)
    # The failed Write result carries is_error and no error pattern.
    assert "EACCES: permission denied, mkdir '/app'" in errors


def test_swe_agent_lint_error_but_not_code_that_mentions_errors() -> None:
    msgs = swe_messages(
        SWE / "SWE-agent__function_calling__install-1__marshmallow-code__marshmallow-1867.traj"
    )
    errors = extract_facts(msgs).errors
    assert "IndentationError: unexpected indent" in errors
    assert not [e for e in errors if "except (TypeError" in e]


def test_rust_errors_from_stream_json() -> None:
    errors = extract_facts(claude_messages(STREAM)).errors
    assert (
        "error[E0433]: failed to resolve: use of unresolved module or unlinked crate `nostr_core`"
        in errors
    )
    assert "error[E0432]: unresolved import `secp256k1`" in errors


def test_git_fatal_and_cargo_error_from_codex() -> None:
    errors = extract_facts(codex_messages(CODEX)).errors
    assert "fatal: your current branch 'main' does not have any commits yet" in errors
    assert any(e.startswith("error: failed to load manifest for workspace member") for e in errors)


def test_javascript_and_npm_errors() -> None:
    output = (
        "/app/src/list.js:12\n    return items.map(render)\n                 ^\n\n"
        "TypeError: Cannot read properties of undefined (reading 'map')\n"
        "    at render (/app/src/list.js:12:18)\nnpm ERR! code ELIFECYCLE\n"
    )
    errors = extract_facts(
        [call("c1", "Bash", '{"command": "npm test"}'), result("c1", output)]
    ).errors
    # npm's report of the failed script places the failure; the error is above it.
    assert errors == ["TypeError: Cannot read properties of undefined (reading 'map')"]


@pytest.mark.parametrize(
    ("output", "errors"),
    [
        # tsc, plain and --pretty
        (
            "src/x.ts(28,2): error TS2739: Type '{}' is missing 'bold'",
            ["src/x.ts(28,2): error TS2739: Type '{}' is missing 'bold'"],
        ),
        (
            "src/x.ts:897:35 - error TS2339: Property 'a' does not exist\n\n897   a: 1,\n",
            ["src/x.ts:897:35 - error TS2339: Property 'a' does not exist"],
        ),
        # mypy, pyright
        (
            "ctxpack/a.py:12: error: Incompatible types  [arg-type]\nFound 1 error in 1 file",
            ["ctxpack/a.py:12: error: Incompatible types  [arg-type]"],
        ),
        (
            '  /repo/a.py:3:5 - error: Import "x" could not be resolved',
            ['/repo/a.py:3:5 - error: Import "x" could not be resolved'],
        ),
        # gcc and clang
        (
            "a.c:3:5: error: expected ';' before '}' token",
            ["a.c:3:5: error: expected ';' before '}' token"],
        ),
        (
            "a.c:1:10: fatal error: foo.h: No such file or directory",
            ["a.c:1:10: fatal error: foo.h: No such file or directory"],
        ),
        # Code that a grep shows is not an error, with its place or without.
        ("src/a.ts:12: error: { code: 1 }\nsrc/b.ts:3: error: 'bad',", []),
        ("note: error: x\nthe error: is here", []),
    ],
)
def test_compiler_and_type_checker_errors_are_quoted_with_their_place(
    output: str, errors: list[str]
) -> None:
    found = extract_facts([call("c1", "Bash", '{"command": "make check"}'), result("c1", output)])
    assert found.errors == errors


@pytest.mark.skipif(not PI_LARGE.is_file(), reason=f"{PI_LARGE} is absent")
def test_the_pi_session_s_failed_type_check_is_remembered_by_tsc_s_errors() -> None:
    """`npm run check` failed (exit 2): its errors are tsc's, the first five,
    not npm's banner line above them."""
    messages = formats.read(PI_LARGE.read_bytes(), path=str(PI_LARGE)).sessions[0].messages
    assert extract_facts(messages[59:60]).errors == [
        "../tui/test/chat-simple.ts(28,2): error TS2739: Type '{ description: ChalkInstance;"
        " noMatch: any; }' is missing the following properties from type 'SelectListTheme':"
        " selectedPrefix, selectedText, scrollInfo",
        "../tui/test/chat-simple.ts(30,3): error TS18004: No value exists in scope for the"
        " shorthand property 'noMatch'. Either declare one or provide an initializer.",
        "../tui/test/chat-simple.ts(88,51): error TS2353: Object literal may only specify known"
        " properties, and 'bgColor' does not exist in type 'MarkdownTheme'.",
        "../tui/test/chat-simple.ts(93,18): error TS2554: Expected 3-4 arguments, but got 2.",
        "../tui/test/chat-simple.ts(115,23): error TS2554: Expected 4-5 arguments, but got 1.",
    ]


# ---- identifiers, urls, values, directives ---------------------------------


def test_shas_need_digits_and_letters_and_call_ids_are_not_facts() -> None:
    msgs = swe_messages(SWE / "SWE-agent__demonstrations__function_calling_simple.traj")
    ids = extract_facts(msgs).identifiers
    # The submitted diff: "index 20edef5..5857437 100755"
    assert "20edef5" in ids
    assert "5857437" not in ids  # digits only
    assert not [i for i in ids if i.startswith("call_")]
    words = extract_facts([{"role": "user", "content": "deadbeef facade decade added"}])
    assert words.identifiers == []


def test_uuid_and_urls_from_codex() -> None:
    facts = extract_facts(codex_messages(CODEX))
    assert "019daa66-5b7b-7b01-b9ce-b527014cc09f" in facts.identifiers
    # "ws_007f73d8..." web-search ids sit in event lines, never in messages.
    assert not [i for i in facts.identifiers if len(i) > 40 and "-" not in i]
    # The assistant wrote "**https://superteam.fun/earn/grants/agentic-engineering**".
    assert "https://superteam.fun/earn/grants/agentic-engineering" in facts.urls
    assert not [u for u in facts.urls if u.endswith("*")]


def test_urls_stop_at_escapes_and_braces() -> None:
    urls = extract_facts(claude_messages(STREAM)).urls
    assert "wss://relay.damus.io" in urls
    assert "https://github.com/FROSTR-ORG" in urls
    assert not [u for u in urls if "\\" in u or "{" in u]


def test_values_with_units_and_money() -> None:
    session = formats.read(TAU_BENCH.read_bytes(), path=str(TAU_BENCH)).sessions[0]
    values = extract_facts(session.messages).values
    assert "$121" in values  # "Economy Price: $121"
    sharegpt = json.loads(SHAREGPT.read_text())
    texts = [turn["value"] for conv in sharegpt for turn in conv["conversations"]]
    msgs: list[Message] = [{"role": "assistant", "content": t} for t in texts[:400]]
    found = extract_facts(msgs).values
    assert "30 minutes" in found
    assert not [v for v in found if v.endswith("0s") and len(v) == 5]  # "1960s" is a decade


def test_user_directives_from_tau_bench() -> None:
    sessions = formats.read(TAU_BENCH.read_bytes(), path=str(TAU_BENCH)).sessions
    directives = extract_facts(sessions[0].messages).directives
    assert directives == [
        "No, I do not want travel insurance.",
        "Neither of those options works for me as I don't want to fly before 11 AM EST.",
    ]
    # "I'm afraid I don't have the reservation ID" states a fact, not a wish.
    assert extract_facts(sessions[5].messages).directives == []
    typed = "Always git push after each commit. Don't touch the schema. Use uv instead of pip."
    assert extract_facts([{"role": "user", "content": typed}]).directives == [
        "Always git push after each commit.",
        "Don't touch the schema.",
        "Use uv instead of pip.",
    ]
    habits = "Please stop grouping build & commit. Let's not rename it. The tests stop running."
    assert extract_facts([{"role": "user", "content": habits}]).directives == [
        "Please stop grouping build & commit.",
        "Let's not rename it.",
    ]
    # A compaction's summary rides in a user turn; its rules are not the user's words.
    summary = (
        "This session is being continued from a previous conversation that ran out of context."
        " The user said: never push to main."
    )
    assert extract_facts([{"role": "user", "content": summary}]).directives == []
    snapshot = "<state_snapshot><active_constraints>Never push to main.</active_constraints>"
    assert extract_facts([{"role": "user", "content": snapshot}]).directives == []
    # The same phrases that are no constraint in the record are no directive.
    stated = (
        "I must have left it somewhere else. I'll make sure to find it. There must be a way."
        " I don't remember the ID, but never push to main."
    )
    assert extract_facts([{"role": "user", "content": stated}]).directives == [
        "I don't remember the ID, but never push to main."
    ]


@pytest.mark.parametrize(
    ("text", "paths"),
    [("/them", []), ("  /model:list\n", []), ("/tmp/out.log is empty", ["/tmp/out.log"])],
)
def test_a_slash_command_the_user_typed_for_the_client_holds_no_path(
    text: str, paths: list[str]
) -> None:
    # The real pi session holds "/them" and "/the": its user typing "/theme".
    assert extract_facts([{"role": "user", "content": text}]).paths == paths


# ---- missing facts and the preserved section -------------------------------


def test_missing_facts_compares_whitespace_collapsed() -> None:
    command = "python3 << 'EOF'\nimport re\n\nprint(re.findall(r'\\d', 'a1'))\nEOF"
    facts = Facts(paths=["/tmp/regex-log-test/app/regex.txt"], commands=[command])
    text = f"Ran `{collapse(command)}` then edited /tmp/regex-log-test/app/regex.txt"
    assert missing_facts(facts, text).is_empty()
    missing = missing_facts(facts, "Nothing relevant here")
    assert missing.paths == facts.paths
    assert missing.commands == [command]


def test_a_fact_with_no_whitespace_to_collapse_is_its_own_key() -> None:
    """A long session keeps every message's facts with their keys: a key
    equal to its fact is the very same string, not a second copy."""
    for command, key in (
        ("pytest -q tests/app.py", "pytest -q tests/app.py"),
        ("pytest  -q\n  tests/app.py", "pytest -q tests/app.py"),
    ):
        facts = message_facts(call("c1", "bash", {"command": command}))
        ((items, keys),) = [(items, keys) for name, items, keys in facts if name == "commands"]
        assert (items, keys) == ((command,), (key,))
        assert (keys[0] is items[0]) == (key == command)


def test_preserved_section_lists_missing_facts_in_order(counter: TokenCounter) -> None:
    middle = codex_messages(CODEX)[2:40]
    section = preserved_facts_section(middle, "", counter=counter, cap_tokens=5000).text
    lines = section.splitlines()
    assert lines[0] == f"## {PRESERVED_FACTS_HEADING}"
    kinds = [line.split(":", 1)[0] for line in lines if line.startswith("- ")]
    # The few, short facts a resumed model cannot look up first; paths last of
    # the four, as Relevant Files names most of them.
    order = ["- Error", "- ID", "- Command", "- Path", "- URL"]
    assert kinds == sorted(kinds, key=order.index)
    tight = preserved_facts_section(middle, "", counter=counter, cap_tokens=120).text
    assert "- Path:" not in tight and tight.endswith("more facts not shown)")
    assert tight.splitlines()[2:4] == [
        "- Error: fatal: your current branch 'main' does not have any commits yet",
        "- ID: 019daa66-5b7b-7b01-b9ce-b527014cc09f",
    ]
    facts = extract_facts(middle)
    assert missing_facts(facts, section).paths == []
    assert missing_facts(facts, section).commands == []


def test_an_error_that_opens_with_its_label_is_listed_with_it_once(counter: TokenCounter) -> None:
    """Cargo's "error: failed to load manifest ..." in the Codex session,
    Node's "Error: Command failed: tsc --build" in the Gemini CLI session and
    the airline tools' "Error: not enough seats ..." (tau-bench, whose errors
    the 10 MB bench session's record listed as "Error: Error: ...") are no
    "Error: error: ..."; rustc's "error[E0432]: ..." opens with no label."""
    gemini = SHARED / "gemini" / "gemini-cli__ntm-agentteamscli__trajectory.json"
    lines = [
        line
        for middle in (
            codex_messages(CODEX),
            formats.read(gemini.read_bytes(), path=str(gemini)).sessions[0].messages,
            formats.read(TAU_BENCH.read_bytes(), path=str(TAU_BENCH)).sessions[15].messages,
        )
        for line in preserved_facts_section(
            middle, "", counter=counter, cap_tokens=100_000
        ).text.splitlines()
    ]
    assert (
        "- Error: failed to load manifest for workspace member"
        " `/Users/anmolbhardwaj/Documents/New project/apps/process_tui`"
    ) in lines
    assert "- Error: Command failed: tsc --build" in lines
    assert "- Error: not enough seats on flight HAT290" in lines
    assert not [line for line in lines if line.lower().startswith("- error: error:")]
    assert fact_of("- Error: Command failed: tsc --build") == "Command failed: tsc --build"
    assert (
        fact_line("errors", "error[E0432]: unresolved import `secp256k1`")
        == "- Error: error[E0432]: unresolved import `secp256k1`"
    )


def test_preserved_section_respects_the_cap_and_is_empty_when_nothing_is_missing(
    counter: TokenCounter,
) -> None:
    middle = codex_messages(CODEX)[2:60]
    full = preserved_facts_section(middle, "", counter=counter, cap_tokens=100_000)
    assert full.unshown == 0
    listed = sum(line.startswith("- ") for line in full.text.splitlines())
    for cap in (60, 150, 400):
        section = preserved_facts_section(middle, "", counter=counter, cap_tokens=cap)
        assert counter.text(section.text) <= cap
        assert section.text.startswith(f"## {PRESERVED_FACTS_HEADING}")
        shown = sum(line.startswith("- ") for line in section.text.splitlines()) - 1
        assert section.text.endswith(f"- (+{section.unshown} more facts not shown)")
        assert shown + section.unshown == listed
    # No fact fits: no section, and every fact is one it had no room for.
    assert preserved_facts_section(middle, "", counter=counter, cap_tokens=10) == PreservedFacts(
        "", listed
    )
    assert preserved_facts_section(
        middle, full.text, counter=counter, cap_tokens=5000
    ) == PreservedFacts("", 0)


def test_preserved_section_masks_secrets(counter: TokenCounter) -> None:
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2"
    msgs = [
        call("c1", "Bash", json.dumps({"command": f"OPENAI_API_KEY={secret} python run.py"})),
        result("c1", "ok"),
    ]
    section = preserved_facts_section(msgs, "", counter=counter, cap_tokens=500).text
    assert "python run.py" in section
    assert secret not in section
