"""What an action did to its files, as Relevant Files says it ("created",
"edited", "read", "removed", "edit failed"...), and whether it only looked:
read, searched, or asked about the machine, the shell or the repository.
The shell's part of it is filechanges': what a command removes or writes."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ctxpack.filechanges import QUOTED_RE, patch_changes, removes_files, shell_writes
from ctxpack.tools import SEARCH_TOOLS

# A file's mark when the last thing done to it took it away.
REMOVED = "removed"
# A file's mark when it was put back as committed (`git checkout -- f`): its
# edits are gone until a later change (CHANGED) makes it differ again.
REVERTED = "reverted"
# Marks that say a file is there: a later one undoes an earlier removal.
THERE = frozenset({"created", "edited", "read", REVERTED})
# Marks that change a file: a later one undoes an earlier revert.
CHANGED = frozenset({"created", "edited", REMOVED})
# Commands whose path arguments are only looked at.
_READERS = frozenset(
    {"cat", "head", "tail", "less", "more", "wc", "nl", "bat", "sed", "sort", "cut"}
)
# Search programs that are no agent's tool name (SEARCH_TOOLS holds those).
_SEARCHERS = frozenset({"rg", "ag", "ack", "fd", "tree"})
# The mark of each way a patch changes a file (filechanges.patch_changes).
_PATCHED = {"add": "created", "update": "edited", "delete": REMOVED}
# The mark of each way a shell command changes a file (filechanges.shell_writes):
# a move takes it away under its old name and makes it under the new one.
_WRITTEN = {
    "write": "created",
    "edit": "edited",
    "remove": REMOVED,
    "move": "created",
    "revert": REVERTED,
}
# Where one step of a shell command ends and the next begins.
_STEPS = re.compile(r"&&|\|\||[;|\n]")
# What makes `find` act on the files it finds.
_FIND_ACTS = frozenset({"-delete", "-exec", "-execdir", "-ok", "-okdir"})
# Programs that only answer, whatever they are given: is the file there,
# where am I, which program, who, what machine. What echo or printf prints
# into a file is a write, which looks_only finds first. `cd` moves no file.
_ASKERS = frozenset(
    {"test", "[", "[[", "true", "false", "cd", "pwd", "which", "whereis", "type", "whoami"}
    | {"id", "uname", "printenv", "echo", "printf"}
)
# Where a step's words run another command: its answer is that command's.
_SUBSTITUTIONS = ("$(", "`", "<(", ">(")
# git's commands that only show the repository.
_GIT_SHOWS = frozenset(
    {"status", "log", "diff", "show", "rev-parse", "rev-list", "ls-files", "ls-tree"}
    | {"cat-file", "describe", "shortlog", "blame", "merge-base", "grep"}
)
# git's options before its command that take the next word (`-C DIR`).
_GIT_TAKES = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})
# What makes `git config` read a setting rather than set one.
_GIT_GETS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l"})
# What `git branch`, `tag` and `remote` may be given and still only list:
# any other word names a branch, tag or remote to make, move or take away.
_GIT_LISTS = frozenset(
    {"-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "-l", "--list", "--show-current"}
)
_GIT_LISTERS = frozenset({"branch", "tag", "remote"})


def mark_of(kind: str, command: str | None, failed: bool, *, deletes: bool = False) -> str:
    """What an action of `kind` did to every file it names; `deletes`: its
    tool takes a file away."""
    if kind == "run":
        if failed:
            return ""
        if command and removes_files(command):
            return REMOVED
        return "read" if _reads(command.split() if command else []) else ""
    if failed:
        return f"{kind} failed"
    if deletes:
        return REMOVED
    return {"read": "read", "edit": "edited", "create": "created"}.get(kind, "")


def marks_by_file(
    *, kind: str, command: str | None, patch: str, paths: list[str], mark: str, failed: bool
) -> tuple[tuple[str, str], ...]:
    """Each file of a call that changes several files each its own way (a
    patch that adds one and deletes another; a command that reads one and
    writes another), with its mark; empty where every one of `paths` takes
    `mark`."""
    changes = patch_changes(patch) if patch else []
    if changes:
        return tuple((file, mark if failed else _PATCHED[how]) for file, how in changes)
    if kind != "run" or not command or failed:
        return ()
    # `cat > f.py << 'EOF'` writes f.py: its reader's mark is not f.py's.
    written = dict(shell_writes(command))
    # Where a move lands (`mv a.py lib/`: lib/a.py) is a file the command
    # names only through its parts.
    landed = [path for path, how in written.items() if how == "move" and path not in paths]
    if not landed and not any(path in written for path in paths):
        return ()
    return tuple((path, _WRITTEN.get(written.get(path, ""), mark)) for path in [*paths, *landed])


def moves(marked: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    """The moves among one action's file marks (marks_by_file): each file it
    removed with each it created (`mv a.py lib/`: a.py and lib/a.py)."""
    made = [path for path, mark in marked if mark == "created"]
    return {(path, new) for path, mark in marked if mark == REMOVED for new in made}


def looks_only(kind: str, command: str | None) -> bool:
    """An action that only looked: a read, a search, or a command that
    writes nothing, each of whose steps prints files, searches (a search
    tool's name run as a program: grep, find, ls) or asks (`test -f`,
    `pwd`, `date`, `git status`, `git config --get`, `node --version`)."""
    if kind in ("read", "search"):
        return True
    if kind != "run" or not command:
        return False
    # A redirection on a later line writes too (shell_writes reads the first).
    lines = command.split("\n") if "\n" in command else [command]
    if any(shell_writes(line) for line in lines):
        return False
    asks = not _substitutes(command)
    return all(
        _reads(words)
        or (words[0] in SEARCH_TOOLS and not _FIND_ACTS.intersection(words))
        or words[0] in _SEARCHERS
        or (asks and _asks(words))
        for words in _steps(command)
    )


def asks_only(command: str | None) -> bool:
    """A command each of whose steps only asks (looks_only's `pwd`, `test
    -f`, `git status`): it says where the agent was, not what it looked at."""
    if not command or _substitutes(command):
        return False
    return all(_asks(words) for words in _steps(command))


def _steps(command: str) -> list[list[str]]:
    """The words of each step of a shell command, quoted words blanked (an
    `&&` in a pattern ends no step)."""
    steps = (step.split() for step in _STEPS.split(QUOTED_RE.sub("''", command)))
    return [words for words in steps if words]


def _substitutes(command: str) -> bool:
    """Whether a command runs another inside its words (`$(…)`, backticks)."""
    return any(mark in command for mark in _SUBSTITUTIONS)


def _asks(words: list[str]) -> bool:
    """A step's words that only answer a question and change nothing."""
    program, args = words[0], words[1:]
    if program in _ASKERS or args == ["--version"]:
        return True
    if program == "git":
        return _git_shows(args)
    if program == "date":
        # `date -s WHEN`, `date --set=WHEN` and `date MMDDhhmm` set the clock.
        return not any(
            word.startswith(("-s", "--set")) or word.replace(".", "").isdigit() for word in args
        )
    if program == "command":
        return args[:1] in (["-v"], ["-V"])
    return program == "env" and not args


def _git_shows(args: list[str]) -> bool:
    """git's words after `git` that only show the repository or a setting."""
    at = 0
    while at < len(args) and args[at].startswith("-"):
        at += 2 if args[at] in _GIT_TAKES else 1
    if at >= len(args) or any(word.startswith("--output") for word in args):
        return False
    command, rest = args[at], args[at + 1 :]
    if command in _GIT_SHOWS:
        return True
    if command == "config":
        return rest[:1] in (["get"], ["list"]) or not _GIT_GETS.isdisjoint(rest)
    return command in _GIT_LISTERS and _GIT_LISTS.issuperset(rest)


def _reads(words: list[str]) -> bool:
    """A command's words that only print the files they name (not `sed -i`)."""
    # `sed -i` edits in place, `sort -o FILE` writes FILE.
    return (
        bool(words)
        and words[0] in _READERS
        and "-i" not in words
        and not any(word.startswith(("-o", "--output")) for word in words)
    )
