"""`ctxpack.evaluate`: which facts of the compacted turns survive, the checks,
the --min-retention gate; and every real fixture compacted offline, measured."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxpack import formats, markers
from ctxpack.align.boundaries import plan_boundaries
from ctxpack.align.budget import Budget
from ctxpack.errors import UsageError
from ctxpack.evaluate.checks import MessageSet, message_key, visible_texts
from ctxpack.evaluate.gate import gate, parse_min_retention
from ctxpack.evaluate.retention import (
    CATEGORIES,
    EvalReport,
    combine,
    evaluate,
    evaluate_transcripts,
    retention_summary,
)
from ctxpack.facts.extract import extract_facts, ran_only
from ctxpack.facts.match import Haystack
from ctxpack.formats.base import ReadOptions
from ctxpack.pipeline.compaction import CompressSettings, compress_transcript
from ctxpack.pipeline.request import prepare_request
from ctxpack.prune.stage import PruneSettings, prune_messages
from ctxpack.redact import mask
from ctxpack.report import CompressReport
from ctxpack.summarize.protocol import HEADINGS
from ctxpack.tokens.counter import TokenCounter
from ctxpack.toolpairs import pair
from ctxpack.transcript import Message, Transcript
from tests.builders import call, result
from tests.conftest import COUNTER, FIXTURES, SHARED, TAU_BENCH

HAIKU = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"
CODEX = FIXTURES / "codex" / "Trezo-Ai__codex-session.jsonl"
STREAM = (
    FIXTURES
    / "claude-stream-json"
    / "openagents__logs__20251222_175115-call-issue-ready-now-to.jsonl"
)
SHAREGPT = FIXTURES / "sharegpt" / "LLaMA-Factory__data__glaive_toolcall_en_demo.json"
MARSHMALLOW = (
    FIXTURES
    / "swe-agent"
    / "SWE-agent__function_calling__install-1__marshmallow-code__marshmallow-1867.traj"
)
ALL_FIXTURES = sorted(p for p in FIXTURES.glob("*/*") if p.suffix != ".md")


def read(path: Path) -> Transcript:
    return formats.read(path.read_bytes(), path=str(path))


def summary(body: str, *, role: str = "user") -> Message:
    return {"role": role, "content": f"{markers.SUMMARY_PREFIX}\n\n{body}\n\n{markers.SUMMARY_END}"}


def template(extra: str = "") -> str:
    return "\n\n".join(f"## {h}\n- None recorded." for h in HEADINGS) + extra


def check(report: EvalReport, name: str) -> tuple[bool, str]:
    found = [c for c in report.checks if c.name == name]
    assert len(found) == 1
    return found[0].passed, found[0].detail


# ---- extractors on fixture text (what tests/test_facts.py does not cover) ----


def test_money_stops_before_a_clause_comma() -> None:
    # tau-bench: "To help fit within your budget of $1,000, you might consider ..."
    values = extract_facts(read(TAU_BENCH).sessions[67].messages).values
    assert "$1,000" in values
    assert not [v for v in values if v.endswith(",")]


def test_initials_are_not_file_names() -> None:
    # ShareGPT: "Can you also find books by George R.R. Martin?"
    conversation = read(SHAREGPT).sessions[133].messages
    assert "R.R" not in extract_facts(conversation).paths
    everything = [m for s in read(SHAREGPT).sessions for m in s.messages]
    paths = extract_facts(everything).paths
    assert "license_plate.py" in paths and "data.json" in paths


def test_commit_shas_from_git_output_but_not_chunk_ids_or_hex_words() -> None:
    # stream-json: "[main ed8cf8873] Implement CLI commands ..."
    assert "ed8cf8873" in extract_facts(read(STREAM).sessions[0].messages).identifiers
    # marshmallow: "index 20da768..ad388c7 100644" in the submitted diff
    ids = extract_facts(read(MARSHMALLOW).sessions[0].messages).identifiers
    assert sorted(ids) == ["20da768", "ad388c7"]
    # Codex wrapper lines carry 6-digit chunk ids ("Chunk ID: 4067f7"): too short.
    codex = extract_facts(read(CODEX).sessions[0].messages).identifiers
    assert codex == ["019daa66-5b7b-7b01-b9ce-b527014cc09f"]
    text = "badcafe and deadbeef are words; 3f2a9c1 is a commit; so is " + "ab12" * 10
    assert extract_facts([{"role": "user", "content": text}]).identifiers == [
        "3f2a9c1",
        "ab12" * 10,
    ]


def test_error_lines_from_tau_tool_outputs() -> None:
    errors = extract_facts(read(TAU_BENCH).sessions[0].messages).errors
    assert errors and all(e.startswith("Error: ") for e in errors)


def test_windows_paths_in_arguments_survive_json_escaping(counter: TokenCounter) -> None:
    path = r"C:\Users\dev\My Project\app.py"
    command = r"Get-Content 'C:\Program Files\Acme\log.txt' | Select-Object -First 5"
    original = [
        {"role": "user", "content": "Fix the crash."},
        call("c1", "Read", {"file_path": path}),
        result("c1", "print('hi')"),
        call("c2", "PowerShell", {"command": command}),
        result("c2", "ok"),
        {"role": "user", "content": "Thanks, go on."},
    ]
    facts = extract_facts(original)
    assert facts.paths == [path, r"C:\Program Files\Acme\log.txt"]
    assert facts.commands == [command]
    # The compacted transcript has them only inside (JSON-escaped) tool-call arguments.
    kept = [original[0], call("x", "Read", {"file_path": path}), result("x", "")]
    kept += [call("y", "PowerShell", {"command": command}), result("y", ""), original[5]]
    report = evaluate(original, kept, counter=counter)
    assert report.category("paths").missing == []
    assert report.category("commands").missing == []


def test_long_heredoc_is_kept_when_the_summary_names_it(
    counter: TokenCounter,
) -> None:
    messages = read(HAIKU).sessions[0].messages
    heredoc = messages[3]  # python3 << 'EXPAND_EOF' ... (a 50-line script)
    assert extract_facts([heredoc]).commands == ["python3 << 'EXPAND_EOF'"]
    region = [messages[0], heredoc, messages[4]]
    whole = evaluate(region, [messages[0], heredoc, messages[4]], counter=counter)
    assert whole.region_messages == 0 and whole.retention("commands", scope="transcript") == 1
    named = summary(template("\n\n1. Ran `python3 << 'EXPAND_EOF'` (a 50-line script) — ok"))
    assert evaluate(region, [messages[0], named], counter=counter).retention("commands") == 1.0
    other = summary(template("\n\n1. Ran `python3 << 'EOF'` (a 27-line script) — ok"))
    report = evaluate(region, [messages[0], other], counter=counter)
    assert report.category("commands").missing == ["python3 << 'EXPAND_EOF'"]


# ---- evaluate ---------------------------------------------------------------


def test_the_region_is_what_did_not_survive_unchanged(counter: TokenCounter) -> None:
    messages = read(CODEX).sessions[0].messages
    # Equal copies (not the same objects) still count as surviving.
    copies = json.loads(json.dumps(messages))
    report = evaluate(messages, copies, counter=counter)
    assert report.region_messages == 0
    assert all(r.found == [] for r in report.region)
    assert report.retention() == 1.0 and report.retention(scope="transcript") == 1.0
    assert all(c.passed for c in report.checks)
    assert report.ratio == 1.0
    changed = [*copies[:10], {**copies[10], "content": "[pruned]"}, *copies[11:]]
    report = evaluate(messages, changed, counter=counter)
    assert report.region_messages == 1
    assert report.tokens_after < report.tokens_before


def test_masked_secrets_count_as_kept(counter: TokenCounter) -> None:
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2"
    command = f"OPENAI_API_KEY={secret} python run.py"
    original = [
        {"role": "user", "content": "run it"},
        call("c1", "Bash", {"command": command}),
        result("c1", "done"),
        {"role": "user", "content": "thanks"},
    ]
    body = template(
        "\n\n## Preserved Facts\n- Command: `OPENAI_API_KEY=[REDACTED:openai-key] python run.py`"
    )
    report = evaluate(original, [original[0], summary(body), original[3]], counter=counter)
    assert report.category("commands").kept == [command]


def test_latest_user_message_kept_verbatim_or_quoted(counter: TokenCounter) -> None:
    ask = "Please rename the module.\nThen run the tests."
    original: list[Message] = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Start."},
        {"role": "assistant", "content": "Started."},
        {"role": "user", "content": ask},
        {"role": "assistant", "content": "Working on it."},
    ]
    quoted = "The user's latest request is still open:\n> " + ask.replace("\n", "\n> ")
    report = evaluate(original, [original[0], summary(template(quoted))], counter=counter)
    assert check(report, "latest_user_message_kept") == (True, "message #3 quoted verbatim")
    dropped = evaluate(original, [original[0], summary(template())], counter=counter)
    passed, detail = check(dropped, "latest_user_message_kept")
    assert not passed and "Please rename the module." in detail


def test_orphans_the_compaction_introduced_fail(counter: TokenCounter) -> None:
    original = [
        {"role": "user", "content": "go"},
        call("c1", "Bash", {"command": "ls"}),
        result("c1", "a.py"),
        {"role": "assistant", "content": "done"},
    ]
    broken = [original[0], summary(template(), role="assistant"), original[2], original[3]]
    passed, detail = check(evaluate(original, broken, counter=counter), "no_orphan_tool_pairs")
    assert not passed and detail.startswith("1 result(s) without a call")
    # An input that already ends on an unanswered call is not the compaction's fault.
    pending = [*original, call("c2", "Bash", {"command": "pwd"})]
    passed, detail = check(evaluate(pending, pending, counter=counter), "no_orphan_tool_pairs")
    assert passed and "(1 already in the original)" in detail


def test_summary_headings_and_prefix(counter: TokenCounter) -> None:
    original: list[Message] = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
    ]
    good = evaluate(original, [summary(template()), original[2]], counter=counter)
    assert check(good, "summary_headings")[0] and check(good, "reference_prefix")[0]
    assert good.summary_tokens > 0
    partial = template().replace("## Blocked\n", "Blocked\n")
    lacking = evaluate(original, [summary(partial), original[2]], counter=counter)
    assert check(lacking, "summary_headings") == (False, "missing: ## Blocked")
    bare = {"role": "user", "content": f"{template()}\n\n{markers.SUMMARY_END}"}
    unprefixed = evaluate(original, [bare, original[2]], counter=counter)
    assert check(unprefixed, "reference_prefix")[0] is False
    none = evaluate(original, original, counter=counter)
    assert check(none, "summary_headings") == (True, "no summary in the compacted transcript")


def test_sessions_pair_by_position(counter: TokenCounter) -> None:
    full = read(TAU_BENCH)
    tau = full.with_sessions(full.sessions[:6])
    reports = evaluate_transcripts(tau, tau, counter=counter)
    assert [r.label for r in reports[:2]] == [
        tau.sessions[0].label or "#0",
        tau.sessions[1].label or "#1",
    ]
    with pytest.raises(UsageError, match="sessions are compared by position"):
        evaluate_transcripts(tau, tau.with_sessions(tau.sessions[:3]), counter=counter)


def test_to_dict_and_retention_summary_keys(counter: TokenCounter) -> None:
    messages = read(CODEX).sessions[0].messages
    report = evaluate(messages, [messages[0], summary(template()), messages[-1]], counter=counter)
    data = report.to_dict()
    assert set(data) == {
        "session",
        "sessions",
        "messages_before",
        "messages_after",
        "region_messages",
        "region_tokens_before",
        "region_tokens_after",
        "region_ratio",
        "tokens_before",
        "tokens_after",
        "ratio",
        "summary_tokens",
        "retention",
        "checks",
        "checks_passed",
    }
    assert set(data["retention"]) == {"region", "transcript"}
    assert set(data["retention"]["region"]) == {*CATEGORIES, "overall"}
    paths = data["retention"]["region"]["paths"]
    assert set(paths) == {"found", "kept", "retention", "missing"}
    assert paths["found"] == paths["kept"] + len(paths["missing"]) > 0
    assert data["checks"][0] == {
        "name": "no_orphan_tool_pairs",
        "passed": True,
        # The last message ends the Codex session on four unanswered calls.
        "detail": "every call and result pairs up (4 already in the original)",
    }
    short = retention_summary(report)
    assert set(short) == {
        "region_messages",
        "region_tokens_before",
        "region_tokens_after",
        "region_ratio",
        "region",
        "transcript",
        "found",
        "missing",
        "failed_checks",
    }
    assert short["region"]["paths"] == paths["retention"]
    assert short["missing"]["paths"] == len(paths["missing"])
    json.dumps(data)
    json.dumps(short)


# ---- the gate ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.9", {"overall": 0.9}),
        ("90%", {"overall": 0.9}),
        ("paths=1,commands=0.9", {"paths": 1.0, "commands": 0.9}),
        (" Paths = 1.0 , overall=0.5", {"paths": 1.0, "overall": 0.5}),
    ],
)
def test_parse_min_retention(text: str, expected: dict[str, float]) -> None:
    assert parse_min_retention(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "needs a value"),
        ("abc", "'abc' is not a number"),
        ("90", "outside 0..1"),
        ("files=1", "unknown category 'files'"),
        ("paths=1,paths=0.5", "paths given twice"),
    ],
)
def test_parse_min_retention_rejects(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_min_retention(text)


def test_gate_judges_all_sessions_together_and_lists_failed_checks(
    counter: TokenCounter,
) -> None:
    original: list[Message] = [
        {"role": "user", "content": "Check " + ", ".join(f"src/m{i}.py" for i in range(10))},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "next"},
    ]
    kept = [summary(template("\n- " + " ".join(f"src/m{i}.py" for i in range(9)))), original[2]]
    one = evaluate(original, kept, counter=counter)
    assert (one.found("paths"), one.kept("paths")) == (10, 9)
    assert gate([one], {"paths": 0.9}) == []
    assert gate([one], {"paths": 0.91}) == ["paths retention 90.0% (9 of 10) is below 91.0%"]
    every = " ".join(f"src/m{i}.py" for i in range(10))
    full = evaluate(original, [summary(template(f"\n- {every}")), original[2]], counter=counter)
    assert full.retention() == 1.0
    assert gate([one, full], {"overall": 0.95}) == []  # 19 of 20
    assert gate([one, full], {"overall": 1.0}) == [
        "overall retention 95.0% (19 of 20) is below 100.0%"
    ]
    assert gate([one], {"urls": 1.0}) == []  # nothing found, nothing lost
    lost_ask = evaluate(original, [summary(template())], counter=counter)
    lost_ask.label = "#4"
    failures = gate([lost_ask], {})
    assert failures == [
        "#4: latest_user_message_kept failed: message #2 is not in the compacted text: 'next'"
    ]


# ---- every real fixture compacted offline ---------------------------------------


@pytest.fixture(scope="module")
def compacted() -> dict[str, tuple[Transcript, Transcript, CompressReport, list[EvalReport]]]:
    counter = TokenCounter()
    out = {}
    for path in ALL_FIXTURES:
        original = read(path)
        result, report = compress_transcript(
            original, counter=counter, settings=CompressSettings(force=True)
        )
        fmt = None if formats.get(original.format).writable else "openai"
        written = formats.read(formats.write(result, fmt=fmt, counter=COUNTER), path="compacted")
        out[path.name] = (
            original,
            written,
            report,
            evaluate_transcripts(original, written, counter=counter),
        )
    return out


FIXTURE_IDS = [p.name for p in ALL_FIXTURES]
# The pipeline loses these commands today; see the eval report to the lead.
COMMAND_LOSSES: dict[str, str] = {}


@pytest.mark.parametrize("name", FIXTURE_IDS)
def test_fixture_paths_fully_kept_and_checks_pass(compacted: dict[str, Any], name: str) -> None:
    _, _, _, reports = compacted[name]
    for report in reports:
        assert report.category("paths").missing == [], report.label
        assert report.failed_checks == [], report.label


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=COMMAND_LOSSES[n]))
        if n in COMMAND_LOSSES
        else n
        for n in FIXTURE_IDS
    ],
)
def test_fixture_commands_fully_kept(compacted: dict[str, Any], name: str) -> None:
    _, _, _, reports = compacted[name]
    for report in reports:
        assert report.category("commands").missing == [], report.label


def test_fixture_regions_are_measured(compacted: dict[str, Any]) -> None:
    """Where compaction happened, the region has facts and the numbers add up."""
    compacted_files = 0
    for name, (_, _, compress_report, reports) in compacted.items():
        for report, session in zip(reports, compress_report.sessions, strict=True):
            if session.status != "compacted":
                assert report.summary_tokens == 0, name
                continue
            compacted_files += 1
            assert report.region_messages > 0, name
            for row in report.region:
                assert len(row.kept) + len(row.missing) == len(row.found)
                assert report.found(row.name) <= report.found(row.name, scope="transcript")
            assert report.tokens_after == session.after.tokens, name
    assert compacted_files >= 5


def test_fixture_summaries_stay_within_budget(
    compacted: dict[str, Any], counter: TokenCounter
) -> None:
    budget = Budget()
    checked = 0
    for name, (original, _, compress_report, reports) in compacted.items():
        for session, report, summary_report in zip(
            original.sessions, reports, compress_report.sessions, strict=True
        ):
            if summary_report.status != "compacted":
                continue
            pruned = prune_messages(
                session.messages, counter=counter, settings=PruneSettings(budget=budget)
            ).messages
            plan = plan_boundaries(pruned, counter=counter, budget=budget)
            prepared = prepare_request(
                pruned, plan=plan, counter=counter, settings=CompressSettings(force=True)
            )
            # The record's budget, which holds any record it updates.
            limit = prepared.budget_tokens
            assert limit >= budget.summary_budget(counter.messages(prepared.middle)), name
            assert report.summary_tokens == summary_report.summary_tokens, name
            assert 0 < report.summary_tokens <= limit, name
            checked += 1
    assert checked >= 5


def test_cli_help_names_every_category() -> None:
    from ctxpack.evaluate.retention import CATEGORIES

    source = (Path(__file__).parent.parent / "ctxpack" / "cli" / "eval.py").read_text()
    assert all(name in source for name in CATEGORIES)


# ---- the region's token ratio ------------------------------------------------


def _compacted_at_32k(path: Path, counter: TokenCounter) -> tuple[list[Message], list[Message]]:
    settings = CompressSettings(budget=Budget(context_length=32_000), force=True)
    before = read(path)
    after, _ = compress_transcript(before, counter=counter, settings=settings)
    return before.sessions[0].messages, after.sessions[0].messages


def test_region_ratio_is_what_replaced_the_region_over_the_region(counter: TokenCounter) -> None:
    """The Codex session at a 32,000-token window: the region is every original
    message that did not come back verbatim; what replaced it is the record and
    the pruned outputs' one-liners. The system prompt came back with one note
    line: it is kept, and only the note counts."""
    before, after = _compacted_at_32k(CODEX, counter)
    report = evaluate(before, after, counter=counter)
    assert markers.has_system_note(after[0]) and not markers.has_system_note(before[0])
    kept = {id(msg) for msg in after}
    region = [msg for msg in before[1:] if id(msg) not in kept]
    stand_ins = [msg for msg in after[1:] if not any(msg == old for old in before)]
    note = counter.message(after[0]) - counter.message(before[0])
    assert report.region_messages == len(region) > 0
    assert report.region_tokens_before == counter.messages(region)
    assert report.region_tokens_after == counter.messages(stand_ins) + note
    assert sum(markers.is_summary(msg) for msg in stand_ins) == 1
    assert all(
        markers.is_summary(msg) or "[ctxpack pruned]" in json.dumps(msg) for msg in stand_ins
    )
    # The head and tail kept verbatim hide the region's ratio in the whole file's.
    assert report.region_ratio < 0.15 < 0.40 < report.ratio


def test_region_ratio_pools_by_sum(counter: TokenCounter) -> None:
    one = evaluate(*_compacted_at_32k(CODEX, counter), counter=counter)
    two = evaluate(*_compacted_at_32k(HAIKU, counter), counter=counter)
    both = combine([one, two])
    assert both.region_tokens_before == one.region_tokens_before + two.region_tokens_before
    assert both.region_tokens_after == one.region_tokens_after + two.region_tokens_after
    assert both.region_ratio == round(both.region_tokens_after / both.region_tokens_before, 4)


_CALLS = st.lists(
    st.fixed_dictionaries(
        {"id": st.sampled_from(["c1", "c2", 7]), "function": st.just({"name": "ls"})}
    ),
    max_size=2,
)
_MESSAGES = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "tool", 3]),
        "content": st.one_of(st.none(), st.sampled_from(["ab", "ba", "abc"]), st.just([])),
    },
    optional={"tool_calls": _CALLS, "tool_call_id": st.sampled_from(["c1", "c2"])},
)


@given(st.lists(_MESSAGES, max_size=6), st.lists(_MESSAGES, max_size=6))
def test_a_message_set_holds_what_an_equal_message_key_says(
    members: list[Message], others: list[Message]
) -> None:
    """Lengths, call counts and call ids collide on purpose: the set answers
    by the whole key, or by identity, never by its cheap digest alone."""
    held = MessageSet(members)
    keys = {message_key(msg) for msg in members}
    for msg in [*members, *others]:
        assert (msg in held) == (message_key(msg) in keys)


def _every_transcript() -> list[Path]:
    roots = [FIXTURES, *([SHARED] if SHARED.is_dir() else [])]
    return sorted(p for r in roots for p in r.rglob("*") if p.is_file() and p.suffix != ".md")


@pytest.mark.parametrize("path", _every_transcript(), ids=lambda p: p.name)
def test_every_fact_of_a_transcript_is_found_in_its_own_text(path: Path) -> None:
    # A fact is looked up as it was taken: one the check could not find in
    # the very text it came from ("4 hours" out of "3-4 hours") would read as
    # lost from a transcript nothing changed.
    transcript = formats.read(
        path.read_bytes(), path=str(path), options=ReadOptions(skip_invalid=True)
    )
    for session in transcript.sessions:
        messages = ran_only(session.messages, pairing=pair(session.messages))
        haystack = Haystack("\n".join(visible_texts(session.messages)))
        facts = extract_facts(messages)
        missing = [
            item
            for _, items in facts.categories()
            for item in items
            if not (haystack.mentions(item) or haystack.mentions(mask(item)))
        ]
        assert missing == []
