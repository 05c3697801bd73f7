"""Which tool outputs a later call made obsolete.

A file read is stale once the file is read again (the same range, or whole)
or changed; an edit's echo is stale once the file changes again or is read
whole; a command's output is stale once the same command runs again; any
other call is stale once the very same call (name and arguments) is repeated.
"""

from __future__ import annotations

from dataclasses import dataclass

from ctxpack.calls import CallInfo, one_line, short_path


@dataclass(frozen=True)
class Supersession:
    later: int  # index of the result that replaces this one
    why: str

    @property
    def reason(self) -> str:
        return f"superseded by #{self.later} ({self.why})"


def find_superseded(infos: dict[int, CallInfo]) -> dict[int, Supersession]:
    """Map result index -> the nearest later result that makes it obsolete."""
    full_read: dict[str, int] = {}
    range_read: dict[tuple[str, tuple[str, ...]], int] = {}
    changed: dict[str, int] = {}
    repeated: dict[str, int] = {}
    out: dict[int, Supersession] = {}
    for index in sorted(infos, reverse=True):
        info = infos[index]
        candidates: list[Supersession] = []
        for path in info.paths:
            shown = short_path(path, 60)
            if path in changed:
                candidates.append(Supersession(changed[path], f"{shown} changed"))
            if path in full_read:
                candidates.append(Supersession(full_read[path], f"{shown} read again"))
            if info.effect == "read" and info.read_range is not None:
                again = range_read.get((path, info.read_range))
                if again is not None:
                    candidates.append(Supersession(again, f"{shown} read again"))
        if info.repeat_key in repeated:
            why = f"`{one_line(info.command, 60)}` run again" if info.command else "same call again"
            candidates.append(Supersession(repeated[info.repeat_key], why))
        if candidates:
            out[index] = min(candidates, key=lambda s: s.later)
        _register(index, info, full_read, range_read, changed, repeated)
    return out


def _register(
    index: int,
    info: CallInfo,
    full_read: dict[str, int],
    range_read: dict[tuple[str, tuple[str, ...]], int],
    changed: dict[str, int],
    repeated: dict[str, int],
) -> None:
    for path in info.paths:
        if info.effect == "write":
            changed[path] = index
        elif info.effect == "read":
            if info.read_range is None:
                full_read[path] = index
            else:
                range_read[(path, info.read_range)] = index
    if info.repeat_key:
        repeated[info.repeat_key] = index
