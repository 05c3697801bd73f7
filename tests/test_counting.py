"""`ctxpack count` of a large JSONL chat file, a stretch of lines per core:
what it counts, and every error, are those of the file read whole."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ctxpack import files, formats
from ctxpack.cli import app
from ctxpack.errors import InputError
from ctxpack.formats import HEAD_BYTES
from ctxpack.formats.base import BOM, ReadOptions
from ctxpack.pipeline import counting
from ctxpack.pipeline.counting import count_by_stretches
from ctxpack.pipeline.run import parse_transcript
from ctxpack.tokens.counter import TokenCounter
from ctxpack.tokens.tally import CountReport, count_transcript
from ctxpack.transcript import Message
from tests.conftest import TAU_BENCH

runner = CliRunner()
COUNTING = ReadOptions(keep_bytes=False)


def _tau_messages() -> list[Message]:
    runs = orjson.loads(TAU_BENCH.read_bytes())
    return [msg for run in runs for msg in run["traj"]]


def _jsonl(messages: list[Message]) -> bytes:
    return b"".join(orjson.dumps(msg) + b"\n" for msg in messages)


@pytest.fixture
def any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(counting, "STRETCHES_MIN_BYTES", 0)


def _whole(data: bytes, *, estimate: bool, options: ReadOptions = COUNTING) -> CountReport:
    transcript = parse_transcript(data, source="s.jsonl", fmt=None, options=options)
    return count_transcript(transcript, counter=TokenCounter(estimate=estimate, workers=1))


@pytest.mark.usefixtures("any_size")
@pytest.mark.parametrize("estimate", [False, True])
@pytest.mark.parametrize("workers", [2, 3, 8])
@pytest.mark.parametrize("piece", [counting.PIECE_BYTES, 20_000])
@pytest.mark.parametrize("mapped", [False, True], ids=["read", "mapped"])
def test_stretches_count_what_the_whole_file_counts(
    estimate: bool,
    workers: int,
    piece: int,
    mapped: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whether the file was read or mapped, and however many pieces each
    stretch is read in (the tau-bench file makes 4 MiB one piece a stretch,
    20 kB a hundred or more), the count is the whole reader's."""
    monkeypatch.setattr(counting, "PIECE_BYTES", piece)
    data = _jsonl(_tau_messages())
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    counter = TokenCounter(estimate=estimate, workers=workers)
    with files.mapped_input(str(path)) as view:
        assert view is not None
        source = view if mapped else data
        found = count_by_stretches(
            source, path="s.jsonl", fmt=None, options=COUNTING, counter=counter
        )
    whole = _whole(data, estimate=estimate)
    assert found is not None
    assert found.to_dict() == whole.to_dict()
    assert found.total.tokens == (696_053 if estimate else 717_600)
    # Roles in the order they first come, as the table lists equal ones.
    assert list(found.total.messages_by_role) == list(whole.total.messages_by_role)
    assert found.sessions[0][0] == whole.sessions[0][0] == "#0"


@pytest.mark.usefixtures("any_size")
def test_files_not_one_message_per_line_are_read_whole() -> None:
    messages = _tau_messages()[:40]
    counter = TokenCounter(workers=2)
    cases = {
        "a document": orjson.dumps(messages, option=orjson.OPT_INDENT_2),
        "an array on one line": orjson.dumps(messages),
        "records": b"".join(orjson.dumps({"traj": messages[i : i + 5]}) + b"\n" for i in (0, 5)),
        "no line at all": b"\n\n",
    }
    for label, data in cases.items():
        found = count_by_stretches(data, path="s", fmt=None, options=COUNTING, counter=counter)
        assert found is None, label
    data = _jsonl(messages)
    keyed = ReadOptions(keep_bytes=False, messages_key="traj")
    assert count_by_stretches(data, path="s", fmt=None, options=keyed, counter=counter) is None
    assert count_by_stretches(data, path="s", fmt="pi", options=COUNTING, counter=counter) is None
    one = TokenCounter(workers=1)
    assert count_by_stretches(data, path="s", fmt=None, options=COUNTING, counter=one) is None
    assert count_by_stretches(data, path="s", fmt="openai", options=COUNTING, counter=counter)


@pytest.mark.usefixtures("any_size")
def test_a_file_another_format_claims_by_a_late_line_is_read_whole() -> None:
    """The format is told from the clue words each stretch found: a Gemini
    turn past the head makes the file Gemini's, as the whole reader finds."""
    data = _jsonl(_tau_messages())
    late = _jsonl([{"role": "model", "parts": [{"text": "done"}]}])
    counter = TokenCounter(workers=2)
    assert len(data) > 2 * HEAD_BYTES
    assert formats.detect(data + late, path="s").name == "gemini"
    found = count_by_stretches(data + late, path="s", fmt=None, options=COUNTING, counter=counter)
    assert found is None
    # Its clue words alone tell nothing: counted by stretches.
    keys = _jsonl([{"role": "user", "content": "hi", "model": "m", "parts": 2}])
    assert b'"model"' in keys and b'"parts"' in keys
    found = count_by_stretches(
        data + keys, path="s.jsonl", fmt=None, options=COUNTING, counter=counter
    )
    assert found is not None
    assert found.to_dict() == _whole(data + keys, estimate=False).to_dict()


@pytest.mark.usefixtures("any_size")
def test_a_file_cut_short_while_it_is_counted_is_left_to_the_whole_reader(
    tmp_path: Path,
) -> None:
    """A log truncated by another process while it is counted: the children
    copy their pieces with pread, which answers with fewer bytes (touching the
    mapping's lost pages would end the process), and the whole reader then
    reads the file as it now is."""
    data = _jsonl(_tau_messages())
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    counter = TokenCounter(estimate=True, workers=2)
    with files.mapped_input(str(path)) as view:
        assert view is not None
        os.truncate(path, len(data) * 3 // 5)
        found = count_by_stretches(
            view, path=str(path), fmt=None, options=COUNTING, counter=counter
        )
    assert found is None
    result = runner.invoke(app, ["count", "--estimate", str(path)])
    assert result.exit_code == 1
    assert "(the last line looks truncated)" in result.stderr


def test_a_small_file_is_read_whole() -> None:
    data = _jsonl(_tau_messages()[:40])
    assert len(data) < counting.STRETCHES_MIN_BYTES
    counter = TokenCounter(workers=2)
    assert count_by_stretches(data, path="s", fmt=None, options=COUNTING, counter=counter) is None


_LINES = [
    *(orjson.dumps(msg) for msg in _tau_messages()[:12]),
    b"",
    b"   ",
    b'{"role": "user", "content": "hi"',  # cut short
    b'{"content": "no role"}',
    b'{"role": 3, "content": "x"}',
    b'{"traj": []}',
    b"[1, 2]",
]


@pytest.mark.usefixtures("any_size")
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(st.sampled_from(_LINES), min_size=1, max_size=24),
    bom=st.booleans(),
    crlf=st.booleans(),
    final_newline=st.booleans(),
    skip_invalid=st.booleans(),
    estimate=st.booleans(),
    workers=st.integers(2, 5),
    piece=st.integers(1, 2000),
)
def test_a_file_in_stretches_counts_or_fails_as_read_whole(
    lines: list[bytes],
    bom: bool,
    crlf: bool,
    final_newline: bool,
    skip_invalid: bool,
    estimate: bool,
    workers: int,
    piece: int,
) -> None:
    end = b"\r\n" if crlf else b"\n"
    data = (BOM if bom else b"") + end.join(lines) + (end if final_newline else b"")
    options = ReadOptions(keep_bytes=False, skip_invalid=skip_invalid)
    counter = TokenCounter(estimate=estimate, workers=workers)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(counting, "PIECE_BYTES", piece)
        found = count_by_stretches(data, path="s.jsonl", fmt=None, options=options, counter=counter)
    try:
        whole = _whole(data, estimate=estimate, options=options)
    except InputError:
        assert found is None  # the whole reader is the one to say why
        return
    if found is not None:
        assert found.to_dict() == whole.to_dict()
        assert list(found.total.messages_by_role) == list(whole.total.messages_by_role)


@pytest.mark.usefixtures("any_size")
@pytest.mark.parametrize("estimate", [[], ["--estimate"]])
def test_the_cli_counts_a_file_in_stretches_as_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, estimate: list[str]
) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(_jsonl(_tau_messages()))
    called: list[bool] = []
    real = counting.count_by_stretches

    def spy(*args: object, **kwargs: object) -> CountReport | None:
        found = real(*args, **kwargs)  # type: ignore[arg-type]
        called.append(found is not None)
        return found

    monkeypatch.setattr(counting, "count_by_stretches", spy)
    in_stretches = runner.invoke(app, ["count", str(path), "--json", *estimate])
    plain = runner.invoke(app, ["count", str(path), *estimate])
    assert called == [True, True]
    monkeypatch.setattr(counting, "STRETCHES_MIN_BYTES", 1 << 40)
    whole = runner.invoke(app, ["count", str(path), "--json", *estimate])
    plain_whole = runner.invoke(app, ["count", str(path), *estimate])
    assert called == [True, True, False, False]
    assert in_stretches.exit_code == whole.exit_code == 0
    assert in_stretches.stdout == whole.stdout
    assert plain.stderr == plain_whole.stderr


@pytest.mark.usefixtures("any_size")
def test_a_bad_line_late_in_the_file_is_named_as_the_whole_reader_names_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(_jsonl(_tau_messages()) + b'{"content": "no role"}\n')
    result = runner.invoke(app, ["count", str(path)])
    assert result.exit_code != 0
    lines = len(_tau_messages()) + 1
    assert f"{path}:{lines}: message has no role" in result.stderr


def test_a_file_is_mapped_only_when_it_is_a_regular_file_with_bytes(tmp_path: Path) -> None:
    """What cannot be mapped (stdin, an empty file, a folder, a missing file)
    is None, for the caller to read, and read_input then says what is wrong."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"role": "user", "content": "hi"}\n')
    with files.mapped_input(str(path)) as view:
        assert view is not None
        assert view[:] == path.read_bytes()
    assert view.closed
    (tmp_path / "empty.jsonl").write_bytes(b"")
    # A named pipe is not opened (that would wait for a writer): it is read.
    os.mkfifo(tmp_path / "pipe.jsonl")

    def stuck(*_: object) -> None:
        raise AssertionError("the named pipe was opened: it waits for a writer")

    previous = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(5)
    try:
        for name in (
            files.STDIO,
            str(tmp_path / "empty.jsonl"),
            str(tmp_path / "pipe.jsonl"),
            str(tmp_path),
            "missing.jsonl",
        ):
            with files.mapped_input(name) as view:
                assert view is None, name
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    with pytest.raises(InputError, match="is a directory"):
        files.read_input(str(tmp_path))
