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

from dataclasses import dataclass
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


Decision = Approve | Edit | Veto


# -- updates: what a session tells its front ends ---------------------------------------------


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
    """``step`` waits for ``decide``; after an ``Edit`` it is sent again for the new proposal."""

    step: Step


@dataclass(frozen=True)
class StepObserved:
    """``step`` has its outcome (``step.observation``): committed, run, refused or vetoed."""

    step: Step


@dataclass(frozen=True)
class SessionEnded:
    """The last update: why the session ended, and the model's summary when it finished."""

    reason: str
    summary: str | None


Update = ModelText | StepProposed | NeedsDecision | StepObserved | SessionEnded
