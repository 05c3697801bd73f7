"""What of a user's message the user wrote, as against what they pasted into
it: terminal screens, listings, tables, stack traces, code blocks. The ledger
carries a pasted block with the rest of the message (it is the user's to show);
only the prose is read for goals, constraints, facts and changed values: a
box-drawn dialog or a crash log states nothing the user asked for. A file the
user dropped into the message is an attachment, not a sentence of theirs."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from ctxpack.facts.sentence import FENCE, sentences

# Characters a person does not type in prose: a screen's frame (box drawing
# and blocks, tree branches, braille spinners), and the check marks and
# prompts of terminal tools. A quote of an ask leaves out the framed lines
# only: a check mark may be typed in a line of prose.
_FRAME_CHARS = "\u2500-\u259f\u2800-\u28ff"
_SCREEN_CHARS = _FRAME_CHARS + "✔✖✓✗❯➜⎿"
_SCREEN = re.compile(f"[{_SCREEN_CHARS}]")
_PASTED_LINE = re.compile(
    r"""^\s*(?:
        \|.*\|                                  # a table row
      | at\s+\S+.*:\d+\)?                       # a JavaScript or Java stack frame
      | File\s".*",\sline\s\d+.*                # a Python stack frame
      | Traceback\s\(most\srecent\scall\slast\):
      | Node\.js\sv\d+\.\d+\.\d+                    # Node's last words after an uncaught error
      | Waiting\sfor\sthe\sdebugger\sto\sdisconnect\.\.\.
      | [-dlcbps][rwxsStT-]{9}[.@+]?\s.*        # ls -l
      | \$\s\S.*                                # a shell prompt
      | [{}\[\]]+,?                             # a brace alone on its line
    )\s*$""",
    re.VERBOSE,
)
# Text laid out in columns: two gaps of four spaces or more between words.
_COLUMNS = re.compile(r"\S {4,}\S.*\S {4,}\S")
# A Markdown line break is two trailing spaces; a terminal pads wider.
_MARKDOWN_BREAK = 2
_PARAGRAPH = re.compile(r"\n\s*\n")
# A Markdown heading: what a user pastes from a document, rarely what they type.
_HEADING = re.compile(r"^ {0,3}#{1,6}\s+\S")


# A file dropped into a terminal arrives as its absolute path, quoted or with
# its spaces escaped where it has any: '/Users/me/Shot 1.png', /tmp/a\ b.log.
# A bare path with no space is as likely typed, and is read as before.
_DROPPED = re.compile(
    r"""(?:'(?P<single>(?:/|[A-Za-z]:\\)[^'\n]+)'
      |"(?P<double>(?:/|[A-Za-z]:\\)[^"\n]+)"
      |(?P<bare>/(?:[^\s'"`\\]|\\.)*\\\ (?:[^\s'"`\\]|\\.)*))
    (?:\s+|$)""",
    re.VERBOSE,
)
# The file name a dropped path ends in: a name with an extension.
_FILE_NAME = re.compile(r"[^/\\]*[^/\\\s.][^/\\]*\.[A-Za-z0-9]{1,8}")


def dropped_file(sentence: str) -> tuple[str, str] | None:
    """The path of a file dropped at the start of a sentence, and the words
    after it ("" where the path is the whole sentence); None where the
    sentence does not open with one. A dropped file is what the user showed,
    not a note of theirs."""
    sentence = sentence.strip()
    mt = _DROPPED.match(sentence)
    if mt is None:
        return None
    single, double, bare = mt.group("single", "double", "bare")
    path = single or double or re.sub(r"\\(.)", r"\1", bare)
    name = re.split(r"[/\\]", path)[-1]
    if path.count("/") + path.count("\\") < 2 or not _FILE_NAME.fullmatch(name):
        return None
    return path, sentence[mt.end() :]


def pasted_line(line: str) -> bool:
    return bool(_SCREEN.search(line) or _PASTED_LINE.match(line) or _COLUMNS.search(line))


def prose(text: str) -> str:
    """`text` without its pasted blocks: a pasted document's section, fenced
    code, and every paragraph that holds a pasted line, less the prose lines
    before it that introduce it ("So this:"). A text of one line (a ledger
    entry) keeps its sentences that have no screen characters."""
    if "\n" not in text:
        return " ".join(s for s in sentences(text) if not _SCREEN.search(s))
    kept: list[str] = []
    for paragraph in _PARAGRAPH.split(_unfenced(_without_document(text))):
        lines = [line for line in paragraph.split("\n") if line.strip()]
        width = _screen_width(lines)
        flags = [pasted_line(line) or _padded(line, width) for line in lines]
        if not any(flags):
            kept.append(paragraph)
        elif not flags[0]:
            # Prose lines before the first pasted one stay: the user's framing.
            kept.append("\n".join(lines[: flags.index(True)]))
    return "\n\n".join(kept)


def closing_words(text: str) -> str | None:
    """The user's words that end a message right after something they pasted
    into it (a fenced block, a table, a trace, a screen, or a Markdown
    section, which runs from its heading on): its last paragraph, when that
    is prose. None for any other message. People paste first and then say
    what they want of it ("is this true for hooks as well?")."""
    blocks = _closed(text)
    if blocks is None:
        return None
    section = any(block.headed for block in blocks[:-1])
    return "\n".join(blocks[-1].lines) if blocks[-2].pasted or section else None


def _without_document(text: str) -> str:
    """`text` without the part of a document pasted into it: a Markdown
    section before the user's closing words that holds something pasted by
    its form (a fenced block, a table, a trace, a screen), from its heading on. Its
    sentences are the document's ("Pi relies on CLI tools invoked via bash
    rather than MCP."). A section of the user's own, rules under a heading
    of theirs with no such block in it, stays theirs."""
    blocks = _closed(text) if "#" in text else None
    if blocks is None:
        return text
    first = next((at for at, block in enumerate(blocks[:-1]) if block.headed), None)
    if first is None or not any(block.formed for block in blocks[first:-1]):
        return text
    return "\n\n".join("\n".join(block.lines) for block in [*blocks[:first], blocks[-1]])


@dataclass
class _Block:
    """A paragraph of a message (a fenced block is one) and what is in it."""

    lines: list[str] = field(default_factory=list)
    formed: bool = False  # something pasted by its form: fenced, a table, a trace, a screen
    headed: bool = False  # a Markdown heading outside a fence

    @property
    def pasted(self) -> bool:
        return self.formed or self.headed


def ends_in_screen(text: str) -> bool:
    """The message ends in a terminal screen the user copied (its prompts,
    its frame): what follows their last words is no words of theirs. A
    trace or a log may end in the error; a screen ends in a prompt."""
    blocks, _ = _paragraphs(text)
    if len(blocks) < 2:
        return False
    lines = blocks[-1].lines
    return any(_SCREEN.search(line) for line in lines) or _screen_width(lines) is not None


def _closed(text: str) -> list[_Block] | None:
    """The paragraphs of `text`, when the last is prose after another; else None."""
    blocks, inside = _paragraphs(text)
    if (
        len(blocks) < 2
        or inside
        or blocks[-1].pasted
        or _screen_width(blocks[-1].lines) is not None
    ):
        return None
    return blocks


def _paragraphs(text: str) -> tuple[list[_Block], bool]:
    """The paragraphs of `text`, and whether a fence is left open at its end."""
    blocks: list[_Block] = []
    block = _Block()
    inside = False
    for line in text.strip().split("\n"):
        if FENCE.match(line):
            inside = not inside
            block.lines.append(line)
            block.formed = True
        elif inside or line.strip():
            block.lines.append(line)
            if not inside and _HEADING.match(line):
                block.headed = True
            elif inside or pasted_line(line):
                block.formed = True
        elif block.lines:
            blocks.append(block)
            block = _Block()
    if block.lines:
        blocks.append(block)
    return blocks, inside


def _screen_width(lines: list[str]) -> int | None:
    """The width a terminal pads the lines of a screen copied off it to, with
    spaces: a length two or more lines ending in spaces share, one of them
    padded wider than a Markdown line break. A line the user typed is not
    padded out to the width of the lines beside it; the tail of a wrapped
    line copied off a screen ("newline and only displays the first line.")
    is no sentence of the user's."""
    lengths = Counter(len(line) for line in lines if line.endswith(" "))
    wide = {len(line) for line in lines if len(line) - len(line.rstrip(" ")) > _MARKDOWN_BREAK}
    shared = [length for length, count in lengths.items() if count > 1 and length in wide]
    return max(shared) if shared else None


def _padded(line: str, width: int | None) -> bool:
    return width is not None and (line.endswith(" ") or len(line) == width)


def _unfenced(text: str) -> str:
    out: list[str] = []
    inside = False
    for line in text.split("\n"):
        if FENCE.match(line):
            inside = not inside
            out.append("")
        elif not inside:
            out.append(line)
    return "\n".join(out)


_FRAME = re.compile(f"[{_FRAME_CHARS}]")
# A border drawn as wide as the terminal was, or the edges of boxes side by
# side: one frame character repeated, spaces or not between.
_BORDER = re.compile(f"([{_FRAME_CHARS}])(?:\\s*\\1)+")


def thin_borders(text: str) -> str:
    """`text` with each run of one frame character cut to one: a copied
    screen's borders span the terminal's width and say nothing, where the
    words inside them do (a ledger entry keeps a pasted screen)."""
    return _BORDER.sub(r"\1", text) if _FRAME.search(text) else text


# What stands for a pasted screen left out of a quote.
SCREEN_LEFT_OUT = "[a pasted screen]"


def without_screens(text: str) -> str:
    """`text` with each pasted terminal screen (box-drawn lines) left out and
    marked: what a quote of a user's ask keeps. A screen holds nothing to
    quote, where a pasted trace or table keeps its words."""
    if _FRAME.search(text) is None:
        return text
    kept: list[str] = []
    for line in text.split("\n"):
        if not _FRAME.search(line):
            kept.append(line)
        elif not kept or kept[-1] != SCREEN_LEFT_OUT:
            kept.append(SCREEN_LEFT_OUT)
    return "\n".join(kept)
