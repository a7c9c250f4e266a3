"""A session's trace in the order it happened: its steps, and the marks between them.

A session that lasts is more than its current steps: where each task began,
what the user said to the model, rewinds (the steps they undid stay in the
trace, marked ``rewound``), condensations of the context, a resume after a
restart, and the end of each task a next task followed. All of it is read from
the session's event log (``session.log.events``, which a resumed session holds
from the start), so the live panel, the saved trace and the panel of a session
resumed in a new kernel show the same thing in the same order.

- Steps on the session's current branch are its own ``Step`` objects (what the
  live cards show). Steps a rewind took off the branch are rebuilt from their
  events (call, staged diff, validation, decision, outcome).
- A step sits where it was first proposed; a step staged again on resume sits
  where it was staged again (after the ``resumed`` mark).
- Each mark has a ``kind`` (vocabulary below), a short ``title`` and a ``text``
  in the product's words; the renderers show them as they are (escaped).

Pure: no IPython, no widgets; it costs one pass over the events.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from grinta_jupyter.agent.history import branch_events, recorded_proposal, split_not_undone
from grinta_jupyter.agent.models.base import ToolCall
from grinta_jupyter.agent.step import DecisionKind, Step
from grinta_jupyter.events import models as ev
from grinta_jupyter.runtime.errors import ErrorCode, ToolError
from grinta_jupyter.runtime.proposal import Observation

if TYPE_CHECKING:
    from grinta_jupyter.agent.session import Session

MarkKind = Literal["task", "said", "rewind", "condensed", "resumed", "ended", "recovery"]
MARK_KINDS: tuple[MarkKind, ...] = (
    "task",
    "said",
    "rewind",
    "condensed",
    "resumed",
    "ended",
    "recovery",
)
MAX_MARK_CHARS = 4_000  # a said message or a task is shown whole up to this; the log has all


@dataclass(frozen=True)
class Mark:
    """Something that happened between steps: a task began, the user spoke, a rewind..."""

    kind: MarkKind
    title: str
    text: str
    branch: int
    seq: int  # of the event it stands for: where it sits in the trace


@dataclass(frozen=True)
class TracedStep:
    """A step of the trace: ``rewound`` when a rewind took it off the current branch."""

    step: Step
    branch: int
    rewound: bool
    seq: int


Item = TracedStep | Mark


def timeline(session: Session) -> list[Item]:
    """The session's steps and marks, in the order they happened."""
    queued = {call.id for call, _text in session.queue}
    return build(session.log.events, session.steps, session.branch, queued)


def marks(session: Session) -> list[Mark]:
    return [item for item in timeline(session) if isinstance(item, Mark)]


_STEP_EVENTS = (ev.ToolProposed, ev.DiffStaged, ev.Validated, ev.UserDecision, ev.Observed)


def build(
    events: Sequence[ev.Event],
    steps: Sequence[Step],
    branch: int,
    queued: Set[str] = frozenset(),
) -> list[Item]:
    """The trace of ``events``; ``steps`` are the live steps of the current ``branch``.

    A call in ``queued`` (a resumed session's call without an outcome, to be staged
    again) is left out until it is staged again: its card comes with its new proposal.
    """
    on_path = {
        (e.branch, e.step) for e in branch_events(events, branch) if isinstance(e, ev.ToolProposed)
    }
    live = {s.number: s for s in steps}
    first: dict[tuple[int, int], int] = {}  # (branch, step) -> seq where the trace shows it
    of_step: dict[tuple[int, int], list[ev.Event]] = {}
    found: list[Item] = []
    task, summary = 1, ""
    reopened = _reopened_ends(events)
    rewinds = [e.seq for e in events if isinstance(e, ev.Rewound)]
    for event in events:
        if isinstance(event, _STEP_EVENTS) and event.step > 0:
            key = (event.branch, event.step)
            of_step.setdefault(key, []).append(event)
            if isinstance(event, ev.ToolProposed) and (key not in first or event.restaged):
                first[key] = event.seq
        elif isinstance(event, ev.FinishAttempt) and event.accepted:
            summary = event.summary
        elif isinstance(event, ev.TaskStarted):
            task = event.number
            summary = ""
        found.extend(_marks(event, task, summary, reopened))
    for key, seq in first.items():
        step_branch, number = key
        current = key in on_path and number in live
        if key in on_path and not current and _call_of(of_step[key]) in queued:
            continue
        step = live[number] if current else _recorded(number, of_step[key])
        if step is None:
            continue
        # A step that waited when a rewind came (to it: it stays on the branch, undecided)
        # was dropped by it: it will never be decided, as a step the rewind took off.
        dropped = (
            step.observation is None and step.decision is None and any(r > seq for r in rewinds)
        )
        found.append(TracedStep(step, step_branch, key not in on_path or dropped, seq))
    return sorted(found, key=lambda item: item.seq)


def _marks(event: ev.Event, task: int, summary: str, reopened: set[int]) -> list[Mark]:
    if isinstance(event, (ev.SessionStart, ev.Resumed)) and event.recovery:
        # Opening the workspace finished or undid commits a crash had interrupted: say so
        # (before the resume's own mark, as it happened first), naming their files.
        n = len(event.recovery)
        title = f"Recovered {n} interrupted commit{'' if n == 1 else 's'}"
        recovery = Mark("recovery", title, _cut("; ".join(event.recovery)), event.branch, event.seq)
        return [recovery, *filter(None, [_mark(event, task, summary, reopened)])]
    mark = _mark(event, task, summary, reopened)
    return [] if mark is None else [mark]


def _mark(event: ev.Event, task: int, summary: str, reopened: set[int]) -> Mark | None:
    def mark(kind: MarkKind, title: str, text: str) -> Mark:
        return Mark(kind, title, _cut(text), event.branch, event.seq)

    if isinstance(event, ev.TaskStarted):
        return mark("task", f"Task {event.number}", event.task)
    if isinstance(event, ev.UserMessage) and event.source == "user":
        return mark("said", "You said", event.text)
    if isinstance(event, ev.Rewound):
        return mark("rewind", f"Rewound to step {event.to_step}", rewind_text(event))
    if isinstance(event, ev.Condensed):
        return mark("condensed", "Context condensed", condensed_text(event))
    if isinstance(event, ev.Resumed):
        return mark("resumed", "Resumed", resumed_text(event))
    if isinstance(event, ev.SessionEnd) and event.seq in reopened:
        text = event.reason + (f": {summary}" if summary else "")
        return mark("ended", f"Task {task} ended", text)
    return None


def _reopened_ends(events: Sequence[ev.Event]) -> set[int]:
    """The seqs of the task ends that a next task or a rewind followed (the others are the
    session's own end, which the session card shows)."""
    found: set[int] = set()
    reopens = False
    for event in reversed(events):
        if isinstance(event, (ev.TaskStarted, ev.Rewound)):
            reopens = True
        elif isinstance(event, ev.SessionEnd):
            if reopens:
                found.add(event.seq)
            reopens = False
    return found


def rewind_text(event: ev.Rewound) -> str:
    undone = len(event.undone)
    parts = [
        f"{undone} commit{'' if undone == 1 else 's'} undone, byte for byte"
        if undone
        else "no commit to undo",
        f"the session goes on from step {event.to_step} as branch {event.branch}",
    ]
    kept, ran = split_not_undone(event.not_undone)
    if ran:
        parts.append("not undone (it ran, it cannot be undone): " + "; ".join(ran))
    if kept:
        parts.append("left as found: " + "; ".join(kept))
    return "; ".join(parts)


def condensed_text(event: ev.Condensed) -> str:
    how = "by the model" if event.method == "model" else "into a digest"
    return (
        f"{event.upto} older messages condensed {how}: {event.tokens_before:,} -> "
        f"{event.tokens_after:,} tokens (budget {event.budget:,})"
    )


def resumed_text(event: ev.Resumed) -> str:
    parts = [f"rebuilt from its log, with {event.model}"]
    if event.requeued:
        n = len(event.requeued)
        parts.append(
            f"{n} call{'' if n == 1 else 's'} without an outcome asked again, "
            "staged against the files as they are now"
        )
    if event.recovered:
        n = len(event.recovered)
        parts.append(f"{n} commit{'' if n == 1 else 's'} had landed before the interruption")
    return "; ".join(parts)


_DECISIONS: dict[str, DecisionKind] = {
    "approve": "approve",
    "approve_hunks": "approve_hunks",
    "veto": "veto",
    "auto": "auto",
}


def _call_of(events: Sequence[ev.Event]) -> str | None:
    proposed = [e for e in events if isinstance(e, ev.ToolProposed)]
    return proposed[-1].call_id if proposed else None


def _recorded(number: int, events: Sequence[ev.Event]) -> Step | None:
    """A step as its events recorded it (a step a rewind took off the branch)."""
    proposed = [e for e in events if isinstance(e, ev.ToolProposed)]
    if not proposed:
        return None
    last = proposed[-1]
    mine = [e for e in events if getattr(e, "call_id", None) == last.call_id]
    staged = next((e for e in reversed(mine) if isinstance(e, ev.DiffStaged)), None)
    proposal = recorded_proposal(last, staged)
    validated = next((e for e in reversed(mine) if isinstance(e, ev.Validated)), None)
    if validated is not None and not validated.ok:
        proposal = replace(proposal, error=_error(validated.code, validated.message or ""))
    step = Step(number, ToolCall(last.call_id, last.tool, last.arguments), proposal)
    step.edits = sum(1 for e in mine if isinstance(e, ev.UserDecision) and e.decision == "edit")
    for decision in (e for e in mine if isinstance(e, ev.UserDecision)):
        if decision.decision in _DECISIONS:
            step.decision = _DECISIONS[decision.decision]
            step.reason = decision.reason
    observed = next((e for e in reversed(mine) if isinstance(e, ev.Observed)), None)
    if observed is not None:
        error = _error(observed.code, "") if observed.code else None
        step.observation = Observation(
            observed.ok, observed.output, error, None, None, observed.exit_code
        )
    step.restaged, step.stale = last.restaged, last.stale
    return step


def _error(code: str | None, message: str) -> ToolError | None:
    try:
        return ToolError(ErrorCode.parse(code or "INVALID_ARGS"), message)
    except ValueError:  # a code the runtime does not know (VETO, PREMATURE_FINISH)
        return None


def _cut(text: str) -> str:
    if len(text) <= MAX_MARK_CHARS:
        return text
    return text[:MAX_MARK_CHARS] + f" [... {len(text) - MAX_MARK_CHARS} more characters]"
