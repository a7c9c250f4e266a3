"""Proposals (a staged tool call, nothing written) and observations (what happened)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Literal

from grinta_jupyter.runtime.errors import ToolError

ToolKind = Literal["read", "write", "command", "finish"]
_ids = itertools.count(1)


@dataclass
class FileChange:
    """One file's staged change: text before and after, and the bytes to write."""

    path: str
    before: str | None  # decoded text; None when the file does not exist yet
    after: str | None  # None would delete the file (no tool does that yet)
    old_bytes: bytes | None
    new_bytes: bytes | None
    base_sha256: str | None  # sha256 of the bytes on disk when staged
    diff: str = ""
    added: list[tuple[int, str]] = field(
        default_factory=list
    )  # (1-based new line, text) per added line
    removed_lines: int = 0

    @property
    def added_lines(self) -> int:
        return len(self.added)


@dataclass
class Resolution:
    """How a target the model named was resolved (a file, a symbol, a match)."""

    target: str  # what the model asked for, e.g. "RaftNode.append_entries"
    chosen: str | None  # e.g. "raft_kv/node.py:120 method RaftNode.append_entries"
    reason: str  # why it was chosen, or why not
    candidates: list[str] = field(default_factory=list)


@dataclass
class Proposal:
    """A resolved, staged and validated tool call. Holds everything a reviewer needs."""

    tool: str
    args: dict[str, Any]
    kind: ToolKind
    error: ToolError | None = None
    changes: list[FileChange] = field(default_factory=list)
    output: str | None = None  # read and finish tools: the result, computed at propose time
    summary: str = ""  # one line for a card header or a log
    resolutions: list[Resolution] = field(default_factory=list)
    command: str | None = None  # run: the command that commit will execute
    timeout: float | None = None
    id: int = field(default_factory=lambda: next(_ids))
    state: Literal["proposed", "committed", "refused"] = "proposed"

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def diff(self) -> str:
        """Unified diff of every staged file."""
        return "".join(change.diff for change in self.changes)

    @property
    def paths(self) -> list[str]:
        return [change.path for change in self.changes]

    @property
    def needs_approval(self) -> bool:
        """Writes and commands change the world; reads and finish do not."""
        return self.kind in ("write", "command")


@dataclass
class Observation:
    """The outcome of committing (or running) a proposal: what the model sees next."""

    ok: bool
    output: str
    error: ToolError | None = None
    proposal_id: int | None = None
    commit_id: str | None = None
    exit_code: int | None = None

    @classmethod
    def failure(cls, error: ToolError, proposal_id: int | None = None) -> Observation:
        return cls(ok=False, output=error.render(), error=error, proposal_id=proposal_id)
