"""Events: everything a session does, as typed records.

Every event has a sequence number, a wall-clock timestamp, a monotonic
offset from the session start, the session id and the step it belongs to
(a step is one tool call, numbered from 1; model turns carry the step they
lead into). The log is JSONL: one event per line, flushed as it happens.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

SCHEMA_VERSION = 1


class Event(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: str
    seq: int = 0
    ts: float = 0.0  # unix time
    t: float = 0.0  # seconds since session start
    session: str = ""
    step: int = 0


class SessionStart(Event):
    type: Literal["session_start"] = "session_start"
    version: int = SCHEMA_VERSION
    task: str
    model: str
    toolset: str
    root: str
    policy: str
    settings: dict[str, Any] = {}
    sample: str | None = None  # the bundled sample workspace this session ran on, if any


class ModelRequest(Event):
    type: Literal["model_request"] = "model_request"
    messages: int
    digest: str  # sha256 of the request messages (what was sent, without storing it twice)
    tokens: int  # prompt tokens counted offline (o200k)
    masked: int = 0  # observations replaced by a one-line summary


class ModelReplied(Event):
    type: Literal["model_reply"] = "model_reply"
    text: str
    tool_calls: list[dict[str, str]]  # {id, name, arguments}: arguments as the raw text sent
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    duration: float = 0.0
    finish_reason: str | None = None


class ToolProposed(Event):
    type: Literal["tool_proposed"] = "tool_proposed"
    call_id: str
    tool: str
    arguments: str  # raw, as the model (or the user's edit) sent it
    kind: str
    summary: str = ""
    proposal: int = 0
    edited: bool = False  # re-proposed after the user edited the arguments


class SymbolResolved(Event):
    type: Literal["symbol_resolved"] = "symbol_resolved"
    call_id: str
    target: str
    chosen: str | None
    reason: str
    candidates: list[str] = []


class DiffStaged(Event):
    type: Literal["diff_staged"] = "diff_staged"
    call_id: str
    paths: list[str]
    diff: str
    added: int
    removed: int


class Validated(Event):
    type: Literal["validation"] = "validation"
    call_id: str
    ok: bool
    code: str | None = None
    message: str | None = None
    target: str | None = None  # path (or symbol) the call aimed at, for recovery metrics


class UserDecision(Event):
    type: Literal["user_decision"] = "user_decision"
    call_id: str
    decision: Literal["approve", "approve_hunks", "edit", "veto", "auto"]
    reason: str | None = None
    arguments: str | None = None  # the edited arguments
    hunks: list[int] | None = None  # approve_hunks: the accepted hunks, numbered from 0


class Committed(Event):
    type: Literal["commit"] = "commit"
    call_id: str
    ok: bool
    commit_id: str | None = None
    paths: list[str] = []
    code: str | None = None


class Undone(Event):
    type: Literal["undo"] = "undo"
    ok: bool
    message: str = ""


class Observed(Event):
    type: Literal["observation"] = "observation"
    call_id: str
    tool: str
    ok: bool
    code: str | None = None
    output: str  # what the model sees (bounded by the tools themselves)
    exit_code: int | None = None
    target: str | None = None
    # Rich outputs (Observation.outputs): MIME bundles; data over EVENT_OUTPUT_CHARS is left
    # out of the log (the "text/plain" description stays), so one plot cannot swell it.
    outputs: list[dict[str, str]] = []

    @field_validator("outputs")
    @classmethod
    def _bounded(cls, outputs: list[dict[str, str]]) -> list[dict[str, str]]:
        return [bounded_output(bundle) for bundle in outputs[:MAX_EVENT_OUTPUTS]]


MAX_EVENT_OUTPUTS = 8
EVENT_OUTPUT_CHARS = 150_000


def bounded_output(bundle: dict[str, str]) -> dict[str, str]:
    """``bundle`` without any data over ``EVENT_OUTPUT_CHARS``, its description kept."""
    kept = {mime: data for mime, data in bundle.items() if len(data) <= EVENT_OUTPUT_CHARS}
    if len(kept) < len(bundle):
        description = bundle.get("text/plain", "[output]")[:EVENT_OUTPUT_CHARS]
        kept["text/plain"] = description + " (data not kept in the log)"
    return kept


class GuardFired(Event):
    type: Literal["guard_fired"] = "guard_fired"
    guard: str
    detail: str
    action: str  # "warn" | "force_read" | "reject_finish" | "stop"


class FinishAttempt(Event):
    type: Literal["finish_attempt"] = "finish_attempt"
    call_id: str
    summary: str
    accepted: bool
    reason: str = ""


class ErrorEvent(Event):
    type: Literal["error"] = "error"
    code: str
    message: str


class SessionEnd(Event):
    type: Literal["session_end"] = "session_end"
    reason: str  # "finished" | "stopped" | "budget:<name>" | "stuck" | "error" | "circuit_breaker"
    steps: int
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None


AnyEvent = Annotated[
    SessionStart
    | ModelRequest
    | ModelReplied
    | ToolProposed
    | SymbolResolved
    | DiffStaged
    | Validated
    | UserDecision
    | Committed
    | Undone
    | Observed
    | GuardFired
    | FinishAttempt
    | ErrorEvent
    | SessionEnd,
    Field(discriminator="type"),
]
EVENT_ADAPTER: TypeAdapter[Any] = TypeAdapter(AnyEvent)


def parse_event(data: dict[str, Any] | str) -> Event:
    event: Event
    if isinstance(data, str):
        event = EVENT_ADAPTER.validate_json(data)
    else:
        event = EVENT_ADAPTER.validate_python(data)
    return event
