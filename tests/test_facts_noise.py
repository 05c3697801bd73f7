"""What the record and its Preserved Facts must not hold: archive refs listed as
IDs, long scripts pasted whole, failures called unresolved that the kept
turns fixed, a masked command twice, facts of calls that never ran."""

from __future__ import annotations

from pathlib import Path

import orjson

from ctxpack import formats, markers
from ctxpack.align.boundaries import plan_boundaries
from ctxpack.align.budget import Budget
from ctxpack.evaluate.retention import evaluate
from ctxpack.facts.extract import extract_facts, ran_only
from ctxpack.facts.preserved import preserved_facts_section
from ctxpack.facts.text import command_fact, identifiers_in
from ctxpack.pipeline.compaction import CompressSettings, compress_messages
from ctxpack.pipeline.request import prepare_request
from ctxpack.prune.stage import PruneSettings, prune_messages
from ctxpack.summarize.offline.summarizer import OfflineSummarizer
from ctxpack.summarize.protocol import SummaryRequest
from ctxpack.tokens.counter import TokenCounter
from tests.conftest import FIXTURES

DEMO = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"


def _messages(path: Path) -> list[dict[str, object]]:
    return formats.read(path.read_bytes(), path=str(path)).sessions[0].messages


def _record(messages: list[dict[str, object]], counter: TokenCounter) -> str:
    out, _ = compress_messages(messages, counter=counter, settings=CompressSettings(force=True))
    return next(markers.summary_body(msg) for msg in out if markers.is_summary(msg))


def test_archive_refs_are_never_identifiers() -> None:
    assert identifiers_in("full: ctxpack:04c3c52212") == []
    assert identifiers_in("ctxpack:04c3c52212 and commit 9fceb02d0a") == ["9fceb02d0a"]
    assert identifiers_in("04c3c52212") == ["04c3c52212"]
    # The build of a version is part of the version; a range's second commit is a commit.
    assert identifiers_in("workspace @google/gemini-cli@0.36.0-nightly.20260317.2f90b4653") == []
    assert identifiers_in("git diff 9fceb02d0a..04c3c52212") == ["9fceb02d0a", "04c3c52212"]


def test_demo_record_lists_no_archive_ref_as_an_id(counter: TokenCounter) -> None:
    record = _record(_messages(DEMO), counter)
    ids = [line for line in record.splitlines() if line.startswith("- ID:")]
    # Pruned outputs in the middle name their archived text (ctxpack:<hex>):
    # no section lists those as IDs.
    assert ids == []


def test_demo_long_heredoc_is_named_not_pasted(counter: TokenCounter) -> None:
    record = _record(_messages(DEMO), counter)
    assert "Ran `python3 << 'EXPAND_EOF'` (a 50-line script)" in record
    # The script's body is in the archive, not in the record.
    assert "test_cases = [" not in record
    assert "EXPAND_EOF\n```" not in record


def test_a_script_is_known_by_its_first_line() -> None:
    script = "python3 << 'EOF'\n" + "print('a long line of the script body')\n" * 5 + "EOF"
    assert command_fact(script) == "python3 << 'EOF'"
    assert command_fact("cd /app\nls") == "cd /app\nls"
    assert command_fact("pytest -q") == "pytest -q"


def _demo_parts(counter: TokenCounter) -> tuple[SummaryRequest, list[dict[str, object]]]:
    messages = _messages(DEMO)
    settings = CompressSettings(force=True)
    pruned = prune_messages(messages, counter=counter, settings=PruneSettings()).messages
    plan = plan_boundaries(pruned, counter=counter, budget=settings.budget)
    prepared = prepare_request(pruned, plan=plan, counter=counter, settings=settings)
    return prepared.request, prepared.tail


def test_blocked_considers_the_kept_tail(counter: TokenCounter) -> None:
    request, tail = _demo_parts(counter)
    assert tail and request.tail == tail
    summarizer = OfflineSummarizer()
    alone = SummaryRequest(middle=request.middle, budget_tokens=request.budget_tokens)
    without_tail = summarizer.summarize(alone, counter=counter).text
    with_tail = summarizer.summarize(request, counter=counter).text
    # Alone, the middle's failed write to /app looks unresolved; the kept tail
    # writes testgen_tests.py again and runs it.
    blocked = "- Created /app/testgen_tests.py — failed, EACCES: permission denied"
    assert blocked in without_tail.split("## Blocked", 1)[1].split("##", 1)[0]
    assert with_tail.split("## Blocked", 1)[1].split("##", 1)[0].strip() == "- None recorded."


def _call(call_id: str, command: str) -> dict[str, object]:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": "bash",
                    "arguments": orjson.dumps({"command": command}).decode(),
                },
            }
        ],
    }


def _result(call_id: str, text: str) -> dict[str, object]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


KEY_A = "sk-abcdefghijklmnopqrstuvwxyz123456"
KEY_B = "sk-zyxwvutsrqponmlkjihgfedcba654321"


def test_masked_command_is_listed_once(counter: TokenCounter) -> None:
    middle = [
        _call("a", f"OPENAI_API_KEY={KEY_A} ./deploy.sh"),
        _result("a", "ok"),
        _call("b", f"OPENAI_API_KEY={KEY_B} ./deploy.sh"),
        _result("b", "ok"),
    ]
    section = preserved_facts_section(middle, "", counter=counter, cap_tokens=500).text
    assert section.count("- Command:") == 1
    assert "- Command: `OPENAI_API_KEY=[REDACTED:openai-key] ./deploy.sh`" in section
    # A record that names the command masked already holds it.
    named = "Ran `OPENAI_API_KEY=[REDACTED:openai-key] ./deploy.sh` — ok"
    assert preserved_facts_section(middle, named, counter=counter, cap_tokens=500).text == ""


def test_a_call_with_no_result_holds_no_facts(counter: TokenCounter) -> None:
    messages = [
        {"role": "user", "content": "deploy it"},
        _call("a", "make build"),
        _result("a", "Error: missing target 'build'"),
        _call("b", "make deploy"),
    ]
    facts = extract_facts(ran_only(messages))
    assert facts.commands == ["make build"]
    assert facts.errors == ["Error: missing target 'build'"]
    report = evaluate(messages, messages[:1], counter=counter)
    assert report.category("commands").found == ["make build"]


def test_a_pruned_digest_is_no_error_fact() -> None:
    digest = (
        "[ctxpack pruned] Bash `pytest` → exit 1; output was 93 lines; full: ctxpack:04c3c52212"
    )
    assert extract_facts([_call("a", "pytest"), _result("a", digest)]).errors == []


def test_pooled_retention_on_the_bundled_transcripts(counter: TokenCounter) -> None:
    """bench/retention.py's pooled row: `compress --offline --force
    --context-length 32000` on every fixture, then eval's region facts."""
    from bench.retention import CONTEXT_LENGTH, pooled, transcripts

    report = pooled(transcripts([FIXTURES]), counter=counter, context_length=CONTEXT_LENGTH)
    assert report.retention("paths") >= 0.60
    assert report.retention("commands") >= 0.95
    # A pruned output's digest quotes its last error line and names its ids,
    # and the record's action line carries that error: 5 of 7 errors, 2 of 2
    # ids. The two missed are assertion lines a later FAILED line followed.
    assert report.kept("errors") >= 5 and report.found("errors") == 7
    assert report.retention("errors") >= 0.60
    assert report.kept("identifiers") == 2 and report.found("identifiers") == 2
    assert report.found("commands") >= 20
    # What replaced the region (record, one-liners, the system note) over the
    # region's own tokens, pooled by sum.
    assert report.region_ratio <= 0.30


def test_the_record_names_a_pruned_runs_last_error(counter: TokenCounter) -> None:
    """The failing pytest run's output is pruned before the summary reads it;
    its action line still says which test failed last."""
    settings = CompressSettings(budget=Budget(context_length=32_000), force=True)
    out, _ = compress_messages(_messages(DEMO), counter=counter, settings=settings)
    record = next(markers.summary_body(msg) for msg in out if markers.is_summary(msg))
    line = next(
        x for x in record.splitlines() if "`python -m pytest testgen_tests.py -v --tb=no`" in x
    )
    assert line.endswith(
        "— exit 1, 2 failed, 80 passed, FAILED testgen_tests.py::TestDateIPv4Regex::"
        "test_integration_multiple_valid_dates_with_ipv4 [tool: Bash]"
    )
    assert "[ctxpack pruned]" not in line
