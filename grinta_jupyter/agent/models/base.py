"""The model protocol: what the session sends a model and what it gets back.

Every model client (``LiteLLMModel``, ``ScriptedModel``, the demo and replay
models) implements ``Model``. Messages and tools are plain OpenAI chat dicts,
so a client only translates at its own edge.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from grinta_jupyter.runtime.errors import WireCode

__all__ = ["MODEL_ERROR_CODES", "Model", "ModelError", "ModelReply", "ToolCall", "Usage"]


@dataclass
class ToolCall:
    """One tool call as the model sent it."""

    id: str
    name: str
    # The raw JSON text exactly as the model sent it; it may be malformed.
    # The session parses it and reports errors back to the model.
    arguments: str


def parsed_arguments(text: str) -> Any:
    """A call's arguments parsed, or None when they are not JSON (malformed, or nested past
    the parser's depth, which raises RecursionError rather than ValueError)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


@dataclass
class Usage:
    """Tokens spent on one reply, and its price in USD when litellm knows it."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None


@dataclass
class ModelReply:
    """One assistant turn: text, tool calls, usage and why the model stopped."""

    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None


class ModelErrorCode(WireCode):
    """Why a model call failed (the ``code`` of a ModelError, and of its error event)."""

    RATE_LIMIT = "RATE_LIMIT"  # the provider throttled us; retryable
    AUTH = "AUTH"  # the key was rejected
    MISSING_KEY = "MISSING_KEY"  # no key configured for a provider that needs one
    UNKNOWN_MODEL = "UNKNOWN_MODEL"  # litellm or the provider does not know the model string
    NETWORK = "NETWORK"  # connection failure or a 5xx from the provider; retryable
    TIMEOUT = "TIMEOUT"  # no answer (or no next chunk) within the timeout; retryable
    BAD_REQUEST = "BAD_REQUEST"  # the provider rejected the request for another reason
    CONTEXT_WINDOW = "CONTEXT_WINDOW"  # the conversation no longer fits the model's context
    BAD_RESPONSE = "BAD_RESPONSE"  # the reply was empty or unreadable, or a script ran out
    CANCELLED = "CANCELLED"  # the session stopped the call


MODEL_ERROR_CODES = frozenset(code.value for code in ModelErrorCode)


class ModelError(Exception):
    """A model call failed in a way the user can act on.

    ``message`` is one line naming the fix (e.g. which env var to set) and
    never contains an API key. ``retryable`` says whether trying the same call
    again later may succeed.
    """

    def __init__(self, code: str, message: str, retryable: bool = False) -> None:
        if code not in MODEL_ERROR_CODES:
            raise ValueError(f"unknown ModelError code {code!r}")
        super().__init__(f"{code}: {message}")
        self.code = ModelErrorCode(code)
        self.message = message
        self.retryable = retryable


@runtime_checkable
class Model(Protocol):
    """A chat model that answers with text and/or tool calls."""

    name: str

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_text: Callable[[str], None] | None = None,
    ) -> ModelReply:
        """Answer the conversation; stream text deltas to ``on_text`` as they arrive.

        Raises ``ModelError`` on failure. Cancelling the awaiting task stops the
        call at once (``asyncio.CancelledError`` propagates).
        """
        ...
