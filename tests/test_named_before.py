"""The facts an earlier record names in its action and file lines: an update
reads that record's text, not its archived turns, so once it no longer
shows such a line, those facts are candidates for its Preserved Facts, after
the round's own and the earlier record's preserved ones."""

from __future__ import annotations

import pytest

from ctxpack.facts.extract import Facts
from ctxpack.facts.preserved import preserved_facts_section
from ctxpack.summarize.offline.update import named_facts
from ctxpack.tokens.counter import TokenCounter
from tests.builders import call, result

AWK = "awk '/new Markdown\\($/,/)$/{print NR\": \"$0}' packages/tui/test/markdown.test.ts"


@pytest.mark.parametrize(
    ("line", "named"),
    [
        (f"60. Ran `{AWK} | head -40` — ok [tool: bash]", Facts(commands=[f"{AWK} | head -40"])),
        # A script is known by its first line, as the record names it.
        (
            "61. Ran `cat > /tmp/fix.sed << 'EOF'` (a 7-line script) — ok [tool: bash]",
            Facts(commands=["cat > /tmp/fix.sed << 'EOF'"]),
        ),
        (
            '8. Ran `` echo `date` `` (3 times) — ok, printed "Fri" [tool: bash]',
            Facts(commands=["echo `date`"]),
        ),
        (
            "69. Ran `npm run check` — failed, npm error command failed [tool: bash]",
            Facts(commands=["npm run check"], errors=["npm error command failed"]),
        ),
        (
            "12. Ran `git checkout docs/a.rlog` — exit 128, fatal: pathspec 'docs/a.rlog' did"
            " not match any file(s) known to git [tool: exec_command]",
            Facts(
                commands=["git checkout docs/a.rlog"],
                errors=["fatal: pathspec 'docs/a.rlog' did not match any file(s) known to git"],
            ),
        ),
        # grep's exit 1 says it found nothing: no error.
        (
            '77. Ran `grep -n "italic" a.ts` — exit 1, nothing printed [tool: bash]',
            Facts(commands=['grep -n "italic" a.ts']),
        ),
        (
            "6. Edited /testbed/src/fields.py — failed, IndentationError: unexpected indent"
            " [tool: edit]",
            Facts(paths=["/testbed/src/fields.py"], errors=["IndentationError: unexpected indent"]),
        ),
        (
            "64. Read packages/tui/test/chat-simple.ts (2 times) — ok [tool: read]",
            Facts(paths=["packages/tui/test/chat-simple.ts"]),
        ),
        (
            "9. Ran `git show 3f2a9c1d` — ok [tool: bash]",
            Facts(commands=["git show 3f2a9c1d"], identifiers=["3f2a9c1d"]),
        ),
        (
            "3. Ran `pip install ruff==0.6.9` — ok [tool: bash]",
            Facts(commands=["pip install ruff==0.6.9"], identifiers=["0.6.9"]),
        ),
        (
            "4. Fetched https://example.com/a — ok [tool: web_fetch]",
            Facts(urls=["https://example.com/a"]),
        ),
        # A clipped command or error would name one that never was.
        (
            "253. Ran `mkdir -p ~/.pi/agent/themes && cp $(npm root -g)/x/dark.json ~/.pi/…`"
            " — exit 1, src/config.ts:897:35 - error TS2339: Property 'activeTeam' does not"
            " exist on type 'InferMerge… [tool: bash]",
            Facts(),
        ),
        # A search's pattern is no command.
        ("5. Searched `TODO` in src — found 3 matches [tool: grep]", Facts()),
        ("- (+124 other actions not shown)", Facts()),
    ],
)
def test_an_action_line_names_its_command_file_error_and_ids(line: str, named: Facts) -> None:
    assert named_facts(f"## Completed Actions\n{line}\n") == named


def test_the_files_an_earlier_record_lists_are_named_first() -> None:
    record = (
        "## Completed Actions\n"
        "1. Read /tmp/notes.md — ok [tool: read]\n"
        "\n## Relevant Files\n"
        "- packages/coding-agent/README.md — edited, read\n"
        "- /tmp/notes.md — read\n"
        "- (+3 more)\n"
    )
    assert named_facts(record) == Facts(paths=["packages/coding-agent/README.md", "/tmp/notes.md"])
    assert named_facts(None) == Facts()


def test_what_an_earlier_record_named_comes_last_and_is_counted_when_cut(
    counter: TokenCounter,
) -> None:
    """This round's facts, then the earlier record's preserved ones, then
    what its lines named that the new record does not mention; cut first
    when the room runs short, and counted."""
    middle = [
        call("c1", "bash", {"command": "make test"}),
        result("c1", "ok"),
    ]
    earlier = ["- Error: TS2322: Type 'string' is not assignable"]
    named = Facts(
        paths=["/tmp/fix_markdown.py", "src/shown.py"],
        commands=[f"{AWK} | head -40", "make test"],
    )
    record = "## Relevant Files\n- src/shown.py — edited"
    whole = preserved_facts_section(
        middle, record, counter=counter, cap_tokens=500, earlier=earlier, named=named
    )
    assert whole.text.splitlines()[2:] == [
        "- Command: `make test`",
        "- Error: TS2322: Type 'string' is not assignable",
        f"- Command: `{AWK} | head -40`",
        "- Path: /tmp/fix_markdown.py",
    ]
    assert whole.unshown == 0
    # Room for the first two and the count: the named facts go, counted.
    room = counter.text("\n".join(whole.text.splitlines()[:4])) + 12
    tight = preserved_facts_section(
        middle, record, counter=counter, cap_tokens=room, earlier=earlier, named=named
    )
    assert tight.text.splitlines()[2:] == [
        "- Command: `make test`",
        "- Error: TS2322: Type 'string' is not assignable",
        "- (+2 more facts not shown)",
    ]
    assert tight.unshown == 2
