"""A record names each thing once. Relevant Files: a file the turns spell
several ways (an absolute path, the same path from the working directory,
its bare name) is one line under its fullest spelling, with everything done
to it, in a first record and in an update. Active State: a command run again
is one recent command, as its last run ended. Goal: a goal the ask above it
quotes is not stated again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxpack.facts.paths import same_files
from ctxpack.summarize.offline.actions import make_action
from ctxpack.summarize.offline.files import one_per_file
from ctxpack.summarize.offline.marks import looks_only
from ctxpack.tokens.counter import TokenCounter
from ctxpack.toolpairs import ToolUse
from ctxpack.transcript import Message
from tests.builders import call, result
from tests.conftest import SHARED, TAU_BENCH
from tests.test_offline import section, summarize
from tests.test_tool_rules import GEMINI, cli_record

SWE_AGENT = (
    SHARED
    / "swe-agent"
    / "SWE-agent__function_calling__install-1__marshmallow-code__marshmallow-1867.traj"
)
PI_LARGE = SHARED / "pi-agent" / "pi-mono__test__fixtures__large-session.jsonl"
CODEX = SHARED / "codex" / "Trezo-Ai__codex-session.jsonl"
FIELDS = "/testbed/src/marshmallow/fields.py"


@pytest.mark.parametrize(
    ("paths", "fullest"),
    [
        # From the working directory, and by name alone: both the absolute path.
        (
            ["fields.py", "src/marshmallow/fields.py", FIELDS],
            {"fields.py": FIELDS, "src/marshmallow/fields.py": FIELDS},
        ),
        (["./reproduce.py", "/testbed/reproduce.py"], {"./reproduce.py": "/testbed/reproduce.py"}),
        # A "./" inside a path is no other file.
        (["tests/x.py", "/repo/tests/./x.py"], {"tests/x.py": "/repo/tests/./x.py"}),
        # Two spellings of one file are one file, under the first.
        (
            ["tests/x.py", "/repo/tests/x.py", "/repo/tests/./x.py"],
            {"tests/x.py": "/repo/tests/x.py", "/repo/tests/./x.py": "/repo/tests/x.py"},
        ),
        (
            ["~/.pi/themes/", "~/.pi/themes", ".pi/themes", "./.pi/themes"],
            {
                "~/.pi/themes": "~/.pi/themes/",
                ".pi/themes": "~/.pi/themes/",
                "./.pi/themes": "~/.pi/themes/",
            },
        ),
        (["README.md", "packages/agent/README.md"], {"README.md": "packages/agent/README.md"}),
        # A name two files end with: which one it meant is not known.
        (["Cargo.toml", "/a/Cargo.toml", "/b/Cargo.toml"], {}),
        (["src/x.py", "/a/src/x.py", "/b/src/x.py"], {}),
        # A path from a root, a home or a parent is its own.
        (["/tmp/x.py", "/repo/tmp/x.py"], {}),
        (["~/notes.md", "/home/me/notes.md"], {}),
        (["x/a.py", "../x/a.py"], {}),
        # Only a whole name ends a path.
        (["a.py", "src/data.py"], {}),
        (["src", "/repo/src"], {"src": "/repo/src"}),
        ([], {}),
    ],
)
def test_a_path_is_named_by_its_fullest_spelling(paths: list[str], fullest: dict[str, str]) -> None:
    assert same_files(paths) == fullest


def test_one_line_per_file_keeps_every_mark_where_its_first_spelling_stood() -> None:
    marks = {
        "src/app.py": ["edited"],
        "/repo/README.md": ["read"],
        "/repo/src/app.py": ["read"],
        "app.py": [],
        "notes.txt": [],
    }
    assert one_per_file(marks) == {
        "/repo/src/app.py": ["edited", "read"],
        "/repo/README.md": ["read"],
        "notes.txt": ["mentioned"],
    }


def test_an_update_merges_the_previous_record_s_spelling_with_the_new_one(
    counter: TokenCounter,
) -> None:
    previous = (
        "## Relevant Files\n- src/app.py — read\n- app.py — mentioned\n- notes.txt — mentioned\n"
    )
    middle = [
        call("c1", "write_file", {"path": "/repo/src/app.py", "content": "x = 1\n"}),
        result("c1", "wrote /repo/src/app.py"),
    ]
    text = summarize(middle, counter, previous_summary=previous).text
    assert section(text, "Relevant Files") == [
        "- /repo/src/app.py — created, read",
        "- notes.txt — mentioned",
    ]


def test_the_cli_record_of_the_swe_agent_session_names_each_file_once(tmp_path: Path) -> None:
    # Before: the file it read and failed to edit stood on three lines (its
    # absolute path, the path from /testbed, its name), the script on two.
    record = cli_record(SWE_AGENT, tmp_path)
    assert record["Completed Actions"][3] == (
        f'4. Searched `fields.py` — ok, found 1 match: "{FIELDS}" [tool: find_file]'
    )
    assert record["Relevant Files"] == [
        f"- {FIELDS} — read, edit failed",
        "- /testbed/reproduce.py — edited",
        "- ./src/marshmallow/ — mentioned",
    ]


def test_the_cli_record_of_the_large_pi_session_names_no_file_by_its_name_alone(
    tmp_path: Path,
) -> None:
    files = cli_record(PI_LARGE, tmp_path)["Relevant Files"]
    paths = [line[2:].split(" — ")[0] for line in files]
    assert len(paths) == len(set(paths)) == 46
    # Slash commands and a regular expression's flags are no files.
    assert not {"/new", "/theme", "/g"} & set(paths)
    # Fifteen names that one edited or read file ends with were lines of their own.
    for name in ("theme.ts", "markdown.test.ts", "dark.json", "README.md", "theme.md"):
        assert name not in paths
        assert len([p for p in paths if p.endswith("/" + name)]) == 1
    assert "- packages/coding-agent/src/theme/theme.ts — edited, read" in files


def _ran(*runs: tuple[str, str]) -> list[Message]:
    """A bash call and its result for each (command, output), in order."""
    return [
        msg
        for number, (command, output) in enumerate(runs)
        for msg in (call(f"c{number}", "bash", {"command": command}), result(f"c{number}", output))
    ]


def test_a_command_run_again_is_one_recent_command_as_its_last_run_ended(
    counter: TokenCounter,
) -> None:
    middle = _ran(
        ("make build", "built"),
        ("make test", "tests failed\n\nCommand exited with code 2"),
        ("make lint", "ok"),
        ("make test", "all 12 passed"),
    )
    text = summarize(middle, counter).text
    assert section(text, "Active State") == [
        "- Recent command: `make test` — ok",
        "- Recent command: `make lint` — ok",
        "- Recent command: `make build` — ok",
    ]


def test_the_cli_record_of_the_gemini_session_names_its_commands_once(tmp_path: Path) -> None:
    # Before: the build-and-commit script, run twice, stood on two of the three lines.
    record = cli_record(GEMINI, tmp_path)
    assert record["Active State"] == [
        "- Recent command: `npm run build -w @google/gemini-cli` — ok",
        "- Recent command: `npm run build -w @google/gemini-cli && git add . && git commit"
        ' -m "fix(cli): make agent team selection non-persistent` (a 5-line script) — failed',
        "- Last file changed: packages/cli/src/ui/components/TeamCreatorWizard.tsx",
    ]


@pytest.mark.parametrize(
    ("command", "looks"),
    [
        ("ls -F", True),
        ("sed -n '1,220p' programs/cfo_oracle/Cargo.toml", True),
        ("cat a.txt | grep -n 'x' | head -5", True),
        ("find . -name '*.py'", True),
        ("grep -rn 'a && b' src/", True),
        ("find . -name '*.pyc' -delete", False),
        ("sed -i 's/a/b/' x.txt", False),
        ("cat > /tmp/fix.py << 'EOF'\nprint(1)\nEOF", False),
        ("python reproduce.py", False),
        ("ls -l && make test", False),
        # What asks about the machine, the shell or the repository only looks.
        ("test -f /Users/a/.superstack/.telemetry-prompted && echo yes || echo no", True),
        ("git -C /Users/a/Documents/'New project' status --short --branch", True),
        (
            "git config --global --get user.name && printf '\\n' && git config --get user.email",
            True,
        ),
        ('date +"%Y-%m-%d"', True),
        ("cd /repo && git log --oneline -5 && git diff HEAD --stat", True),
        ('pwd && ls -la app 2>/dev/null || echo "no app"', True),
        ("git branch -a && git remote -v && git rev-parse HEAD", True),
        ("command -v node && node --version && uname -a && whoami && env", True),
        # A question that sets, makes, moves or writes something is work.
        ("git branch -D old", False),
        ("git config user.name Ann", False),
        ("git tag v0.8.0", False),
        ("git diff --output=changes.patch", False),
        ("echo x > f.txt", False),
        ("pwd\necho x >> f.txt", False),
        ('echo "$(make build)"', False),
        ("date -s '2020-01-01'", False),
        ("env CI=1 make test", False),
        ("command make", False),
        ("[ -d build ] || mkdir build", False),
        # Search programs and filters of what a search found only look.
        ("rg --files src -g 'README*'", True),
        ("find apps -maxdepth 4 -type f | sort", True),
        ("sort -o sorted.txt names.txt", False),
    ],
)
def test_a_command_that_only_looks(command: str, looks: bool) -> None:
    action = make_action(
        ToolUse(index=0, call_id="c1", name="bash", arguments=json.dumps({"command": command})),
        [result("c1", "ok")],
        seen=set(),
    )
    assert looks_only(action.kind, action.command) is looks


def test_the_state_names_the_commands_that_changed_or_tested_something(
    counter: TokenCounter,
) -> None:
    middle = _ran(
        ("make test", "all 12 passed"), ("ls -F", "src/ tests/"), ("cat src/a.py", "x = 1")
    )
    assert section(summarize(middle, counter).text, "Active State") == [
        "- Recent command: `make test` — ok",
    ]
    # Where nothing else ran, what only looked is the state.
    assert section(summarize(middle[2:], counter).text, "Active State") == [
        "- Recent command: `cat src/a.py` — ok",
        "- Recent command: `ls -F` — ok",
    ]


def test_the_swe_agent_record_s_state_is_the_script_it_ran(tmp_path: Path) -> None:
    # Before: `ls -F` — ok led it, a listing of the repository.
    record = cli_record(SWE_AGENT, tmp_path)
    assert [line for line in record["Active State"] if "Recent command" in line] == [
        "- Recent command: `python reproduce.py` — ok",
    ]


@pytest.mark.parametrize(
    ("session", "recent"),
    [
        # Before: `git config --global --get user.name && printf '\n' && git config
        # --global --get user.email` — exit 0 was the third.
        (
            CODEX,
            [
                "- Recent command: `cargo test --manifest-path /Users/anmolbhardwaj/Documents/"
                "'New project'/programs/cfo_oracle/Cargo.toml` — exit 101",
                "- Recent command: `cargo test -p cfo_oracle` — exit 101",
                "- Recent command: `bash /Users/anmolbhardwaj/.claude/skills/apply-grant/"
                "export-session.sh .` — exit 0",
            ],
        ),
        # Before: `date +"%Y-%m-%d"` — ok led them.
        (
            PI_LARGE,
            [
                "- Recent command: `cd /Users/badlogic/workspaces/pi-mono && npm run version:minor`"
                " — ok",
                "- Recent command: `code ~/.pi/agent/themes/custom-dark.json` — ok",
                "- Recent command: `cp packages/coding-agent/src/theme/dark.json"
                " ~/.pi/agent/themes/custom-dark.json` — ok",
            ],
        ),
    ],
)
def test_the_state_is_not_a_question_about_the_machine(
    session: Path, recent: list[str], tmp_path: Path
) -> None:
    record = cli_record(session, tmp_path, "--context-length", "16000")
    assert [line for line in record["Active State"] if "Recent command" in line] == recent


def test_where_only_looks_ran_the_state_is_what_they_read_or_searched(tmp_path: Path) -> None:
    # Before: `git -C …/'New project' status --short --branch` and `test -f
    # …/.telemetry-prompted && echo yes || echo no`, questions, stood beside them.
    record = cli_record(CODEX, tmp_path)
    recent = [line for line in record["Active State"] if "Recent command" in line]
    assert [line.split("`")[1].split()[0] for line in recent] == ["rg", "ls"]


def test_a_command_that_only_asks_is_told_from_one_that_read(counter: TokenCounter) -> None:
    middle = _ran(("cat src/a.py", "x = 1"), ("git status --short", " M src/a.py"), ("pwd", "/r"))
    assert section(summarize(middle, counter).text, "Active State") == [
        "- Recent command: `cat src/a.py` — ok",
    ]


def test_a_goal_the_ask_quotes_is_not_stated_again(counter: TokenCounter) -> None:
    middle = [
        {"role": "user", "content": "I want to change the flight for reservation M05KNL."},
        {"role": "assistant", "content": "Sure, let me look it up."},
        {"role": "user", "content": "Also, I want to fly on May 20th. Can you check?"},
    ]
    text = summarize(middle, counter).text
    assert section(text, "Goal") == [
        '- The user first asked: "I want to change the flight for reservation M05KNL."',
        '- The user stated: "Also, I want to fly on May 20th."',
    ]


def test_the_cli_record_of_a_tau_bench_session_states_its_goal_once(tmp_path: Path) -> None:
    # Before: the ask and the same sentence "stated" stood one under the other.
    record = cli_record(TAU_BENCH, tmp_path, at=6)
    assert record["Goal"] == [
        "- The user's first ask is kept before this record; in these turns, they then asked:"
        " \"I want to change the flight for reservation 'M05KNL'.\""
    ]
