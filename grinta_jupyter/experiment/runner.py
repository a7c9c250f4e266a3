"""One experiment run: a pure function of (task, toolset, model, seed) to an event log and a verdict.

``run_one`` prepares an isolated copy of the task's workspace, runs a session
in auto mode within the run's budgets, checks the result, and writes
``logs/<key>.jsonl`` and ``runs/<key>.json`` under the output folder. It
takes only a ``RunSpec`` and a folder, so a backend that dispatches runs to
other machines (``backends.RayBackend``) calls it unchanged.

A task is a bundled one (``samples.tasks``) or, when ``spec.tasks_dir`` is
set, a task built from a real package (``taskdir``). ``tasks_dir`` is not part
of the run's key: the same task folder copied to another machine (or shipped
to a Ray worker) names the same runs, so results resume across them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from grinta_jupyter.config import CondenseMethod, Config

# A run in an experiment must end: without a wall-time budget of its own, this one applies.
EVAL_MAX_WALL_TIME = 900.0  # seconds


@dataclass(frozen=True)
class RunSpec:
    task: str
    toolset: str
    model: str  # a litellm model string, "scripted" (reference solutions) or "scripted:noop"
    seed: int
    max_steps: int | None = Config.max_steps
    max_tokens: int | None = Config.max_tokens
    max_cost: float | None = Config.max_cost  # dollars
    max_wall_time: float | None = EVAL_MAX_WALL_TIME
    tasks_dir: str | None = None  # a folder of built tasks (grinta tasks build); None: bundled
    # How the run's requests are bounded (agent/condense.py): tokens each stays under (None:
    # a share of the model's window) and who writes the condensations.
    context_budget: int | None = Config.context_budget
    condense: CondenseMethod = Config.condense

    @property
    def key(self) -> str:
        slug = re.sub(
            r"[^A-Za-z0-9._-]+", "-", f"{self.task}__{self.toolset}__{self.model}__{self.seed}"
        )
        return slug.strip("-")


def make_model(spec: RunSpec, root: Path, plan: list[tuple[str, dict[str, Any]]]) -> Any:
    """The model for a run: a scripted solver offline, else a litellm model."""
    from grinta_jupyter.experiment.solver import SolverModel

    if spec.model == "scripted":
        return SolverModel(plan, spec.toolset, spec.seed, root)
    if spec.model == "scripted:noop":
        return SolverModel(
            [("finish", {"summary": "I did nothing."})],
            spec.toolset,
            spec.seed,
            root,
            name="scripted:noop",
        )
    from grinta_jupyter.agent.models import resolve_model

    # GRINTA_API_BASE / GRINTA_API_KEY apply as for sessions; the seed goes to providers that take one.
    return resolve_model(spec.model, extra={"seed": spec.seed})


def load_task(spec: RunSpec) -> Any:
    """The task ``spec`` names: bundled, or from its task folder."""
    if spec.tasks_dir is not None:
        from grinta_jupyter.experiment.taskdir import load_task as load_built

        return load_built(spec.tasks_dir, spec.task)
    from grinta_jupyter.samples.tasks import get_task

    return get_task(spec.task)


def run_one(spec: RunSpec, out_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Run ``spec``; write its event log and result; return the result."""
    from grinta_jupyter.agent.guards import Limits
    from grinta_jupyter.agent.session import Session
    from grinta_jupyter.events.metrics import measure

    out = Path(out_dir)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    log = out / "logs" / f"{spec.key}.jsonl"
    log.unlink(missing_ok=True)  # a run without a result starts over
    task = load_task(spec)
    scratch = Path(tempfile.mkdtemp(prefix="grinta-eval-"))
    started = time.monotonic()
    try:
        root = task.prepare(scratch / task.workspace)
        limits = Limits(
            max_steps=spec.max_steps,
            max_tokens=spec.max_tokens,
            max_cost=spec.max_cost,
            max_wall_time=spec.max_wall_time,
            context_budget=spec.context_budget,
            condense=spec.condense,
        )
        model = make_model(spec, root, [tuple(call) for call in getattr(task, "solution", ())])
        session = Session(
            task.prompt,
            model=model,
            root=root,
            toolset=spec.toolset,
            policy="auto",
            limits=limits,
            log_dir=out / "logs",
            session_id=spec.key,
        )
        session.run_sync()
        verdict = task.check(root)
        metrics = measure(log).to_json()
        result = {
            "spec": asdict(spec),
            "key": spec.key,
            "passed": verdict.passed,
            "detail": verdict.detail,
            "end_reason": session.end_reason,
            "seconds": round(time.monotonic() - started, 2),
            "metrics": metrics,
        }
    except Exception as exc:  # noqa: BLE001 - a crashed run is a result too, never a lost one
        result = {
            "spec": asdict(spec),
            "key": spec.key,
            "passed": False,
            "detail": f"run crashed: {exc!r}",
            "end_reason": "crashed",
            "seconds": round(time.monotonic() - started, 2),
            "metrics": None,
        }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    save_result(out, result)
    return result


def save_result(out: Path, result: dict[str, Any]) -> None:
    """Write ``runs/<key>.json``: the run counts as finished once, and only once, this is done."""
    (out / "runs").mkdir(parents=True, exist_ok=True)
    write_atomically(out / "runs" / f"{result['key']}.json", json.dumps(result, indent=1).encode())


def write_atomically(path: Path, data: bytes) -> None:
    """``path`` holds ``data`` whole, or is as it was: never a part of it, when this process
    dies mid-write or another writes the same file at once (each writes a temporary file of
    its own, on disk before it takes the name). A ``path`` that is a link is replaced by the
    file, never written through: a folder received from elsewhere cannot aim a write."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    handle = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
