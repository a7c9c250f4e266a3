"""ReplayModel: plays back the model turns of a recorded event log."""

from __future__ import annotations

import os

from grinta_jupyter.agent.models.base import ModelReply, ToolCall, Usage
from grinta_jupyter.agent.models.scripted import ScriptedModel
from grinta_jupyter.events.log import read_events
from grinta_jupyter.events.models import Event, ModelReplied


class ReplayModel(ScriptedModel):
    """Answers each request with the next ``model_reply`` recorded in a log."""

    def __init__(self, log: str | os.PathLike[str] | list[Event]):
        events = read_events(log)
        turns = [
            ModelReply(
                text=e.text,
                tool_calls=[ToolCall(c["id"], c["name"], c["arguments"]) for c in e.tool_calls],
                usage=Usage(e.prompt_tokens, e.completion_tokens, e.cost),
                finish_reason=e.finish_reason,
            )
            for e in events
            if isinstance(e, ModelReplied)
        ]
        super().__init__(turns, name="replay")
