"""A middle too small for any record stays verbatim without a record being
written: where even the bare template, with more room than any record the
offline summarizer renders can take less, leaves the session no smaller,
the summarizer is not run. The outputs are the same as when it is."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from ctxpack import formats
from ctxpack.align.budget import Budget
from ctxpack.pipeline import summarizing
from ctxpack.pipeline.compaction import CompressSettings, compress_messages
from ctxpack.summarize.protocol import HEADINGS
from ctxpack.summarize.template import below_skeleton, render
from ctxpack.tokens.counter import TokenCounter, stretches
from ctxpack.tokens.encodings import ENCODINGS, get_encoding
from ctxpack.transcript import Message
from tests.conftest import FIXTURES

KEPT = "summary would not be smaller than the turns it replaces; kept them"


def _sessions() -> list[list[Message]]:
    found = []
    for path in sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix != ".md"):
        transcript = formats.read(path.read_bytes(), path=str(path))
        found.extend(session.messages for session in transcript.sessions[:3])
    return found


def _run(messages: list[Message], window: int) -> tuple[bytes, list[str], str]:
    settings = CompressSettings(budget=Budget(context_length=window), force=True)
    out, report = compress_messages(messages, counter=TokenCounter(), settings=settings)
    return b"\n".join(map(orjson.dumps, out)), report.warnings, report.status.value


def test_the_template_check_changes_no_output(monkeypatch: pytest.MonkeyPatch) -> None:
    sessions = _sessions()
    cases = [
        (messages[:end], window)
        for messages in sessions
        for end in range(6, min(len(messages), 60) + 1, 6)
        for window in (200_000, 16_000)
    ]
    summarized: list[int] = []
    real_summary = summarizing.run_summary

    def counted(*args: Any, **kwargs: Any) -> Any:
        summarized.append(1)
        return real_summary(*args, **kwargs)

    monkeypatch.setattr(summarizing, "run_summary", counted)
    checked = [_run(messages, window) for messages, window in cases]
    with_check = len(summarized)
    # Never short of room: every middle is summarized, then kept if no smaller.
    monkeypatch.setattr(summarizing, "_below_skeleton", lambda encoding: 10**9)
    summarized.clear()
    assert [_run(messages, window) for messages, window in cases] == checked
    kept = sum(KEPT in warnings for _, warnings, _ in checked)
    compacted = sum(status == "compacted" for _, _, status in checked)
    # Not a vacuous comparison: the check spared summaries, and some middles
    # were compacted, some kept after a record was written.
    assert len(summarized) - with_check >= 20
    assert kept > len(summarized) - with_check and compacted >= 20


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_a_rendered_record_takes_at_most_so_many_tokens_fewer_than_the_template(
    name: str,
) -> None:
    count = TokenCounter(encoding=name).text
    bare = f"{render({})}\n\nSource turns: ctxpack:192e99cc8f"
    assert all(heading[-1].isalpha() for heading in HEADINGS)
    # The one-token bodies no item can go below, and items that start as no
    # record's item does: the bound holds for them all, and is loose by the
    # newline after each heading, which it does not count.
    excess = []
    for body in ("-", "1", "x", "- ok", "/", " -", "(+3 more)", "é", "中"):
        record = render({heading: [body] for heading in HEADINGS})
        full = f"{record}\n\nSource turns: ctxpack:192e99cc8f"
        excess.append(count(full) - (count(bare) - below_skeleton(count)))
    assert min(excess) == len(HEADINGS)
    encoding = get_encoding(name)
    skeleton = render({})
    assert sum(len(encoding.encode_ordinary(part)) for part in stretches(skeleton)) == len(
        encoding.encode_ordinary(skeleton)
    )
