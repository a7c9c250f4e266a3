"""One way out of a session and one way in: typed updates, typed decisions.

A front end loops over ``session.updates()`` and answers each
``NeedsDecision`` with ``session.decide(...)``::

    async for update in session.updates():
        if isinstance(update, NeedsDecision):
            session.decide(Approve())      # or Edit({...}) or Veto("why")

The iterator drives the session itself (one model turn or one tool call at a
time) and ends after ``SessionEnded``. While it waits for a decision, nothing
else runs: a decision can come from another task (a widget click), or from
the loop body before the next ``update`` is asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from grinta_jupyter.agent.step import Step

DEFAULT_VETO_REASON = "vetoed by the user"


# -- decisions: what a person answers ------------------------------------------------------


@dataclass(frozen=True)
class Approve:
    """Commit the pending proposal as staged."""


@dataclass(frozen=True)
class Edit:
    """Replace the pending call's arguments; the re-staged proposal waits for a decision."""

    arguments: dict[str, Any] | str


@dataclass(frozen=True)
class Veto:
    """Refuse the pending proposal; the reason goes back to the model."""

    reason: str = DEFAULT_VETO_REASON


@dataclass(frozen=True)
class ApproveHunks:
    """Commit only some hunks of the pending write; the rest are declined.

    Hunks are numbered from 0 in the order they appear in ``proposal.diff``,
    counting across files. What is accepted is re-staged and re-validated, then
    committed atomically; the model is told which hunks were declined, and why
    when ``reason`` is given. Accepting every hunk is the same as ``Approve()``;
    accepting none is a ``Veto``.
    """

    hunks: Sequence[int] = field(default_factory=tuple)
    reason: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "hunks", tuple(self.hunks))


Decision = Approve | Edit | Veto | ApproveHunks


# -- updates: what a session tells its front ends ---------------------------------------------


@dataclass(frozen=True)
class ModelTurn:
    """The model is asked for its next move (step ``number`` if it proposes a call)."""

    number: int


@dataclass(frozen=True)
class ModelText:
    """A piece of the model's reply as it streams in."""

    text: str


@dataclass(frozen=True)
class StepProposed:
    """A tool call was resolved, staged and validated (or refused): ``step.proposal``."""

    step: Step


@dataclass(frozen=True)
class NeedsDecision:
    """``step`` waits for ``decide``; after an ``Edit`` it is sent again for the new proposal.

    Every listener sees it where the proposal started waiting; another front end may
    have decided since (``Session.waiting`` says whether a decision is still wanted).
    """

    step: Step


@dataclass(frozen=True)
class StepCommitted:
    """A write of ``step`` reached the disk (``commit_id`` undoes it); ``StepObserved`` follows."""

    step: Step
    commit_id: str


@dataclass(frozen=True)
class StepObserved:
    """``step`` has its outcome (``step.observation``): committed, run, refused or vetoed."""

    step: Step


@dataclass(frozen=True)
class SessionEnded:
    """The last update: why the session ended, and the model's summary when it finished."""

    reason: str
    summary: str | None


@dataclass(frozen=True)
class Undone:
    """The user undid the last commit (``ok`` False when there was nothing to undo)."""

    ok: bool
    message: str


@dataclass(frozen=True)
class UserSaid:
    """A message the user said reached the model's context (``Session.say``)."""

    text: str


@dataclass(frozen=True)
class TaskBegan:
    """A finished session was given its next task (``Session.continue_task``)."""

    number: int  # 2 for the second task, and so on
    task: str


@dataclass(frozen=True)
class Rewound:
    """Commits after step ``to_step`` were undone; steps go on from there as ``branch``."""

    to_step: int
    branch: int
    undone: tuple[str, ...]  # commit ids restored, newest first
    not_undone: tuple[str, ...]  # commands that ran after ``to_step``; changes left as found


@dataclass(frozen=True)
class ContextCondensed:
    """Older turns were condensed to keep the next request under its token budget."""

    method: str  # "digest" | "model"
    tokens_before: int
    tokens_after: int
    budget: int


@dataclass(frozen=True)
class SessionResumed:
    """The session was rebuilt from its log; ``steps`` steps were done before."""

    steps: int
    requeued: int  # calls of the last reply asked again (staged against today's files)
    recovered: int  # commits that had landed before the interruption


Update = (
    ModelTurn
    | ModelText
    | StepProposed
    | NeedsDecision
    | StepCommitted
    | StepObserved
    | Undone
    | UserSaid
    | TaskBegan
    | Rewound
    | ContextCondensed
    | SessionResumed
    | SessionEnded
)
