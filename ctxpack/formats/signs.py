"""How each format's files are told apart by their bytes: one rule per format,
most specific first, `openai` last.

The rules live here, away from the readers: telling a file's format then
imports no reader but its own, where importing every adapter would cost a
small call a sixth of its time. A rule is given the start of a file (or,
when no specific rule claims that, the whole file: a document's telling keys
may come late), so the rules of the document formats are made of Clues.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ctxpack.formats.base import Clue, Data, first_byte, holds

# A line's own top-level keys sit before its big nested values; looking at the
# start of each line is enough to tell the typed-line formats apart, even when
# a line is far longer than the detection head.
_LINE_PREFIX = 4096


def line_starts(head: Data, *, limit: int = 20) -> list[bytes]:
    starts = []
    # Found line by line: the head may be a whole large file, which splitting
    # would copy for the sake of its first lines.
    start = 0
    for _ in range(limit):
        end = head.find(b"\n", start)
        line = (head[start:] if end < 0 else head[start:end]).strip()
        if line:
            starts.append(line[:_LINE_PREFIX])
        if end < 0:
            break
        start = end + 1
    return starts


def any_line(head: Data, pattern: re.Pattern[bytes]) -> bool:
    return any(pattern.search(start) for start in line_starts(head))


# The line start Codex writes: timestamp, the ordinal (0.171 on), then the
# item's type tag, one of the RolloutItem variants.
CODEX_LINE_START = (
    rb'^\{\s*"timestamp"\s*:\s*"[^"]*"\s*,\s*(?P<ordinal>"ordinal"\s*:\s*(?P<n>\d+)\s*,\s*)?'
)
_CODEX = re.compile(
    CODEX_LINE_START + rb'"type"\s*:\s*"(session_meta|response_item|event_msg|turn_context|'
    rb"compacted|world_state|token_usage_record|inter_agent_communication(?:_metadata)?)"
    rb'"\s*,\s*"payload"\s*:'
)
_CLAUDE_STREAM = re.compile(
    rb'^\{\s*"type"\s*:\s*"(system|assistant|user|result)"\s*,\s*"message"\s*:\s*\{|'
    rb'^\{\s*"type"\s*:\s*"system"\s*,\s*"subtype"\s*:\s*"init"'
)
# Two patterns, not one alternation: a search for `A|^B` tries both at every
# byte of every line start, where `"…Uuid"` alone is searched from each quote.
_CLAUDE_CODE_KEY = re.compile(rb'"(parentUuid|leafUuid)"\s*:')
_CLAUDE_CODE_TYPE = re.compile(
    rb'\{\s*"type"\s*:\s*"(file-history-snapshot|queue-operation|'
    rb'permission-mode|last-prompt|ai-title)"'
)
_PI_HEADER = re.compile(rb'^\{\s*"type"\s*:\s*"session"\s*,[^\n]*"cwd"\s*:')
ATIF_VERSION = Clue(rb'"schema_version"\s*:\s*"ATIF-', b'"schema_version"')
ATIF_STEP = Clue(rb'"step_id"\s*:', b'"step_id"')
ATIF_SOURCE = Clue(rb'"source"\s*:\s*"(system|user|agent)"', b'"source"')
GEMINI_CONTENTS = Clue(
    rb'"role"\s*:\s*"model"'
    rb'|"parts"\s*:\s*\[\s*\{\s*"(text|thought|functionCall|functionResponse|inlineData|fileData)"',
    b'"model"',
    b'"parts"',
)
GEMINI_RECORDING = Clue(rb'"projectHash"\s*:\s*"', b'"projectHash"')
OPENCODE_SESSION = Clue(rb'"sessionID"\s*:\s*"ses_', b'"sessionID"')
OPENCODE_PARTS = Clue(rb'"parts"\s*:\s*\[', b'"parts"')
OPENHANDS_V0 = Clue(rb'"source"\s*:\s*"(agent|user|environment)"', b'"source"')
OPENHANDS_V0_KIND = Clue(rb'"(action|observation)"\s*:\s*"', b'"action"', b'"observation"')
OPENHANDS_V1 = Clue(
    rb'"kind"\s*:\s*"(SystemPromptEvent|MessageEvent|ActionEvent|ObservationEvent)"', b'"kind"'
)
SWE_AGENT_HISTORY = Clue(rb'"history"\s*:\s*\[\s*\{', b'"history"')
SWE_AGENT_MARKS = Clue(
    rb'"(message_type|trajectory|environment|replay_config)"\s*:|"agent"\s*:\s*"',
    *(b'"message_type"', b'"trajectory"', b'"environment"', b'"replay_config"', b'"agent"'),
)
SHAREGPT = Clue(rb'"conversations"\s*:\s*\[\s*\{\s*"(from|value)"', b'"conversations"')
ANTHROPIC_BLOCK = Clue(
    rb'"type"\s*:\s*"(tool_use|tool_result|thinking|redacted_thinking)"', b'"type"'
)
ANTHROPIC_SYSTEM = Clue(rb'"system"\s*:\s*["\[]', b'"system"')
# What only an OpenAI chat file holds: an Anthropic-looking file with these is OpenAI's.
ANTHROPIC_NOT = Clue(
    rb'"tool_calls"|"role"\s*:\s*"(tool|function)"', b'"tool_calls"', b'"tool"', b'"function"'
)


def codex(head: Data) -> bool:
    return any_line(head, _CODEX)


def claude_stream(head: Data) -> bool:
    return any_line(head, _CLAUDE_STREAM)


def claude_code(head: Data) -> bool:
    return any(
        _CLAUDE_CODE_TYPE.match(start) or _CLAUDE_CODE_KEY.search(start)
        for start in line_starts(head)
    )


def pi(head: Data) -> bool:
    starts = line_starts(head, limit=1)
    return bool(starts) and bool(_PI_HEADER.match(starts[0]))


def atif(head: Data) -> bool:
    if ATIF_VERSION.search(head):
        return True
    return ATIF_STEP.search(head) and ATIF_SOURCE.search(head)


def gemini(head: Data) -> bool:
    recording = GEMINI_RECORDING.search(head) and holds(head, b'"sessionId"')
    return recording or GEMINI_CONTENTS.search(head)


def opencode(head: Data) -> bool:
    return (
        first_byte(head) == b"{" and OPENCODE_SESSION.search(head) and OPENCODE_PARTS.search(head)
    )


def openhands(head: Data) -> bool:
    return OPENHANDS_V1.search(head) or (
        OPENHANDS_V0.search(head) and OPENHANDS_V0_KIND.search(head)
    )


def swe_agent(head: Data) -> bool:
    return SWE_AGENT_HISTORY.search(head) and SWE_AGENT_MARKS.search(head)


def sharegpt(head: Data) -> bool:
    return SHAREGPT.search(head)


def anthropic(head: Data) -> bool:
    if not holds(head, b'"role"') or ANTHROPIC_NOT.search(head):
        return False
    return ANTHROPIC_BLOCK.search(head) or (
        ANTHROPIC_SYSTEM.search(head) and holds(head, b'"messages"')
    )


def openai(head: Data) -> bool:
    return holds(head, b'"role"') or holds(head, b'"messages"') or holds(head, b'"traj"')


# Each format's rule, in the order detection tries them: most specific first.
RULES: dict[str, Callable[[Data], bool]] = {
    "codex": codex,
    "claude-stream-json": claude_stream,
    "claude-code": claude_code,
    "pi": pi,
    "atif": atif,
    "gemini": gemini,
    "opencode": opencode,
    "openhands": openhands,
    "swe-agent": swe_agent,
    "sharegpt": sharegpt,
    "anthropic": anthropic,
    "openai": openai,
}
