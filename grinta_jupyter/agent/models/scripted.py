"""A model that plays a fixed script: the test double the session tests use.

    model = ScriptedModel([
        reply("Let me look.", call("read", path="a.py")),
        lambda messages: reply("", call("finish", summary=messages[-1]["content"])),
    ])

Each ``complete`` plays the next turn; a callable turn sees the messages so
far. Tool calls without an id get ``call_<turn>_<n>``, so ids are stable and
unique across a run.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import Any

from grinta_jupyter.agent.models.base import ModelError, ModelReply, ToolCall

__all__ = ["ScriptedModel", "call", "raw_call", "reply"]

Turn = ModelReply | Callable[[list[dict[str, Any]]], ModelReply]


def call(name: str, /, **args: Any) -> ToolCall:
    """A tool call whose arguments are ``args`` encoded as JSON."""
    return ToolCall(id="", name=name, arguments=json.dumps(args))


def raw_call(name: str, arguments_text: str) -> ToolCall:
    """A tool call with arguments sent verbatim, e.g. malformed JSON."""
    return ToolCall(id="", name=name, arguments=arguments_text)


def reply(text: str = "", *calls: ToolCall, finish_reason: str | None = None) -> ModelReply:
    """An assistant turn with optional text and tool calls."""
    reason = finish_reason or ("tool_calls" if calls else "stop")
    return ModelReply(text=text, tool_calls=list(calls), finish_reason=reason)


class ScriptedModel:
    """Plays ``turns`` in order and records what it was sent in ``requests``."""

    def __init__(self, turns: Sequence[Turn], name: str = "scripted") -> None:
        self.name = name
        self._turns = list(turns)
        self._next = 0
        # One {"messages": [...], "tools": [...]} per call, copied as received.
        self.requests: list[dict[str, list[dict[str, Any]]]] = []

    @property
    def remaining(self) -> int:
        """Turns not played yet."""
        return len(self._turns) - self._next

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_text: Callable[[str], None] | None = None,
    ) -> ModelReply:
        self.requests.append({"messages": copy.deepcopy(messages), "tools": copy.deepcopy(tools)})
        if self._next >= len(self._turns):
            raise ModelError(
                "BAD_RESPONSE",
                f"script exhausted: {self.name} has only {len(self._turns)} turns",
            )
        turn_index = self._next
        self._next += 1
        turn = self._turns[turn_index]
        result = turn(messages) if callable(turn) else turn
        if not isinstance(result, ModelReply):
            raise TypeError(f"scripted turn {turn_index} returned {type(result).__name__}")
        for piece in _pieces(result.text):
            # Yield between pieces so a front end redraws and a cancel lands here.
            await asyncio.sleep(0)
            if on_text is not None:
                on_text(piece)
        calls = [
            tc if tc.id else dataclasses.replace(tc, id=f"call_{turn_index}_{n}")
            for n, tc in enumerate(result.tool_calls)
        ]
        return dataclasses.replace(
            result, tool_calls=calls, usage=dataclasses.replace(result.usage)
        )


def _pieces(text: str, count: int = 3) -> list[str]:
    """Split text into about ``count`` pieces on word boundaries."""
    if not text:
        return []
    words = text.split(" ")
    size = max(1, -(-len(words) // count))
    groups = [words[i : i + size] for i in range(0, len(words), size)]
    pieces = [" ".join(g) for g in groups]
    # Put back the spaces the split removed, so the pieces join to the text.
    return [p + " " for p in pieces[:-1]] + pieces[-1:]
