"""Which files a call changes, and how: what a shell command removes or
writes (a redirection, `cp`, `sed -i`), and what an `apply_patch` text adds,
updates, deletes or moves. The record's file marks read these, as the
stand-ins and the facts read the files a patch names."""

from __future__ import annotations

import re
import shlex

_PATCH_FILE = re.compile(r"^\*\*\* (Update|Add|Delete) File: (.+)$", re.MULTILINE)
_MOVE_TO = re.compile(r"^\*\*\* Move to: (.+?)\s*$", re.MULTILINE)

# A command that only removes files: rm, unlink, rmdir or `git rm` (not
# --cached, which keeps the file), with nothing run after it but a shrug
# (`|| true`). A removal chained to more commands is not read as the
# file's last state: `rm -rf skills && git clone …/skills.git` makes it again.
_REMOVERS = frozenset({"rm", "unlink", "rmdir"})
_SHRUG = re.compile(r"\s*\|\|\s*(?:true|:)\s*$")


def removes_files(command: str) -> bool:
    """Whether `command` is one removal of the files it names."""
    plain = _SHRUG.sub("", command)
    if any(sep in plain for sep in ("&", ";", "|", "\n", "`", "$(")):
        return False
    words = plain.split()
    if not words:
        return False
    if words[0] == "git":
        return len(words) > 1 and words[1] == "rm" and "--cached" not in words
    return words[0] in _REMOVERS


# What a command writes is read from its first line: a heredoc's body below
# it is the file's text, not the shell's. A redirection into a file (`>`
# writes it whole, `>>` adds to it), not a descriptor's (`2>`, `&>`, `>&2`)
# nor one inside quotes; `cp SOURCE TARGET` writes TARGET whole; `sed -i`
# changes its files in place.
QUOTED_RE = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"")
_REDIRECT = re.compile(r"(?<![\d&>])(>>?)(?![&>|])\s*([^\s;&|<>()]+)")
_NOWHERE = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_SEPARATORS = frozenset(";&|")
_SED_SCRIPT_FLAGS = frozenset({"-e", "--expression", "-f", "--file"})


def shell_writes(command: str) -> list[tuple[str, str]]:
    """The files a shell command writes, each with how: "write" (the file
    made anew, or replaced whole) or "edit" (added to, changed in place)."""
    line = command.split("\n", 1)[0]
    writes = (
        [
            (path, "edit" if arrows == ">>" else "write")
            for arrows, path in _REDIRECT.findall(QUOTED_RE.sub(" ", line))
            if path not in _NOWHERE
        ]
        if ">" in line
        else []
    )
    # Parsing the words costs: only where cp or an in-place sed may be.
    if "cp " not in line and not ("sed " in line and "-i" in line):
        return writes
    for words in _segments(line):
        if words[:1] == ["cp"]:
            named = [word for word in words[1:] if not word.startswith("-")]
            if len(named) == 2:
                writes.append((named[1], "write"))
        elif words[:1] == ["sed"] and any(w.startswith(("-i", "--in-place")) for w in words):
            writes += [(path, "edit") for path in _sed_files(words[1:])]
    return writes


def _segments(line: str) -> list[list[str]]:
    """The words of each simple command of a shell line (split at ;, &&, ||,
    |, &), quotes removed; none where the line does not parse."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:
        return []
    segments: list[list[str]] = [[]]
    for word in words:
        if word and set(word) <= _SEPARATORS:
            segments.append([])
        elif word:
            segments[-1].append(word)
    return [words for words in segments if words]


def _sed_files(words: list[str]) -> list[str]:
    """The files of sed's arguments: what follows its script."""
    files: list[str] = []
    scripted = skip = False
    for word in words:
        if skip:
            skip = False
        elif word in _SED_SCRIPT_FLAGS:
            scripted = skip = True
        elif word.startswith("-"):
            continue
        elif not scripted:
            scripted = True
        else:
            files.append(word)
    return files


def patched_files(patch: str) -> list[str]:
    """The files an `apply_patch` text adds, updates or deletes."""
    return [found.group(2).strip() for found in _PATCH_FILE.finditer(patch)]


def patch_targets(patch: str) -> list[str]:
    """Every file an `apply_patch` text names: those it changes, then the new
    names of those it moves."""
    return [*patched_files(patch), *_MOVE_TO.findall(patch)]


def patch_changes(patch: str) -> list[tuple[str, str]]:
    """Each file an `apply_patch` text changes, in its order, with how: "add",
    "update" or "delete". A file it moves ("*** Move to:") is deleted under
    its old name and added under the new one."""
    headers = list(_PATCH_FILE.finditer(patch))
    changes: list[tuple[str, str]] = []
    for at, found in enumerate(headers):
        how, path = found.group(1).lower(), found.group(2).strip()
        end = headers[at + 1].start() if at + 1 < len(headers) else len(patch)
        moved = _MOVE_TO.search(patch, found.end(), end) if how == "update" else None
        if moved is not None:
            changes += [(path, "delete"), (moved.group(1), "add")]
        else:
            changes.append((path, how))
    return changes
