"""The fast fact scanners find exactly what their plain definitions find,
and extraction stays linear and shared between the summarizer, the
preserved-facts section and the retention check."""

from __future__ import annotations

import json
import re
import time

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from ctxpack import formats, printed, tooloutput
from ctxpack import messages as m
from ctxpack.facts.extract import extract_facts
from ctxpack.facts.match import Haystack, collapse, dedupe, folded, mentions
from ctxpack.facts.paths import clean_path, looks_like_path, paths_in_text
from ctxpack.facts.preserved import preserved_facts_section
from ctxpack.facts.text import identifiers_in, values_in, versions_in
from ctxpack.prune import shown
from ctxpack.redact import PATTERNS, mask
from ctxpack.sessionindex import SessionIndex
from ctxpack.summarize.offline.actions import clip
from ctxpack.summarize.offline.scan import scan
from ctxpack.summarize.offline.sections import unresolved_failures
from ctxpack.tokens.counter import TokenCounter
from ctxpack.tooloutput import error_lines
from ctxpack.transcript import Message
from tests.conftest import FIXTURES, TAU_BENCH

CODEX = FIXTURES / "codex" / "Trezo-Ai__codex-session.jsonl"
HAIKU = FIXTURES / "claude-code" / "openagents__regex-log__haiku-testgen-v2.jsonl"

# ---- the plain definitions: one regex over the whole text ------------------

UUID = re.compile(
    r"(?<![\w-])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![\w-])"
)
HEX = re.compile(r"(?<![\w#-])(?<!\d\.)(?:[0-9a-f]{64}|[0-9a-f]{7,40})(?![\w-])")
UNITS = (
    r"%|[KMGTP]i?B|bytes?|ms|µs|ns|s|secs?|seconds?|mins?|minutes?|hrs?|hours?|days?|weeks?"
    r"|GHz|MHz|kHz|Hz|km|cm|mm|kg|mg|lbs?|tokens"
)
NUMBER_UNIT = re.compile(
    rf"(?<![\w.$\-\u2013])(?:\d+(?:[.,]\d+)?[-\u2013])?\d+(?:[.,]\d+)?(?:\s?(?:{UNITS}))(?![\w/%-])"
)
MONEY = re.compile(r"(?<![\w-])[$€£](?>\d+(?:,\d{3})*(?:\.\d+)?)(?![\w-])")
DECADE = re.compile(r"(?:^|[-\u2013])(?:1[0-9]|20)\d0s$")
ERROR = re.compile(
    r"""^\s*(?:E\s+|[-*]\s+)?(?:[A-Z]\d{3,4}\s+)?(
        (?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?::\s.*)?
      | Error:\s.+ | FAILED\s.+ | fatal:\s.+
      | (?:\S+?(?:\(\d+,\d+\)|(?::\d+){1,2})(?::|\s-)\s)?(?:fatal\s)?
        error(?:\[E\d{4}\]|\sTS\d+)?:\s(?![{\[])(?!.*,$).+
      | npm\sERR!.* | thread\s'[^']*'\spanicked.* | panic:\s.+
    )$""",
    re.MULTILINE | re.VERBOSE,
)
PATHISH = re.compile(r"[/\\]|\.[A-Za-z]")


def plain_identifiers(text: str) -> list[str]:
    found = [(mt.start(), mt.group(0)) for mt in UUID.finditer(text)]
    blanked = UUID.sub(lambda u: " " * len(u.group(0)), text)
    for mt in HEX.finditer(blanked):
        token = mt.group(0)
        if any(c.isdigit() for c in token) and any(c.isalpha() for c in token):
            found.append((mt.start(), token))
    found.sort(key=lambda pair: pair[0])
    return dedupe(token for _, token in found)


def plain_values(text: str) -> list[str]:
    out = [(mt.start(), mt.group(0)) for mt in NUMBER_UNIT.finditer(text)]
    out = [(at, v) for at, v in out if not DECADE.search(v)]
    out.extend((mt.start(), mt.group(0)) for mt in MONEY.finditer(text))
    out.sort(key=lambda pair: pair[0])
    return dedupe(value for _, value in out)


def plain_mask(text: str) -> str:
    """Every secret pattern tried on the text, without the substring checks."""
    for secret in PATTERNS:
        text = secret.pattern.sub(secret.replace, text)
    return text


# No number of a version has a leading zero.
VERSION = re.compile(
    r"(?<![\w.-])(?:v(?:0|[1-9]\d*)(?:\.(?:0|[1-9]\d*)){1,3}"
    r"|(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)\.(?:0|[1-9]\d*))"
    r"(?:[-+]?(?:rc|a|b|alpha|beta|dev|post)\d*)?"
    r"(?:-[0-9A-Za-z]+(?:[.-][0-9A-Za-z]+)*)?(?![\w-]|\.\d)"
)


def plain_informative_line(body: str, *, prefer_error: bool) -> str:
    """The last line each pattern matches, in the order of preference: each
    line searched on its own."""
    lines = shown.nonblank_lines(body)[-200:]
    if not lines:
        return ""
    strong, weak, summary = (
        shown._QUOTE_STRONG,
        shown._QUOTE_WEAK,
        shown._QUOTE_SUMMARY,
    )
    for pattern in (strong, weak, summary) if prefer_error else (summary, strong, weak):
        for line in reversed(lines):
            if pattern.search(line) and not set(line.strip()) <= set("=-_*#~+ "):
                return shown._quote(line)
    return shown._quote(lines[-1])


def plain_unwrap(text: str) -> str:
    """Every agent wrapper's pattern tried on the text, without the word checks."""
    cut = text.find("\nOutput:\n", 0, 600)
    if cut >= 0 and printed._CODEX_HEADER.match(text[:cut]):
        text = text[cut + len("\nOutput:\n") :]
    text = printed._CLAUDE_EXIT.sub("", text)
    head = printed._GEMINI_HEAD.match(text)
    if head is not None:
        tail = printed._GEMINI_TAIL.search(text[head.end() :])
        text = text[head.end() :][: tail.start() if tail else None]
    for pattern in (
        printed._OPENHANDS_SUFFIX,
        printed._SWE_FOOTER,
    ):
        text = pattern.sub("", text)
    text = printed._ERROR_TAG.sub("", printed._REMINDER.sub("\n", text))
    return text.replace("\r\n", "\n").strip("\n")


def plain_words(text: str) -> list[str]:
    """The candidate words of paths_in_text when nothing is quoted or linked."""
    found = []
    for mt in re.finditer(r"\S+", text):
        if PATHISH.search(mt.group(0)):
            candidate = clean_path(mt.group(0))
            if looks_like_path(candidate):
                found.append(candidate)
    return dedupe(found)


def plain_mentions(haystack: str, fact: str) -> bool:
    needle = collapse(fact)
    pattern = rf"(?<![\w-]){re.escape(needle)}(?![\w-])"
    return bool(needle) and re.search(pattern, haystack) is not None


def fixture_texts() -> list[str]:
    texts: list[str] = []
    for path in (CODEX, HAIKU, TAU_BENCH):
        transcript = formats.read(path.read_bytes(), path=str(path))
        for session in transcript.sessions[:5]:
            texts.extend(m.text(msg) for msg in session.messages)
    return texts


# Text built from the pieces the scanners care about, non-ASCII ones included.
PIECES = [
    *"0123456789abcdefABCDEF-_#$€£%./\\:'\"` \t\n\xa0\u2028é",
    *("ms", " GB", "KiB", "s", "tokens", "minutes", "µs", "1990s", "1,5", "2.5"),
    *("sk-", "ghp_", "AKIA", "xox", "AIza", "password=", "Token: ", "Bearer ", "BEARER "),
    *("sk-ant-", "github_pat_", "eyJ", ".eyJ", "://u:p@", "--api-key ", "secret: ", "KEY="),
    *("-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "ſ", "K", "İ"),
    *("a.py", "src/x.ts", "C:\\x\\y", "http://a.io/b", "e.g.", "~/", "../", "Node.js"),
    *("12345678-1234-1234-1234-123456789abc", "deadbeef1", "a1b2c3d4e5f6a7b8c9d0", "cafebabe"),
    *("Error: x", "FooError", "E ", "FAILED t", "\n\n\n", "exit code 1"),
    *("isError", "error: ", "{", ",", "mod.", "Exception"),
    *("(28,2)", ":12", " - ", "fatal ", " TS2339", "a.c:3:5: error: "),
]
texts = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_scanners_match_their_plain_definitions(text: str) -> None:
    assert identifiers_in(text) == plain_identifiers(text)
    assert values_in(text) == plain_values(text)
    assert mask(text) == plain_mask(text)
    if not any(c in text for c in "\"'`") and "://" not in text and ":\\" not in text:
        assert paths_in_text(text) == plain_words(text)
    found = dedupe(mt.group(1).strip()[:300] for mt in ERROR.finditer(text))[:5]
    if found:
        assert error_lines(text) == found


def test_scanners_match_their_plain_definitions_on_real_text() -> None:
    for text in fixture_texts():
        assert identifiers_in(text) == plain_identifiers(text)
        assert values_in(text) == plain_values(text)
        assert mask(text) == plain_mask(text)
        assert versions_in(text) == dedupe(mt.group(0) for mt in VERSION.finditer(text))
        for prefer_error in (True, False):
            expected = plain_informative_line(text, prefer_error=prefer_error)
            assert shown.informative_line(text, prefer_error=prefer_error) == expected
        assert printed.unwrap(text, None) == plain_unwrap(text)


# What reading a tool output looks for: versions, the lines worth quoting, the
# wrappers agents put around an output (odd case folds included).
OUTPUT_PIECES = [
    *"0123456789.v -\t\n\r\u2028=#x",
    *("1.2.3", "v2.0", "rc1", "3.11", "١.٢.٣", "error", "ERROR", "Failed", "FAILED", "fatal"),
    *("passed", "ok", "OK", "done", "3 tests", "5 total", "5\ttotal", "E  ", "e\t\t", "Ex"),
    *("! [rejected]", "timeout", "TIMED OUT", "not found", "✓", "✗", "====", "success"),
    *("Summary", "completed", "Traceback", "panic", "denied", "FooError", "ſ", "ı", "İ", "K"),
    *("Exit code 1\n", "Exit code: 0\n", "[The command completed with exit code 2.]"),
    *("[The command has no new output after 30 seconds.]", "(Open file: a.py)\n"),
    *("(Current directory: /x)\n", "bash-$ ", "<system-reminder>", "</system-reminder>"),
    *("<tool_use_error>", "</tool_use_error>", "\r\n", "\n\n", "successful", "Ⅰok", "ǅ"),
    *("Output: ", "Stdout: ", "Command: ls\n", "Directory: (root)\n", "\nExit Code: 1"),
    *("\nProcess Group PGID: 7", "\nError: (none)", "\nSignal: (none)", "Stderr: (empty)"),
]
JSON_PIECES = [
    *"{}[]:, \n",
    *(
        '"a"',
        '"\\ud800"',
        '"é"',
        "1",
        "-0",
        "1.5",
        "1e400",
        "12345678901234567890",
        "123456789012345678901234",
        "NaN",
    ),
    *("true", "null", '"a":', '{"a":1}', "[" * 30, "]" * 30),
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(OUTPUT_PIECES), max_size=40).map("".join))
def test_output_readers_match_their_plain_definitions(text: str) -> None:
    assert versions_in(text) == dedupe(mt.group(0) for mt in VERSION.finditer(text))
    for prefer_error in (True, False):
        expected = plain_informative_line(text, prefer_error=prefer_error)
        assert shown.informative_line(text, prefer_error=prefer_error) == expected
    assert printed.unwrap(text, None) == plain_unwrap(text)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(JSON_PIECES), max_size=30).map("".join))
@example("[123456789012345678901234]")
@example('{"a": NaN, "b": 1e400}')
@example('{"a": 1, "a": [2, 2.5, "\\ud800", -0]}')
@example("[" * 3000 + "]" * 3000)
@example(' {"a": 1} x')
def test_an_output_is_parsed_as_the_standard_library_parses_it(text: str) -> None:
    try:
        expected = json.loads(text.strip())
    except (ValueError, RecursionError):
        expected = None
    if not text.strip()[:1] or text.strip()[0] not in "[{":
        expected = None
    found = printed.parse_json(text)
    assert repr(found) == repr(expected)
    assert type(found) is type(expected)


FAILURE_PIECES = [
    *JSON_PIECES,
    *('"error":', '"success":', '"is_error":', '"\\u0065rror":', "false", '"x"', "0", "1"),
    *(" exit code 1", "Traceback", "1 failed in 2s", "\t"),
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(FAILURE_PIECES), max_size=20).map("".join))
@example('{"error": "denied"}')
@example('{"\\u0065rror": "denied"}')
@example(' {"success": false}')
@example('[{"error": "x"}]')
@example('{"is_error": true}')
def test_a_failure_is_read_as_parsing_every_output_reads_it(text: str) -> None:
    # The JSON is parsed only where it may name a failure: the verdict is the
    # one parsing every output gives.
    for code in (None, 0, 1):
        value = printed.parse_json(text)
        expected = tooloutput._failed(text, code=code, value=value, flagged=False)
        assert tooloutput.failed_with_code(text, code=code) is expected


RUNNING_PIECES = [*PIECES, "still", "STILL", " ", "running", "RUNNİNG"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(RUNNING_PIECES), max_size=30))
@example(["ſtill running"])
@example(["Still Running"])
def test_still_running_matches_its_plain_regex(pieces: list[str]) -> None:
    text = "".join(pieces)
    head = text[:400]
    expected = bool(re.search(r"Process running with session ID (\d+)", head)) or bool(
        re.search("still running", head, re.IGNORECASE)
    )
    assert tooloutput.still_running(text) is expected


PATH_PIECES = [*"ab ./\\\t\n\xa0\u2028\x1c-_:~@", "a.py", "src/x.ts", "e.g.", "~/", "../", "x.js"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PATH_PIECES), max_size=30).map("".join))
def test_path_words_are_the_whitespace_separated_ones(text: str) -> None:
    # A drive letter (a:\\) starts a Windows path inside a word: plain_words does not model it.
    assume(":\\" not in text)
    assert paths_in_text(text) == plain_words(text)


facts = st.lists(st.sampled_from(PIECES), min_size=1, max_size=4).map("".join)


@settings(max_examples=300, deadline=None)
@given(texts, st.lists(facts, min_size=1, max_size=3))
def test_haystack_mentions_as_the_plain_regex(text: str, asked: list[str]) -> None:
    # The first lookups scan the text, later ones read its indexed runs first.
    scanning, indexed = Haystack(text), Haystack(text)
    for _ in range(Haystack.SCANS):
        indexed.mentions(text)
    assert scanning.text == indexed.text == collapse(text)
    for fact in asked:
        expected = plain_mentions(collapse(text), fact)
        assert scanning.mentions(fact) == indexed.mentions(fact) == expected
        assert mentions(collapse(text), fact) == expected


@settings(max_examples=200, deadline=None)
@given(texts, st.integers(min_value=2, max_value=80))
def test_clip_of_a_long_text_reads_only_its_start(text: str, limit: int) -> None:
    whole = collapse(mask(text * 20))
    expected = whole if len(whole) <= limit else whole[: limit - 1].rstrip() + "…"
    assert clip(text * 20, limit) == expected


def test_folded_only_where_lowercase_search_equals_ignorecase_regex() -> None:
    assert folded("Make SURE") == "make sure"
    assert folded("Déjà MUST") == "déjà must"
    # These four letters match ASCII ones case-insensitively; lower() keeps
    # or mangles three of them, so such text goes to the regex.
    for odd in ("muſt", "ınstead", "İnstead"):
        assert folded(odd) is None
    assert folded("\u212aey") == "key"  # the Kelvin sign lowercases to k


def test_blank_runs_in_tool_output_stay_linear() -> None:
    output = "E\n" + "\n" * 300_000 + "FooError: broken\n" + " \n" * 100_000 + "panic: boom"
    started = time.perf_counter()
    found = error_lines(output)
    assert time.perf_counter() - started < 2
    assert found == ["FooError: broken", "panic: boom"]


# ---- one extraction shared by the summarizer, the section and eval --------


def test_facts_are_per_message_so_parts_merge_to_the_whole() -> None:
    transcript = formats.read(CODEX.read_bytes(), path=str(CODEX))
    messages = transcript.sessions[0].messages
    half = len(messages) // 2
    first, second = extract_facts(messages[:half]), extract_facts(messages[half:])
    whole = extract_facts(messages)
    for name, items in whole.categories():
        assert items == dedupe([*getattr(first, name), *getattr(second, name)])
    assert whole.paths and whole.commands


def test_preserved_facts_reuse_the_scan_and_see_added_messages(counter: TokenCounter) -> None:
    transcript = formats.read(HAIKU.read_bytes(), path=str(HAIKU))
    middle = transcript.sessions[0].messages[2:-5]
    extra: Message = {"role": "user", "content": "Never touch /etc/hosts or deadbeef1234567."}
    fresh = preserved_facts_section([*middle, extra], "", counter=counter, cap_tokens=100_000).text
    index = SessionIndex(middle)
    memo = index.facts
    scan(middle, index=index)
    assert all(memo.known(msg) is not None for msg in middle)
    assert memo.known(extra) is None
    reused = preserved_facts_section(
        [*middle, extra], "", counter=counter, cap_tokens=100_000, memo=memo
    ).text
    assert reused == fresh
    assert "/etc/hosts" in reused and "deadbeef1234567" in reused
    # A copy is another message: the memo knows objects, not look-alikes.
    assert memo.known(dict(middle[0])) is None


def test_equal_messages_are_read_once_but_each_keeps_its_role() -> None:
    user: Message = {"role": "user", "content": "Always run tests/test_a.py first."}
    again = dict(user)
    assistant: Message = {"role": "assistant", "content": "Always run tests/test_a.py first."}
    index = SessionIndex([user, again, assistant])
    memo = index.facts
    found = scan(index.messages, index=index)
    assert found.facts.directives == ["Always run tests/test_a.py first."]
    assert found.facts.paths == ["tests/test_a.py"]
    assert memo.known(again) is memo.known(user)
    assert memo.known(assistant) == (("paths", ("tests/test_a.py",), ("tests/test_a.py",)),)


def test_unresolved_failures_as_their_definition() -> None:
    transcript = formats.read(CODEX.read_bytes(), path=str(CODEX))
    done = [a for a in scan(transcript.sessions[0].messages).actions if not a.pending]
    # What the user aborted is neither a failure to resolve nor a success.
    expected = [
        a
        for i, a in enumerate(done)
        if a.failed
        and not a.aborted
        and not any(
            (not b.failed and (b.key == a.key or b.head == a.head))
            or (b.failed and b.head == a.head)
            for b in done[i + 1 :]
            if not b.aborted
        )
    ]
    assert unresolved_failures(done) == expected
    assert any(a.failed for a in done) and any(a.aborted for a in done)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_a_value_or_version_found_in_a_text_stands_in_it_on_its_own(text: str) -> None:
    # The retention check looks a value up as the extractor took it: a value
    # it could not find would read as lost from a transcript nothing changed.
    haystack = Haystack(text)
    for value in [*values_in(text), *versions_in(text)]:
        assert haystack.mentions(value), value


def test_a_range_is_one_value() -> None:
    assert values_in("a flight within 3-4 hours of the first") == ["3-4 hours"]
    assert values_in("100-1000 Hz, 1.5\u20132.5 GB and 5s") == [
        "100-1000 Hz",
        "1.5\u20132.5 GB",
        "5s",
    ]
    assert values_in("UTC-4 hours, a3-4 hours, 10-20-30 ms, 1990s-2000s") == []
    assert values_in("$1,000, then $1.50x and 5ms-long") == ["$1,000"]


def test_a_pre_release_is_part_of_the_version() -> None:
    text = "npm error workspace @google/gemini-cli@0.36.0-nightly.20260317.2f90b4653\n"
    assert versions_in(text) == ["0.36.0-nightly.20260317.2f90b4653"]
    assert versions_in("Python 3.11.4rc1, v1.2 and lib-1.2.3-x") == ["3.11.4rc1", "v1.2"]
