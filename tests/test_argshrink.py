"""Huge tool-call arguments shrink to valid JSON with the same shape."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack.prune.argshrink import is_marked, mark, shrink_arguments


def test_arguments_that_are_not_a_json_object_stay() -> None:
    assert shrink_arguments("*** Begin Patch\n" + "+x\n" * 400) is None
    assert shrink_arguments(json.dumps(["a" * 600])) is None
    assert shrink_arguments('{"a": NaN, "b": "' + "x" * 600 + '"}') is None
    assert shrink_arguments(json.dumps({"a": "x" * 150})) is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=400),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(max_size=8), json_values, min_size=1, max_size=5))
def test_shrunk_arguments_are_valid_json_with_the_same_shape(value: dict[str, Any]) -> None:
    raw = json.dumps(value, ensure_ascii=False)
    shrunk = shrink_arguments(raw, max_chars=100, keep=50)
    if shrunk is None:
        return
    back = json.loads(shrunk)

    def same_shape(a: Any, b: Any) -> None:
        if isinstance(a, dict):
            assert list(a) == list(b)
            for key in a:
                same_shape(a[key], b[key])
        elif isinstance(a, list):
            assert len(a) == len(b)
            for x, y in zip(a, b, strict=True):
                same_shape(x, y)
        elif isinstance(a, str) and len(a) > 50:
            assert b == a[:50] + mark(len(a) - 50)
        else:
            assert a == b

    same_shape(value, back)
    assert shrink_arguments(shrunk, max_chars=100, keep=50) is None


def test_mark_is_recognised() -> None:
    assert mark(1234) == "…[ctxpack: 1,234 more chars]"
    assert is_marked("abc" + mark(1234)) and not is_marked(mark(5) + "abc")
