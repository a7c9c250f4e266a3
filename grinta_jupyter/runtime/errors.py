"""Structured errors: what the model (or the user) sees when a tool call fails.

A failure the model must see is a value, a ``ToolError`` with a stable code, a
one-line message written for a model, and candidates where they help. Codes
are part of the public contract: add new ones, never rename one.

Developer mistakes (calling the API wrongly) raise ordinary exceptions instead.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# Stable error codes. The value is the code itself so it serialises as text.
NOT_FOUND = "NOT_FOUND"
AMBIGUOUS_MATCH = "AMBIGUOUS_MATCH"
SYMBOL_NOT_FOUND = "SYMBOL_NOT_FOUND"
AMBIGUOUS_SYMBOL = "AMBIGUOUS_SYMBOL"
SYNTAX_ERROR = "SYNTAX_ERROR"
CONTENT_SERIALIZED = "CONTENT_SERIALIZED"
PLACEHOLDER = "PLACEHOLDER"
NO_CHANGE = "NO_CHANGE"
STALE_FILE = "STALE_FILE"
FILE_EXISTS = "FILE_EXISTS"
FILE_NOT_FOUND = "FILE_NOT_FOUND"
BINARY_FILE = "BINARY_FILE"
UNSUPPORTED_ENCODING = "UNSUPPORTED_ENCODING"
PATH_OUTSIDE_WORKSPACE = "PATH_OUTSIDE_WORKSPACE"
PATH_FORBIDDEN = "PATH_FORBIDDEN"
INVALID_ARGS = "INVALID_ARGS"
UNKNOWN_TOOL = "UNKNOWN_TOOL"
NOT_SUPPORTED = "NOT_SUPPORTED"
ALREADY_COMMITTED = "ALREADY_COMMITTED"
NOTHING_TO_UNDO = "NOTHING_TO_UNDO"
COMMAND_TIMEOUT = "COMMAND_TIMEOUT"
COMMAND_FAILED = "COMMAND_FAILED"
IO_ERROR = "IO_ERROR"
INTERNAL_ERROR = "INTERNAL_ERROR"

ALL_CODES = frozenset(
    value for name, value in dict(globals()).items() if name.isupper() and isinstance(value, str)
)


@dataclass(frozen=True)
class Candidate:
    """A place the model may have meant: a match, a near miss or a symbol."""

    path: str
    line: int  # 1-based
    snippet: str = ""
    kind: str | None = None  # symbol kind, for symbol candidates
    name: str | None = None  # qualified symbol name, for symbol candidates
    note: str | None = None  # what differs, for near misses

    def describe(self) -> str:
        head = f"{self.path}:{self.line}"
        if self.name:
            head += f" {self.kind or 'symbol'} {self.name}"
        if self.note:
            head += f" ({self.note})"
        return head


@dataclass(frozen=True)
class ToolError:
    """A failure reported to the model as the tool result."""

    code: str
    message: str
    candidates: tuple[Candidate, ...] = field(default_factory=tuple)
    line: int | None = None  # 1-based line the error is about, when there is one

    def __post_init__(self) -> None:
        if self.code not in ALL_CODES:
            raise ValueError(f"unknown error code {self.code!r}")

    def render(self) -> str:
        """The text the model reads: code, message, then candidates with snippets."""
        parts = [f"ERROR {self.code}: {self.message}"]
        for i, cand in enumerate(self.candidates, 1):
            parts.append(f"[{i}] {cand.describe()}")
            if cand.snippet:
                parts.append(_indent(cand.snippet.rstrip("\n"), "    "))
        return "\n".join(parts)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["candidates"] = [asdict(c) for c in self.candidates]
        return data


class ToolFailure(Exception):
    """Raised inside tool code to abort with a ToolError; caught by the runtime."""

    def __init__(self, error: ToolError):
        super().__init__(error.message)
        self.error = error


def fail(code: str, message: str, candidates=(), line: int | None = None) -> ToolFailure:
    """Build a ToolFailure to ``raise`` from tool code."""
    return ToolFailure(ToolError(code, message, tuple(candidates), line))


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.split("\n"))
