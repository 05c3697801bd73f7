"""`ctxpack align`: the plan per session on stderr or as JSON, with token
counts that agree with `ctxpack count`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxpack import formats
from ctxpack.align.plan import plans_from_json
from ctxpack.cli import app
from ctxpack.formats.base import ReadOptions
from ctxpack.markers import SUMMARY_END, SUMMARY_PREFIX
from ctxpack.tokens.counter import TokenCounter
from tests.conftest import TAU_BENCH, TOOLBENCH

runner = CliRunner()


@pytest.mark.parametrize("path", [TAU_BENCH, TOOLBENCH], ids=lambda p: p.name)
def test_json_regions_add_up_to_count(path: Path, no_network: None) -> None:
    counted = runner.invoke(app, ["count", str(path), "--json"])
    assert counted.exit_code == 0, counted.output
    sessions = json.loads(counted.stdout)["sessions"]
    result = runner.invoke(app, ["align", str(path), "--json", "--tail-tokens", "800"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["format"] == "openai" and report["budget"]["tail_budget"] == 800
    plans = report["sessions"]
    assert len(plans) == len(sessions)
    for plan, count in zip(plans, sessions, strict=True):
        assert plan["session"] == count["session"]
        assert plan["total_messages"] == count["messages"]
        assert plan["tokens_head"] + plan["tokens_middle"] + plan["tokens_tail"] == count["tokens"]
        assert (
            plan["messages_head"] + plan["messages_middle"] + plan["messages_tail"]
            == (count["messages"])
        )
    # The JSON plan is what `summarize --plan` reads back.
    transcript = formats.read(path.read_bytes(), path=str(path), options=ReadOptions())
    loaded = plans_from_json(report, sessions=[s.messages for s in transcript.sessions])
    assert [p.tail_start for p in loaded] == [p["tail_start"] for p in plans]


def test_tau_bench_tails_stop_at_the_soft_ceiling(counter: TokenCounter) -> None:
    result = runner.invoke(app, ["align", str(TAU_BENCH), "--json", "--tail-tokens", "800"])
    plans = json.loads(result.stdout)["sessions"]
    transcript = formats.read(TAU_BENCH.read_bytes(), path=str(TAU_BENCH), options=ReadOptions())
    walked = 0
    for plan, session in zip(plans, transcript.sessions, strict=True):
        assert plan["soft_ceiling"] in (800, 1200)
        if not plan["compressible"]:
            assert plan["note"].startswith("nothing to compress")
            continue
        if plan["adjustments"]:
            continue
        # Untouched by any rule: the walk stopped right before the message that
        # would have passed 1.5 x 800 tokens.
        before = counter.message(session.messages[plan["tail_start"] - 1])
        assert plan["tokens_tail"] <= 1200 < plan["tokens_tail"] + before
        walked += 1
    assert walked > 100


def test_toolbench_is_too_short_to_compress() -> None:
    result = runner.invoke(app, ["align", str(TOOLBENCH), "--json"])
    (plan,) = json.loads(result.stdout)["sessions"]
    assert plan["compressible"] is False and plan["messages_middle"] == 0
    assert plan["note"].startswith("nothing to compress: 4 message(s) after the head")


def test_table_on_stderr_names_regions_budget_and_adjustments(tmp_path: Path) -> None:
    lines = [{"role": "system", "content": "Be brief."}]
    lines.append({"role": "user", "content": "fix the build"})
    lines.append({"role": "assistant", "content": "On it."})
    for n in range(6):
        lines.append({"role": "user", "content": f"step {n}: " + "words " * 30})
        lines.append({"role": "assistant", "content": f"did step {n}"})
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = runner.invoke(app, ["align", str(path), "--tail-tokens", "100"])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    err = result.stderr
    for needle in ("head", "middle", "tail", "#0-#3", "tail budget 100 tokens", "soft ceiling"):
        assert needle in err, needle
    assert "compress " in err


def test_existing_summary_shown_and_reported(tmp_path: Path) -> None:
    summary = f"{SUMMARY_PREFIX}\n\n## Goal\nship\n\n{SUMMARY_END}"
    lines = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": summary}]
    for n in range(5):
        lines += [{"role": "user", "content": f"u{n}"}, {"role": "assistant", "content": f"a{n}"}]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = runner.invoke(app, ["align", str(path), "--json"])
    (plan,) = json.loads(result.stdout)["sessions"]
    assert (plan["previous_summary_index"], plan["head_end"]) == (1, 1)
    shown = runner.invoke(app, ["align", str(path)])
    assert "existing summary at #1" in shown.stderr


def test_usage_errors_exit_2() -> None:
    result = runner.invoke(app, ["align", str(TOOLBENCH), "--encoding", "nope"])
    assert result.exit_code == 2
    assert "unknown encoding" in result.stderr


def test_help_documents_json_shape() -> None:
    result = runner.invoke(app, ["align", "--help"])
    assert result.exit_code == 0
    assert '"sessions"' in result.stdout and "summarize --plan" in result.stdout
