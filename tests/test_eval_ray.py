"""The Ray backend against the local one: same results, same resume, a lost worker's run redone.

Ray runs locally here (2 CPUs, no dashboard), started once for the module.
The runs use the offline solver on tasks built from a real package
(tests/experiment_tasks.py) and one bundled task.
"""

from __future__ import annotations

import json
import shutil

import pytest

from grinta_jupyter.experiment.backends import LocalBackend, RayBackend, start_local_ray
from grinta_jupyter.experiment.commands import BackendError, eval_backend
from grinta_jupyter.experiment.runner import RunSpec
from grinta_jupyter.experiment.suite import (
    load_results,
    plan_runs,
    run_suite,
    summarize_results,
    write_report,
)
from grinta_jupyter.experiment.taskdir import task_ids
from tests.experiment_tasks import built_tasks

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray():
    start_local_ray(2)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return built_tasks(tmp_path_factory)


# Timings, and grinta's own estimate of each request's size, which counts the session's random
# fence id (agent/context.py): they differ between any two runs of a spec, on any backend.
UNREPEATABLE = (
    "duration",
    "time_to_first_edit",
    "context_tokens",
    "context_growth_per_request",
    "largest_request",
)


def comparable(result: dict) -> dict:
    """What must not depend on the backend: all but timings and request-size estimates."""
    metrics = result["metrics"] and {
        k: v for k, v in result["metrics"].items() if k not in UNREPEATABLE
    }
    return {
        "spec": result["spec"],
        "passed": result["passed"],
        "end_reason": result["end_reason"],
        "detail": result["detail"].splitlines()[0],
        "metrics": metrics,
    }


def test_the_backend_flags_are_checked_before_anything_runs():
    # First in the module: the module's Ray is not started yet, so describe() names the address.
    import argparse

    def args(**given):
        return argparse.Namespace(**{"backend": "local", "address": None, "jobs": 1, **given})

    assert isinstance(eval_backend(args(jobs=3)), LocalBackend)
    remote = eval_backend(args(backend="ray", address="ray://head:10001", jobs=4))
    assert isinstance(remote, RayBackend) and remote.address == "ray://head:10001"
    assert "cluster at ray://head:10001" in remote.describe()
    with pytest.raises(BackendError, match="--address needs --backend ray"):
        eval_backend(args(address="auto"))
    with pytest.raises(BackendError, match="unknown backend"):
        eval_backend(args(backend="slurm"))


def test_a_small_suite_gives_the_same_results_on_both_backends(built, local_ray, tmp_path):
    folder, _ = built
    ids = task_ids(folder)[:2]
    specs = plan_runs(ids, ["intent", "broad"], "scripted", 1, tasks_dir=str(folder))
    specs.append(RunSpec(ids[0], "intent", "scripted", 1, max_steps=1, tasks_dir=str(folder)))
    specs.append(RunSpec("raft_kv/fix-failing-test", "broad", "scripted", 0))
    lines: list[str] = []
    local = run_suite(specs, tmp_path / "local", progress=lines.append, backend=LocalBackend(2))
    remote = run_suite(specs, tmp_path / "ray", progress=lines.append, backend=RayBackend(jobs=2))
    assert [comparable(r) for r in local] == [comparable(r) for r in remote]
    assert [r["passed"] for r in remote] == [True, True, True, True, False, True]
    limited = remote[4]
    assert limited["end_reason"].startswith("budget") and limited["metrics"]["steps"] == 1
    for out in ("local", "ray"):
        logs = sorted(p.name for p in (tmp_path / out / "logs").iterdir())
        assert logs == sorted(f"{s.key}.jsonl" for s in specs)
        assert not list((tmp_path / out).rglob(".*.tmp"))
    ray_log = (tmp_path / "ray" / "logs" / f"{specs[0].key}.jsonl").read_text().splitlines()
    assert json.loads(ray_log[0])["type"] == "session_start" and len(ray_log) > 5
    assert (
        "6 runs: 0 already finished, 6 to go, as Ray tasks on the Ray already running here" in lines
    )
    assert any("passed 5/6 (83%), cost unknown" in line for line in lines)
    # Same statistics from either folder, read back as notebook 05 does.
    toolsets = ["intent", "broad"]
    tables = [summarize_results(load_results(tmp_path / out), toolsets) for out in ("local", "ray")]
    for metric in ("pass_rate", "steps", "tool_entropy_bits", "tokens", "edit_retries"):
        assert tables[0]["toolsets"]["broad"][metric] == tables[1]["toolsets"]["broad"][metric]
        assert tables[0]["difference"][metric] == tables[1]["difference"][metric]
    # Resume: nothing is done twice.
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "ray" / "runs").iterdir()}
    again = run_suite(specs, tmp_path / "ray", progress=lines.append, backend=RayBackend(jobs=2))
    assert lines[-1].startswith("6 runs: 6 already finished, 0 to go")
    assert [r["key"] for r in again] == [s.key for s in specs]
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "ray" / "runs").iterdir()} == before


KILLER = """\
import os, signal, sys

marker, attempts = sys.argv[1], sys.argv[2]
with open(attempts, "a") as f:
    f.write(f"{os.getppid()}\\n")
if not os.path.exists(marker):
    open(marker, "w").close()
    os.kill(os.getppid(), signal.SIGKILL)  # the worker process running this run's check
    sys.exit(1)
os.execv(sys.executable, [sys.executable, *sys.argv[3:]])
"""


def test_a_run_whose_worker_dies_is_redone_from_scratch_and_counted_once(
    built, local_ray, tmp_path
):
    folder, _ = built
    tasks = tmp_path / "tasks"
    shutil.copytree(folder, tasks)
    task_id = task_ids(tasks)[0]
    path = tasks / "tasks" / f"{task_id}.json"
    data = json.loads(path.read_text())
    killer, marker, attempts = tmp_path / "killer.py", tmp_path / "killed", tmp_path / "attempts"
    killer.write_text(KILLER)
    assert data["tests"]["command"][0] == "python"
    data["tests"]["command"] = ["python", str(killer), str(marker), str(attempts)] + data["tests"][
        "command"
    ][1:]
    path.write_text(json.dumps(data))
    spec = RunSpec(task_id, "intent", "scripted", 0, tasks_dir=str(tasks))
    out = tmp_path / "out"
    results = run_suite([spec], out, progress=lambda _line: None, backend=RayBackend(jobs=2))
    assert marker.exists()  # the first attempt's worker was killed mid-run
    workers = attempts.read_text().split()
    assert len(workers) == 2 and workers[0] != workers[1]  # redone, in another worker
    assert [r["passed"] for r in results] == [True]
    assert [p.name for p in (out / "runs").iterdir()] == [f"{spec.key}.json"]
    events = [json.loads(line) for line in (out / "logs" / f"{spec.key}.jsonl").open()]
    assert [e["type"] for e in events].count("session_start") == 1  # one whole log, not two
    write_report(results, ["intent"], out)
    assert json.loads((out / "results.json").read_text())["toolsets"]["intent"]["runs"] == 1


def test_the_report_is_one_page_with_a_chart_per_metric_and_nothing_to_fetch(built, tmp_path):
    folder, _ = built
    specs = plan_runs(
        task_ids(folder)[:1], ["intent", "broad"], "scripted", 1, tasks_dir=str(folder)
    )
    specs.append(RunSpec("raft_kv/fix-failing-test", "intent", "scripted:noop", 0))
    results = run_suite(specs, tmp_path, progress=lambda _line: None)
    write_report(results, ["intent", "broad"], tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert page.count("<svg") >= 9  # eight metrics and the differences
    for metric in ("pass_rate", "tool_entropy_bits", "steps", "cost"):
        assert f'aria-label="{metric}"' in page
    assert "<script" not in page and "src=" not in page and "href=" not in page
    assert "offline solver" in page and "broad - intent" in page
    assert ">inflection/001</td>" in page and ">0/1</td>" in page  # the noop run failed
