"""Recall through the library: the --recall wording, redaction of what recall
returns, origins, archives written before origins were recorded, and the
full-text index as derived data."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxpack import formats, markers
from ctxpack import messages as m
from ctxpack.archive import db
from ctxpack.archive.fts import expression, lines_of
from ctxpack.archive.recall import UNKNOWN, Recall
from ctxpack.cli import app
from ctxpack.errors import UsageError
from ctxpack.refs import sha256_hex
from tests.conftest import FIXTURES

runner = CliRunner()
SOURCE = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"
SECRET = "sk-live-9f8e7d6c5b4a39281706f5e4d3c2b1a0"
LOG = "".join(f"step {i}: compiled module_{i} in {i * 7} ms\n" for i in range(40))


def _session(path: Path) -> Path:
    """A small OpenAI session whose one old tool output holds a secret."""
    calls = [{"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{}"}}]
    lines = [
        {"role": "system", "content": "You are a build agent."},
        {"role": "user", "content": "Build the project and tell me what failed."},
        {"role": "assistant", "content": "", "tool_calls": calls},
        {"role": "tool", "tool_call_id": "c1", "content": f"OPENAI_API_KEY={SECRET}\n{LOG}"},
        *(
            {"role": role, "content": f"turn {i}: " + "more detail " * 20}
            for i, role in zip(range(8), ["assistant", "user"] * 4, strict=True)
        ),
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


# Protect little, so that the small session has old output to prune.
SMALL = ("--protect-first", "1", "--protect-last", "2", "--tail-tokens", "60")


def _compress(source: Path, out: Path, archive: Path, *extra: str, small: bool = True) -> None:
    args = ["compress", "--force", "--offline", *(SMALL if small else ())]
    done = runner.invoke(
        app, [*args, *extra, str(source), "-o", str(out), "--archive", str(archive)]
    )
    assert done.exit_code == 0, done.output


def _texts(path: Path) -> list[str]:
    transcript = formats.read(path.read_bytes(), path=str(path))
    return [m.text(msg) for session in transcript.sessions for msg in session.messages]


def test_recall_wording_in_placeholders_and_the_record_prefix(tmp_path: Path) -> None:
    plain, recalled = tmp_path / "plain.jsonl", tmp_path / "recall.jsonl"
    _compress(SOURCE, plain, tmp_path / "a.db", small=False)
    _compress(SOURCE, recalled, tmp_path / "a.db", "--recall", small=False)
    plain_text = plain.read_text()
    assert "recall(" not in plain_text and markers.RECALL_NOTE not in plain_text
    assert "; full: ctxpack:" in plain_text
    pruned = [t for t in _texts(recalled) if t.startswith("[ctxpack pruned]")]
    assert pruned
    assert all("; full text: recall('ctxpack:" in t and "; full: " not in t for t in pruned)
    record = next(t for t in _texts(recalled) if markers.SUMMARY_END in t)
    assert markers.summary_prefix(recall=True) + "\n\n" in record
    assert "Source turns: recall('ctxpack:" in record
    with Recall.open(tmp_path / "a.db") as store:
        [entry, _] = store.compactions(session=SOURCE.stem)
    summarized = [b for b in entry["blobs"] if b["kind"] == "summarized turns"]
    assert len(summarized) == 1 and 0 < summarized[0]["message"] < summarized[0]["end"]
    # The same refs either way: only the wording differs.
    assert sorted(json.dumps(t) for t in _texts(plain) if "[ctxpack pruned]" in t) == sorted(
        json.dumps(t.replace("full text: recall('", "full: ").replace("')", "")) for t in pruned
    )


def test_recall_from_the_config_file_and_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _session(tmp_path / "s.jsonl")
    _compress(source, tmp_path / "flag.jsonl", tmp_path / "a.db", "--recall", "--prune-only")
    (tmp_path / "ctxpack.toml").write_text("recall = true\n")
    monkeypatch.chdir(tmp_path)
    _compress(source, tmp_path / "file.jsonl", tmp_path / "a.db", "--prune-only")
    (tmp_path / "ctxpack.toml").unlink()
    monkeypatch.setenv("CTXPACK_RECALL", "1")
    _compress(source, tmp_path / "env.jsonl", tmp_path / "a.db", "--prune-only")
    flag = (tmp_path / "flag.jsonl").read_bytes()
    assert b"full text: recall('ctxpack:" in flag
    assert (tmp_path / "file.jsonl").read_bytes() == flag == (tmp_path / "env.jsonl").read_bytes()
    monkeypatch.setenv("CTXPACK_RECALL", "maybe")
    bad = runner.invoke(app, ["prune", str(source), "-o", str(tmp_path / "x.jsonl")])
    assert bad.exit_code == 2 and "Invalid value for '--recall'" in bad.output


def test_prune_recall_and_no_archive(tmp_path: Path) -> None:
    source = _session(tmp_path / "s.jsonl")
    args = ["prune", *SMALL, str(source)]
    done = runner.invoke(app, [*args, "--recall", "-o", str(tmp_path / "p.jsonl")])
    assert done.exit_code == 0, done.output
    [pruned] = [t for t in _texts(tmp_path / "p.jsonl") if t.startswith("[ctxpack pruned]")]
    assert pruned.endswith("')") and "full text: recall('ctxpack:" in pruned
    refused = runner.invoke(app, [*args, "--recall", "--no-archive", "-o", str(tmp_path / "q")])
    assert refused.exit_code == 2 and "--no-archive" in refused.output
    assert not (tmp_path / "q").exists()


def test_an_update_keeps_one_recall_note(tmp_path: Path) -> None:
    once, twice = tmp_path / "once.jsonl", tmp_path / "twice.jsonl"
    _compress(SOURCE, once, tmp_path / "a.db", "--recall")
    done = runner.invoke(
        app,
        [
            "update",
            "--offline",
            "--recall",
            str(once),
            "-o",
            str(twice),
            "--archive",
            str(tmp_path / "a.db"),
        ],
    )
    assert done.exit_code == 0, done.output
    [record] = [t for t in _texts(twice) if markers.SUMMARY_END in t]
    assert record.count(markers.RECALL_NOTE) == 1


def test_redacted_compactions_are_recalled_and_searched_masked(tmp_path: Path) -> None:
    source, out, archive = _session(tmp_path / "s.jsonl"), tmp_path / "o.jsonl", tmp_path / "a.db"
    _compress(source, out, archive, "--redact", "--recall", "--prune-only")
    [placeholder] = [t for t in _texts(out) if t.startswith("[ctxpack pruned]")]
    ref = placeholder.rsplit("recall('", 1)[1].rstrip("')")
    with Recall.open(archive) as store:
        page = store.page(ref=ref)
        [hit] = store.search(query="OPENAI_API_KEY")
        raw = store.get_blob(ref).decode()
    assert SECRET in raw  # the archive keeps the original: restore needs it
    assert page.redacted and SECRET not in page.text and "[REDACTED:" in page.text
    assert page.text.endswith(LOG) and "masked" in page.header()
    assert hit.ref == ref and hit.line == 1 and SECRET not in hit.snippet
    with Recall.open(archive) as store:
        assert store.search(query=SECRET.replace("-", " ")) == []


def test_origins_and_paging_through_the_library(tmp_path: Path) -> None:
    source, out, archive = _session(tmp_path / "s.jsonl"), tmp_path / "o.jsonl", tmp_path / "a.db"
    _compress(source, out, archive, "--prune-only")
    ref = next(t for t in _texts(out) if "[ctxpack pruned]" in t).rsplit("full: ", 1)[1]
    with Recall.open(archive) as store:
        first = store.page(ref=ref, max_lines=10)
        rest = store.page(ref=ref, start_line=11, max_lines=1000)
        [entry] = store.compactions(session=source.name)
    assert (first.start_line, first.end_line, first.total_lines) == (1, 10, 41)
    assert first.next_start_line == 11 and rest.next_start_line is None
    assert first.text + rest.text == f"OPENAI_API_KEY={SECRET}\n{LOG}"
    [source_of] = first.sources
    assert source_of.kind == "tool output" and source_of.source_path == str(source)
    assert source_of.origin is not None
    assert (source_of.origin.message, source_of.origin.tool, source_of.origin.role) == (
        3,
        "shell",
        "tool",
    )
    [blob] = entry["blobs"]
    assert blob["ref"] == ref and blob["kind"] == "tool output" and blob["call"] == "shell"


def test_an_archive_from_before_origins_still_opens_and_recalls(tmp_path: Path) -> None:
    """Schema 1, as an earlier ctxpack wrote it: no origins, no index."""
    path, text = tmp_path / "old.db", "collected 3 items\ntest_login.py::test_redirect FAILED\n"
    conn = sqlite3.connect(path, isolation_level=None)
    db.MIGRATIONS[0](conn)
    conn.execute("PRAGMA user_version = 1")
    shas = {}
    for name, data in (("in", b"before"), ("blob", text.encode())):
        shas[name] = sha256_hex(data)
        conn.execute("INSERT INTO blobs VALUES (?, 'raw', ?, 0, ?)", (shas[name], len(data), data))
    conn.execute(
        "INSERT INTO compactions VALUES ('c1', 0, 'old.jsonl', ?, 6, ?, 5, '{}', '{}')",
        (shas["in"], sha256_hex(b"after")),
    )
    conn.execute("INSERT INTO compaction_blobs VALUES ('c1', 0, ?)", (shas["blob"],))
    conn.close()
    with Recall.open(path) as store:
        page = store.page(ref=shas["blob"][:10])
        [hit] = store.search(query="test_login")
        [entry] = store.compactions(session="old")
        assert store.check() == []
        assert db.schema_version(store._conn) == db.SCHEMA_VERSION
    assert page.text == text and page.sources[0].kind == UNKNOWN
    assert (hit.ref, hit.line, hit.snippet) == (page.ref, 2, "test_login.py::test_redirect FAILED")
    assert entry["blobs"] == [{"ref": page.ref, "size": len(text), "kind": UNKNOWN}]


def test_the_index_is_derived_data_gc_drops_and_search_rebuilds(tmp_path: Path) -> None:
    source, archive = _session(tmp_path / "s.jsonl"), tmp_path / "a.db"
    _compress(source, tmp_path / "o.jsonl", archive, "--prune-only")
    with Recall.open(archive) as store:
        assert store.search(query="module_17")
        assert store.index().blobs == 0  # nothing new since
        assert store.gc(timedelta(0)) == 1
        assert store.search(query="module_17") == []
    _compress(source, tmp_path / "o.jsonl", archive, "--prune-only")
    with Recall.open(archive) as store:
        [hit] = store.search(query="module_17")
    assert lines_of(LOG)[hit.line - 2].startswith("step 17:")


@pytest.mark.parametrize(
    ("query", "match"),
    [
        ("test_login", '"test_login"'),
        ('"exit code" pytest*', '"exit code" AND "pytest"*'),
        ('src/app.py: line "3"', '"src/app.py:" AND "line" AND "3"'),
    ],
)
def test_queries_are_words_never_fts_syntax(query: str, match: str) -> None:
    assert expression(query)[0] == match


def test_an_empty_query_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="nothing to search for"):
        expression(' " * ')
