"""The agent: model clients, the step state machine, guards and context."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# Decisions and updates are small dataclasses with no heavy imports: imported eagerly.
from grinta_jupyter.agent.updates import (
    Approve,
    ApproveHunks,
    ContextCondensed,
    Decision,
    Edit,
    ModelText,
    ModelTurn,
    NeedsDecision,
    Rewound,
    SessionEnded,
    SessionResumed,
    StepCommitted,
    StepObserved,
    StepProposed,
    TaskBegan,
    Undone,
    Update,
    UserSaid,
    Veto,
)

if TYPE_CHECKING:
    from grinta_jupyter.agent.session import Session


def make_model(spec: Any = None, *, require_key: bool = False) -> Any:
    """The model a session should use: ``spec``, else ``$GRINTA_MODEL``, else the demo model.

    With ``require_key``, a hosted model whose API key is plainly missing raises
    ``ModelError("MISSING_KEY")`` here, in milliseconds, instead of when the
    session's first model call fails: front ends pass it before they start one.
    """
    import os

    from grinta_jupyter.agent.models import configured_model
    from grinta_jupyter.config import Config

    if spec is not None and not isinstance(spec, str):
        return spec  # a Model instance, as is
    config = Config.from_env(os.environ).with_options(model=spec)
    return configured_model(config, require_key=require_key)


__all__ = [
    "Approve",
    "ApproveHunks",
    "ContextCondensed",
    "Decision",
    "Edit",
    "ModelText",
    "ModelTurn",
    "NeedsDecision",
    "Rewound",
    "Session",
    "SessionEnded",
    "SessionResumed",
    "StepCommitted",
    "StepObserved",
    "StepProposed",
    "TaskBegan",
    "Undone",
    "Update",
    "UserSaid",
    "Veto",
    "make_model",
]


def __getattr__(name: str) -> Any:
    if name == "Session":
        from grinta_jupyter import settle

        settle()  # the extension's warming may be importing the session's modules
        from grinta_jupyter.agent.session import Session

        return Session
    raise AttributeError(name)
