"""Option values that are already of their declared type skip typer's coercion.

typer coerces every value it parses through a pydantic TypeAdapter, built for
each option of the command on every run, so a plain `ctxpack count FILE`
imports pydantic and builds a dozen adapters: about a third of a small call's
time, for values that are text already. ctxpack's options are text, switches,
counts and lists of text (ctxpack.settings converts and checks every setting
itself), so a value of the declared type passes as it is. Anything else (an
integer from a config file for a text option, bytes, a non-numeric count) goes
to typer's own coercion, which stays the one rule for those and for its error
messages. Where typer's parameters are not built as this expects, nothing is
replaced and typer coerces everything, as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

try:
    from typer._coercion import RuntimeParam, build_runtime_param
    from typer.core import _TyperParameter
except ImportError:  # a typer whose parameters are built differently
    RuntimeParam = None  # type: ignore[assignment,misc]

_LIST_OF_TEXT = list[str]


def _plain(annotation: Any, value: Any) -> bool:
    """Whether `value` already is what coercion to `annotation` would return."""
    if annotation is str or annotation is bool:
        return type(value) is annotation
    if annotation is int:
        return type(value) is int
    if annotation == _LIST_OF_TEXT:
        return isinstance(value, (list, tuple)) and all(type(item) is str for item in value)
    return False


def _number(annotation: Any, value: Any) -> int | None:
    """A decimal count typed on the command line, read as typer reads it."""
    if annotation is int and type(value) is str and value.isascii() and value.isdigit():
        return int(value)
    return None


if RuntimeParam is not None:

    @dataclass(frozen=True)
    class _Direct(RuntimeParam):
        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if _plain(self.annotation, value):
                return list(value) if self.annotation == _LIST_OF_TEXT else value
            number = _number(self.annotation, value)
            if number is not None:
                return number
            typed = build_runtime_param(param.type_descriptor)
            return typed._coerce_value(value, param=param, ctx=ctx)


def install(params: Iterable[Any]) -> None:
    """Give each of a command's plain-typed parameters the direct coercion."""
    if RuntimeParam is None:
        return
    for param in params:
        if not isinstance(param, _TyperParameter) or param._runtime_param is not None:
            continue
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or descriptor.file_annotation is not None:
            continue
        info = descriptor.parameter_info
        if info.parser is not None or info.min is not None or info.max is not None:
            continue
        if descriptor.annotation in (str, bool, int) or descriptor.annotation == _LIST_OF_TEXT:
            param._runtime_param = _Direct(parameter_info=info, annotation=descriptor.annotation)
