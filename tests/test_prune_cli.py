"""`ctxpack prune` on the command line: the plan, the written transcript, and
the promise that a transcript with nothing to prune comes out byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from ctxpack import formats
from ctxpack.align.budget import Budget
from ctxpack.cli import app
from ctxpack.prune.stage import PruneSettings, prune_transcript, totals
from ctxpack.tokens.counter import TokenCounter
from tests.conftest import TAU_BENCH

runner = CliRunner()
SMALL = ["--tail-tokens", "500", "--protect-last", "4"]


def test_dry_run_json_totals_match_what_prune_saves(tmp_path: Path, counter: TokenCounter) -> None:
    plan_run = runner.invoke(app, ["prune", str(TAU_BENCH), "--dry-run", "--json", *SMALL])
    assert plan_run.exit_code == 0, plan_run.output
    plan = json.loads(plan_run.stdout)
    assert plan["dry_run"] is True and plan["format"] == "openai" and plan["sessions"] == 200
    assert plan["saved"] > 0 and plan["saved"] == plan["tokens_before"] - plan["tokens_after"]
    assert plan["saved"] == sum(r["saved"] for r in plan["results"])
    assert plan["messages_changed"] == sum(len(r["rows"]) for r in plan["results"])
    assert list(tmp_path.iterdir()) == []

    out = tmp_path / "pruned.json"
    run = runner.invoke(app, ["prune", str(TAU_BENCH), "-o", str(out), *SMALL])
    assert run.exit_code == 0, run.output
    written = formats.read(out.read_bytes(), path=str(out))
    after = sum(counter.messages(s.messages) for s in written.sessions)
    assert after == plan["tokens_after"]
    assert plan["tokens_before"] - after == plan["saved"]
    summary = (
        f"tokens {plan['tokens_before']:,} → {plan['tokens_after']:,}, saved {plan['saved']:,}"
    )
    assert summary in " ".join(run.stderr.split())

    # the library agrees with both
    transcript = formats.read(TAU_BENCH.read_bytes(), path=str(TAU_BENCH))
    settings = PruneSettings(budget=Budget(tail_tokens=500, protect_last=4))
    _, results = prune_transcript(transcript, counter=counter, settings=settings)
    assert totals(results)["saved"] == plan["saved"]
    assert [r.to_dict() for r in results] == [
        {k: v for k, v in r.items() if k != "label"} for r in plan["results"]
    ]


def test_dry_run_prints_the_plan_table_on_stderr_only(tmp_path: Path) -> None:
    run = runner.invoke(app, ["prune", str(TAU_BENCH), "--dry-run", *SMALL])
    assert run.exit_code == 0, run.output
    assert run.stdout == ""
    err = run.stderr
    assert "summarize-output" in err and "get_user_details" in err and "→" in err
    assert "more rows (see --json)" in err
    assert "plan:" in err and "saved" in err


def test_nothing_to_prune_is_byte_identical(tmp_path: Path) -> None:
    out = tmp_path / "same.json"
    run = runner.invoke(app, ["prune", str(TAU_BENCH), "-o", str(out)])
    assert run.exit_code == 0, run.output
    assert out.read_bytes() == TAU_BENCH.read_bytes()


def test_jsonl_with_big_integers_and_escapes_is_byte_identical(tmp_path: Path) -> None:
    lines = [
        b'{"role":"system","content":"You help.","seed":1180591620717411303424}',
        b'{"role": "user", "content": "line\\u2028separator \\u00e9 \\ud83d\\ude00"}',
        b'{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",'
        b'"function":{"name":"Bash","arguments":"{\\"command\\":\\"ls\\"}"}}]}',
        b'{"role":"tool","tool_call_id":"c1","content":"a.py\\nb.py","n":'
        + str(2**70).encode()
        + b"}",
        b'{"role":"assistant","content":"Two files."}',
    ]
    src = tmp_path / "s.jsonl"
    src.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "out.jsonl"
    run = runner.invoke(
        app, ["prune", str(src), "-o", str(out), "--protect-last", "0", "--tail-tokens", "0"]
    )
    assert run.exit_code == 0, run.output
    assert out.read_bytes() == src.read_bytes()


def test_jsonl_prune_rewrites_only_the_changed_line(tmp_path: Path) -> None:
    big = "\n".join(f"line {i}: " + "x" * 40 for i in range(30))
    msgs = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "Bash", "arguments": '{"command": "cat log"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": big},
        {"role": "assistant", "content": "done", "big": 2**70},
    ]
    raw = [json.dumps(x).encode() for x in msgs]
    src = tmp_path / "s.jsonl"
    src.write_bytes(b"\n".join(raw) + b"\n")
    out = tmp_path / "out.jsonl"
    run = runner.invoke(
        app,
        [
            "prune",
            str(src),
            "-o",
            str(out),
            "--protect-first",
            "1",
            "--protect-last",
            "1",
            "--tail-tokens",
            "0",
        ],
    )
    assert run.exit_code == 0, run.output
    new = out.read_bytes().split(b"\n")
    assert new[:3] == raw[:3] and new[4] == raw[4]
    line = json.loads(new[3])
    assert line["tool_call_id"] == "c1" and line["content"].startswith(
        "[ctxpack pruned] Bash `cat log`"
    )


def test_json_without_dry_run_writes_only_with_output(tmp_path: Path) -> None:
    run = runner.invoke(app, ["prune", str(TAU_BENCH), "--json", *SMALL])
    assert run.exit_code == 0, run.output
    plan = json.loads(run.stdout)
    assert plan["dry_run"] is False and plan["saved"] > 0
    out = tmp_path / "p.json"
    run = runner.invoke(app, ["prune", str(TAU_BENCH), "--json", "-o", str(out), *SMALL])
    assert run.exit_code == 0, run.output
    assert json.loads(run.stdout)["saved"] == plan["saved"]
    assert out.read_bytes() != TAU_BENCH.read_bytes()
    run = runner.invoke(app, ["prune", str(TAU_BENCH), "--json", "-o", "-"])
    assert run.exit_code == 2


def test_min_savings_leaves_the_file_unchanged(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    args = ["prune", str(TAU_BENCH), "-o", str(out), *SMALL, "--min-savings", "100000", "--json"]
    run = runner.invoke(app, args)
    assert run.exit_code == 0, run.output
    plan = json.loads(run.stdout)
    assert plan["saved"] == 0 and plan["planned_saved"] > 0 and plan["applied"] is False
    assert any("under the minimum of 100,000" in r["note"] for r in plan["results"])
    assert out.read_bytes() == TAU_BENCH.read_bytes()
    assert "left unchanged (under --min-savings)" in " ".join(run.stderr.split())


def test_stdin_to_stdout(tmp_path: Path) -> None:
    data = TAU_BENCH.read_bytes()
    run = runner.invoke(app, ["prune", "-", *SMALL], input=data)
    assert run.exit_code == 0, run.output
    assert run.stdout_bytes != data
    back = formats.read(run.stdout_bytes, path="-")
    assert len(back.sessions) == 200


def test_bad_budget_value_is_a_usage_error() -> None:
    assert runner.invoke(app, ["prune", str(TAU_BENCH), "--threshold", "1.5"]).exit_code == 2
    assert runner.invoke(app, ["prune", str(TAU_BENCH), "--protect-last", "-1"]).exit_code == 2


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    run = runner.invoke(app, ["prune", str(tmp_path / "nope.jsonl"), "--dry-run"])
    assert run.exit_code == 1
    assert "no such file" in run.stderr
