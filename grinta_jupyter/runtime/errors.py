"""Structured errors: what the model (or the user) sees when a tool call fails.

A failure the model must see is a value, a ``ToolError`` with a stable code, a
one-line message written for a model, and candidates where they help. Codes
are part of the public contract: add new ones, never rename one.

Developer mistakes (calling the API wrongly) raise ordinary exceptions instead.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from grinta_jupyter.runtime.resolution import Resolution


class WireCode(str, Enum):
    """A code whose members are their own names as strings, so the wire format is plain
    text: ``ErrorCode.NOT_FOUND == "NOT_FOUND"``, and ``json.dumps``, ``str`` and f-strings
    all give ``NOT_FOUND`` (on Python 3.10 as on 3.11+, whose Enum formatting differs;
    hence ``__str__`` and ``__format__``)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class ErrorCode(WireCode):
    """The stable error codes of tool results (never renamed; new ones may be added)."""

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
    COMMIT_GONE = "COMMIT_GONE"
    COMMAND_TIMEOUT = "COMMAND_TIMEOUT"
    COMMAND_FAILED = "COMMAND_FAILED"
    IO_ERROR = "IO_ERROR"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    # Added by the hardening work: hostile files, OS limits and faults get codes of their own.
    NOT_A_REGULAR_FILE = "NOT_A_REGULAR_FILE"  # a FIFO, socket or device: never opened
    FILE_TOO_LARGE = "FILE_TOO_LARGE"
    PATH_TOO_LONG = "PATH_TOO_LONG"  # a name over 255 bytes, or a path over the OS limit
    SYMLINK_LOOP = "SYMLINK_LOOP"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    READ_ONLY_FILE = "READ_ONLY_FILE"  # mode without write bits (e.g. 0444): never written
    NO_SPACE = "NO_SPACE"  # the disk (or quota) is full
    SEARCH_TIMEOUT = "SEARCH_TIMEOUT"  # a regular expression ran past its time limit
    WORKSPACE_MISSING = "WORKSPACE_MISSING"  # the workspace folder was deleted or moved
    # Added with notebooks and kernels as workspaces (docs/notebook.md).
    NOTEBOOK_INVALID = "NOTEBOOK_INVALID"  # not JSON, or not valid nbformat: never committed
    CELL_PROTECTED = "CELL_PROTECTED"  # the cell running this session is not edited
    DOCUMENT_UNSAVED = "DOCUMENT_UNSAVED"  # open in JupyterLab with unsaved changes
    NAME_NOT_FOUND = "NAME_NOT_FOUND"  # inspect: no such variable in the kernel
    EXECUTE_FAILED = "EXECUTE_FAILED"  # execute: the code raised

    @classmethod
    def parse(cls, code: str) -> ErrorCode:
        """The member named ``code``; a ValueError naming the known codes for anything else,
        so no code is ever invented by a typo."""
        if isinstance(code, ErrorCode):
            return code
        try:
            return cls(code)
        except ValueError:
            known = ", ".join(member.value for member in cls)
            raise ValueError(f"unknown error code {code!r}; known codes: {known}") from None


# The codes by their old module-level names, which every layer imports.
NOT_FOUND = ErrorCode.NOT_FOUND
AMBIGUOUS_MATCH = ErrorCode.AMBIGUOUS_MATCH
SYMBOL_NOT_FOUND = ErrorCode.SYMBOL_NOT_FOUND
AMBIGUOUS_SYMBOL = ErrorCode.AMBIGUOUS_SYMBOL
SYNTAX_ERROR = ErrorCode.SYNTAX_ERROR
CONTENT_SERIALIZED = ErrorCode.CONTENT_SERIALIZED
PLACEHOLDER = ErrorCode.PLACEHOLDER
NO_CHANGE = ErrorCode.NO_CHANGE
STALE_FILE = ErrorCode.STALE_FILE
FILE_EXISTS = ErrorCode.FILE_EXISTS
FILE_NOT_FOUND = ErrorCode.FILE_NOT_FOUND
BINARY_FILE = ErrorCode.BINARY_FILE
UNSUPPORTED_ENCODING = ErrorCode.UNSUPPORTED_ENCODING
PATH_OUTSIDE_WORKSPACE = ErrorCode.PATH_OUTSIDE_WORKSPACE
PATH_FORBIDDEN = ErrorCode.PATH_FORBIDDEN
INVALID_ARGS = ErrorCode.INVALID_ARGS
UNKNOWN_TOOL = ErrorCode.UNKNOWN_TOOL
NOT_SUPPORTED = ErrorCode.NOT_SUPPORTED
ALREADY_COMMITTED = ErrorCode.ALREADY_COMMITTED
NOTHING_TO_UNDO = ErrorCode.NOTHING_TO_UNDO
COMMIT_GONE = ErrorCode.COMMIT_GONE
COMMAND_TIMEOUT = ErrorCode.COMMAND_TIMEOUT
COMMAND_FAILED = ErrorCode.COMMAND_FAILED
IO_ERROR = ErrorCode.IO_ERROR
INTERNAL_ERROR = ErrorCode.INTERNAL_ERROR
NOT_A_REGULAR_FILE = ErrorCode.NOT_A_REGULAR_FILE
FILE_TOO_LARGE = ErrorCode.FILE_TOO_LARGE
PATH_TOO_LONG = ErrorCode.PATH_TOO_LONG
SYMLINK_LOOP = ErrorCode.SYMLINK_LOOP
PERMISSION_DENIED = ErrorCode.PERMISSION_DENIED
READ_ONLY_FILE = ErrorCode.READ_ONLY_FILE
NO_SPACE = ErrorCode.NO_SPACE
SEARCH_TIMEOUT = ErrorCode.SEARCH_TIMEOUT
WORKSPACE_MISSING = ErrorCode.WORKSPACE_MISSING
NOTEBOOK_INVALID = ErrorCode.NOTEBOOK_INVALID
CELL_PROTECTED = ErrorCode.CELL_PROTECTED
DOCUMENT_UNSAVED = ErrorCode.DOCUMENT_UNSAVED
NAME_NOT_FOUND = ErrorCode.NAME_NOT_FOUND
EXECUTE_FAILED = ErrorCode.EXECUTE_FAILED

ALL_CODES: frozenset[str] = frozenset(member.value for member in ErrorCode)


# What one error may carry: a refusal with thousands of hits stays a short message.
MAX_CANDIDATES = 20
MAX_SNIPPET_CHARS = 1_000
MAX_MESSAGE_CHARS = 2_000


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
    """A failure reported to the model as the tool result.

    ``code`` is always an ``ErrorCode``: a string naming a member is converted, any other
    string is a ValueError (a developer mistake, not something the model sees).
    """

    code: ErrorCode
    message: str
    candidates: tuple[Candidate, ...] = field(default_factory=tuple)
    line: int | None = None  # 1-based line the error is about, when there is one
    more: int = 0  # candidates left out beyond MAX_CANDIDATES

    def __post_init__(self) -> None:
        object.__setattr__(self, "code", ErrorCode.parse(self.code))
        candidates = tuple(self.candidates)
        if len(candidates) > MAX_CANDIDATES:  # bounded whatever a tool hands over
            object.__setattr__(self, "more", self.more + len(candidates) - MAX_CANDIDATES)
            candidates = candidates[:MAX_CANDIDATES]
        object.__setattr__(self, "candidates", candidates)
        if len(self.message) > MAX_MESSAGE_CHARS:
            from grinta_jupyter.runtime.secrets import before_cut

            message = before_cut(self.message)  # a cut through a secret keeps no piece of it
            cut = len(message) - MAX_MESSAGE_CHARS
            if cut > 0:
                message = message[:MAX_MESSAGE_CHARS] + f" [... {cut} more chars]"
            object.__setattr__(self, "message", message)

    def render(self) -> str:
        """The text the model reads: code, message, then candidates with snippets (bounded)."""
        parts = [f"ERROR {self.code}: {self.message}"]
        for i, cand in enumerate(self.candidates, 1):
            parts.append(f"[{i}] {cand.describe()}")
            if cand.snippet:
                parts.append(_indent(cand.snippet.rstrip("\n")[:MAX_SNIPPET_CHARS], "    "))
        if self.more:
            parts.append(f"[... and {self.more} more candidates not listed]")
        return "\n".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data: the code as its string, candidates as dicts."""
        data = asdict(self)
        data["code"] = self.code.value
        data["candidates"] = [asdict(c) for c in self.candidates]
        return data


class ToolFailure(Exception):
    """Raised inside tool code to abort with a ToolError; caught by the runtime.

    ``resolutions`` are the targets resolved (or not) before the failure, so the
    reviewer sees how far resolution got even when staging stops.
    """

    def __init__(self, error: ToolError, resolutions: Iterable[Resolution] = ()):
        super().__init__(error.message)
        self.error = error
        self.resolutions = tuple(resolutions)


def fail(
    code: ErrorCode,
    message: str,
    candidates: Iterable[Candidate] = (),
    line: int | None = None,
) -> ToolFailure:
    """Build a ToolFailure to ``raise`` from tool code."""
    return ToolFailure(ToolError(code, message, tuple(candidates), line))


def os_error(exc: OSError, what: str) -> ToolError:
    """A ToolError for an OS failure on ``what`` (a path or an action), by its errno."""
    reason = exc.strerror or str(exc)
    by_errno = {
        errno.ENAMETOOLONG: (PATH_TOO_LONG, f"{what}: a name or the path is too long for the OS"),
        errno.ELOOP: (SYMLINK_LOOP, f"{what}: a symbolic link loop (or a link where none may be)"),
        errno.EACCES: (PERMISSION_DENIED, f"{what}: permission denied"),
        errno.EPERM: (PERMISSION_DENIED, f"{what}: operation not permitted"),
        errno.EROFS: (PERMISSION_DENIED, f"{what}: the file system is read-only"),
        errno.ENOSPC: (NO_SPACE, f"{what}: no space left on the device"),
        errno.EDQUOT: (NO_SPACE, f"{what}: the disk quota is exhausted"),
        errno.ENOENT: (FILE_NOT_FOUND, f"{what} does not exist"),
        errno.ENOTDIR: (FILE_NOT_FOUND, f"{what}: a part of the path is not a folder"),
    }
    code, message = by_errno.get(exc.errno or -1, (IO_ERROR, f"{what}: {reason}"))
    if exc.errno and exc.strerror and exc.strerror != os.strerror(exc.errno):
        message = f"{what}: {exc.strerror}"  # raised by grinta with a message of its own
    return ToolError(code, message)


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.split("\n"))
