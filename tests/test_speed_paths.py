"""The fast paths for large inputs give exactly what the plain ones give:
counting on several cores, lines kept as views of the input, reading without
per-message bytes, the whole-file digit check."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxpack import formats
from ctxpack.errors import CtxpackError
from ctxpack.formats import jsoncodec
from ctxpack.formats.base import LineViews, ReadOptions, split_lines
from ctxpack.tokens import counter as tokens
from ctxpack.tokens import forked
from ctxpack.tokens.counter import TokenCounter
from ctxpack.tokens.tally import count_transcript
from ctxpack.transcript import Message
from tests.conftest import COUNTER, TAU_BENCH


def _tau_messages() -> list[Message]:
    runs = orjson.loads(TAU_BENCH.read_bytes())
    return [msg for run in runs for msg in run["traj"]]


def _tau_jsonl(tmp_path: Path) -> Path:
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"".join(orjson.dumps(msg) + b"\n" for msg in _tau_messages()))
    return path


def _spawned(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the children forked from here on, as they are forked."""
    children: list[int] = []
    real_spawn = forked._spawn

    def spawn(*args: Any, **kwargs: Any) -> Any:
        child = real_spawn(*args, **kwargs)
        if child is not None:
            children.append(child[0])
        return child

    monkeypatch.setattr(forked, "_spawn", spawn)
    return children


@pytest.mark.parametrize("frame", [3, forked.FRAME_ITEMS])
@pytest.mark.parametrize("workers", [1, 2, 3, 8])
@pytest.mark.parametrize("size", [0, 1, 2, 7, 100])
def test_forked_map_is_the_serial_map(
    monkeypatch: pytest.MonkeyPatch, workers: int, size: int, frame: int
) -> None:
    monkeypatch.setattr(forked, "FRAME_ITEMS", frame)
    items = list(range(size))
    assert forked.map_forked(lambda x: {"n": x * x}, items, workers=workers) == [
        {"n": x * x} for x in items
    ]
    assert list(forked.each_mapped(lambda x: (x, x * x), items, workers=workers)) == [
        (x, x * x) for x in items
    ]


def test_each_mapped_hands_the_first_chunk_over_as_it_is_mapped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parent = os.getpid()
    mapped = forked.each_mapped(lambda x: (x, os.getpid()), range(40), workers=4)
    first = next(mapped)
    assert first == (0, parent)
    rest = list(mapped)
    assert [x for x, _ in rest] == list(range(1, 40))
    assert {pid for x, pid in rest if x < 10} == {parent}
    assert len({pid for x, pid in rest if x >= 10} - {parent}) == 3
    # Abandoned halfway, it leaves no child behind.
    children = _spawned(monkeypatch)
    abandoned = forked.each_mapped(lambda x: x, range(40), workers=4)
    assert next(abandoned) == 0
    abandoned.close()
    assert len(children) == 3
    for pid in children:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_chunks_run_in_child_processes() -> None:
    assert forked.can_fork()
    pids = forked.map_forked(lambda _: os.getpid(), list(range(40)), workers=4)
    assert [len(set(pids[i : i + 10])) for i in range(0, 40, 10)] == [1, 1, 1, 1]
    assert pids[0] == os.getpid() and len(set(pids)) == 4


def test_a_failing_child_leaves_its_chunk_to_the_parent() -> None:
    parent = os.getpid()

    def square_in_parent_only(x: int) -> int:
        if os.getpid() != parent:
            raise RuntimeError("only the parent may compute")
        return x * x

    assert forked.map_forked(square_in_parent_only, list(range(50)), workers=4) == [
        x * x for x in range(50)
    ]


def test_no_fork_while_another_thread_runs() -> None:
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert not forked.can_fork()
        parent = os.getpid()
        assert forked.map_forked(lambda _: os.getpid(), list(range(10)), workers=4) == [parent] * 10
    finally:
        release.set()
        other.join()


def test_counting_on_several_cores_gives_the_same_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "PARALLEL_MIN_MESSAGES", 0)
    messages = _tau_messages()
    serial, parallel = TokenCounter(workers=1), TokenCounter(workers=3)
    parallel.prime(messages)
    assert parallel.messages(messages) == serial.messages(messages) == 717_600
    assert [parallel.breakdown(msg) for msg in messages] == [
        serial.breakdown(msg) for msg in messages
    ]


@pytest.mark.parametrize("estimate", [False, True])
def test_many_texts_are_counted_on_several_cores_as_one_at_a_time(
    monkeypatch: pytest.MonkeyPatch, estimate: bool
) -> None:
    texts = [text for msg in _tau_messages() for text in (msg.get("content"),) if text]
    assert len(texts) > 100
    spawned = _spawned(monkeypatch)
    for minimum, chars in ((10**9, 0), (0, 10**12), (0, 0)):
        monkeypatch.setattr(tokens, "PARALLEL_MIN_MESSAGES", minimum)
        monkeypatch.setattr(tokens, "PARALLEL_MIN_CHARS", chars)
        counter = TokenCounter(workers=3, estimate=estimate)
        assert counter.texts(texts) == [counter.text(text) for text in texts]
    # Only many texts of many characters in all are worth a fork.
    assert len(spawned) == (0 if estimate else 2)


def test_forget_drops_every_counted_message() -> None:
    counter = TokenCounter(workers=1)
    messages = _tau_messages()[:50]
    before = counter.messages(messages)
    counter.forget()
    assert counter._memo == {} and counter._alive == [] and counter._rows == {}
    assert counter.messages(messages) == before


@pytest.mark.parametrize("workers", [1, 3])
def test_equal_counts_are_kept_once(monkeypatch: pytest.MonkeyPatch, workers: int) -> None:
    # The memo of a long session holds one row per distinct count, whichever
    # process counted it.
    monkeypatch.setattr(tokens, "PARALLEL_MIN_MESSAGES", 0)
    messages: list[Message] = [{"role": "user", "content": f"line {i % 7}"} for i in range(60)]
    counter = TokenCounter(workers=workers)
    counter.prime(messages)
    rows = {id(counter.counts(msg)) for msg in messages}
    assert len(rows) == len({counter.counts(msg) for msg in messages}) == 1
    assert counter.counts(messages[0]) == (7, 0, 3, 0, 0, 0, 0, 0, 4)


@given(st.binary(max_size=60).map(lambda b: b.replace(b"a", b"\n")))
def test_line_views_split_like_split_lines(data: bytes) -> None:
    lines, final_newline = split_lines(data)
    views = LineViews(data)
    assert [bytes(view) for view in views] == lines
    assert [bytes(views[i]) for i in range(len(views))] == lines
    assert views.final_newline == final_newline


def test_jsonl_lines_are_views_of_the_input_and_write_back_exactly(tmp_path: Path) -> None:
    data = _tau_jsonl(tmp_path).read_bytes()
    transcript = formats.read(data, path="session.jsonl")
    raw = transcript.sessions[0].originals[0][1]
    assert isinstance(raw, memoryview) and raw.obj is data
    edited = transcript.with_sessions(
        [transcript.sessions[0].with_messages(list(transcript.sessions[0].messages))]
    )
    assert formats.write(edited, counter=COUNTER) == data


def test_reading_for_counting_only_counts_the_same_and_refuses_to_write(
    tmp_path: Path,
) -> None:
    data = _tau_jsonl(tmp_path).read_bytes()
    full = formats.read(data, path="session.jsonl")
    light = formats.read(data, path="session.jsonl", options=ReadOptions(keep_bytes=False))
    # Each message as parsed, with no bytes; the same pairs however they are asked for.
    originals = light.sessions[0].originals
    pairs = [(msg, b"") for msg in light.sessions[0].messages]
    assert list(originals) == pairs and originals == pairs
    assert len(originals) == len(pairs) and originals[-1] == pairs[-1]
    assert originals[3:9] == pairs[3:9] and originals[::-5] == pairs[::-5]
    assert [msg for msg, _ in originals] == [msg for msg, _ in full.sessions[0].originals]
    assert light.sessions[0].unchanged()
    counter = TokenCounter()
    assert (
        count_transcript(light, counter=counter).to_dict()
        == count_transcript(full, counter=counter).to_dict()
    )
    with pytest.raises(CtxpackError, match="cannot be written"):
        formats.write(light, counter=COUNTER)


@pytest.mark.parametrize("offset", range(0, 40, 3))
def test_a_long_digit_run_across_a_block_boundary_is_found(offset: int) -> None:
    data = b"x" * offset + b"1" * 19 + b"y"
    assert jsoncodec.has_long_digits(data, block=16)
    assert not jsoncodec.has_long_digits(b"x" * offset + b"1" * 18 + b"y", block=16)


def test_a_file_with_a_big_integer_still_reads_it_exactly(tmp_path: Path) -> None:
    data = (
        b'{"role": "user", "content": "hi"}\n'
        b'{"role": "user", "content": "n", "id": 123456789012345678901234567890}\n'
    )
    transcript = formats.read(data, path="big.jsonl")
    assert transcript.sessions[0].messages[1]["id"] == 123456789012345678901234567890
    assert formats.write(transcript, counter=COUNTER) == data


def test_a_read_for_counting_only_counts_a_big_integer_as_the_exact_read_does() -> None:
    data = (
        b'{"role": "user", "content": "how many?", "id": 123456789012345678901234567890}\n'
        b'{"role": "assistant", "content": "12345678901234567890123 of them"}\n'
    )
    assert jsoncodec.has_long_digits(data)
    counted = [
        count_transcript(
            formats.read(data, path="big.jsonl", options=ReadOptions(keep_bytes=keep)),
            counter=COUNTER,
        ).to_dict()
        for keep in (True, False)
    ]
    assert counted[0] == counted[1] and counted[0]["total"]["messages"] == 2


def test_compress_counted_on_several_cores_writes_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole pipeline (count, prune, align, summarize, report) once with
    every count in forked children and once in one process."""
    from typer.testing import CliRunner

    from ctxpack.cli import app

    source = _tau_jsonl(tmp_path)
    spawned = _spawned(monkeypatch)
    runs = {}
    for workers, minimum in ((1, 10**9), (3, 0)):
        monkeypatch.setattr(tokens, "PARALLEL_MIN_MESSAGES", minimum)
        monkeypatch.setattr(forked, "available_workers", lambda w=workers: w)
        (tmp_path / str(workers)).mkdir()
        out = tmp_path / str(workers) / "out.jsonl"
        report = tmp_path / str(workers) / "report.json"
        args = ["--offline", "--force", "--no-archive", "--context-length", "60000"]
        result = CliRunner().invoke(
            app, ["compress", *args, str(source), "-o", str(out), "--report", str(report)]
        )
        assert result.exit_code == 0, result.output
        data = orjson.loads(report.read_bytes())
        data.pop("output")
        runs[workers] = (out.read_bytes(), data, len(spawned))
    assert runs[1][0] == runs[3][0] != source.read_bytes()
    assert runs[1][1] == runs[3][1]
    assert runs[1][2] == 0 and runs[3][2] >= 4


def test_in_child_runs_beside_the_body_and_falls_back_to_the_parent() -> None:
    parent = os.getpid()
    found: list[Any] = []
    with forked.in_child(os.getpid, done=found.append):
        pass
    assert found and found[0] != parent

    def parent_only() -> int:
        if os.getpid() != parent:
            raise RuntimeError("only the parent may compute")
        return 7

    with forked.in_child(parent_only, done=found.append):
        pass
    assert found[-1] == 7
    with pytest.raises(KeyError), forked.in_child(os.getpid, done=found.append):
        raise KeyError("the body failed")
    assert len(found) == 2


def test_started_work_runs_at_the_lowest_priority_and_is_read_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parent = os.getpid()
    spawned = _spawned(monkeypatch)
    with forked.started(
        lambda: (os.getpid(), os.getpriority(os.PRIO_PROCESS, 0)), background=True
    ) as result:
        first = result()
        assert result() is first
    assert first == (spawned[0], 19) and first[0] != parent

    def parent_only() -> int:
        if os.getpid() != parent:
            raise RuntimeError("only the parent may compute")
        return 7

    with forked.started(parent_only) as result:
        assert result() == 7
    # Work nobody waited for ends with the block.
    with forked.started(lambda: time.sleep(60)):
        pass
    with pytest.raises(ChildProcessError):
        os.waitpid(spawned[-1], os.WNOHANG)


def test_a_large_input_is_packed_for_the_archive_beside_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Packed in a child from the start, the input is stored as the archive
    packs it itself: the same rows, the same restore."""
    from ctxpack.archive.store import Archive
    from ctxpack.pipeline import archiving, stages
    from ctxpack.pipeline.compaction import CompressSettings
    from ctxpack.pipeline.run import FileJob, run_file

    source = _tau_jsonl(tmp_path)
    stage = stages.Compress(CompressSettings(force=True))
    real_started = forked.started
    rows = {}
    for where, minimum in (("ahead", 0), ("when stored", 1 << 40)):
        monkeypatch.setattr(archiving, "PACK_AHEAD_MIN_BYTES", minimum)
        background: list[bool] = []

        def started(func: Any, *, background: bool = False, seen: list[bool] = background) -> Any:
            if func.__qualname__.startswith("input_packing."):
                seen.append(background)
            return real_started(func, background=background)

        monkeypatch.setattr(forked, "started", started)
        archive = tmp_path / f"{where}.db"
        out = tmp_path / f"{where}.jsonl"
        run_file(
            FileJob(source=str(source), output=str(out), archive_path=str(archive)), stage=stage
        )
        assert background == ([True] if where == "ahead" else [])
        with Archive.open(str(archive)) as store:
            assert store.restore(out.read_bytes()) == source.read_bytes()
        with contextlib.closing(sqlite3.connect(archive)) as conn:
            rows[where] = conn.execute(
                "SELECT sha256, codec, data, size, base FROM blobs ORDER BY sha256"
            ).fetchall()
    assert rows["ahead"] == rows["when stored"]


@pytest.mark.parametrize("gate", [None, {"overall": 1.0}])
def test_the_retention_check_in_a_child_gives_what_it_gives_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gate: dict[str, float] | None
) -> None:
    from ctxpack.errors import RetentionError
    from ctxpack.pipeline import stages
    from ctxpack.pipeline.compaction import CompressSettings
    from ctxpack.pipeline.run import FileJob, run_file
    from ctxpack.sessionindex import SessionIndex

    source = _tau_jsonl(tmp_path)
    stage = stages.Compress(CompressSettings(force=True), min_retention=gate)
    done: dict[str, Any] = {}
    parent, measure = os.getpid(), stages.measure_retention
    released: list[str] = []
    let_go = SessionIndex.stages_done

    def stages_done(index: SessionIndex) -> None:
        released.append(where)
        let_go(index)

    monkeypatch.setattr(SessionIndex, "stages_done", stages_done)

    def fails_in_a_child(*args: Any, **kwargs: Any) -> Any:
        if os.getpid() != parent:
            raise RuntimeError("the child dies")
        return measure(*args, **kwargs)

    # A child that dies leaves the check to the parent, which has let go of
    # the facts the stages found: it finds them again, to the same report.
    for where, minimum in (("child", 0), ("here", 10**9), ("child fails", 0)):
        monkeypatch.setattr(tokens, "PARALLEL_MIN_MESSAGES", minimum)
        if where == "child fails":
            monkeypatch.setattr(stages, "measure_retention", fails_in_a_child)
        out = tmp_path / f"{where}.jsonl"
        job = FileJob(source=str(source), output=str(out), archive_path=str(tmp_path / "a.db"))
        try:
            report = run_file(job, stage=stage).report
        except RetentionError as exc:
            done[where] = exc.describe()
            assert not out.exists()
            continue
        assert report is not None
        retention = report.sessions[0].retention
        assert retention is not None and retention["found"]["overall"] > 0
        done[where] = (out.read_bytes(), report.to_dict() | {"output": None})
    assert done["child"] == done["here"] == done["child fails"]
    assert released == ["child", "child fails"]
    assert isinstance(done["here"], str) == (gate is not None)


@pytest.mark.parametrize("workers", [2, 3])
def test_the_scan_on_several_cores_reads_as_one(
    monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """Real sessions, and one whose running command is polled and whose file
    is written again across the cut between stretches: the same scan, and
    the same facts kept for the later stages, as one process reads."""
    from ctxpack.sessionindex import SessionIndex
    from ctxpack.summarize.offline import scan as scanning
    from tests.test_facts import CODEX, HAIKU, claude_messages, codex_messages

    def call(i: int, name: str, args: str) -> Message:
        function = {"name": name, "arguments": args}
        return {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": f"c{i}", "type": "function", "function": function}],
        }

    def result(i: int, text: str) -> Message:
        return {"role": "tool", "tool_call_id": f"c{i}", "content": text}

    crossing: list[Message] = [
        {"role": "user", "content": "Sync the files, then write notes.md. Next step?"},
        call(1, "exec_command", '{"cmd": "rsync -a src/ dst/"}'),
        result(1, "Process running with session ID 42"),
        call(2, "write", '{"path": "notes.md", "content": "a"}'),
        result(2, "ok"),
        {"role": "assistant", "content": "I decided to use rsync. Next step: poll it."},
        call(3, "write_stdin", '{"session_id": 42, "chars": ""}'),
        result(3, "Process exited with code 0"),
        call(4, "exec_command", '{"cmd": "ls"}'),
        result(4, "notes.md"),
        call(5, "write", '{"path": "notes.md", "content": "b"}'),
        result(5, "ok"),
        {"role": "assistant", "content": "I decided to use rsync. Done."},
    ]
    sessions = [codex_messages(CODEX), claude_messages(HAIKU), _tau_messages(), crossing]
    spawned = _spawned(monkeypatch)
    for messages in sessions:
        done = {}
        for each, minimum in ((1, 10**9), (workers, 2)):
            monkeypatch.setattr(tokens, "PARALLEL_MIN_MESSAGES", minimum)
            index = SessionIndex(messages)
            found = scanning.scan(messages[1:], tail=messages[-2:], index=index, workers=each)
            kept = [index.facts.known(msg) for msg in messages[1:]]
            # The scan's repr holds every action, ask (with its reply) and fact.
            done[each] = (repr(found), kept)
        assert done[1] == done[workers]
    assert len(spawned) == len(sessions) * (workers - 1)
    cut = scanning.scan(crossing, workers=workers)
    assert [a.line() for a in cut.actions] == [
        "Ran `rsync -a src/ dst/` — exit 0 [tool: exec_command]",
        "Created notes.md — ok [tool: write]",
        'Ran `ls` — ok, printed "notes.md" [tool: exec_command]',
        "Edited notes.md — ok [tool: write]",
    ]
    assert cut.decisions == ["I decided to use rsync."]
    assert cut.next_steps == ["Next step: poll it."]
    assert [ask.text for ask in cut.questions] == ["Next step?"]


@pytest.mark.parametrize("workers", [2, 3])
def test_an_estimate_plans_pruning_on_several_cores_as_one_process_does(
    monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """With estimated counts no child counts beside the prune plan, so a long
    session is planned a stretch per core: the same plan, message for message.
    An exact count keeps the plan in one process (its children count)."""
    from ctxpack.align.budget import Budget
    from ctxpack.prune.stage import PruneSettings, plan_prune
    from tests.test_facts import CODEX, HAIKU, claude_messages, codex_messages

    sessions = [codex_messages(CODEX), claude_messages(HAIKU), _tau_messages()]
    spawned = _spawned(monkeypatch)
    settings = PruneSettings(budget=Budget(tail_tokens=500, protect_last=2, min_tail=2))
    actions = []
    for messages in sessions:
        monkeypatch.setattr(tokens, "PARALLEL_MIN_MESSAGES", 10**9)
        alone = plan_prune(messages, counter=TokenCounter(estimate=True), settings=settings)
        monkeypatch.setattr(tokens, "PARALLEL_MIN_MESSAGES", 2)
        shared = plan_prune(
            messages, counter=TokenCounter(estimate=True, workers=workers), settings=settings
        )
        assert shared == alone
        actions.append((len(alone.plans), {action for _, (_, action, _, _) in alone.plans}))
    assert actions == [
        (26, {"summarize-output"}),
        (34, {"summarize-output", "shrink-args"}),
        (883, {"summarize-output", "shrink-args", "dedupe"}),
    ]
    assert len(spawned) == len(sessions) * (workers - 1)
    plan_prune(sessions[-1], counter=TokenCounter(workers=workers), settings=settings)
    assert len(spawned) == len(sessions) * (workers - 1)


def test_the_facts_the_summary_does_not_read_are_found_beside_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the retention check to come, the facts of the messages the
    summary does not read (the head, the tail, the outputs pruning replaced)
    are found in a child while it runs: afterwards every message that ran is
    known but those asked for as copies, each with the facts the check
    finds itself, and the check reports the same."""
    from ctxpack.evaluate.retention import evaluate
    from ctxpack.facts.extract import message_facts, ran_only
    from ctxpack.pipeline.compaction import CompressSettings, compress_messages
    from ctxpack.sessionindex import SessionIndex

    pending: Message = {
        "role": "assistant",
        "content": "Checking once more.",
        "tool_calls": [
            {"id": "never", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        ],
    }
    messages = [*_tau_messages(), pending]
    spawned = _spawned(monkeypatch)
    monkeypatch.setattr(tokens, "PARALLEL_MIN_MESSAGES", 0)
    counter = TokenCounter(workers=2)
    index = SessionIndex(messages)
    index.facts_of_all = True
    settings = CompressSettings(force=True)
    out, _ = compress_messages(messages, counter=counter, settings=settings, index=index)
    assert spawned
    ran = ran_only(messages, pairing=index.pairing)
    known = [index.facts.known(msg) for msg in ran]
    assert [msg for msg, facts in zip(ran, known, strict=True) if facts is None] == [ran[-1]]
    assert ran[-1] is not pending
    assert all(f == message_facts(msg) for msg, f in zip(ran, known, strict=True) if f is not None)
    fresh = SessionIndex(messages)
    assert (
        evaluate(messages, out, counter=counter, index=index).to_dict()
        == evaluate(messages, out, counter=counter, index=fresh).to_dict()
    )


def _long_totals(monkeypatch: pytest.MonkeyPatch, length: int) -> list[int]:
    """The ids of the lists longer than half of `length` messages that
    TokenCounter.messages totals from here on, as it totals them."""
    totaled: list[int] = []
    real = TokenCounter.messages

    def messages_spy(self: TokenCounter, msgs: list[Message]) -> int:
        if len(msgs) * 2 > length:
            totaled.append(id(msgs))
        return real(self, msgs)

    monkeypatch.setattr(TokenCounter, "messages", messages_spy)
    return totaled


@pytest.mark.parametrize("estimate", [False, True])
def test_a_compaction_totals_each_version_of_a_long_session_once(
    monkeypatch: pytest.MonkeyPatch, estimate: bool
) -> None:
    """A whole session's total is a pass over all its messages: the input's is
    the report's tally, the pruned session's is taken once and handed to the
    summary, which never totals it again, and the middle's is what the head
    and tail leave of it."""
    from ctxpack.align.budget import Budget
    from ctxpack.pipeline.compaction import CompressSettings, compress_messages

    messages = _tau_messages()
    totaled = _long_totals(monkeypatch, len(messages))
    settings = CompressSettings(force=True, budget=Budget(tail_tokens=500, protect_last=2))
    counter = TokenCounter(estimate=estimate, workers=1)
    _, report = compress_messages(messages, counter=counter, settings=settings)
    assert report.status.value == "compacted"
    assert report.prune_saved > 0 and report.summary_saved > 0
    assert len(totaled) == 1
    assert id(messages) not in totaled


@pytest.mark.parametrize("merged", [False, True])
@pytest.mark.parametrize("estimate", [False, True])
def test_a_second_round_reads_the_middle_total_off_the_session_total(
    monkeypatch: pytest.MonkeyPatch, estimate: bool, merged: bool
) -> None:
    """Round two: round one's record sits at the start of the middle, alone
    or merged into a turn. The middle's tokens are the session's less the
    head's and the tail's, with the record counted as the turn reading it
    back gives back: the budget a pass over the middle gives, without that
    pass."""
    from ctxpack.align.boundaries import plan_boundaries
    from ctxpack.align.budget import Budget
    from ctxpack.markers import is_summary
    from ctxpack.pipeline.compaction import CompressSettings, compress_messages
    from ctxpack.pipeline.request import prepare_request
    from ctxpack.summarize.assemble import without_merged_summary

    messages = _tau_messages()
    settings = CompressSettings(force=True, budget=Budget(tail_tokens=500, protect_last=2))
    counter = TokenCounter(estimate=estimate, workers=1)
    cut = len(messages) // 4
    first, report = compress_messages(messages[:cut], counter=counter, settings=settings)
    assert report.status.value == "compacted"
    second = [*first, *messages[cut:]]
    if merged:
        at = next(i for i, msg in enumerate(second) if is_summary(msg))
        record = second[at]
        second[at] = {**record, "content": f"Noted before the record.\n\n{record['content']}"}
    plan = plan_boundaries(second, counter=counter, budget=settings.budget)
    assert plan.previous_summary_index is not None
    assert plan.head_end <= plan.previous_summary_index < plan.tail_start
    own = without_merged_summary(second[plan.previous_summary_index])
    assert (own is not None) == merged
    passed = prepare_request(second, plan=plan, counter=counter, settings=settings)
    totaled = _long_totals(monkeypatch, len(second))
    total = counter.messages(second)
    totaled.clear()
    read_off = prepare_request(second, plan=plan, counter=counter, settings=settings, total=total)
    assert totaled == []
    assert read_off.budget_tokens == passed.budget_tokens
    assert read_off.request == passed.request
