"""Re-run a recorded session and report every step whose proposal differs.

The model turns come from the log (``ReplayModel``); the user's decisions are
replayed too (approve, edit with the same arguments, veto with the same
reason, the same hunks), and so is the conversation: each next task starts
where it started (``continue_task`` once the task before it ended), and each
thing the user said (``UserMessage`` from the user) is said again so that it
reaches the same model turn. Each replayed proposal is compared with the
recorded one: the tool, its arguments, the staged diff and the validation
result, per step of the task it belongs to; and a task that finished in the
log must finish in the replay.

A rewound session is replayed one branch at a time, as the straight line of
steps that branch saw (``history.branch_events``): its parent's steps up to
the step it was rewound to, then its own. By default the branch the log ended
on. A rewind to the step that was waiting (it dropped that step) is made again
there; other rewinds are not replayed (the branch's line never had the undone steps).

Where it runs: ``root`` when given (a workspace in the session's starting
state: it is changed by the replay; the files that are not as the session
found them are listed in ``ReplayReport.notes``); else a fresh copy of the
bundled sample the session ran on; else a new temporary folder holding every
file the session read or changed, as it first found it, rebuilt from the
log's snapshots (``events/snapshots.py``; their blobs are looked for beside
the log, then in the workspace the log names). Only those files: a command
that reads others behaves differently there, so replay such a session on a
copy of its workspace with ``root``.

A log that cannot be replayed (missing, not a session log, from an unknown
sample or toolset, without a branch asked for, neither from a sample nor with
snapshots, or with a file whose snapshot is missing or damaged) raises
``LogError`` with one line saying why, before anything runs.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grinta_jupyter.agent.blocking import run_blocking
from grinta_jupyter.agent.condense import SUMMARY_MARK
from grinta_jupyter.agent.guards import Limits
from grinta_jupyter.agent.models.base import ModelError, ModelReply
from grinta_jupyter.agent.models.replay import ReplayModel
from grinta_jupyter.agent.session import RewindError, Session
from grinta_jupyter.agent.updates import Approve, ApproveHunks, Edit, NeedsDecision, Veto
from grinta_jupyter.events import models as ev
from grinta_jupyter.events.log import LogError, read_log
from grinta_jupyter.events.snapshots import SnapshotStore, differences, first_snapshots
from grinta_jupyter.tools import TOOLSETS
from grinta_jupyter.tools.base import Toolset

SHOWN_FILES = 5  # files named in a one-line error; the rest are counted


@dataclass
class ReplayReport:
    steps: int
    differences: list[str] = field(default_factory=list)
    log_path: Path | None = None  # the replay's own log
    branch: int = 0  # the branch replayed
    tasks: int = 1  # tasks of that branch
    root: Path | None = None  # where it ran
    # Files of the workspace given that were not as the session found them (a likely cause
    # of differences, said apart from them).
    notes: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.differences


Fingerprint = tuple[str, str, str, "str | None"]
StepKey = tuple[int, int]  # (task, step)


def _fingerprints(events: Sequence[ev.Event]) -> dict[StepKey, Fingerprint]:
    """Per (task, step): (tool, arguments, diff, validation code) of the last proposal."""
    prints: dict[StepKey, Fingerprint] = {}
    task = 1
    for e in events:
        key = (task, e.step)
        if isinstance(e, ev.TaskStarted):
            task = e.number
        elif isinstance(e, ev.ToolProposed):
            prints[key] = (e.tool, e.arguments, "", None)
        elif isinstance(e, ev.DiffStaged) and key in prints:
            prints[key] = (*prints[key][:2], e.diff, prints[key][3])
        elif isinstance(e, ev.Validated) and key in prints:
            prints[key] = (*prints[key][:3], e.code)
    return prints


def replay(
    log: str | os.PathLike[str],
    root: str | os.PathLike[str] | None = None,
    branch: int | None = None,
) -> ReplayReport:
    """Replay ``branch`` of ``log`` (default: the one it ended on) and compare every step."""
    where = os.fspath(log)
    events = read_log(log)
    start = next(e for e in events if isinstance(e, ev.SessionStart))
    toolset = _toolset(start, where)
    path, branch = _branch_path(events, branch, where)
    try:
        model = _Playback(path)
    except (KeyError, TypeError) as exc:  # a model_reply whose tool calls lack a field
        raise LogError(f"{where} holds a model_reply that cannot be replayed ({exc!r})") from None
    notes: list[str] = []
    rebuilt = root is None and not start.sample
    if root is not None:
        notes = [
            f"{line} in {os.fspath(root)}: not as the session found it"
            for line in differences(events, root)
        ]
    else:
        root = _workspace(Path(log), events, start, where)
    decisions: dict[StepKey, list[ev.UserDecision]] = {}
    rewinds: set[StepKey] = set()  # steps a rewind dropped while they waited
    task = 1
    for e in path:
        if isinstance(e, ev.TaskStarted):
            task = e.number
        elif isinstance(e, ev.UserDecision):
            decisions.setdefault((task, e.step), []).append(e)
        elif isinstance(e, ev.Rewound):
            rewinds.add((task, e.to_step))
    session = Session(
        start.task,
        model=model,
        root=root,
        toolset=toolset,
        policy="ask",
        limits=_limits(start.settings, path),
        keep_observations=_keep_observations(start.settings),
        sample=start.sample,
    )
    model.session = session

    def decide(update: NeedsDecision, task: int) -> None:
        queue = decisions.get((task, update.step.number), [])
        if not queue and (task, update.step.number) in rewinds:
            # Rewound to this very step while it waited: the step is dropped, as it was then.
            rewinds.discard((task, update.step.number))
            try:
                session.rewind(update.step.number)
            except (RewindError, LogError) as exc:
                session.stop(f"replay: the recorded rewind was refused: {exc}")
            return
        if not queue:
            session.stop("replay: the log has no decision for this step")
            return
        recorded = queue.pop(0)
        if recorded.decision in ("approve", "auto"):
            session.decide(Approve())
        elif recorded.decision == "veto":
            session.decide(Veto(recorded.reason or ""))
        elif recorded.decision == "approve_hunks":
            chosen = ApproveHunks(recorded.hunks or [], recorded.reason or "")
            selected = session.decide(chosen)
            if selected is not None and not selected.ok:
                session.stop("replay: the recorded hunks no longer apply")
        else:
            session.decide(Edit(recorded.arguments or "{}"))

    async def drive() -> None:
        for number, (text, first) in enumerate(model.tasks, 1):
            if number > 1:
                try:
                    session.continue_task(text)
                except (ValueError, RuntimeError):  # a task the session refuses: it stops here
                    return
                model.begin_task(number, first)
            model.before_driving()
            async for update in session.updates():
                model.after_update()
                if isinstance(update, NeedsDecision) and session.waiting:
                    decide(update, number)

    run_blocking(drive())
    recorded, replayed = _fingerprints(path), _fingerprints(session.log.events)
    report = ReplayReport(
        steps=len(recorded),
        log_path=session.log_path,
        branch=branch,
        tasks=len(model.tasks),
        root=Path(root),
        notes=notes,
    )
    for key in sorted(set(recorded) | set(replayed)):
        a, b = recorded.get(key), replayed.get(key)
        if a != b:
            what = (
                "missing in replay"
                if b is None
                else "extra in replay"
                if a is None
                else _what_differs(a, b)
            )
            label = f"step {key[1]}" if key[0] == 1 else f"task {key[0]} step {key[1]}"
            report.differences.append(f"{label}: {what}")
    ends, ended = _endings(path), _endings(session.log.events)
    for number, reason in sorted(ends.items()):
        if reason == "finished" and ended.get(number) != "finished":
            label = "the session" if len(model.tasks) == 1 else f"task {number}"
            report.differences.append(
                f"{label}: finished in the log, ended {ended.get(number) or 'never'} in the replay"
            )
    commands = sorted(
        {e.step for e in path if isinstance(e, ev.ToolProposed) and e.kind == "command"}
    )
    if rebuilt and commands and report.differences:
        report.notes.append(
            f"the workspace was rebuilt with only the {len(first_snapshots(events))} file(s) the "
            f"session read or changed; the commands of step(s) {', '.join(map(str, commands))} "
            "may need others: replay on a copy of the workspace as it was (--root)"
        )
    return report


def _endings(events: Sequence[ev.Event]) -> dict[int, str]:
    """Per task: why it last ended."""
    ends: dict[int, str] = {}
    task = 1
    for e in events:
        if isinstance(e, ev.TaskStarted):
            task = e.number
        elif isinstance(e, ev.SessionEnd):
            ends[task] = e.reason
    return ends


def _what_differs(a: Fingerprint, b: Fingerprint) -> str:
    names = ("tool", "arguments", "diff", "validation")
    return "differs in " + ", ".join(n for n, x, y in zip(names, a, b, strict=True) if x != y)


# -- what to replay, and where -----------------------------------------------------------------


def _toolset(start: ev.SessionStart, where: str) -> str | Toolset:
    from grinta_jupyter.samples.core import sample_path

    if start.toolset == "kernel":
        # A session that ran in a kernel: its variables are not in the log, so inspect and
        # execute replay against a fresh, empty namespace (docs/notebook.md).
        from grinta_jupyter.tools.kernel import DictNamespace, kernel_toolset

        return kernel_toolset(DictNamespace())
    if start.toolset not in TOOLSETS:
        raise LogError(f"{where} ran with an unknown toolset {start.toolset!r}")
    if start.sample:
        try:
            sample_path(start.sample)
        except ValueError as exc:
            raise LogError(f"{where} cannot be replayed: {exc}") from None
    return start.toolset


def _branch_path(
    events: list[ev.Event], branch: int | None, where: str
) -> tuple[list[ev.Event], int]:
    """The events of the branch to replay, and its number."""
    if not any(isinstance(e, ev.Rewound) for e in events):
        if branch not in (None, 0):
            raise LogError(f"{where} has no branch {branch}: it was never rewound (branch 0 only)")
        return events, 0
    from grinta_jupyter.agent.history import branch_events, branches

    known = branches(events)
    chosen = events[-1].branch if branch is None else branch
    if chosen not in known:
        raise LogError(
            f"{where} has no branch {chosen} (its branches: "
            + ", ".join(str(b) for b in sorted(known))
            + ")"
        )
    return branch_events(events, chosen), chosen


def _workspace(log: Path, events: list[ev.Event], start: ev.SessionStart, where: str) -> Path:
    """A new folder in the session's starting state: its sample, or its snapshots."""
    made = Path(tempfile.mkdtemp(prefix="grinta-replay-"))
    if start.sample:
        from grinta_jupyter.samples.tasks import copy_workspace

        return copy_workspace(start.sample, made / start.sample)
    if not first_snapshots(events):
        shutil.rmtree(made, ignore_errors=True)
        raise LogError(
            f"{where} did not run on a bundled sample and keeps no snapshots of its files: "
            "pass --root with the workspace in its starting state"
        )
    root = made / _folder_name(start.root)
    stores = [SnapshotStore(folder) for folder in _store_roots(log, start)]
    try:
        failed = stores[0].materialize(events, root, others=stores[1:])
    except OSError as exc:
        shutil.rmtree(made, ignore_errors=True)
        raise LogError(f"cannot rebuild the workspace of {where}: {exc.strerror or exc}") from None
    if failed:
        shutil.rmtree(made, ignore_errors=True)
        shown = ", ".join(failed[:SHOWN_FILES])
        more = f" and {len(failed) - SHOWN_FILES} more" if len(failed) > SHOWN_FILES else ""
        raise LogError(
            f"{where} cannot be replayed: {len(failed)} file(s) cannot be restored as the "
            f"session found them: {shown}{more} (pass --root with the workspace in its "
            "starting state)"
        )
    return root


def _store_roots(log: Path, start: ev.SessionStart) -> list[Path]:
    """Workspaces whose blobs may hold the log's snapshots: the one the log lies in
    (``<root>/.grinta/sessions/x.jsonl``), then the one it names."""
    roots: list[Path] = []
    parent = log.parent
    if parent.name == "sessions" and parent.parent.name == ".grinta":
        roots.append(parent.parent.parent)
    if start.root:
        roots.append(Path(start.root))
    unique: dict[str, Path] = {}
    for folder in roots or [Path(".")]:
        unique.setdefault(os.path.abspath(folder), folder)
    return list(unique.values())


def _folder_name(root: str) -> str:
    """The recorded workspace's folder name, when it is a plain one (paths in output read alike)."""
    name = Path(root).name
    return name if re.fullmatch(r"[\w.+-]{1,64}", name) and name not in (".", "..") else "workspace"


def _limits(settings: dict[str, Any], path: Sequence[ev.Event]) -> Limits:
    """The limits the session ran with, but for wall time (a replay runs at its own speed).

    A log is data: only numbers (and a known condensation method) are taken. A budget
    the session took from its model's context window is the one its requests recorded.
    """
    defaults = Limits()
    chosen: dict[str, Any] = {}
    for name, value in settings.items():
        if name not in Limits.__dataclass_fields__:
            continue
        default = getattr(defaults, name)
        if name == "condense":
            if value in ("digest", "model"):
                chosen[name] = value
        elif value is None or (_number(value) and (default is None or _number(default))):
            chosen[name] = value
    chosen["max_wall_time"] = None
    if chosen.get("context_budget") is None:
        budget = next((e.budget for e in path if isinstance(e, ev.ModelRequest) and e.budget), None)
        chosen["context_budget"] = budget
    return Limits(**chosen)


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _keep_observations(settings: dict[str, Any]) -> int:
    value = settings.get("keep_observations", 5)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 5


# -- the recorded conversation -------------------------------------------------------------------


@dataclass
class _Said:
    """Something the user said, and where the replay says it again."""

    text: str
    task: int
    replies: int  # model replies recorded before it (in the branch's path)
    # "call": said while the model thought: say it during the call that returns reply
    # ``replies`` (it then reaches the turn after). "driver": said after reply ``replies - 1``
    # while its calls were handled: say it on the next update, before the next turn.
    # "start": said before the task's first turn.
    when: str
    done: bool = False


class _Playback(ReplayModel):
    """The recorded replies, in order, and the user's words said where they were said."""

    def __init__(self, events: list[ev.Event]):
        super().__init__(events)
        self.session: Session | None = None
        self.tasks: list[tuple[str, int]] = []  # (task, index of its first reply)
        self._said: list[_Said] = []
        self._task = 1
        # What the model wrote for each condensation it was asked for, in order (its own
        # words follow the facts grinta put first).
        self._summaries = [
            e.text.partition(SUMMARY_MARK)[2].lstrip("\n") or e.text
            for e in events
            if isinstance(e, ev.Condensed) and e.method == "model"
        ]
        self._plan(events)

    @property
    def served(self) -> int:
        """Replies played so far."""
        return self._next

    def _plan(self, events: list[ev.Event]) -> None:
        replies, task, thinking = 0, 1, False
        with_calls: list[bool] = []  # per reply: whether it asked for tool calls
        first = 0
        for e in events:
            if isinstance(e, ev.SessionStart):
                self.tasks.append((e.task, 0))
            elif isinstance(e, ev.TaskStarted):
                task, first, thinking = e.number, replies, False
                self.tasks.append((e.task, replies))
            elif isinstance(e, ev.ModelRequest):
                thinking = True
            elif isinstance(e, ev.ModelReplied):
                replies, thinking = replies + 1, False
                with_calls.append(bool(e.tool_calls))
            elif isinstance(e, (ev.SessionEnd, ev.ErrorEvent, ev.Resumed)):
                thinking = False
            elif isinstance(e, ev.UserMessage) and e.source == "user":
                if thinking:
                    when = "call"
                elif replies == first:
                    when = "start"
                elif with_calls[replies - 1]:
                    when = "driver"
                else:  # no update comes before the next turn: say it during the last call
                    when, replies = "call", replies - 1
                self._said.append(_Said(e.text, task, replies, when))

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_text: Callable[[str], None] | None = None,
    ) -> ModelReply:
        if not tools:  # a condensation's summary (agent/condense.py): the one recorded
            if not self._summaries:
                raise ModelError("BAD_RESPONSE", "replay: no recorded summary left")
            return ModelReply(text=self._summaries.pop(0), finish_reason="stop")
        index = self._next
        self._say(lambda s: s.when == "call" and s.replies <= index)
        return await super().complete(messages, tools, on_text)

    def begin_task(self, number: int, first: int) -> None:
        """Task ``number`` starts: its replies start at ``first`` whatever the last one used."""
        self._task = number
        self._next = max(self._next, first)

    def before_driving(self) -> None:
        self._say(lambda s: s.when == "start")

    def after_update(self) -> None:
        served = self._next
        self._say(lambda s: s.when in ("driver", "start") and s.replies <= served)

    def _say(self, due: Callable[[_Said], bool]) -> None:
        for said in self._said:
            if said.done or said.task != self._task or not due(said):
                continue
            said.done = True
            if self.session is not None:
                # A replay that went another way may have ended the task: then it is not said.
                with contextlib.suppress(RuntimeError, ValueError):
                    self.session.say(said.text)
