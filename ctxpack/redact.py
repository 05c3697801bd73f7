"""Masking secrets: before text leaves the machine, in what the offline
summary and the preserved facts quote, and (with --redact) in the output.

Each pattern replaces a secret by `[REDACTED:kind]`. The markers contain no
quotes or backslashes, so text inside a JSON string stays valid JSON, and a
marker never matches a pattern again: redacting twice changes nothing.

Masking runs over every text of long transcripts, so each pattern comes with
the substrings any match of it holds, and a text holding none of them skips
the regex.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from ctxpack import messages as m
from ctxpack.facts.match import folded
from ctxpack.transcript import Message

MARK = "[REDACTED:"

# Words that, ending an identifier, make its value a secret: `GITHUB_TOKEN=`
# and `db_password:` match, `max_tokens`, `tokenizer` or `token_count` do not
# (the separator must follow the word at once).
_SECRET_WORD = (
    r"(?:password|passwd|passphrase|secret|token|api[_\-]?key|apikey|access[_\-]?key"
    r"|secret[_\-]?key|private[_\-]?key|credentials?|auth[_\-]?key)"
)
SECRET_NAME_RE = re.compile(rf"^[A-Za-z0-9_.\-]*{_SECRET_WORD}$", re.IGNORECASE)

# Values that are references or placeholders rather than secrets.
_NOT_A_SECRET = re.compile(
    r"^(?:\$\{?[A-Za-z_]|<[^>]*>?$|\*+$|x+$|\.\.\.|%\(|\{\{|null$|none$|true$|false$"
    r"|undefined$|os\.environ|getenv|process\.env|env\[|\d+$|\[REDACTED"
    # type annotations: `api_key: Option<String>`, `token: Optional[str]`
    r"|(?:Option|Optional|Vec|Box|Result|Union|List|Dict)[<\[]|&?str$|String$"
    # documentation placeholders: `password="yourpassword"`, `YOUR_API_KEY`
    r"|(?:your|my)[_\-]?[a-z_\-]*$|changeme$|example$|placeholder$)",
    re.IGNORECASE,
)

_Replacer = Callable[["re.Match[str]"], str]


def _fixed(kind: str, *, suffix: str = "") -> _Replacer:
    return lambda _match: f"{MARK}{kind}]{suffix}"


def _assignment(match: re.Match[str]) -> str:
    groups = match.groupdict()
    value = groups.get("qvalue") or groups.get("value") or ""
    if _NOT_A_SECRET.match(value):
        return match.group(0)
    kind = "password" if "pass" in groups["name"].lower() else "secret"
    quote = groups.get("quote") or ""
    return f"{groups['name']}{groups['sep']}{quote}{MARK}{kind}]{quote}"


_B = r"(?<![A-Za-z0-9_\-])"  # not in the middle of a longer word
_E = r"(?![A-Za-z0-9_\-])"


class _Secret(NamedTuple):
    kind: str
    # Any match holds one of these (in the lowercased text when `folds`).
    hints: tuple[str, ...]
    folds: bool
    pattern: re.Pattern[str]
    replace: _Replacer


_KEY_WORDS = ("pass", "secret", "token", "key", "credential")

PATTERNS: tuple[_Secret, ...] = (
    _Secret(
        "private-key",
        ("-----BEGIN ",),
        False,
        re.compile(
            # The body (base64, header lines, escaped newlines) cannot contain
            # "-----", so each key is scanned once, ending at its END line or
            # where a cut left it.
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[A-Za-z0-9+/=\s\\:,.()]|-(?!----))*"
            r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)?"
        ),
        _fixed("private-key"),
    ),
    _Secret(
        "anthropic-key",
        ("sk-ant-",),
        False,
        re.compile(_B + r"sk-ant-[A-Za-z0-9_\-]{20,}" + _E),
        _fixed("anthropic-key"),
    ),
    _Secret(
        "openai-key",
        ("sk-",),
        False,
        # At least one digit: keeps words such as `sk-learn-model-selection` apart.
        re.compile(_B + r"sk-(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{20,}" + _E),
        _fixed("openai-key"),
    ),
    _Secret(
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        False,
        re.compile(_B + r"gh[pousr]_[A-Za-z0-9]{30,}" + _E),
        _fixed("github-token"),
    ),
    _Secret(
        "github-token",
        ("github_pat_",),
        False,
        re.compile(_B + r"github_pat_[A-Za-z0-9_]{22,}" + _E),
        _fixed("github-token"),
    ),
    _Secret(
        "aws-key",
        ("AKIA", "ASIA"),
        False,
        re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])"),
        _fixed("aws-key"),
    ),
    _Secret(
        "slack-token",
        ("xox",),
        False,
        re.compile(_B + r"xox[bpars]-[A-Za-z0-9\-]{10,}"),
        _fixed("slack-token"),
    ),
    _Secret(
        "google-key",
        ("AIza",),
        False,
        re.compile(_B + r"AIza[0-9A-Za-z_\-]{35}" + _E),
        _fixed("google-key"),
    ),
    _Secret(
        "jwt",
        ("eyJ",),
        False,
        re.compile(_B + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
        _fixed("jwt"),
    ),
    _Secret(
        "bearer-token",
        ("bearer ",),
        True,
        re.compile(r"(?<=Bearer )(?!\[REDACTED)[A-Za-z0-9._~+/\-]{16,}=*", re.IGNORECASE),
        _fixed("bearer-token"),
    ),
    _Secret(
        "url-credentials",
        ("://",),
        False,
        # Anchored on "://" rather than on the scheme, so a long run of word
        # characters is never rescanned from each of its positions.
        re.compile(r"(?<=://)(?!\[REDACTED)[^\s/:@\"']+:[^\s/@\"']+@"),
        _fixed("url-credentials", suffix="@"),
    ),
    _Secret(
        "assignment",
        _KEY_WORDS,
        True,
        # FOO_TOKEN=..., password: ..., "api_key": "...", --token=...
        re.compile(
            rf"(?P<name>{_SECRET_WORD})(?P<sep>[\"']?\s*[:=]\s*|\s+=\s+)"
            r"(?:(?P<quote>[\"'])(?P<qvalue>[^\"'\n]{4,}?)(?P=quote)|(?P<value>[^\s\"'`,;\\)}\]]{5,}[^\s\"'`,;\\)}\].]))",
            re.IGNORECASE,
        ),
        _assignment,
    ),
    _Secret(
        "cli-flag",
        _KEY_WORDS,
        True,
        # --password VALUE, --api-key VALUE (the `=` form is an assignment above)
        re.compile(
            r"(?P<name>(?<![A-Za-z0-9\-])--(?:[A-Za-z][A-Za-z0-9\-]*?)?"
            r"(?:password|passwd|secret|token|api-key|apikey))"
            r"(?P<sep>\s+)(?P<value>(?!-)[^\s\"'`,;\\)}\]]{6,})",
            re.IGNORECASE,
        ),
        _assignment,
    ),
)


def redact(text: str) -> tuple[str, int]:
    """Mask every secret in `text`; return the new text and how many were masked."""
    total = 0
    lowered: str | None = ""
    for secret in PATTERNS:
        if secret.folds and lowered == "":
            lowered = folded(text)
        within = lowered if secret.folds else text
        if within is None or any(hint in within for hint in secret.hints):
            text, count = _subn(secret.pattern, secret.replace, text)
            if count:
                total += count
                lowered = ""
    return text, total


# The summarizers mask the same short texts (a target, a path, a quote) in
# several places of one record; the cache is bounded, so a long-lived process
# keeps only the latest.
@functools.lru_cache(maxsize=4096)
def mask(text: str) -> str:
    """`text` with every secret masked."""
    return redact(text)[0]


def _subn(pattern: re.Pattern[str], replace: _Replacer, text: str) -> tuple[str, int]:
    changed = 0

    def counted(match: re.Match[str]) -> str:
        nonlocal changed
        out = replace(match)
        if out != match.group(0):
            changed += 1
        return out

    return pattern.sub(counted, text), changed


def redact_messages(messages: list[Message]) -> tuple[list[Message], int]:
    """Messages with secrets masked; unchanged messages stay the same objects."""
    out: list[Message] = []
    total = 0
    for msg in messages:
        new, count = redact_message(msg)
        out.append(new)
        total += count
    return out, total


def redact_message(msg: Message) -> tuple[Message, int]:
    """One message with secrets masked in its texts, reasoning and tool arguments."""
    changes: dict[str, Any] = {}
    total = 0
    content = msg.get("content")
    if isinstance(content, str):
        new_text, count = redact(content)
        if count:
            changes["content"], total = new_text, total + count
    elif isinstance(content, list):
        parts, count = _redact_parts(content)
        if count:
            changes["content"], total = parts, total + count
    for key in m.REASONING_KEYS:
        value = msg.get(key)
        if isinstance(value, str):
            new_text, count = redact(value)
            if count:
                changes[key], total = new_text, total + count
    calls = msg.get("tool_calls")
    if isinstance(calls, list):
        new_calls, count = _redact_calls(calls)
        if count:
            changes["tool_calls"], total = new_calls, total + count
    legacy = m.legacy_function_call(msg)
    if legacy is not None:
        new_fn, count = _redact_function(legacy)
        if count:
            changes["function_call"], total = new_fn, total + count
    return ({**msg, **changes}, total) if changes else (msg, 0)


def _redact_parts(parts: list[Any]) -> tuple[list[Any], int]:
    out: list[Any] = []
    total = 0
    for part in parts:
        if isinstance(part, str):
            new_text, count = redact(part)
            out.append(new_text)
            total += count
        elif (
            isinstance(part, dict)
            and part.get("type") in m.TEXT_PART_TYPES
            and isinstance(part.get("text"), str)
        ):
            new_text, count = redact(part["text"])
            out.append({**part, "text": new_text} if count else part)
            total += count
        else:
            out.append(part)
    return out, total


def _redact_calls(calls: list[Any]) -> tuple[list[Any], int]:
    out: list[Any] = []
    total = 0
    for call in calls:
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            new_fn, count = _redact_function(fn)
            out.append({**call, "function": new_fn} if count else call)
            total += count
        else:
            out.append(call)
    return out, total


def _redact_function(fn: dict[str, Any]) -> tuple[dict[str, Any], int]:
    arguments = fn.get("arguments")
    if not isinstance(arguments, str):
        return fn, 0
    new_args, count = redact_arguments(arguments)
    return ({**fn, "arguments": new_args}, count) if count else (fn, 0)


def redact_arguments(arguments: str) -> tuple[str, int]:
    """Tool-call arguments with secrets masked, still valid JSON when they were.

    JSON is walked value by value, so a key such as "password" masks its value
    even though the escaped raw text would hide the assignment from the regex.
    """
    try:
        value = json.loads(arguments)
    except (ValueError, RecursionError):
        return redact(arguments)
    new_value, count = _redact_value(value, None)
    if not count:
        return arguments, 0
    return json.dumps(new_value, ensure_ascii=False), count


def _redact_value(value: Any, key: str | None) -> tuple[Any, int]:
    if isinstance(value, str):
        if (
            key is not None
            and SECRET_NAME_RE.match(key)
            and value.strip()
            and not _NOT_A_SECRET.match(value)
        ):
            kind = "password" if "pass" in key.lower() else "secret"
            return f"{MARK}{kind}]", 1
        return redact(value)
    if isinstance(value, dict):
        total = 0
        out: dict[str, Any] = {}
        for k, v in value.items():
            out[k], count = _redact_value(v, str(k))
            total += count
        return (out, total) if total else (value, 0)
    if isinstance(value, list):
        total = 0
        items: list[Any] = []
        for item in value:
            new_item, count = _redact_value(item, None)
            items.append(new_item)
            total += count
        return (items, total) if total else (value, 0)
    return value, 0
