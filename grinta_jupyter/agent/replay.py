"""Re-run a recorded session and report every step whose proposal differs.

The model turns come from the log (``ReplayModel``); the user's decisions are
replayed too (approve, edit with the same arguments, veto with the same
reason). Each replayed proposal is compared with the recorded one: the tool,
its arguments, the staged diff and the validation result.

A log that cannot be replayed (missing, not a session log, from an unknown
sample or toolset, or not from a sample when no workspace is given) raises
``LogError`` with one line saying why, before anything runs.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from grinta_jupyter.agent.blocking import run_blocking
from grinta_jupyter.agent.models.replay import ReplayModel
from grinta_jupyter.agent.session import Session
from grinta_jupyter.agent.updates import Approve, ApproveHunks, Edit, NeedsDecision, Veto
from grinta_jupyter.events import models as ev
from grinta_jupyter.events.log import LogError, read_log
from grinta_jupyter.tools import TOOLSETS
from grinta_jupyter.tools.base import Toolset


@dataclass
class ReplayReport:
    steps: int
    differences: list[str] = field(default_factory=list)
    log_path: Path | None = None

    @property
    def identical(self) -> bool:
        return not self.differences


Fingerprint = tuple[str, str, str, "str | None"]


def _fingerprints(events: list[ev.Event]) -> dict[int, Fingerprint]:
    """Per step: (tool, arguments, diff, validation code) of the last proposal."""
    prints: dict[int, Fingerprint] = {}
    for e in events:
        if isinstance(e, ev.ToolProposed):
            prints[e.step] = (e.tool, e.arguments, "", None)
        elif isinstance(e, ev.DiffStaged) and e.step in prints:
            prints[e.step] = (*prints[e.step][:2], e.diff, prints[e.step][3])
        elif isinstance(e, ev.Validated) and e.step in prints:
            prints[e.step] = (*prints[e.step][:3], e.code)
    return prints


def replay(log: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> ReplayReport:
    """Replay ``log`` on ``root`` (default: a fresh copy of the sample it ran on)."""
    from grinta_jupyter.samples.core import sample_path

    events = read_log(log)
    start = next(e for e in events if isinstance(e, ev.SessionStart))
    toolset: str | Toolset = start.toolset
    if start.toolset == "kernel":
        # A session that ran in a kernel: its variables are not in the log, so inspect and
        # execute replay against a fresh, empty namespace (docs/notebook.md).
        from grinta_jupyter.tools.kernel import DictNamespace, kernel_toolset

        toolset = kernel_toolset(DictNamespace())
    elif start.toolset not in TOOLSETS:
        raise LogError(f"{os.fspath(log)} ran with an unknown toolset {start.toolset!r}")
    if start.sample:
        try:
            sample_path(start.sample)
        except ValueError as exc:
            raise LogError(f"{os.fspath(log)} cannot be replayed: {exc}") from None
    if root is None:
        if not start.sample:
            raise LogError(
                f"{os.fspath(log)} did not run on a bundled sample: pass --root with the "
                "workspace in its starting state"
            )
        from grinta_jupyter.samples.tasks import copy_workspace

        root = copy_workspace(
            start.sample, Path(tempfile.mkdtemp(prefix="grinta-replay-")) / start.sample
        )
    try:
        model = ReplayModel(events)
    except (KeyError, TypeError) as exc:  # a model_reply whose tool calls lack a field
        raise LogError(
            f"{os.fspath(log)} holds a model_reply that cannot be replayed ({exc!r})"
        ) from None
    decisions: dict[int, list[ev.UserDecision]] = {}
    for e in events:
        if isinstance(e, ev.UserDecision):
            decisions.setdefault(e.step, []).append(e)
    session = Session(
        start.task,
        model=model,
        root=root,
        toolset=toolset,
        policy="ask",
        sample=start.sample,
    )

    async def drive() -> None:
        async for update in session.updates():
            if not isinstance(update, NeedsDecision):
                continue
            queue = decisions.get(update.step.number, [])
            if not queue:
                session.stop("replay: the log has no decision for this step")
                continue
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

    run_blocking(drive())
    recorded, replayed = _fingerprints(events), _fingerprints(session.log.events)
    report = ReplayReport(steps=len(recorded), log_path=session.log_path)
    for step in sorted(set(recorded) | set(replayed)):
        a, b = recorded.get(step), replayed.get(step)
        if a != b:
            what = (
                "missing in replay"
                if b is None
                else "extra in replay"
                if a is None
                else _what_differs(a, b)
            )
            report.differences.append(f"step {step}: {what}")
    return report


def _what_differs(a: Fingerprint, b: Fingerprint) -> str:
    names = ("tool", "arguments", "diff", "validation")
    return "differs in " + ", ".join(n for n, x, y in zip(names, a, b, strict=True) if x != y)
