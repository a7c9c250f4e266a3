"""A session's history as a projection of its event log.

The model's context is fed only from events (``ContextFeed``): a reply, a tool
result, a user message, a new task, a condensation. So the context a live
session holds and the one rebuilt from its log by ``rebuild`` are the same by
construction, and the log's ``model_request`` digests check it. Resume, rewind
and ``grinta run --continue`` all start from ``rebuild``.

Branches: a rewind to step N starts branch B from branch P (``Rewound``).
``branch_events(events, B)`` is the linear path of B: P's own path up to the
end of step N (events of steps 1..N, and the session-level events of step 0),
then the ``Rewound`` event and B's own events.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grinta_jupyter.agent.context import NEXT_TASK, Context
from grinta_jupyter.agent.guards import Guards, Limits
from grinta_jupyter.agent.models.base import ToolCall, Usage
from grinta_jupyter.agent.step import Step, Totals
from grinta_jupyter.events import models as ev
from grinta_jupyter.events.log import LogError, held_elsewhere, read_events
from grinta_jupyter.runtime.errors import ErrorCode, ToolError
from grinta_jupyter.runtime.proposal import (
    CommandProposal,
    FileChange,
    FinishProposal,
    Observation,
    Proposal,
    ReadProposal,
    WriteProposal,
)
from grinta_jupyter.runtime.secrets import Secrets

NOT_RUN = "(not run: {why})"
# How a write approved before an interruption is summed up when, at the resume, its files
# already held its change though no commit of the session made it (typed by hand): no
# commit is logged, and a rewind leaves those bytes as they are (``kept_changes``).
KEPT_CHANGE = "already in place, not written by this session"


class ContextFeed:
    """Applies events to a ``Context``, in order: the one place the context grows.

    A user message said while the model is asked (between a ``model_request`` and its
    reply) or while calls of the last reply still wait for their results is held back
    until the last of them arrives: the API wants every tool result right after the
    reply that asked for it, and the model reads what was said at its next turn.
    """

    def __init__(self, context: Context) -> None:
        self.context = context
        self.outstanding: list[str] = []  # call ids of the last reply without a result yet
        self.held: list[str] = []  # user messages waiting for those results
        self.asking = False  # a request was sent and its reply is not in yet

    def apply(self, event: ev.Event) -> None:
        context = self.context
        if isinstance(event, ev.ModelRequest):
            # The live session readied its context before this request (``ready``): after a
            # turn that was cancelled, what was said during it went in before this request,
            # not after the next reply.
            self.ready()
            self.asking = True
        elif isinstance(event, ev.ModelReplied):
            self.asking = False
            self._close(NOT_RUN.format(why="the model replied again first"), flush=False)
            context.add_assistant(event.text, event.tool_calls)
            self.outstanding = [c["id"] for c in event.tool_calls]
            self._flush()  # what was said while it thought follows the reply (and results)
        elif isinstance(event, ev.Observed):
            if event.call_id not in self.outstanding:
                return  # a result for a call this context never asked (a foreign log line)
            self.outstanding.remove(event.call_id)
            if event.tool == "finish" and event.ok:
                context.add_tool_result(
                    event.call_id, "finish", "accepted", "finish accepted", data=False
                )
            else:
                context.add_tool_result(
                    event.call_id,
                    event.tool,
                    data_of(event),
                    event.summary,
                    notes=event.notes,
                    data=event.fenced,
                )
            self._flush()
        elif isinstance(event, ev.UserMessage):
            self.held.append(event.text)
            self._flush()
        elif isinstance(event, ev.TaskStarted):
            self.asking = False
            self._close(NOT_RUN.format(why="the task ended before this call"))
            self.held.append(next_task_text(event.task))
            self._flush()
        elif isinstance(event, ev.Rewound):
            self.asking = False
            self._close(NOT_RUN.format(why=f"the user rewound the session to step {event.to_step}"))
            self.held.append(rewind_text(event))
            self._flush()
        elif isinstance(event, ev.Condensed):
            self.ready()  # a condensation comes only just before a request, once ready
            context.condense(event.upto, event.text)

    def ready(self) -> None:
        """Before a request: every call has its result and every message is in. The live
        session calls it before it condenses and asks; a rebuild, at those events."""
        self.asking = False  # a request that never got its reply (a crash, a cancel)
        self._close(NOT_RUN.format(why="the session moved on"))

    def _close(self, why: str, flush: bool = True) -> None:
        for call_id in self.outstanding:
            name = self._name_of(call_id)
            self.context.add_tool_result(call_id, name, why, why, data=False)
        self.outstanding = []
        if flush:
            self._flush()

    def _flush(self) -> None:
        if self.outstanding or self.asking:
            return
        for text in self.held:
            self.context.add_user(text)
        self.held = []

    def _name_of(self, call_id: str) -> str:
        for message in reversed(self.context.history):
            for call in message.get("tool_calls") or ():
                if call["id"] == call_id:
                    return str(call["function"]["name"])
        return "tool"


def next_task_text(task: str) -> str:
    return NEXT_TASK + task


def split_not_undone(not_undone: Sequence[str]) -> tuple[list[str], list[str]]:
    """A rewind's ``not_undone`` as (changes found in place and left as they are, commands
    that ran): each surface words the two differently."""
    kept = [x for x in not_undone if KEPT_CHANGE in x]
    return kept, [x for x in not_undone if KEPT_CHANGE not in x]


def rewind_text(event: ev.Rewound) -> str:
    kept, ran = split_not_undone(event.not_undone)
    if kept:  # the files are not all as they were then: say which are not, and why
        text = (
            f"(The user rewound the session to step {event.to_step}: the changes the session "
            "made after it were undone. Changes it found in place and did not write were left "
            "as they are: " + "; ".join(kept) + "."
        )
    else:
        text = (
            f"(The user rewound the session to step {event.to_step}: the changes made after it "
            f"were undone, and the files are as they were after step {event.to_step}."
        )
    if ran:
        text += " Commands that ran after it could not be undone: " + "; ".join(ran)
    return text + ")"


def kept_changes(path: Sequence[ev.Event], after: int) -> list[str]:
    """The writes of steps after ``after`` on ``path`` whose change was found in place at a
    resume and not written by the session (an ok ``observation`` of a write with no
    ``commit``): a rewind leaves their files as they are, and says so with these lines."""
    writes = {
        (e.step, e.call_id) for e in path if isinstance(e, ev.ToolProposed) and e.kind == "write"
    }
    committed = {(e.step, e.call_id) for e in path if isinstance(e, ev.Committed)}
    paths = {(e.step, e.call_id): e.paths for e in path if isinstance(e, ev.DiffStaged)}
    return [
        f"step {e.step}: {', '.join(paths.get((e.step, e.call_id), [])) or e.tool} "
        f"({KEPT_CHANGE}): left as it is"
        for e in path
        if isinstance(e, ev.Observed)
        and e.ok
        and e.step > after
        and (e.step, e.call_id) in writes
        and (e.step, e.call_id) not in committed
    ]


def data_of(event: ev.Observed) -> str:
    """The tool's own output in an ``Observed`` event, without grinta's notes after it."""
    if not event.notes:
        return event.output
    tail = "\n\n" + "\n\n".join(event.notes)
    return event.output[: -len(tail)] if event.output.endswith(tail) else event.output


# -- branches ---------------------------------------------------------------------------------


def branches(events: Sequence[ev.Event]) -> dict[int, ev.Rewound | None]:
    """Every branch of the log, and the rewind that started it (None for branch 0)."""
    found: dict[int, ev.Rewound | None] = {0: None}
    for event in events:
        if isinstance(event, ev.Rewound):
            # A branch grows from an older one: anything else (a hand-edited or hostile
            # log) would make the paths loop.
            if not 0 <= event.parent < event.branch or event.branch in found:
                raise LogError(
                    f"the log's rewind (event {event.seq}) makes branch {event.branch} from "
                    f"branch {event.parent}: not a branch history grinta writes"
                )
            if event.parent not in found:
                raise LogError(f"the log's rewind (event {event.seq}) names an unknown branch")
            found[event.branch] = event
    return found


def branch_events(events: Sequence[ev.Event], branch: int) -> list[ev.Event]:
    """The linear path of ``branch``: what its session saw, in order."""
    made = branches(events)
    if branch not in made:
        raise LogError(f"the log has no branch {branch} (it has {sorted(made)})")
    # The chain of branches from 0 to ``branch``, each with the bounds the rewinds after it
    # put on its events: before the first of them, and no later than the lowest step they
    # went back to. One pass per branch, not one per ancestor: a session rewound a thousand
    # times is a chain a thousand deep (recursing would overflow the stack).
    bounds: dict[int, tuple[int, int]] = {}  # branch -> (events before this seq, up to step)
    seq, step = -1, -1
    current: int | None = branch
    while current is not None:
        bounds[current] = (seq, step)
        rewind = made[current]
        if rewind is None:
            current = None
        else:
            seq = rewind.seq if seq < 0 else min(seq, rewind.seq)
            step = rewind.to_step if step < 0 else min(step, rewind.to_step)
            current = rewind.parent
    own: dict[int, list[ev.Event]] = {b: [] for b in bounds}
    for event in events:
        limit = bounds.get(event.branch)
        if limit is None:
            continue
        if limit[0] < 0 or (event.seq < limit[0] and event.step <= limit[1]):
            own[event.branch].append(event)
    return [e for b in sorted(bounds) for e in own[b]]


# -- rebuilding a session's state -------------------------------------------------------------


@dataclass
class Rebuilt:
    """A session's state at the end of a path of its events."""

    start: ev.SessionStart
    context: Context
    feed: ContextFeed
    limits: Limits
    guards: Guards
    steps: list[Step] = field(default_factory=list)
    totals: Totals = field(default_factory=Totals)
    tasks: list[str] = field(default_factory=list)
    task_first_step: int = 0  # steps before the current task began
    task_tokens: int = 0  # tokens spent before the current task began
    ended: ev.SessionEnd | None = None  # the current task's end, if it ended
    unfinished: list[tuple[ToolCall, str]] = field(default_factory=list)  # no outcome yet
    staged: dict[str, ev.DiffStaged] = field(default_factory=dict)  # call id -> its last diff
    proposed: dict[str, ev.ToolProposed] = field(default_factory=dict)  # call id -> its last
    approved: set[str] = field(default_factory=set)  # calls of the last reply approved
    edited: set[str] = field(default_factory=set)  # unfinished calls the user edited
    summary: str | None = None


def limits_from(settings: dict[str, Any]) -> Limits:
    """The ``Limits`` a session ran with, from ``SessionStart.settings``.

    Unknown keys are ignored, and a value of the wrong kind (a hand-edited log) takes its
    default, so a resumed session never fails on one half-way through a step.
    """
    return Limits(**{k: v for k, v in settings.items() if k in _LIMITS and _fits(k, v)})


def setting(settings: dict[str, Any], name: str, default: int) -> int:
    """A whole-number setting of ``SessionStart.settings``; ``default`` when it is not one."""
    value = settings.get(name)
    return value if value is not None and _fits(name, value) else default


_LIMITS = set(Limits.__dataclass_fields__)
_OPTIONAL = {"max_steps", "max_tokens", "max_cost", "max_wall_time", "context_budget"}
_FRACTIONAL = {"max_cost", "max_wall_time"}


def _fits(name: str, value: Any) -> bool:
    """Whether ``value`` is a value the setting ``name`` can take (None: no limit)."""
    if name == "condense":
        return value in ("digest", "model")
    if value is None:
        return name in _OPTIONAL
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return (name in _FRACTIONAL or isinstance(value, int)) and value > 0


def check_sequence(events: Sequence[ev.Event], where: str) -> None:
    """Raise ``LogError`` unless ``events`` are one session's, numbered 1, 2, 3... in order,
    with one ``session_start``, first, each on the branch the session was on when it wrote
    it (0, then each rewind's new branch, grown from the branch before): what resume needs
    to rebuild a session from them (a repeated, reordered, missing or foreign line, or one
    moved to another branch, would rebuild another one: a commit off its branch's path is
    never undone by a rewind)."""
    if not events or not isinstance(events[0], ev.SessionStart):
        raise LogError(f"{where} does not begin with its session_start event")
    session = events[0].session
    branches(events)  # each grown from an older one
    current = 0  # the branch the session writes on
    for number, event in enumerate(events, 1):
        if isinstance(event, ev.Rewound) and event.parent == current:
            current = event.branch
        elif isinstance(event, ev.Rewound) or event.branch != current:
            raise LogError(
                f"{where}: event {number} is on branch {event.branch} while the session was "
                f"on branch {current}: it cannot be resumed"
            )
        if event.seq != number:
            raise LogError(
                f"{where}: event {number} is numbered {event.seq} (a line was repeated, "
                "reordered or lost): it cannot be resumed"
            )
        if event.session != session:
            raise LogError(f"{where}: event {number} belongs to another session ({event.session})")
        if number > 1 and isinstance(event, ev.SessionStart):
            raise LogError(f"{where}: event {number} is a second session_start")


def rebuild(
    events: Sequence[ev.Event],
    *,
    root: str,
    boundary: str | None = None,
    rules: str = "",
    secrets: Secrets | None = None,
) -> Rebuilt:
    """The state at the end of ``events`` (one branch's path: ``branch_events``).

    ``rules``: the rules text of the system prompt (``agent/rules.py``), as it is now;
    ``boundary``: the fences' id to use (a fresh one when None).
    """
    start = next((e for e in events if isinstance(e, ev.SessionStart)), None)
    if start is None:
        raise LogError("the log has no session_start event")
    keep = setting(start.settings, "keep_observations", 5)
    context = Context.start(root, start.task, keep, secrets, rules=rules)
    if boundary is not None:  # the live session's own fences (to compare with its digests)
        context.system = context.system.replace(context.boundary, boundary)
        context.boundary = boundary
    limits = limits_from(start.settings)
    state = Rebuilt(start, context, ContextFeed(context), limits, Guards(limits, start.task, root))
    state.tasks.append(start.task)
    # The steps of the last reply's calls, by call id (models may reuse ids across replies).
    current: dict[str, Step] = {}
    for event in events:
        if isinstance(event, ev.ModelReplied) and not all(
            {"id", "name", "arguments"} <= set(c) for c in event.tool_calls
        ):
            raise LogError(f"the log's model reply (event {event.seq}) has a malformed tool call")
        try:
            state.feed.apply(event)
        except ValueError as exc:  # a condensation this history cannot take: an edited line
            raise LogError(
                f"the log's event {event.seq} ({event.type}) does not fit the context rebuilt "
                f"from the lines before it ({exc}): it cannot be resumed"
            ) from None
        if isinstance(event, ev.ModelReplied):
            state.totals.add(Usage(event.prompt_tokens, event.completion_tokens, event.cost))
            calls = [ToolCall(c["id"], c["name"], c["arguments"]) for c in event.tool_calls]
            state.unfinished = [(c, event.text if i == 0 else "") for i, c in enumerate(calls)]
            current = {}
            # Models reuse call ids across replies ("call_0"): what an earlier call of the same
            # id staged or was decided is not this one's.
            for c in calls:
                state.staged.pop(c.id, None)
                state.proposed.pop(c.id, None)
            state.approved = set()
            state.edited = set()
        elif isinstance(event, ev.ToolProposed):
            _proposed(state, current, event)
            _as_proposed(state, event)
        elif isinstance(event, ev.DiffStaged):
            state.staged[event.call_id] = event
            if event.call_id in current:  # the diff of a write: the guards read its paths
                found = current[event.call_id]
                found.proposal = recorded_proposal(state.proposed[event.call_id], event)
        elif isinstance(event, ev.UserDecision) and event.decision == "veto":
            if event.call_id in current:
                current[event.call_id].decision = "veto"
        elif isinstance(event, ev.UserDecision) and event.decision in ("approve", "auto"):
            state.approved.add(event.call_id)
        elif isinstance(event, ev.Observed):
            _observed(state, event, current.get(event.call_id))
        elif isinstance(event, ev.FinishAttempt) and not event.accepted:
            state.guards.finish.rejections += 1
        elif isinstance(event, ev.Undone) and event.ok:
            state.guards.finish.undo(event.step)
        elif isinstance(event, ev.TaskStarted):
            state.tasks.append(event.task)
            state.guards = Guards(limits, event.task, root)
            state.task_first_step = len(state.steps)
            state.task_tokens = state.totals.prompt_tokens + state.totals.completion_tokens
            state.ended, state.summary, state.unfinished = None, None, []
        elif isinstance(event, ev.SessionEnd):
            state.ended = event
            if event.reason == "finished":
                state.unfinished = []
        elif isinstance(event, ev.Rewound):
            state.ended, state.unfinished = None, []
        elif isinstance(event, ev.FinishAttempt) and event.accepted:
            state.summary = event.summary
    return state


def _proposed(state: Rebuilt, current: dict[str, Step], event: ev.ToolProposed) -> None:
    """A call staged: a new step, numbered as the live session numbered it (a step that was
    dropped undecided, by a stop or a rewind, keeps its number). The same call staged again
    (edited arguments, or re-staged by a resume) is the same step."""
    state.proposed[event.call_id] = event
    proposal = recorded_proposal(event, None)
    call = ToolCall(event.call_id, event.tool, event.arguments)
    found = current.get(event.call_id)
    if found is not None and found.observation is None:
        found.call, found.proposal = call, proposal
        return
    step = Step(len(state.steps) + 1, call, proposal)
    state.steps.append(step)
    current[event.call_id] = step


def _as_proposed(state: Rebuilt, event: ev.ToolProposed) -> None:
    """A call without an outcome is queued again as it was last proposed: with the arguments
    the user edited, not the model's (an edit is the user's, lost otherwise on resume). The
    first such call of that id: the one staged (a reply may give two calls one id)."""
    for i, (call, text) in enumerate(state.unfinished):
        if call.id == event.call_id:
            if call.arguments != event.arguments:
                state.unfinished[i] = (ToolCall(call.id, call.name, event.arguments), text)
                state.edited.add(call.id)
            return


def _observed(state: Rebuilt, event: ev.Observed, step: Step | None) -> None:
    # The first call of that id only: a reply may give two calls one id.
    first = next((i for i, (c, _) in enumerate(state.unfinished) if c.id == event.call_id), None)
    if first is not None:
        del state.unfinished[first]
    if step is None or step.observation is not None:
        return  # a result for a call never staged here (a foreign line): nothing to count
    error = _error(event.code)
    step.observation = Observation(event.ok, data_of(event), error, None, None, event.exit_code)
    if step.call.name != "finish":
        step.proposal = recorded_proposal(
            state.proposed[event.call_id], state.staged.get(event.call_id)
        )
        state.guards.after(step.number, step.proposal, step.observation, step.decision == "veto")


def _error(code: str | None) -> ToolError | None:
    """The tool error an ``observation`` recorded (None for none, a veto, a refused finish)."""
    try:
        return ToolError(ErrorCode.parse(code), "") if code else None
    except ValueError:  # not a tool's code: VETO, PREMATURE_FINISH
        return None


def recorded_proposal(proposed: ev.ToolProposed, staged: ev.DiffStaged | None) -> Proposal:
    """A proposal as the log recorded it (for guards and front ends; nothing to commit)."""
    try:
        args = json.loads(proposed.arguments)
    except (ValueError, RecursionError):  # nested too deeply: refused when proposed
        args = {}
    if not isinstance(args, dict):
        args = {}
    common: dict[str, Any] = {"tool": proposed.tool, "args": args, "summary": proposed.summary}
    if proposed.kind == "write":
        paths = staged.paths if staged else []
        diff = staged.diff if staged else ""
        changes = tuple(
            FileChange(p, None, None, None, None, None, diff if i == 0 else "")
            for i, p in enumerate(paths)
        )
        return WriteProposal(**common, changes=changes)
    if proposed.kind == "command":
        command = args.get("command") if isinstance(args.get("command"), str) else None
        return CommandProposal(**common, command=command)
    if proposed.kind == "finish":
        return FinishProposal(**common, output=str(args.get("summary", "")))
    return ReadProposal(**common)


# -- finding a session to resume --------------------------------------------------------------


def unfinished(events: Iterable[ev.Event]) -> bool:
    """Whether the log's current task has not ended (no session_end after its start)."""
    ended = False
    for event in events:
        if isinstance(event, (ev.SessionStart, ev.TaskStarted, ev.Rewound)):
            ended = False
        elif isinstance(event, ev.SessionEnd):
            ended = True
    return not ended


def latest_unfinished(root: str | Path, log_dir: str | Path | None = None) -> Path | None:
    """The most recent session log of the workspace at ``root`` whose task did not end and
    that no session of another process holds (one running in another kernel is not the one
    to resume: a crashed one older than it is). Looked for in the workspace's
    ``.grinta/sessions`` and, when logs go elsewhere (``GRINTA_LOG_DIR``: ``log_dir``), among
    the logs there of sessions that ran in ``root``."""
    logs: list[Path] = []
    for folder in (Path(root) / ".grinta" / "sessions", log_dir):
        if folder is None:
            continue
        folder = Path(folder).expanduser()
        try:
            logs += [p for p in folder.glob("*.jsonl") if p.is_file() and not p.is_symlink()]
        except OSError:
            continue
    try:
        logs.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return None
    home = Path(root) / ".grinta" / "sessions"
    for log in dict.fromkeys(logs):  # the two folders may be one
        try:
            if log.parent != home and not (owned(log) and _started_in(log, root)):
                continue  # another workspace's session, or another user's, in the log folder
            if unfinished(read_events(log)) and not held_elsewhere(log):
                return log
        except (OSError, ValueError, RecursionError):
            continue
    return None


def owned(path: Path) -> bool:
    """Whether ``path`` is a file of this process's user, not a link (a log folder may be
    shared: another user's link to a log elsewhere is theirs)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid()


def _started_in(log: Path, root: str | Path) -> bool:
    """Whether the session of ``log`` ran in the workspace at ``root`` (an absolute path):
    its first line only, so a folder of other workspaces' large logs is not read whole."""
    try:
        with open(log, encoding="utf-8", errors="replace") as file:
            first = json.loads(file.readline(_FIRST_LINE_MAX))
        named = first.get("root") if first.get("type") == "session_start" else None
        if not isinstance(named, str) or not os.path.isabs(named):
            return False  # a relative root names no workspace
        return Path(named).resolve() == Path(root).resolve()
    except (OSError, ValueError, AttributeError):
        return False


_FIRST_LINE_MAX = 8 << 20  # a session_start line is a few kB (its settings, its rules)
