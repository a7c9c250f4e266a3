"""Model clients behind one small protocol (``Model``).

``resolve_model`` picks the model a session talks to: the argument, else the
configured one (``Config.model``, from ``GRINTA_MODEL``), else ``None``; front
ends call ``configured_model``, which puts the demo model in that ``None``'s
place. Importing this package does not import litellm.
"""

from __future__ import annotations

import os
from typing import Any

from grinta_jupyter.agent.models.base import (
    MODEL_ERROR_CODES,
    Model,
    ModelError,
    ModelReply,
    ToolCall,
    Usage,
)
from grinta_jupyter.agent.models.demo import DEMO_NAME, DemoModel  # noqa: E402  (after scripted, which it extends)
from grinta_jupyter.agent.models.litellm_model import LiteLLMModel, missing_key
from grinta_jupyter.agent.models.replay import ReplayModel
from grinta_jupyter.agent.models.scripted import ScriptedModel, call, raw_call, reply
from grinta_jupyter.config import Config

__all__ = [
    "MODEL_ERROR_CODES",
    "DemoModel",
    "ReplayModel",
    "LiteLLMModel",
    "Model",
    "ModelError",
    "ModelReply",
    "ScriptedModel",
    "ToolCall",
    "Usage",
    "call",
    "configured_model",
    "missing_key",
    "raw_call",
    "reply",
    "resolve_model",
]


def resolve_model(
    spec: str | Model | None = None, *, config: Config | None = None, **kwargs: Any
) -> Model | None:
    """The model to use: ``spec``, else the configured model, else None (the demo model).

    ``config`` defaults to ``Config.from_env(os.environ)``: ``GRINTA_MODEL``, and
    ``GRINTA_API_BASE`` / ``GRINTA_API_KEY`` for ``api_base`` / ``api_key`` unless
    given in ``kwargs``, which go to ``LiteLLMModel``. A string is any litellm model
    name (``openai/gpt-4o-mini``, ``ollama_chat/qwen2.5-coder:7b``, ...) and becomes
    a ``LiteLLMModel``. A ``Model`` instance is returned as is.
    """
    if spec is not None and not isinstance(spec, str):
        if kwargs:
            raise TypeError("resolve_model: keyword arguments only apply to a model name")
        return spec
    config = config if config is not None else Config.from_env(os.environ)
    name = (spec or config.model or "").strip()
    if not name or name == DEMO_NAME:  # the name the demo model shows: no litellm model
        return None
    for key, configured in (("api_base", config.api_base), ("api_key", config.api_key)):
        if kwargs.get(key) is None:
            kwargs[key] = configured
    return LiteLLMModel(name, **kwargs)


def configured_model(config: Config, *, require_key: bool = False) -> Model:
    """The model ``config`` names, else the demo model: the one fallback of every front end.

    With ``require_key``, a hosted model whose API key is plainly missing raises
    ``ModelError("MISSING_KEY")`` here, in milliseconds, before any session starts.
    """
    model = resolve_model(config=config)
    if model is None:
        return DemoModel()
    if require_key and isinstance(model, LiteLLMModel):
        model.check_key()
    return model
