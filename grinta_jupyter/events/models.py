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
    # The branch this event belongs to: 0 until the first rewind; each rewind starts a new
    # branch from a step of an earlier one (``Rewound``; agent/history.py walks them).
    branch: int = 0


class RulesFile(BaseModel):
    """A rules file (AGENTS.md, CLAUDE.md, .grinta/rules.md) read into the system prompt."""

    model_config = ConfigDict(extra="forbid")

    path: str  # relative to the workspace root
    chars: int  # characters kept in the prompt
    sha256: str  # of the file's bytes when read
    truncated: bool = False  # the file was longer than the bound and was cut


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
    rules: list[RulesFile] = []  # the project's rules files added to the system prompt
    # What opening the workspace did to commits a crash had interrupted (Runtime.recovered):
    # "rolled back ...", "completed ...", "left ... in place: why". Shown as a mark.
    recovery: list[str] = []


class ModelRequest(Event):
    type: Literal["model_request"] = "model_request"
    messages: int
    digest: str  # sha256 of the request messages (what was sent, without storing it twice)
    tokens: int  # prompt tokens counted offline (o200k)
    masked: int = 0  # observations replaced by a one-line summary
    budget: int | None = None  # the token budget this request had to stay under


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
    restaged: bool = False  # staged again when the session was resumed
    stale: str | None = None  # restaged against files that changed since: what changed


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
    # sha256 per path of the bytes staged from and of the bytes the commit writes (None: the
    # file is absent): a resumed session tells a landed commit from a stale proposal.
    base: dict[str, str | None] = {}
    after: dict[str, str | None] = {}


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
    commit_id: str | None = None  # the commit undone


class Observed(Event):
    type: Literal["observation"] = "observation"
    call_id: str
    tool: str
    ok: bool
    code: str | None = None
    output: str  # what the model sees (bounded by the tools themselves)
    exit_code: int | None = None
    target: str | None = None
    # How it entered the model's context (agent/history.py rebuilds the context from these):
    # ``output`` is the data, then "\n\n" and each of ``notes`` (grinta's own words, outside
    # the fence); ``fenced`` says whether the data was fenced; ``summary`` is the one line
    # shown once the result is masked.
    summary: str = ""
    notes: list[str] = []
    fenced: bool = True
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


class UserMessage(Event):
    """A user-role message added to the model's context.

    ``source`` "user": the person said it (``Session.say``); it reaches the model at its
    next turn, after the results of the calls already made. "grinta": the session's own
    nudge or notice (an undo, a reply without a tool call).
    """

    type: Literal["user_message"] = "user_message"
    text: str
    source: Literal["user", "grinta"] = "user"


class TaskStarted(Event):
    """A finished session was given its next task (the first task is ``SessionStart.task``)."""

    type: Literal["task_start"] = "task_start"
    task: str
    number: int  # 2 for the second task, and so on


class Resumed(Event):
    """The session was rebuilt from this log in a new process (a kernel restart, a crash)."""

    type: Literal["resume"] = "resume"
    model: str
    requeued: list[str] = []  # call ids of the last reply that had no outcome: asked again
    recovered: list[str] = []  # call ids whose commit had landed before the interruption
    recovery: list[str] = []  # as SessionStart's: interrupted commits finished or undone


class Rewound(Event):
    """Commits after ``to_step`` were undone; the session goes on as branch ``branch``."""

    type: Literal["rewind"] = "rewind"
    to_step: int
    parent: int  # the branch rewound
    undone: list[str] = []  # commit ids restored, newest first
    # What a rewind past to_step did not undo: commands that ran, and changes the session
    # found in place at a resume and did not write (``agent.history.KEPT_CHANGE``).
    not_undone: list[str] = []


class Condensed(Event):
    """Older turns of the context were replaced by ``text`` to stay under the budget."""

    type: Literal["condensed"] = "condensed"
    upto: int  # history messages replaced (from the start of the history)
    text: str
    method: Literal["digest", "model"] = "digest"
    tokens_before: int
    tokens_after: int
    budget: int


class FileSnapshot(Event):
    """A file's content when the session first read or staged it (for replay anywhere).

    The bytes live content-addressed under ``.grinta/blobs/`` (``sha256``); ``sha256``
    None means the file did not exist. ``stored`` False: over the bound, not kept.
    """

    type: Literal["snapshot"] = "snapshot"
    path: str
    sha256: str | None
    size: int = 0
    stored: bool = True
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
    | UserMessage
    | TaskStarted
    | Resumed
    | Rewound
    | Condensed
    | FileSnapshot
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
