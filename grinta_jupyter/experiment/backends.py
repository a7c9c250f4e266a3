"""Where runs run: local processes, or Ray tasks on this machine or a cluster.

A backend takes the runs still to do and reports each finished run's result
as it lands in the output folder. Both call ``runner.run_one`` unchanged, so a
run is the same function of its spec on either; the suite (``suite.run_suite``)
decides what is still to do (resume) and summarises, whatever the backend.

``LocalBackend(jobs)``: ``run_one`` in this process (one job) or in a pool of
spawned processes, each writing its log and result into the output folder, at
most ``jobs`` runs handed to the pool at once. A worker process that dies
(killed, out of memory, a task's test command killing its parent) breaks the
pool and every run in it: those runs are tried again, each alone in a pool of
its own so that a death is charged to the run that caused it, up to
``max_retries`` more times, and the others go on in a new pool. A run that
died on every attempt is reported as lost and written nowhere.

``RayBackend(address, jobs)``: each run is one Ray task. Without an address a
local Ray is started on demand (``jobs`` CPUs, no dashboard) and stopped
after; with one, the cluster at that address is used (``ray.init(address=...)``;
"auto" finds a cluster this machine belongs to). Workers need not share a disk
with this machine: a built task travels with its run (the package folder is
put in Ray's object store once per package, the task's JSON with the run),
the worker runs it in a scratch folder of its own, and hands back the result
and the event log, which this process writes into the output folder, the log
first and the result last, each atomically. A worker that dies mid-run loses
only its scratch folder; Ray runs the task again from scratch (``max_retries``),
and the run is written once, when it finished. A run whose every attempt was
lost is reported as lost and written nowhere, so the next eval does it again.

The ``GRINTA_*`` environment of this process is forwarded to the workers (the
model's API base and key, for instance); the run's budgets travel in its spec.
"""

from __future__ import annotations

import concurrent.futures
import io
import multiprocessing
import os
import socket
import sys
import tarfile
import tempfile
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from grinta_jupyter.experiment.errors import BackendError
from grinta_jupyter.experiment.runner import RunSpec, run_one, save_result, write_atomically

OnResult = Callable[[dict[str, Any]], None]
RAY_MAX_RETRIES = 3  # attempts after the first when a worker dies (Ray's own default for tasks)
RAY_CONNECT_TIMEOUT = 10.0  # seconds to wait for a cluster's address to take a connection


class Backend(Protocol):
    """Runs specs; calls ``on_result`` once per run whose result was written to ``out``."""

    def describe(self) -> str: ...

    def run(self, specs: list[RunSpec], out: Path, on_result: OnResult) -> list[RunSpec]:
        """Run ``specs``; return the ones that were lost (no result written)."""
        ...


@dataclass
class LocalBackend:
    jobs: int = 1
    max_retries: int = RAY_MAX_RETRIES  # attempts after the first when a worker process dies

    def describe(self) -> str:
        return f"{self.jobs} at a time"

    def run(self, specs: list[RunSpec], out: Path, on_result: OnResult) -> list[RunSpec]:
        if self.jobs <= 1:
            for spec in specs:
                on_result(run_one(spec, out))
            return []
        todo, suspects = deque(specs), deque[RunSpec]()
        deaths: Counter[RunSpec] = Counter()
        lost = []
        while todo or suspects:
            # Runs that were in a pool when a worker died go one at a time, to find the culprit.
            queue, jobs = (suspects, 1) if suspects else (todo, self.jobs)
            for spec in _run_in_pool(queue, jobs, out, on_result):
                deaths[spec] += 1
                if jobs == 1 and deaths[spec] > self.max_retries:
                    lost.append(spec)  # it died alone on every attempt: redone next eval
                else:
                    suspects.append(spec)
        return lost


def _run_in_pool(queue: deque[RunSpec], jobs: int, out: Path, on_result: OnResult) -> list[RunSpec]:
    """Run specs taken from ``queue`` in a pool of ``jobs`` spawned processes, ``jobs`` at once.

    Returns [] when the queue is done, or the runs that were in the pool when a
    worker died (a broken pool ends every run in it; the rest stay queued).
    """
    context = multiprocessing.get_context("spawn")  # safe inside a Jupyter kernel, unlike fork
    pool = concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=context)
    running: dict[concurrent.futures.Future[dict[str, Any]], RunSpec] = {}
    try:
        while queue or running:
            while queue and len(running) < jobs:
                spec = queue.popleft()
                running[pool.submit(run_one, spec, out)] = spec
            ready, _ = concurrent.futures.wait(
                running, return_when=concurrent.futures.FIRST_COMPLETED
            )
            broken = []
            for future in ready:
                spec = running.pop(future)
                try:
                    result = future.result()
                except BrokenProcessPool:
                    broken.append(spec)
                    continue
                on_result(result)
            if broken:
                return broken + list(running.values())
        return []
    finally:  # interrupted (Ctrl-C): only the runs already in the workers finish
        pool.shutdown(cancel_futures=True)


@dataclass
class RayBackend:
    address: str | None = None  # None: a local Ray, started here
    jobs: int = 2  # CPUs of a local Ray; a cluster has its own
    max_retries: int = RAY_MAX_RETRIES
    _bundles: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False)

    def describe(self) -> str:
        ray = sys.modules.get("ray")
        if ray is not None and ray.is_initialized():
            where = "the Ray already running here"  # a notebook's, say: used as it is
        elif self.address:
            where = f"the Ray cluster at {self.address}"
        else:
            where = f"a local Ray ({self.jobs} CPUs)"
        return f"as Ray tasks on {where}"

    def run(self, specs: list[RunSpec], out: Path, on_result: OnResult) -> list[RunSpec]:
        if not specs:
            return []  # nothing to do: no Ray to start
        import ray

        started_here = False
        if not ray.is_initialized():
            runtime_env = {"env_vars": forwarded_environment()}
            try:
                if self.address:
                    check_reachable(self.address)
                    ray.init(address=self.address, runtime_env=runtime_env, log_to_driver=False)
                else:
                    start_local_ray(self.jobs, runtime_env)
            except Exception as exc:  # noqa: BLE001 - Ray raises many kinds; each is the user's to fix
                ray.shutdown()
                where = f"join the Ray cluster at {self.address}" if self.address else "start Ray"
                reason = (str(exc).strip().splitlines() or [""])[0]
                raise BackendError(
                    f"cannot {where}: {type(exc).__name__}: {reason} (nothing was run)"
                ) from exc
            started_here = True
        try:
            remote = ray.remote(num_cpus=1, max_retries=self.max_retries, retry_exceptions=False)(
                run_shipped
            )
            pending: dict[Any, RunSpec] = {}
            for spec in specs:
                task_json, package = self._shipment(ray, spec)
                pending[remote.remote(spec, task_json, package)] = spec
            lost = []
            try:
                while pending:
                    ready, _ = ray.wait(list(pending), num_returns=1)
                    for ref in ready:
                        spec = pending.pop(ref)
                        try:
                            shipped = ray.get(ref)
                        except (ray.exceptions.RayError, OSError):
                            lost.append(
                                spec
                            )  # every attempt died: nothing written, redone next time
                            continue
                        on_result(land(shipped, spec, out))
            finally:
                for ref in pending:  # interrupted: nothing left running on the cluster
                    ray.cancel(ref, force=True)
            return lost
        finally:
            self._bundles.clear()
            if started_here:
                ray.shutdown()

    def _shipment(self, ray: Any, spec: RunSpec) -> tuple[str | None, Any]:
        """What a worker needs of a built task: its JSON, and its package folder (shared)."""
        if spec.tasks_dir is None:
            return None, None
        from grinta_jupyter.experiment.taskdir import load_task, task_file

        tasks_dir = Path(spec.tasks_dir)
        task_json = task_file(tasks_dir, spec.task).read_text(encoding="utf-8")
        workspace = load_task(tasks_dir, spec.task).workspace
        key = (str(tasks_dir), workspace)
        if key not in self._bundles:
            self._bundles[key] = ray.put(pack_folder(tasks_dir / "packages" / workspace))
        return task_json, self._bundles[key]


def start_local_ray(
    cpus: int, runtime_env: dict[str, Any] | None = None, attempts: int = 3
) -> None:
    """Start a Ray on this machine only (``cpus`` CPUs, no dashboard).

    Ray gives its node 30 s to come up; on a loaded machine it can miss that,
    so a start that timed out is tried again (a leftover half-started Ray is
    shut down first).
    """
    import ray

    for attempt in range(attempts):
        try:
            ray.init(
                num_cpus=cpus,
                include_dashboard=False,
                log_to_driver=False,
                runtime_env=runtime_env or {},
            )
            return
        except Exception:  # noqa: BLE001 - Ray raises a bare Exception on a start timeout
            ray.shutdown()
            if attempt == attempts - 1:
                raise


def check_reachable(address: str, timeout: float = RAY_CONNECT_TIMEOUT) -> None:
    """Raise OSError when ``address`` (``HOST:PORT`` or ``ray://HOST:PORT``) takes no connection.

    ``ray.init`` waits for a cluster that is not there for ever, retrying every few seconds
    and deaf to SIGTERM; a connection tried first says in seconds that nobody answers.
    Other addresses ("auto") are Ray's to find.
    """
    host, colon, port = address.removeprefix("ray://").rpartition(":")
    if not colon or not host or not port.isdigit():
        return
    with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
        pass


def forwarded_environment() -> dict[str, str]:
    """The variables workers get from here: grinta's own settings (config.py's)."""
    from grinta_jupyter.config import ENVIRONMENT

    return {name: value for name, value in os.environ.items() if name in ENVIRONMENT}


def pack_folder(folder: Path) -> bytes:
    """``folder`` as a gzipped tar, its contents under the folder's own name."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", dereference=True) as archive:
        # resolved: a folder that is a link (to a shared store, say) ships its contents, not the
        # link; dereferenced: a link to a file of the package ships as that file, as a local run
        # copies it (taskdir.refused_links refuses the others before any run)
        archive.add(folder.resolve(), arcname=folder.name)
    return buffer.getvalue()


def run_shipped(spec: RunSpec, task_json: str | None, package: bytes | None) -> dict[str, Any]:
    """On a worker: run ``spec`` in a scratch folder; return its result and its event log.

    A built task is rebuilt from what was shipped (its JSON, its package
    folder) into the scratch folder, so the worker needs no access to the
    driver's disk. Nothing outside the scratch folder is written.
    """
    with tempfile.TemporaryDirectory(prefix="grinta-worker-") as scratch_dir:
        scratch = Path(scratch_dir)
        local = spec
        if spec.tasks_dir is not None and task_json is not None and package is not None:
            from grinta_jupyter.experiment.taskdir import task_file

            tasks_dir = scratch / "tasks"
            (tasks_dir / "packages").mkdir(parents=True)
            with tarfile.open(fileobj=io.BytesIO(package), mode="r:gz") as archive:
                archive.extractall(tasks_dir / "packages", filter="data")
            path = task_file(tasks_dir, spec.task)
            path.parent.mkdir(parents=True)
            path.write_text(task_json, encoding="utf-8")
            local = replace(spec, tasks_dir=str(tasks_dir))
        result = run_one(local, scratch / "out")
        log = scratch / "out" / "logs" / f"{spec.key}.jsonl"
        return {"result": result, "log": log.read_bytes() if log.is_file() else b""}


def land(shipped: dict[str, Any], spec: RunSpec, out: Path) -> dict[str, Any]:
    """Write a worker's log, then its result, into ``out``; return the result."""
    result: dict[str, Any] = dict(shipped["result"])
    result["spec"] = asdict(spec)  # as planned here, not the worker's scratch paths
    (out / "logs").mkdir(parents=True, exist_ok=True)
    write_atomically(out / "logs" / f"{spec.key}.jsonl", shipped["log"])
    save_result(out, result)
    return result
