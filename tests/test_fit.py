"""`--fit N` / `--fit P%`: the whole written transcript, counted exactly with
the encoding `count` uses, is at or under the budget, or the run fails with
the smallest size it could reach and writes nothing. Tool pairs stay whole and
the latest user message stays verbatim, on every real transcript."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ctxpack import formats, markers, toolpairs
from ctxpack import messages as m
from ctxpack.align.boundaries import latest_user_index
from ctxpack.cli import app
from ctxpack.errors import BudgetError, UsageError
from ctxpack.fit.solve import fit_transcript
from ctxpack.fit.target import FitTarget
from ctxpack.formats.base import ReadOptions
from ctxpack.pipeline.compaction import CompressSettings
from ctxpack.pipeline.run import FALLBACK_FORMAT, output_format, read_transcript
from ctxpack.settings import resolve
from ctxpack.summarize.template import left_out
from ctxpack.tokens.tally import count_transcript
from ctxpack.transcript import Transcript
from tests.conftest import COUNTER, FIXTURES, SHARED, TAU_BENCH
from tests.test_user_ledger import ROUNDS, planted, turns

runner = CliRunner()
BUNDLED = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.name != "PROVENANCE.md")
# The shared transcripts that are not bundled copies (the pi-mono session has
# a malformed line: it is read with --skip-invalid).
EXTRA = ("atif", "gemini", "pi-agent")
SHARED_SAMPLE = (
    sorted(p for d in EXTRA for p in (SHARED / d).glob("*") if p.is_file())
    if SHARED.is_dir()
    else []
)
SMALL = FIXTURES / "opencode" / "opencode-1.18.33__stub-numbers.json"
PI = FIXTURES / "pi" / "pi-0.73.1__stub-tally.jsonl"
CODEX = FIXTURES / "codex" / "codex-cli-0.171__stub-tally.jsonl"


def read(path: Path) -> Transcript:
    return read_transcript(str(path), fmt=None, options=ReadOptions(skip_invalid=True))


def written_tokens(result: Transcript, source: Transcript) -> int:
    """What `ctxpack count` says of the file the run would write."""
    fmt, _ = output_format(source.format, None)
    data = formats.write(result, counter=COUNTER, fmt=fmt)
    again = formats.read(data, path="out", fmt=fmt, options=ReadOptions(skip_invalid=True))
    return count_transcript(again, counter=COUNTER).total.tokens


def assert_whole(source: Transcript, result: Transcript) -> None:
    for before, after in zip(source.sessions, result.sessions, strict=True):
        # No result without its call; a call is unanswered only where the input's was.
        results, calls = toolpairs.orphans(after.messages)
        pending = {use.call_id for use in toolpairs.orphans(before.messages)[1]}
        assert results == [] and {use.call_id for use in calls} <= pending
        index = latest_user_index(before.messages)
        if index is not None:
            ask = m.text(before.messages[index]).strip()
            assert any(ask in m.text(msg) for msg in after.messages), ask[:80]


def fit(path: Path, spec: str, *, best_effort: bool = False) -> tuple[Transcript, Transcript]:
    source = read(path)
    settings = CompressSettings(fit=FitTarget.parse(spec), fit_best_effort=best_effort)
    result, report = fit_transcript(source, counter=COUNTER, settings=settings)
    assert report.fit is not None
    return source, result


@pytest.mark.parametrize("spec", ["20%", "4000"])
@pytest.mark.parametrize(
    "path", [*BUNDLED, *SHARED_SAMPLE], ids=lambda p: f"{p.parent.name}/{p.name[:40]}"
)
def test_every_real_transcript_fits_or_names_the_smallest_size(path: Path, spec: str) -> None:
    source = read(path)
    budget = FitTarget.parse(spec).budget(count_transcript(source, counter=COUNTER).total.tokens)  # type: ignore[union-attr]
    try:
        _, result = fit(path, spec)
    except BudgetError as exc:
        assert exc.smallest > budget
        assert f"is {exc.smallest:,} tokens" in exc.message
        assert "nothing was written" in exc.message and "--fit-best-effort" in exc.message
        return
    assert written_tokens(result, source) <= budget
    assert_whole(source, result)


def test_best_effort_writes_the_smallest_output_and_says_so() -> None:
    with pytest.raises(BudgetError) as refused:
        fit(CODEX, "20%")
    assert refused.value.exit_code == 2
    source = read(CODEX)
    result, report = fit_transcript(
        source,
        counter=COUNTER,
        settings=CompressSettings(fit=FitTarget(percent=20), fit_best_effort=True),
    )
    assert report.fit is not None and not report.fit.met and report.fit.best_effort
    smallest = report.fit.smallest
    assert f"is {smallest:,} tokens" in refused.value.message
    assert written_tokens(result, source) == smallest == report.after.tokens
    assert any(
        "--fit-best-effort wrote the smallest output" in w for w in report.sessions[0].warnings
    )
    assert_whole(source, result)


def test_an_input_within_the_budget_is_left_as_it_is() -> None:
    source, result = fit(SMALL, "4000")
    assert result.sessions[0].messages is source.sessions[0].messages


# ---- through the CLI ---------------------------------------------------------


def test_compress_fit_through_the_cli_writes_at_most_the_budget(tmp_path: Path) -> None:
    out, report = tmp_path / "out.jsonl", tmp_path / "report.json"
    args = ["compress", "--fit", "20%", "--no-archive", str(PI), "-o", str(out)]
    result = runner.invoke(app, [*args, "--report", str(report)])
    assert result.exit_code == 0, result.output
    counted = runner.invoke(app, ["count", "--json", str(out)])
    tokens = json.loads(counted.stdout)["total"]["tokens"]
    document = json.loads(report.read_text())
    assert tokens <= document["fit"]["budget"] == 3964 * 20 // 100
    assert document["fit"]["tokens_after"] == tokens == document["tokens_after"]
    assert document["fit"]["met"] is True
    assert sum(document["fit"]["spent"].values()) == tokens
    assert "fit budget" in result.stderr and "fit spent" in result.stderr


@pytest.mark.parametrize(
    ("path", "spec"),
    [
        (PI, "20%"),
        (SMALL, "20%"),
        (FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl", "20%"),
        # Sessions whose record rides in their first tail message.
        (TAU_BENCH, "60%"),
    ],
)
def test_the_dry_run_plan_totals_the_tokens_of_the_written_output(
    path: Path, spec: str, tmp_path: Path
) -> None:
    plan = runner.invoke(app, ["compress", "--fit", spec, "--dry-run", "--json", str(path)])
    assert plan.exit_code == 0, plan.output
    document = json.loads(plan.stdout)
    rows = document["rows"]
    # Every input message has one row, and the record one more.
    total_messages = sum(len(s.messages) for s in read(path).sessions)
    assert len([r for r in rows if r["index"] is not None]) == total_messages
    assert {r["action"] for r in rows} <= {
        "keep",
        "one-liner",
        "shrink-args",
        "summarize",
        "drop",
        "record",
    }
    assert all(r["reason"] for r in rows)
    # A tail message that carries the record counts as itself; the record row has the rest.
    riding = [r for r in rows if r["reason"] == "verbatim; the record rides in it"]
    assert bool(riding) == (path == TAU_BENCH)
    out = tmp_path / "out.jsonl"
    written = runner.invoke(
        app, ["compress", "--fit", spec, "--no-archive", str(path), "-o", str(out)]
    )
    assert written.exit_code == 0, written.output
    counted = json.loads(runner.invoke(app, ["count", "--json", str(out)]).stdout)["total"][
        "tokens"
    ]
    assert document["total"] == document["tokens_after"] == counted <= document["budget"]
    assert sum(r["tokens_after"] for r in rows) == counted
    # The record's row counts the items its "(+N more)" lines say it had no room for.
    records = [r for r in rows if r["action"] == "record"]
    bodies = [
        markers.summary_body(msg)
        for session in read(out).sessions
        for msg in session.messages
        if markers.is_summary(msg)
    ]
    assert len(records) == len(bodies)
    for record, body in zip(records, bodies, strict=True):
        unshown = sum(left_out(body).values())
        said = f"; {unshown} item(s) it had no room for"
        assert record["reason"].endswith(said) if unshown else "room" not in record["reason"]
    assert any(left_out(body) for body in bodies)


def test_the_dry_run_table_goes_to_stderr_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, ["compress", "--fit", "800", "--dry-run", str(PI), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout == "" and not out.exists()
    assert "one-liner" in result.stderr and "within the budget of 800" in result.stderr


def test_an_unreachable_budget_fails_with_the_smallest_size_and_writes_nothing(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out.jsonl"
    result = runner.invoke(
        app, ["compress", "--fit", "4000", "--no-archive", str(CODEX), "-o", str(out)]
    )
    assert result.exit_code == 2
    assert "smallest output" in result.stderr and "nothing was written" in result.stderr
    assert not out.exists()
    best = runner.invoke(
        app,
        [
            "compress",
            "--fit",
            "4000",
            "--fit-best-effort",
            "--no-archive",
            str(CODEX),
            "-o",
            str(out),
        ],
    )
    assert best.exit_code == 0, best.output
    assert "--fit-best-effort wrote the smallest output" in best.stderr and out.exists()


def test_summarize_takes_fit_too(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    result = runner.invoke(
        app, ["summarize", "--offline", "--fit", "25%", "--no-archive", str(PI), "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    counted = json.loads(runner.invoke(app, ["count", "--json", str(out)]).stdout)["total"][
        "tokens"
    ]
    assert counted <= 3964 * 25 // 100


@pytest.mark.parametrize("value", ["0", "100%", "0%", "2.5%", "abc", "-5"])
def test_fit_must_be_tokens_or_a_percentage(value: str) -> None:
    result = runner.invoke(app, ["compress", "--fit", value, str(PI)])
    assert result.exit_code == 2
    assert "fit must be a positive number of tokens or a percentage from 1% to 99%" in result.stderr
    with pytest.raises(UsageError):
        resolve({"fit": (value, "flag")}, config_file=None)


def test_fit_comes_from_the_config_file_like_any_setting(tmp_path: Path) -> None:
    config = tmp_path / "ctxpack.toml"
    config.write_text('fit = "20%"\nfit_best_effort = true\n')
    shown = runner.invoke(app, ["config", "--json", "--config", str(config)])
    settings = json.loads(shown.stdout)["settings"]
    assert settings["fit"] == {"value": "20%", "source": f"file {config}"}
    assert settings["fit_best_effort"]["value"] is True
    plan = runner.invoke(app, ["compress", "--config", str(config), "--dry-run", "--json", str(PI)])
    assert json.loads(plan.stdout)["target"] == "20%"


def test_dry_run_needs_fit() -> None:
    result = runner.invoke(app, ["compress", "--dry-run", str(PI)])
    assert result.exit_code == 2 and "--dry-run prints the plan of --fit" in result.stderr


# ---- the user's words survive round after round --------------------------------


def test_five_rounds_at_a_fifth_keep_the_planted_statements(tmp_path: Path) -> None:
    messages = [{"role": "system", "content": "You are a coding agent."}]
    for round_number in range(len(ROUNDS)):
        source = tmp_path / f"round{round_number}.jsonl"
        source.write_text(
            "".join(json.dumps(msg) + "\n" for msg in [*messages, *turns(round_number)])
        )
        before = json.loads(runner.invoke(app, ["count", "--json", str(source)]).stdout)["total"][
            "tokens"
        ]
        out = tmp_path / f"out{round_number}.jsonl"
        args = [
            "compress",
            "--fit",
            "20%",
            "--offline",
            "--no-archive",
            str(source),
            "-o",
            str(out),
        ]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        after = json.loads(runner.invoke(app, ["count", "--json", str(out)]).stdout)["total"][
            "tokens"
        ]
        assert after <= before * 20 // 100
        messages = [json.loads(line) for line in out.read_text().splitlines()]
        text = "\n".join(m.text(msg) for msg in messages)
        keys = planted(round_number)
        kept = [key for key in keys if key in text]
        assert len(kept) / len(keys) >= 0.9, sorted(set(keys) - set(kept))


# ---- --force under the threshold compacts for real -----------------------------


@pytest.mark.parametrize(
    "path",
    [
        FIXTURES
        / "swe-agent"
        / "SWE-agent__function_calling__install-1__marshmallow-code__marshmallow-1867.traj",
        FIXTURES / "openhands" / "OpenHands__tests__runtime__trajs__basic_gui_mode.json",
    ],
    ids=["swe-agent-7k", "openhands-3.5k"],
)
def test_force_compacts_a_small_session_with_default_settings(path: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    args = [
        "compress",
        "--force",
        "--offline",
        "--no-archive",
        str(path),
        "-o",
        str(tmp_path / "o"),
    ]
    result = runner.invoke(app, [*args, "--report", str(report)])
    assert result.exit_code == 0, result.output
    document = json.loads(report.read_text())
    assert document["sessions"][0]["status"] == "compacted"
    assert document["ratio"] < 0.6
    assert "the tail keeps" in " ".join(document["sessions"][0]["notes"])


# ---- an invariant -------------------------------------------------------------


@settings(max_examples=20, deadline=None)
@given(budget=st.integers(min_value=1, max_value=2500))
def test_any_budget_is_met_or_refused_and_never_breaks_a_tool_pair(budget: int) -> None:
    source = read(SMALL)
    settings_ = CompressSettings(fit=FitTarget(tokens=budget))
    try:
        result, report = fit_transcript(source, counter=COUNTER, settings=settings_)
    except BudgetError as exc:
        assert "smallest output" in exc.message
        return
    assert report.fit is not None
    assert written_tokens(result, source) == report.fit.tokens_after <= budget
    assert_whole(source, result)


def test_the_fallback_format_is_counted_as_written() -> None:
    # A read-only format is written as openai: the budget holds for that file.
    path = (
        FIXTURES
        / "swe-agent"
        / "SWE-agent__function_calling__install-1__marshmallow-code__marshmallow-1867.traj"
    )
    source, result = fit(path, "4000")
    assert output_format(source.format, None)[0] == FALLBACK_FORMAT
    assert written_tokens(result, source) <= 4000
