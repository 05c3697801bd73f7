"""Which files a call changes, and how: what a shell command removes,
writes (a redirection, `cp`, `sed -i`), moves (`mv`, `git mv`) or puts back
as committed (`git checkout -- FILE`, `git restore FILE`), and what an
`apply_patch` text adds, updates, deletes or moves. The record's file marks
read these, as the stand-ins and the facts read the files a patch names."""

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
    """The files a shell command changes, each with how: "write" (the file
    made anew, or replaced whole), "edit" (added to, changed in place),
    "remove" (moved away), "move" (a file moved there) or "revert" (put back
    as committed); a file changed twice is named twice, its last change
    last (a redirection's counted first: `jq … > tmp && mv tmp f.json`)."""
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
    # Parsing the words costs: only where one of the commands read below may be.
    if (
        "cp " not in line
        and "mv " not in line
        and not ("sed " in line and "-i" in line)
        and not ("git " in line and ("checkout " in line or "restore " in line))
    ):
        return writes
    for words in _segments(line):
        if words[:1] == ["cp"]:
            named = [word for word in words[1:] if not word.startswith("-")]
            if len(named) == 2:
                writes.append((named[1], "write"))
        elif words[:1] == ["sed"] and any(w.startswith(("-i", "--in-place")) for w in words):
            writes += [(path, "edit") for path in _sed_files(words[1:])]
        elif words[:1] == ["mv"]:
            writes += _moves(words[1:], unsure=_MV_UNSURE)
        elif words[:2] == ["git", "mv"]:
            writes += _moves(words[2:], unsure=_GIT_MV_UNSURE)
        elif words[:2] in (["git", "checkout"], ["git", "restore"]):
            writes += [(path, "revert") for path in _restored(words[1], words[2:])]
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


# Flags that may leave a file where it was: mv's -n (--no-clobber) keeps a
# target that is there, -i asks (a shell without a terminal answers no), -u
# moves only onto an older target; git mv's -n only says what it would do,
# -k skips what it cannot move.
_MV_UNSURE = frozenset("niu")
_GIT_MV_UNSURE = frozenset("nk")
_MV_UNSURE_LONG = ("--no-clobber", "--interactive", "--update", "--dry-run")
# mv's long options that take a value.
_MV_VALUED = frozenset({"--target-directory", "--suffix"})
# What `git restore` may be told and still put the work tree's files back.
_RESTORE_FLAGS = frozenset({"-q", "--quiet", "-S", "--staged", "-W", "--worktree"})
# A word the shell expands (a variable, a glob): the file it names is not known.
_EXPANDS = frozenset("$*?[{`")


def _moves(words: list[str], *, unsure: frozenset[str]) -> list[tuple[str, str]]:
    """What `mv` (or `git mv`) with these arguments does: each source
    "remove", and where it lands "move" where that is sure: under its own
    name in a folder that is there (-t's, or the target of several sources,
    ".", ".."), in one the target names with a "/" when the source is a
    file's name (a directory would be renamed to it), or as the target when
    that is a file's name, or after -T; none where a word is expanded."""
    named, options = _options(words, valued="tS", valued_long=_MV_VALUED)
    folder: str | None = None
    whole = False
    for flag, value in options:
        long_unsure = flag.startswith("--") and flag.startswith(_MV_UNSURE_LONG)
        if long_unsure or (len(flag) == 2 and flag[1] in unsure):
            return []
        if flag in ("-t", "--target-directory"):
            folder = value
        whole = whole or flag in ("-T", "--no-target-directory")
    target = ""
    if folder is None:
        if len(named) < 2:
            return []
        *named, target = named
        there = target in (".", "..", "./", "../")
        if len(named) > 1 or there or (target.endswith("/") and _file_name(named[0])):
            folder, target = target, ""
    if any(_EXPANDS.intersection(word) for word in (*named, folder or target)):
        return []
    changes = [(source, "remove") for source in named]
    if folder is not None:
        changes += [(_under(folder, source), "move") for source in named]
    elif target and (whole or _file_name(target)):
        changes.append((target, "move"))
    return changes


def _options(
    words: list[str], *, valued: str, valued_long: frozenset[str]
) -> tuple[list[str], list[tuple[str, str]]]:
    """A command's operands, and its options each with its value: a short
    one of `valued` takes the word's rest or the next word (`-tDIR`, `-t
    DIR`), one of `valued_long` what follows its "=" or the next word; a
    cluster (`-fv`) is one option a letter. After `--` every word is an
    operand."""
    operands: list[str] = []
    options: list[tuple[str, str]] = []
    ended = False
    rest = iter(words)
    for word in rest:
        if ended or not word.startswith("-") or word == "-":
            operands.append(word)
        elif word == "--":
            ended = True
        elif word.startswith("--"):
            flag, equals, value = word.partition("=")
            options.append((flag, value if equals or flag not in valued_long else next(rest, "")))
        else:
            for at, letter in enumerate(word[1:], start=2):
                if letter in valued:
                    options.append((f"-{letter}", word[at:] or next(rest, "")))
                    break
                options.append((f"-{letter}", ""))
    return operands, options


def _file_name(path: str) -> bool:
    """Whether `path`'s last part has a suffix (`b.py`), as a file's name has."""
    return "." in path.rsplit("/", 1)[-1].lstrip(".")


def _under(folder: str, source: str) -> str:
    """Where `source` lands when moved into `folder`."""
    name = source.rstrip("/").rsplit("/", 1)[-1]
    return name if folder in (".", "./") else f"{folder.rstrip('/')}/{name}"


# What `git checkout` may be told before its `--` and still put the files
# back as committed; any other word (a branch, -p, --ours) leaves what they
# hold unsure. Without `--`, `git checkout NAME` may name a branch.
_CHECKOUT_WORDS = frozenset({"HEAD", "-q", "--quiet", "-f", "--force"})


def _restored(how: str, words: list[str]) -> list[str]:
    """The files `git checkout [HEAD] -- FILE…` or `git restore FILE…` (of
    the work tree: not --staged alone, which only unstages) put back as
    committed; none where any flag leaves that unsure (a --source but HEAD,
    -p, --ours)."""
    if how == "checkout":
        at = words.index("--") if "--" in words else -1
        files = words[at + 1 :] if at >= 0 and _CHECKOUT_WORDS.issuperset(words[:at]) else []
        return [] if any(_EXPANDS.intersection(word) for word in files) else files
    files, options = _options(words, valued="s", valued_long=frozenset({"--source"}))
    staged = worktree = False
    for flag, value in options:
        if flag in ("-s", "--source"):
            if value != "HEAD":
                return []
        elif flag not in _RESTORE_FLAGS:
            return []
        staged = staged or flag in ("-S", "--staged")
        worktree = worktree or flag in ("-W", "--worktree")
    if (staged and not worktree) or any(_EXPANDS.intersection(word) for word in files):
        return []
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
