"""Stage 1 (prune): what goes, what stays, and what never changes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ctxpack import formats
from ctxpack import messages as m
from ctxpack.align.boundaries import plan_boundaries
from ctxpack.align.budget import Budget
from ctxpack.align.protect import head_end, prune_bounds
from ctxpack.formats import jsoncodec
from ctxpack.prune.argshrink import mark, shrink_arguments
from ctxpack.prune.stage import (
    DEDUPE,
    SHRINK,
    SUMMARIZE,
    PruneResult,
    PruneSettings,
    prune_messages,
    prune_transcript,
)
from ctxpack.standin import PRUNED_PREFIX, is_pruned
from ctxpack.tokens.counter import TokenCounter
from ctxpack.transcript import Message, Transcript
from tests.builders import call, result
from tests.conftest import COUNTER, TAU_BENCH

SMALL = PruneSettings(budget=Budget(tail_tokens=500, protect_last=4))


@pytest.fixture(scope="module")
def tau() -> Transcript:
    return formats.read(TAU_BENCH.read_bytes(), path=str(TAU_BENCH))


@pytest.fixture(scope="module")
def tau_pruned(tau: Transcript, counter: TokenCounter) -> tuple[Transcript, list[PruneResult]]:
    return prune_transcript(tau, counter=counter, settings=SMALL)


# --- helpers to build transcripts -----------------------------------------------------


def convo(*middle: Message, tail: int = 4) -> list[Message]:
    """system + 3 head turns + `middle` + `tail` short closing turns."""
    head: list[Message] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing test."},
        {"role": "assistant", "content": "Looking."},
        {"role": "user", "content": "Go on."},
    ]
    closing = [
        {"role": "assistant" if i % 2 else "user", "content": f"turn {i}"} for i in range(tail)
    ]
    return head + list(middle) + closing


def prune(msgs: list[Message], counter: TokenCounter, **budget: Any) -> PruneResult:
    b = Budget(tail_tokens=budget.pop("tail_tokens", 0), protect_last=budget.pop("protect_last", 4))
    return prune_messages(msgs, counter=counter, settings=PruneSettings(budget=b, **budget))


def file_view(n: int, start: int = 1) -> str:
    return "\n".join(f"{i:6d}→    value_{i} = compute({i})" for i in range(start, start + n))


# --- real transcripts: tau-bench ------------------------------------------------------


def test_tau_bench_prunes_and_keeps_every_pair(
    tau: Transcript, tau_pruned: tuple[Transcript, list[PruneResult]]
) -> None:
    pruned, results = tau_pruned
    assert sum(len(r.rows) for r in results) > 500
    for before, after, res in zip(tau.sessions, pruned.sessions, results, strict=True):
        old, new = before.messages, after.messages
        assert len(old) == len(new)
        assert [m.role(x) for x in old] == [m.role(x) for x in new]
        ids = [[m.call_id(c) for c in m.tool_calls(x)] for x in old]
        assert ids == [[m.call_id(c) for c in m.tool_calls(x)] for x in new]
        assert [m.result_call_id(x) for x in old] == [m.result_call_id(x) for x in new]
        for cid in {c for group in ids for c in group}:
            assert any(m.result_call_id(x) == cid for x in new), cid
        changed = {row.index for row in res.rows}
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            if i < res.head_end or i >= res.tail_start or i not in changed:
                assert a is b
                assert jsoncodec.dumps(a) == jsoncodec.dumps(b)
            else:
                assert a is not b and res.head_end <= i < res.tail_start
        assert res.tokens_after <= res.tokens_before
        assert res.saved == res.tokens_before - res.tokens_after == sum(r.saved for r in res.rows)


def test_tau_bench_tail_and_head_bounds(
    tau: Transcript, counter: TokenCounter, tau_pruned: tuple[Transcript, list[PruneResult]]
) -> None:
    for session, res in zip(tau.sessions, tau_pruned[1], strict=True):
        msgs = session.messages
        assert len(msgs) - res.tail_start >= 4 or res.tail_start == res.head_end
        non_system = [x for x in msgs[: res.head_end] if m.role(x) != "system"]
        assert len(non_system) == min(3, len([x for x in msgs if m.role(x) != "system"]))
        if len(msgs) - res.tail_start > 4:
            assert counter.messages(msgs[res.tail_start :]) <= 500


def test_tau_bench_pruning_twice_changes_nothing(
    counter: TokenCounter, tau_pruned: tuple[Transcript, list[PruneResult]]
) -> None:
    once, _ = tau_pruned
    twice, results = prune_transcript(once, counter=counter, settings=SMALL)
    assert all(not r.rows and not r.applied for r in results)
    for a, b in zip(once.sessions, twice.sessions, strict=True):
        assert a is b
    assert formats.write(twice, counter=COUNTER) == formats.write(once, counter=COUNTER)


def test_tau_bench_stand_ins_are_short_and_written_back(
    tau_pruned: tuple[Transcript, list[PruneResult]],
) -> None:
    pruned, results = tau_pruned
    for session, res in zip(pruned.sessions, results, strict=True):
        for row in res.rows:
            msg = session.messages[row.index]
            if row.action == SHRINK:
                for c in m.tool_calls(msg):
                    assert isinstance(json.loads(m.call_arguments(c)), dict)
                continue
            assert is_pruned(msg["content"]) and "\n" not in msg["content"]
            assert len(msg["content"]) < (200 if row.action == DEDUPE else 320)
    data = formats.write(pruned, counter=COUNTER)
    again = formats.read(data, path="pruned.json")
    assert [len(s.messages) for s in again.sessions] == [len(s.messages) for s in pruned.sessions]


def test_tau_bench_repeated_identical_output_is_deduplicated(
    tau_pruned: tuple[Transcript, list[PruneResult]],
) -> None:
    pruned, results = tau_pruned
    rows = [(s, r) for s, res in zip(pruned.sessions, results, strict=True) for r in res.rows]
    dedupes = [(s, r) for s, r in rows if r.action == DEDUPE]
    assert dedupes
    session, row = dedupes[0]
    later = int(row.reason.split("#")[1].split(";")[0])
    assert later > row.index
    assert f"same output as #{later}" in session.messages[row.index]["content"]


# --- the protected regions --------------------------------------------------------------


def test_head_is_system_plus_protect_first() -> None:
    msgs = convo()
    assert head_end(msgs, protect_first=3) == 4
    assert head_end(msgs, protect_first=0) == 1
    assert (
        head_end(
            [{"role": "system", "content": "a"}, {"role": "developer", "content": "b"}],
            protect_first=3,
        )
        == 2
    )
    # Only the leading system messages come on top of protect_first: a later
    # one is one of the protected messages, as it is for align.
    later = [
        {"role": "system", "content": "a"},
        {"role": "user", "content": "b"},
        {"role": "developer", "content": "c"},
        {"role": "assistant", "content": "d"},
    ]
    assert head_end(later, protect_first=2) == 3


def test_prune_and_align_protect_the_same_head(counter: TokenCounter) -> None:
    transcript = formats.read(TAU_BENCH.read_bytes(), path=str(TAU_BENCH))
    budget = Budget(protect_first=1)
    for session in transcript.sessions[:20]:
        pruned = prune_messages(
            session.messages, counter=counter, settings=PruneSettings(budget=budget)
        )
        plan = plan_boundaries(session.messages, counter=counter, budget=budget)
        assert pruned.head_end == plan.head_end == 2


def test_tail_budget_and_protect_last(counter: TokenCounter) -> None:
    big = "word " * 400
    msgs = convo(call("c1", "Bash", {"command": "ls"}), result("c1", big), tail=6)
    n = len(msgs)
    assert (
        prune_bounds(msgs, counter=counter, budget=Budget(tail_tokens=0, protect_last=6))[1]
        == n - 6
    )
    # a budget that holds the big output too keeps it in the tail
    whole = counter.messages(msgs[5:])
    assert (
        prune_bounds(msgs, counter=counter, budget=Budget(tail_tokens=whole, protect_last=2))[1]
        == 5
    )
    assert prune(msgs, counter, tail_tokens=whole, protect_last=2).rows == []
    # never reaches into the head
    assert prune_bounds(msgs, counter=counter, budget=Budget(tail_tokens=0, protect_last=n))[1] == 4


def test_old_long_output_becomes_one_liner(counter: TokenCounter) -> None:
    log = "\n".join(f"tests/test_{i}.py::test_ok PASSED" for i in range(40))
    log += "\nFAILED tests/test_x.py::test_y - AssertionError\n1 failed, 40 passed in 2.1s"
    msgs = convo(
        call("c1", "Bash", {"command": "pytest -x tests/"}),
        result("c1", "Exit code 1\n" + log),
        {"role": "assistant", "content": "One test fails."},
    )
    res = prune(msgs, counter)
    assert [(r.index, r.action) for r in res.rows] == [(5, SUMMARIZE)]
    text = res.messages[5]["content"]
    assert text.startswith(f"{PRUNED_PREFIX} Bash `pytest -x tests/` → exit 1; output was 42 lines")
    assert '"1 failed, 40 passed in 2.1s"' in text
    assert res.rows[0].reason == f"old output, {len('Exit code 1' + chr(10) + log):,} chars"
    assert res.messages[5]["tool_call_id"] == "c1" and res.messages[5]["role"] == "tool"
    for i, msg in enumerate(msgs):
        if i != 5:
            assert res.messages[i] is msg


def test_short_outputs_stay(counter: TokenCounter) -> None:
    msgs = convo(call("c1", "Bash", {"command": "pwd"}), result("c1", "/repo\n" * 30))
    assert len(msgs[5]["content"]) <= 200
    res = prune(msgs, counter)
    assert res.rows == [] and not res.applied
    assert all(a is b for a, b in zip(res.messages, msgs, strict=True))


# --- duplicates ---------------------------------------------------------------------------


def test_identical_outputs_keep_only_the_latest(counter: TokenCounter) -> None:
    listing = "\n".join(f"-rw-r--r-- 1 dev dev {i * 37} file_{i}.py" for i in range(30))
    msgs = convo(
        call("c1", "Bash", {"command": "ls -l"}),
        result("c1", listing),
        call("c2", "Bash", {"command": "ls -l src"}),
        result("c2", listing),
    )
    msgs += [
        call("c3", "Bash", {"command": "ls -l ."}),
        result("c3", listing),
        {"role": "user", "content": "ok"},
    ]
    res = prune(msgs, counter, protect_last=3)
    by_index = {r.index: r for r in res.rows}
    assert by_index[5].action == DEDUPE and by_index[7].action == DEDUPE
    assert res.messages[5]["content"].startswith(f"{PRUNED_PREFIX} duplicate: same output as #13")
    assert by_index[5].reason == "same output as #13"
    assert res.messages[13] is msgs[13]  # the copy in the tail stays verbatim


# --- superseded outputs ---------------------------------------------------------------------


def test_file_read_then_edited_then_read_again(counter: TokenCounter) -> None:
    msgs = convo(
        call("r1", "Read", {"file_path": "/repo/app.py"}),
        result("r1", file_view(60)),
        call("e1", "Edit", {"file_path": "/repo/app.py", "old_string": "a", "new_string": "b"}),
        result("e1", "The file /repo/app.py has been updated."),
        call("r2", "Read", {"file_path": "/repo/app.py"}),
        result("r2", file_view(61)),
    )
    res = prune(msgs, counter, protect_last=1)
    rows = {r.index: r for r in res.rows}
    assert rows[5].reason == "superseded by #7 (/repo/app.py changed)"
    assert "superseded" not in rows[9].reason  # the latest read is only old


def test_small_read_is_pruned_only_when_superseded(counter: TokenCounter) -> None:
    small = file_view(4)
    assert len(small) < 200
    msgs = convo(
        call("r1", "Read", {"file_path": "/repo/a.py"}),
        result("r1", small),
        call("r2", "Read", {"file_path": "/repo/b.py"}),
        result("r2", small + " "),
        call("r3", "Read", {"file_path": "/repo/a.py"}),
        result("r3", small),
    )
    res = prune(msgs, counter, protect_last=2)
    assert [(r.index, r.reason) for r in res.rows] == [
        (5, "superseded by #9 (/repo/a.py read again)")
    ]
    assert res.messages[5]["content"].startswith(f"{PRUNED_PREFIX} Read /repo/a.py → lines 1-4")


def test_partial_reads_of_other_ranges_do_not_supersede(counter: TokenCounter) -> None:
    msgs = convo(
        call("r1", "Read", {"file_path": "/repo/a.py", "offset": 1, "limit": 4}),
        result("r1", file_view(4)),
        call("r2", "Read", {"file_path": "/repo/a.py", "offset": 5, "limit": 4}),
        result("r2", file_view(4, start=5)),
    )
    assert prune(msgs, counter, protect_last=2).rows == []


def test_rerun_pytest_supersedes_the_older_run(counter: TokenCounter) -> None:
    first = "\n".join(f"test_{i} PASSED" for i in range(20)) + "\n1 failed, 19 passed"
    second = "\n".join(f"test_{i} PASSED" for i in range(20)) + "\n20 passed"
    msgs = convo(
        call("p1", "exec_command", {"cmd": "pytest", "workdir": "/repo"}),
        result("p1", "Process exited with code 1\nOutput:\n" + first),
        call("p2", "exec_command", {"cmd": "pytest  2>&1 | tail -30", "workdir": "/repo"}),
        result("p2", "Process exited with code 0\nOutput:\n" + second),
    )
    res = prune(msgs, counter, protect_last=1)
    rows = {r.index: r for r in res.rows}
    assert rows[5].reason == "superseded by #7 (`pytest` run again)"
    assert "exit 1" in res.messages[5]["content"]
    assert rows[7].reason.startswith("old output")


def test_git_status_in_another_directory_is_not_a_rerun(counter: TokenCounter) -> None:
    status = "On branch main\nnothing to commit, working tree clean"
    msgs = convo(
        call("g1", "exec_command", {"cmd": "git status", "workdir": "/a"}),
        result("g1", status),
        call("g2", "exec_command", {"cmd": "git status", "workdir": "/b"}),
        result("g2", status),
    )
    assert prune(msgs, counter, protect_last=1).rows == []


# --- tool-call arguments ---------------------------------------------------------------------


def test_huge_arguments_shrink_to_valid_json_with_unicode_kept(counter: TokenCounter) -> None:
    content = "Grüße aus Köln — " + "ü" * 983
    args: dict[str, Any] = {
        "file_path": "/repo/notes.md",
        "content": content,
        "meta": {"tags": ["x" * 300, "short"], "depth": {"text": "日本語" * 100}},
        "count": 2**70,
    }
    raw = json.dumps(args, ensure_ascii=False)
    msgs = convo(
        {
            "role": "assistant",
            "content": "writing",
            "tool_calls": [
                {"id": "w1", "type": "function", "function": {"name": "Write", "arguments": raw}}
            ],
        },
        result("w1", "ok"),
    )
    res = prune(msgs, counter, protect_last=1)
    assert [(r.index, r.action, r.tool) for r in res.rows] == [(4, SHRINK, "Write")]
    new = m.call_arguments(res.messages[4]["tool_calls"][0])
    value = json.loads(new)
    assert value["file_path"] == "/repo/notes.md" and value["count"] == 2**70
    assert value["content"] == content[:200] + mark(800)
    assert value["content"].endswith("…[ctxpack: 800 more chars]")
    assert value["meta"]["tags"] == ["x" * 200 + mark(100), "short"]
    assert value["meta"]["depth"]["text"] == "日本語" * 66 + "日本" + mark(100)
    assert "Grüße" in new and "\\u" not in new
    assert res.messages[4]["tool_calls"][0]["id"] == "w1"
    assert shrink_arguments(new) is None  # a second pass leaves it alone


# --- the minimum-savings gate and the result ---------------------------------------------------


def test_min_savings_gate_leaves_everything_as_it_was(counter: TokenCounter) -> None:
    msgs = convo(call("c1", "Bash", {"command": "env"}), result("c1", "X=1\n" * 200))
    planned = prune(msgs, counter).planned_saved
    assert planned > 0
    res = prune(msgs, counter, min_savings=planned + 1)
    assert not res.applied and res.saved == 0 and res.tokens_after == res.tokens_before
    assert res.planned_saved == planned and len(res.rows) == 1
    assert f"would free {planned:,} tokens" in res.note
    assert all(a is b for a, b in zip(res.messages, msgs, strict=True))
    assert prune(msgs, counter, min_savings=planned).applied


def test_result_to_dict_keys(counter: TokenCounter) -> None:
    msgs = convo(call("c1", "Bash", {"command": "env"}), result("c1", "X=1\n" * 200))
    data = prune(msgs, counter).to_dict()
    assert list(data) == [
        "applied", "note", "messages", "head_end", "tail_start", "tokens_before",
        "tokens_after", "saved", "planned_saved", "actions", "rows",
    ]  # fmt: skip
    assert data["actions"] == {DEDUPE: 0, SUMMARIZE: 1, SHRINK: 0}
    assert list(data["rows"][0]) == [
        "index", "role", "tool", "action", "reason", "tokens_before", "tokens_after", "saved",
    ]  # fmt: skip
    json.dumps(data)


def test_unchanged_sessions_keep_their_identity(tau: Transcript, counter: TokenCounter) -> None:
    pruned, results = prune_transcript(tau, counter=counter, settings=PruneSettings())
    assert all(not r.applied for r in results)
    assert all(a is b for a, b in zip(tau.sessions, pruned.sessions, strict=True))
    assert formats.write(pruned, counter=COUNTER) == TAU_BENCH.read_bytes()


# --- a session left unchanged says why ---------------------------------------------


def test_tau_bench_left_unchanged_by_default_because_every_session_is_protected(
    tau: Transcript, counter: TokenCounter
) -> None:
    _, results = prune_transcript(tau, counter=counter, settings=PruneSettings())
    assert {r.note for r in results} == {
        "every message is in the protected head or tail (a tail budget of 20,000 tokens and"
        " at least the last 20 messages; --tail-tokens and --protect-last set them)"
    }
    assert not any(r.rows or r.applied for r in results)


def test_pruning_twice_says_the_outputs_are_pruned_already(
    counter: TokenCounter, tau_pruned: tuple[Transcript, list[PruneResult]]
) -> None:
    once, _ = tau_pruned
    _, results = prune_transcript(once, counter=counter, settings=SMALL)
    notes = {r.note for r in results}
    assert "every tool output between the protected head and tail is pruned already" in notes


@pytest.mark.parametrize(
    ("middle", "note"),
    [
        (
            [{"role": "user", "content": "Why?"}, {"role": "assistant", "content": "Because."}],
            "no tool output between the protected head and tail",
        ),
        (
            [call("c1", "bash", {"command": "ls"}), result("c1", "a.py\nb.py")],
            "no tool output between the protected head and tail is over 200 characters,"
            " repeated or superseded, and no tool-call arguments are over 500",
        ),
        (
            [call("c1", "bash", {"command": "ls"}), result("c1", "a" * 201)],
            "no placeholder would be shorter than the output it replaces",
        ),
    ],
)
def test_a_session_pruning_leaves_unchanged_says_why(
    middle: list[Message], note: str, counter: TokenCounter
) -> None:
    res = prune(convo(*middle), counter)
    assert (res.rows, res.applied, res.note) == ([], False, note)
