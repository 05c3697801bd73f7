"""One error hierarchy; the CLI maps each class to an exit code in one place."""

from __future__ import annotations

# The exit code of a run stopped by Ctrl-C, as shells report SIGINT.
INTERRUPTED = 130
INTERRUPTED_MESSAGE = "interrupted; no output was left half-written"


class CtxpackError(Exception):
    """Base of every error ctxpack reports to a user."""

    exit_code = 1
    # Whether --skip-invalid reads past it (a malformed line or message).
    skippable = False

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        self.message = message
        self.path = path
        self.line = line
        super().__init__(self.describe())

    def describe(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line is not None else f"{self.path}: "
        return f"{where}{self.message}"


class InputError(CtxpackError):
    """The transcript cannot be read: malformed JSON, wrong types, bad encoding."""


class MalformedRecord(InputError):
    """One line or message of the transcript cannot be read, where the reader
    can skip it (ReadOptions.skip_invalid) and read the rest."""

    skippable = True


class OutputError(CtxpackError):
    """The result cannot be written; the input is left untouched."""


class UsageError(CtxpackError):
    """Options that contradict each other or name things that do not exist."""

    exit_code = 2


class BudgetError(UsageError):
    """A --fit budget the input cannot reach: what must stay verbatim is larger."""

    def __init__(self, message: str, *, smallest: int, path: str | None = None) -> None:
        # The smallest output that could be written, in tokens.
        self.smallest = smallest
        super().__init__(message, path=path)


class SummarizerError(CtxpackError):
    """The summarizer failed in a way that must not fall back (auth, abort-on-failure)."""


class PluginError(CtxpackError):
    """An engine or summarizer plugin failed, or returned what ctxpack cannot
    write (a broken transcript, no summary); nothing is written."""


class StrictFallbackError(CtxpackError):
    """The LLM summary failed and --strict forbids the offline fallback."""

    exit_code = 3


class RetentionError(CtxpackError):
    """A --min-retention gate was not met."""

    exit_code = 4
