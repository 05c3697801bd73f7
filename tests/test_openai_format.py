"""Lossless reading and writing of the `openai` format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxpack import formats
from ctxpack.errors import InputError
from ctxpack.formats.base import ReadOptions
from ctxpack.formats.openai import OpenAILayout
from tests.conftest import COUNTER, OPENAI_FIXTURES, TAU_BENCH, TOOLBENCH
from tests.test_formats_support import round_trip

BIG = 2**70
AWKWARD_LINES = [
    b'{"role":"system","content":"You are terse."}',
    b'{"role":"user","content":"line\\u2028sep \\u00e9 \\ud83d\\ude00","id":'
    + str(BIG).encode()
    + b"}",
    b'{"role":"assistant","content":"ok","extra":{"nested":[1,2.50,1e3]},"z":null}',
    b'{ "role" : "user" , "content" : "spaced out" }',
]


def _read(data: bytes, **options: object) -> formats.Transcript:  # type: ignore[name-defined]
    return formats.read(data, path="t.jsonl", options=ReadOptions(**options))  # type: ignore[arg-type]


@pytest.mark.parametrize("path", OPENAI_FIXTURES, ids=lambda p: p.name)
def test_real_fixtures_round_trip_byte_identical(path: Path) -> None:
    round_trip(path, "openai")


def test_record_files_are_found_without_options() -> None:
    tau = formats.read(TAU_BENCH.read_bytes(), path=str(TAU_BENCH))
    assert len(tau.sessions) == 200
    assert isinstance(tau.layout, OpenAILayout)
    assert tau.layout.key == ("traj",)
    toolbench = formats.read(TOOLBENCH.read_bytes(), path=str(TOOLBENCH))
    assert isinstance(toolbench.layout, OpenAILayout)
    assert toolbench.layout.key == ("answer_generation", "train_messages", -1)
    assert [m["role"] for m in toolbench.sessions[0].messages][:3] == [
        "system",
        "user",
        "assistant",
    ]


@pytest.mark.parametrize(
    "eol,final", [(b"\n", True), (b"\r\n", True), (b"\n", False)], ids=["lf", "crlf", "no-final"]
)
@pytest.mark.parametrize("bom", [False, True], ids=["plain", "bom"])
def test_awkward_jsonl_round_trips(eol: bytes, final: bool, bom: bool) -> None:
    data = eol.join(AWKWARD_LINES) + (eol if final else b"")
    if bom:
        data = b"\xef\xbb\xbf" + data
    transcript = _read(data)
    msgs = transcript.sessions[0].messages
    assert msgs[1]["id"] == BIG
    assert "\u2028" in msgs[1]["content"]
    assert formats.write(transcript, counter=COUNTER) == data


def test_changed_message_is_reserialized_and_neighbours_kept() -> None:
    data = b"\n".join(AWKWARD_LINES) + b"\n"
    transcript = _read(data)
    session = transcript.sessions[0]
    changed = {**session.messages[2], "content": "changed"}
    new = transcript.with_sessions(
        [session.with_messages([*session.messages[:2], changed, *session.messages[3:]])]
    )
    out = formats.write(new, counter=COUNTER).split(b"\n")
    assert out[0] == AWKWARD_LINES[0]
    assert out[1] == AWKWARD_LINES[1]
    assert json.loads(out[2])["content"] == "changed"
    assert out[3] == AWKWARD_LINES[3]


def test_changed_message_with_big_integer_stays_exact() -> None:
    transcript = _read(AWKWARD_LINES[1] + b"\n")
    session = transcript.sessions[0]
    changed = {**session.messages[0], "content": "x"}
    out = formats.write(
        transcript.with_sessions([session.with_messages([changed])]), counter=COUNTER
    )
    assert json.loads(out)["id"] == BIG


def test_empty_file_is_zero_messages() -> None:
    transcript = _read(b"")
    assert transcript.sessions[0].messages == []
    assert formats.write(transcript, counter=COUNTER) == b""


def test_json_array_and_messages_object() -> None:
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    array = json.dumps(msgs).encode()
    assert _read(array).sessions[0].messages == msgs
    obj = json.dumps({"messages": msgs, "meta": {"k": 1}}, indent=2).encode()
    transcript = _read(obj)
    assert isinstance(transcript.layout, OpenAILayout)
    assert transcript.layout.mode == "json-record"
    assert transcript.sessions[0].messages == msgs


def test_one_session_per_line_keeps_other_sessions_bytes() -> None:
    lines = [
        b'{"messages":[{"role":"user","content":"a"}],"id":1}',
        b'{"messages": [{"role": "user", "content": "b"}], "id": 2}',
    ]
    transcript = _read(b"\n".join(lines) + b"\n")
    assert len(transcript.sessions) == 2
    first, second = transcript.sessions
    edited = first.with_messages([{"role": "user", "content": "A"}])
    out = formats.write(transcript.with_sessions([edited, second]), counter=COUNTER).split(b"\n")
    assert json.loads(out[0]) == {"messages": [{"role": "user", "content": "A"}], "id": 1}
    assert out[1] == lines[1]


def test_messages_key_option_names_the_list() -> None:
    data = json.dumps([{"run": {"turns": [{"role": "user", "content": "x"}]}}]).encode()
    with pytest.raises(InputError, match="--messages-key"):
        _read(data)
    transcript = _read(data, messages_key="run.turns")
    assert transcript.sessions[0].messages == [{"role": "user", "content": "x"}]


BAD_INPUTS = {
    "invalid-json": (b'{"role":"user","content":"a"}\n{"role": oops}\n', 2, "invalid JSON"),
    "nan": (b'{"role":"user","content":"a"}\n{"role":"user","content":NaN}\n', 2, "invalid JSON"),
    "infinity": (b'{"role":"user","content":"a","x":Infinity}\n', 1, "invalid JSON"),
    "non-utf8": (
        b'{"role":"user","content":"a"}\n{"role":"user","content":"\xff\xfe"}\n',
        2,
        "UTF-8",
    ),
    "truncated": (b'{"role":"user","content":"a"}\n{"role":"user","con', 2, "truncated"),
    "content-number": (
        b'{"role":"user","content":"a"}\n{"role":"user","content":42}\n',
        2,
        "content must be",
    ),
    "tool-calls-not-list": (
        b'{"role":"user","content":"a"}\n{"role":"assistant","content":null,"tool_calls":{}}\n',
        2,
        "tool_calls must be a list",
    ),
    "no-role": (b'{"role":"user","content":"a"}\n{"content":"who?"}\n', 2, "no role"),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_names_the_line(name: str) -> None:
    data, line, words = BAD_INPUTS[name]
    with pytest.raises(InputError) as info:
        _read(data)
    assert info.value.line == line
    assert words in info.value.message
    assert info.value.describe().startswith(f"t.jsonl:{line}: ")


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_skip_invalid_keeps_bad_lines_untouched(name: str) -> None:
    data, _, _ = BAD_INPUTS[name]
    transcript = _read(data, skip_invalid=True)
    assert transcript.skipped_lines == 1
    assert formats.write(transcript, counter=COUNTER) == data
