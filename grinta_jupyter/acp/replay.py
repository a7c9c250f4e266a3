"""A loaded session's conversation, told again as ACP session updates (``session/load``).

ACP asks an agent that loads a session to replay the whole conversation
before answering. It is read from the session's log, the current branch's
path only (``history.branch_events``), so what the client shows is what the
model's context holds:

==========================  ===================================================
event                       update
==========================  ===================================================
session_start, task_start   user message (the task)
user_message (the user's)   user message
model_reply                 agent message (its text)
tool_proposed               tool call (kind, title, locations, raw input)
diff_staged                 the call's content: its unified diff
observation                 the call's status (completed, failed) and output
session_end                 agent message: the summary, or why it stopped
==========================  ===================================================

Grinta's own notes to the model (``user_message`` from grinta) are not shown,
as they are not in a live session either.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from acp.helpers import (
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import (
    AgentMessageChunk,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from grinta_jupyter.acp.toolcalls import (
    Redact,
    bounded,
    bounded_args,
    fenced,
    inside,
    kind_of,
    paths_in,
    redact_args,
    shown_text,
    title_of,
    tool_call_id,
)
from grinta_jupyter.events import models as ev

Replayed = UserMessageChunk | AgentMessageChunk | ToolCallStart | ToolCallProgress


def replay(events: Sequence[ev.Event], root: Path, redact: Redact) -> Iterator[Replayed]:
    """The updates that tell ``events`` (one branch's path) to a client, in order."""
    proposed: dict[str, ev.ToolProposed] = {}
    summary: str | None = None
    for event in events:
        if isinstance(event, (ev.SessionStart, ev.TaskStarted)):
            yield update_user_message_text(redact(event.task))
        elif isinstance(event, ev.UserMessage) and event.source == "user":
            yield update_user_message_text(redact(event.text))
        elif isinstance(event, ev.ModelReplied) and event.text.strip():
            yield update_agent_message_text(redact(event.text))
        elif isinstance(event, ev.ToolProposed):
            proposed[event.call_id] = event
            args = _arguments(event.arguments)
            yield start_tool_call(
                _id(event),
                redact(title_of(event.tool, event.kind, args, "")),  # as live calls are
                kind=kind_of(event.tool, event.kind),
                status="pending",
                locations=[
                    ToolCallLocation(path=redact(where))
                    for where in (inside(root, p) for p in paths_in(args))
                    if where
                ],
                raw_input=bounded_args(redact_args(args, redact)),
            )
        elif isinstance(event, ev.DiffStaged) and event.call_id in proposed:
            diff = tool_content(text_block(shown_text(fenced(bounded(event.diff), "diff"), redact)))
            yield update_tool_call(_id(proposed[event.call_id]), content=[diff])
        elif isinstance(event, ev.Observed) and event.call_id in proposed:
            yield _observed(proposed[event.call_id], event, redact)
        elif isinstance(event, ev.FinishAttempt) and event.accepted:
            summary = event.summary
        elif isinstance(event, ev.SessionEnd):
            yield update_agent_message_text(redact(ending(event.reason, summary)))
            summary = None


def ending(reason: str, summary: str | None) -> str:
    """What the client is told when a task ends: the model's summary, or why it stopped."""
    if reason == "finished":
        return f"\n\n{summary}" if summary else "\n\n(finished)"
    return f"\n\n(grinta: the session stopped: {reason})"


def _observed(proposed: ev.ToolProposed, event: ev.Observed, redact: Redact) -> ToolCallProgress:
    output = bounded(event.output)
    if event.code == "VETO":
        text = f"**Vetoed:** {output}"
    elif event.tool == "finish":  # the summary, or why the finish was refused: prose
        text = output
    else:  # (a command's output starts with its exit code)
        text = fenced(output) if output else ""
    return update_tool_call(
        _id(proposed),
        status="completed" if event.ok else "failed",
        content=[tool_content(text_block(shown_text(text, redact)))] if text else None,
    )


def _id(event: ev.ToolProposed) -> str:
    return tool_call_id(event.branch, event.step, event.call_id)


def _arguments(raw: str) -> dict[str, Any]:
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        return {"arguments": raw}
    return parsed if isinstance(parsed, dict) else {"arguments": raw}
