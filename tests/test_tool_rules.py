"""Each rule about a tool call has one answer, whichever stage asks: the
family of a tool, the exit code an output reports, whether a result failed,
and which secrets are masked. Every case runs through pruning (the one-liner
that replaces an output), the offline summary (the action it records) and
fact extraction (what evaluation measures)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ctxpack.facts.extract import extract_facts, fact_line
from ctxpack.prune.oneliners import one_liner
from ctxpack.summarize.offline.actions import Action, clip, make_action
from ctxpack.summarize.serialize import serialize_middle
from ctxpack.tokens.counter import TokenCounter
from ctxpack.toolpairs import ToolUse
from ctxpack.tools import Family, describe
from ctxpack.transcript import Message
from tests.test_prune import call, convo, file_view, prune, result


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
