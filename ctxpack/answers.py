"""Commands whose exit status 1 is an answer, not a failure: `diff`, `cmp`
and `git diff --exit-code` found the files differ, `grep -c` counted no line, `test` and `[`
found their test false. Their failures exit 2. Each prints its answer in a
shape of its own, or nothing: exit status 1 with anything else printed came
from elsewhere in the command line (a `cd` before it that failed) and is a
failure.

Exit status 1 with nothing printed is an answer whatever the command
(tooloutput): a search that found no line says nothing."""

from __future__ import annotations

import re
import shlex

# A line of what diff prints: a normal diff's change commands and lines, a
# unified or context diff's headers, hunks and lines, a recursive diff's
# headers and notes, `diff -q`'s verdict.
_DIFF = re.compile(
    r"\d+(?:,\d+)?[acd]\d+(?:,\d+)?|[-+ <>!].*|[<>!]|@@ .*|\*\*\*.*"
    r"|\\ No newline at end of file|diff .*|Only in .*|(?:Binary )?[Ff]iles .* differ"
    r"|Common subdirectories: .*"
)
# Where the files differ (`cmp -b` adds the bytes), where the shorter one
# ends, or `cmp -l`'s offset and the two bytes.
_CMP = re.compile(
    r".* differ: (?:byte|char) \d+, line \d+(?: is .*)?|cmp: EOF on .*|\s*\d+\s+\d+\s+\d+"
)
# What `git diff` prints besides a diff's own lines: the headers of its
# extended format.
_GIT_DIFF = re.compile(
    rf"{_DIFF.pattern}|index [0-9a-f]+\.\.[0-9a-f]+(?: \d+)?|(?:new|deleted) file mode \d+"
    r"|(?:old|new) mode \d+|(?:similarity|dissimilarity) index \d+%|(?:rename|copy) (?:from|to) .*"
)
# `git diff` answers with its exit status only when told to: --exit-code and
# --quiet ask it, and comparing two paths outside a repository implies it.
_GIT_ANSWERING = frozenset({"--exit-code", "--quiet", "--no-index"})
# A count of no line, of a file's when grep counts in several.
_NO_COUNT = re.compile(r"(?:.*:)?0")
_NOTHING = re.compile(r"(?!)")
_ANSWERS = {"diff": _DIFF, "cmp": _CMP, "test": _NOTHING, "[": _NOTHING}
_COUNTERS = frozenset({"grep", "egrep", "fgrep", "rg"})
# Between commands: the exit status is the last one's.
_OPERATORS = frozenset({"&&", "||", ";", "|", "&", ";;", "|&"})


def answer_shape(command: str | None) -> re.Pattern[str] | None:
    """The shape of each line `command` prints when its exit status 1 is an
    answer; None for a command whose exit status 1 is a failure."""
    if not command:
        return None
    words = _last_command(command)
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1]
    if program in _COUNTERS:
        return _NO_COUNT if any(_counts(word) for word in words[1:]) else None
    if program == "git":
        answering = "diff" in words[1:] and not _GIT_ANSWERING.isdisjoint(words)
        return _GIT_DIFF if answering else None
    return _ANSWERS.get(program)


def is_answer(shape: re.Pattern[str], printed: str) -> bool:
    """Whether every line of `printed` has the answer's shape."""
    return all(shape.fullmatch(line) for line in printed.splitlines() if line.strip())


def _last_command(command: str) -> list[str]:
    """The words of the command whose exit status the command line exits
    with: the last of its last line."""
    lines = command.strip().splitlines()
    lexer = shlex.shlex(lines[-1] if lines else "", posix=True, punctuation_chars=True)
    try:
        words = list(lexer)
    except ValueError:
        return []
    at = max((i for i, word in enumerate(words) if word in _OPERATORS), default=-1)
    return words[at + 1 :]


def _counts(word: str) -> bool:
    """A grep option that counts: `-c`, or short options that hold it (`-rc`)."""
    if word == "--count":
        return True
    return word.startswith("-") and not word.startswith("--") and "c" in word[1:]
