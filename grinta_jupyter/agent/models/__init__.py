"""Model clients behind one small protocol (``Model``).

``resolve_model`` picks the model a session talks to: the argument, else
``GRINTA_MODEL`` from the environment, else ``None`` (use the demo model).
Importing this package does not import litellm.
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
from grinta_jupyter.agent.models.demo import DemoModel  # noqa: E402  (after scripted, which it extends)
from grinta_jupyter.agent.models.litellm_model import LiteLLMModel, missing_key
from grinta_jupyter.agent.models.replay import ReplayModel
from grinta_jupyter.agent.models.scripted import ScriptedModel, call, raw_call, reply

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
    "missing_key",
    "raw_call",
    "reply",
    "resolve_model",
]


def resolve_model(spec: str | Model | None = None, **kwargs: Any) -> Model | None:
    """The model to use: ``spec``, else ``$GRINTA_MODEL``, else None (the demo model).

    A string is any litellm model name (``openai/gpt-4o-mini``,
    ``ollama_chat/qwen2.5-coder:7b``, ...) and becomes a ``LiteLLMModel``;
    ``GRINTA_API_BASE`` and ``GRINTA_API_KEY`` fill in ``api_base`` and
    ``api_key`` unless given in ``kwargs``, which go to ``LiteLLMModel``.
    A ``Model`` instance is returned as is.
    """
    if spec is not None and not isinstance(spec, str):
        if kwargs:
            raise TypeError("resolve_model: keyword arguments only apply to a model name")
        return spec
    name = (spec or os.environ.get("GRINTA_MODEL") or "").strip()
    if not name:
        return None
    for key, env in (("api_base", "GRINTA_API_BASE"), ("api_key", "GRINTA_API_KEY")):
        if kwargs.get(key) is None and os.environ.get(env):
            kwargs[key] = os.environ[env]
    return LiteLLMModel(name, **kwargs)
