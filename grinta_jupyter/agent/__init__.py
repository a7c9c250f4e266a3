"""The agent: model clients, the step state machine, guards and context."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from grinta_jupyter.agent.session import Session


def make_model(spec: Any = None) -> Any:
    """The model a session should use: ``spec``, else ``$GRINTA_MODEL``, else the demo model."""
    from grinta_jupyter.agent.models import resolve_model

    model = resolve_model(spec)
    if model is None:
        from grinta_jupyter.agent.models.demo import DemoModel

        return DemoModel()
    return model


__all__ = ["Session", "make_model"]


def __getattr__(name: str) -> Any:
    if name == "Session":
        from grinta_jupyter.agent.session import Session

        return Session
    raise AttributeError(name)
