"""Proposals (a staged tool call, nothing written) and observations (what happened).

A proposal is an immutable value of one of four kinds: ``ReadProposal`` and
``FinishProposal`` carry the output computed at propose time,
``WriteProposal`` the staged ``changes``, ``CommandProposal`` the ``command``
that commit runs. A refused proposal is one of these with ``error`` set (a
refused write keeps the changes that failed validation, so a reviewer sees
what was refused). Every kind answers the same attributes, the ones it does
not hold with an empty value, so a front end reads ``p.diff`` or
``p.command`` without checking the kind first.

Whether a proposal was committed is the runtime's record, not the proposal's.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from grinta_jupyter.runtime.errors import ToolError
from grinta_jupyter.runtime.hunks import Hunk
from grinta_jupyter.runtime.resolution import Resolution

__all__ = [
    "CommandProposal",
    "FileChange",
    "FinishProposal",
    "Observation",
    "Proposal",
    "ReadProposal",
    "Resolution",
    "ToolKind",
    "WriteProposal",
    "proposal_class",
]

ToolKind = Literal["read", "write", "command", "finish"]
_ids = itertools.count(1)


def _next_id() -> int:
    return next(_ids)


@dataclass(frozen=True)
class FileChange:
    """One file's staged change: text before and after, and the bytes to write."""

    path: str
    before: str | None  # decoded text; None when the file does not exist yet
    after: str | None  # None would delete the file (no tool does that yet)
    old_bytes: bytes | None  # the bytes staged from: a commit refuses if the disk moved on
    new_bytes: bytes | None
    base_sha256: str | None  # sha256 of the bytes on disk when staged
    diff: str = ""
    added: tuple[tuple[int, str], ...] = ()  # (1-based new line, text) per added line
    removed_lines: int = 0

    @property
    def added_lines(self) -> int:
        return len(self.added)


@dataclass(frozen=True, eq=False)
class Proposal:
    """A resolved, staged and validated tool call: everything a reviewer needs.

    The base of the four kinds; build one of those. Equality is identity: two
    proposals are the same proposal or different ones, whatever they hold.
    """

    kind: ClassVar[ToolKind]

    tool: str
    args: dict[str, Any]
    error: ToolError | None = None
    summary: str = ""  # one line for a card header or a log
    resolutions: tuple[Resolution, ...] = ()
    id: int = field(default_factory=_next_id)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def needs_approval(self) -> bool:
        """Writes and commands change the world; reads and finish do not."""
        return self.kind in ("write", "command")

    # What the other kinds hold, empty here: every proposal answers every question.

    @property
    def changes(self) -> tuple[FileChange, ...]:
        return ()

    @property
    def output(self) -> str | None:
        return None

    @property
    def command(self) -> str | None:
        return None

    @property
    def timeout(self) -> float | None:
        return None

    @property
    def diff(self) -> str:
        """Unified diff of every staged file ("" when nothing is staged)."""
        return "".join(change.diff for change in self.changes)

    @property
    def paths(self) -> list[str]:
        return [change.path for change in self.changes]


@dataclass(frozen=True, eq=False)
class ReadProposal(Proposal):
    """A read: its output was computed at propose time; committing returns it."""

    kind: ClassVar[ToolKind] = "read"
    output: str | None = None


@dataclass(frozen=True, eq=False)
class FinishProposal(Proposal):
    """The model says the task is done; ``output`` is its summary."""

    kind: ClassVar[ToolKind] = "finish"
    output: str | None = None


@dataclass(frozen=True, eq=False)
class WriteProposal(Proposal):
    """Staged file changes; committing writes them all or none.

    ``declined`` is set on a proposal made by ``Runtime.select_hunks``: the
    hunks of ``selected_from`` (a proposal id) that the reviewer left out.
    """

    kind: ClassVar[ToolKind] = "write"
    changes: tuple[FileChange, ...] = ()
    declined: tuple[Hunk, ...] = ()
    selected_from: int | None = None


@dataclass(frozen=True, eq=False)
class CommandProposal(Proposal):
    """A shell command that commit runs (None on a refused one), with its timeout."""

    kind: ClassVar[ToolKind] = "command"
    command: str | None = None
    timeout: float | None = None


_BY_KIND: dict[str, type[Proposal]] = {
    "read": ReadProposal,
    "write": WriteProposal,
    "command": CommandProposal,
    "finish": FinishProposal,
}


def proposal_class(kind: ToolKind) -> type[Proposal]:
    """The proposal type of a tool kind (for refusals, made before anything is staged)."""
    return _BY_KIND[kind]


@dataclass(frozen=True)
class Observation:
    """The outcome of committing (or running) a proposal: what the model sees next."""

    ok: bool
    output: str
    error: ToolError | None = None
    proposal_id: int | None = None
    commit_id: str | None = None
    exit_code: int | None = None
    # Rich outputs (a plot, a value's HTML): MIME bundles, mime type -> data (images base64),
    # each with a "text/plain" description, which is all the model reads of it (in ``output``).
    outputs: tuple[dict[str, str], ...] = ()

    @classmethod
    def failure(cls, error: ToolError, proposal_id: int | None = None) -> Observation:
        return cls(ok=False, output=error.render(), error=error, proposal_id=proposal_id)
