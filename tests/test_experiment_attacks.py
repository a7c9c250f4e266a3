"""The experiment runner under attack: careless users and a hostile environment.

Each test names its attack. Real parts only: the offline solver, real processes
and signals, the local backend, and the Ray worker's own function
(``run_shipped``) called directly, so no Ray has to start. The built tasks are
made by hand (``mini_tasks``): one small package, a one-character bug, and a
test command each test may replace, so nothing is fetched.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grinta_jupyter.experiment.backends import land, pack_folder, run_shipped
from grinta_jupyter.experiment.commands import eval_specs
from grinta_jupyter.experiment.errors import ExperimentUsageError
from grinta_jupyter.experiment.runner import RunSpec, run_one
from grinta_jupyter.experiment.stats import bootstrap_difference, bootstrap_mean
from grinta_jupyter.experiment.suite import (
    finished,
    plan_runs,
    run_suite,
    select_tasks,
    write_report,
)
from grinta_jupyter.experiment.taskdir import TaskDirError, load_task, task_file
from tests.test_eval import REPO, in_background

BUNDLED = "raft_kv/fix-failing-test"
PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts="]
QUIET = {"progress": lambda _line: None}


def mini_tasks(
    folder: Path,
    command: list[str] | None = None,
    bug_path: str = "mini/calc.py",
    **changes: object,
) -> Path:
    """A task folder holding one built task, ``mini/001``: ``add`` subtracts; its test says so.

    ``command`` replaces its test command, ``bug_path`` the file the bug is in, and ``changes``
    any other field of the task file.
    """
    package = folder / "packages" / "mini-1.0"
    (package / "mini").mkdir(parents=True)
    (package / "tests").mkdir()
    source = "def add(a, b):\n    return a + b\n"
    (package / "mini" / "__init__.py").write_text("")
    (package / "mini" / "calc.py").write_text(source)
    (package / "tests" / "test_calc.py").write_text(
        "from mini.calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    start = source.index("+")
    task = {
        "format": 1,
        "id": "mini/001",
        "kind": "bug",
        "package": "mini",
        "version": "1.0",
        "workspace": "mini-1.0",
        "prompt": "The tests of mini fail. Please fix the library.",
        "tests": {
            "command": command or [*PYTEST, "-o", "pythonpath=.", "tests"],
            "timeout": 30.0,
            "required": ["tests/test_calc.py::test_add"],
            "protected": {},
        },
        "bug": {
            "path": bug_path,
            "start": start,
            "end": start + 1,
            "original": "+",
            "replacement": "-",
            "operator": "operator",
            "function": "add",
            "line": 2,
        },
        "solution": [
            [
                "replace_string",
                {"path": "mini/calc.py", "old_string": "a - b", "new_string": "a + b"},
            ],
            ["finish", {"summary": "add adds again"}],
        ],
        **changes,
    }
    (folder / "tasks" / "mini").mkdir(parents=True)
    (folder / "tasks" / "mini" / "001.json").write_text(json.dumps(task))
    (folder / "index.json").write_text(
        json.dumps({"format": 1, "packages": {}, "tasks": ["mini/001"]})
    )
    return folder


def eval_args(tasks: str, runs: int = 1) -> argparse.Namespace:
    return argparse.Namespace(tasks=tasks, runs=runs)


# -- what a run is, and how often it counts --------------------------------------------------


def test_a_task_named_twice_is_run_and_counted_once(tmp_path):
    """Attack: ``--tasks a,a`` (a careless user). The run was done twice and the report counted
    one result file as two runs."""
    specs = plan_runs(select_tasks(f"{BUNDLED},{BUNDLED}"), ["intent"], "scripted", runs=1)
    lines: list[str] = []
    results = run_suite(specs, tmp_path, progress=lines.append)
    assert lines[0].startswith("1 runs: 0 already finished, 1 to go")
    assert len(results) == 1 == len(list((tmp_path / "runs").glob("*.json")))
    write_report(results, ["intent"], tmp_path)
    assert json.loads((tmp_path / "results.json").read_text())["toolsets"]["intent"]["runs"] == 1


def test_two_different_runs_with_one_key_are_refused(tmp_path):
    """Attack: two models whose names differ only in punctuation ("a/b:c" and "a/b-c") map to
    one result file: the second would be skipped as finished and get the first's result."""
    specs = [RunSpec(BUNDLED, "intent", "ollama/llama3:8b", 0)]
    specs.append(RunSpec(BUNDLED, "intent", "ollama/llama3-8b", 0))
    assert specs[0].key == specs[1].key
    with pytest.raises(ExperimentUsageError, match="share the key"):
        run_suite(specs, tmp_path, **QUIET)
    assert not list((tmp_path / "runs").iterdir())


def test_results_made_with_other_settings_are_not_resumed_as_this_evals(tmp_path):
    """Attack: ``grinta eval --max-steps 1 --out X`` then ``grinta eval --out X``: the second
    eval said "1 already finished" and reported the one-step run as its own."""
    limited = RunSpec(BUNDLED, "intent", "scripted", 0, max_steps=1)
    (first,) = run_suite([limited], tmp_path, **QUIET)
    assert first["end_reason"].startswith("budget")
    saved = (tmp_path / "runs" / f"{limited.key}.json").read_bytes()
    with pytest.raises(ExperimentUsageError, match="max_steps 1, not 50"):
        run_suite([RunSpec(BUNDLED, "intent", "scripted", 0, max_steps=50)], tmp_path, **QUIET)
    assert (tmp_path / "runs" / f"{limited.key}.json").read_bytes() == saved
    # The same settings resume; a task folder that moved names the same runs.
    assert run_suite([limited], tmp_path, **QUIET) == [first]


# -- a results folder that is not as the eval left it ----------------------------------------


def test_a_cut_or_foreign_result_file_is_a_run_to_do_again(tmp_path):
    """Attack: a result file cut short (a copy interrupted, a full disk) and a stray file in
    runs/: resuming died on either (JSONDecodeError, TypeError), so no eval could go on there."""
    spec = RunSpec(BUNDLED, "broad", "scripted", 0)
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / f"{spec.key}.json").write_text('{"spec": {"task": "raft_kv/fix-fa')
    (runs / "notes.json").write_text("[1, 2]")
    (runs / f".{spec.key}.json.tmp").write_text('{"key": "half')  # a kill before the rename
    (result,) = run_suite([spec], tmp_path, **QUIET)
    assert result["passed"], result["detail"]
    assert json.loads((runs / f"{spec.key}.json").read_text()) == result
    assert list(finished(tmp_path)) == [spec.key]


def test_two_evals_in_one_folder_at_once_are_refused(tmp_path):
    """Attack: the same ``grinta eval --out X`` started twice (two terminals). Both did every run
    at once, each deleting the log the other was writing."""
    out = tmp_path / "eval"
    command = [sys.executable, "-m", "grinta_jupyter.cli", "eval", "--tasks", BUNDLED]
    command += ["--toolsets", "intent,broad", "--model", "scripted", "--runs", "3"]
    command += ["--out", str(out)]
    child = in_background(command)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not list((out / "logs").glob("*.jsonl")):
            time.sleep(0.05)
        specs = plan_runs([BUNDLED], ["intent", "broad"], "scripted", runs=3)
        with pytest.raises(ExperimentUsageError, match="another eval is running"):
            run_suite(specs, out, **QUIET)
        assert child.wait(timeout=120) == 0
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    assert len(run_suite(specs, out, **QUIET)) == 6  # the lock went with the first eval


def test_an_interrupted_local_eval_stops_instead_of_doing_every_queued_run(tmp_path):
    """Attack: Ctrl-C (SIGINT to the eval, as a notebook's interrupt sends) with ``--jobs 2``.
    The eval went on with every queued run, silently, and only then stopped."""
    out = tmp_path / "eval"
    command = [sys.executable, "-m", "grinta_jupyter.cli", "eval", "--tasks", BUNDLED]
    command += ["--toolsets", "intent,broad", "--model", "scripted", "--runs", "6"]
    command += ["--jobs", "2", "--out", str(out)]
    child = subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not list((out / "runs").glob("*.json")):
            time.sleep(0.02)
        at_signal = len(list((out / "runs").glob("*.json")))
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    assert child.returncode == 130 and b"interrupted" in stderr
    after = len(list((out / "runs").glob("*.json")))
    # At most the runs already handed to the two workers (two running, three queued) end.
    assert at_signal <= after <= at_signal + 5 < 12


# -- tasks that misbehave ---------------------------------------------------------------------

ESCAPE = """\
import os, sys, time
if os.fork() == 0:  # a daemon in a session of its own: out of reach of the group's kill
    os.setsid()
    with open(sys.argv[1], "w") as f:
        f.write(str(os.getpid()))
    time.sleep(120)
    os._exit(0)
time.sleep(120)
"""


def test_a_test_command_that_forks_out_of_its_group_ends_at_its_timeout(tmp_path):
    """Attack: a check whose test command hangs and leaves a daemon (setsid) holding its
    output. The check waited for the daemon, not the timeout: with a long-lived one, forever."""
    script, pid_file = tmp_path / "escape.py", tmp_path / "daemon.pid"
    script.write_text(ESCAPE)
    folder = mini_tasks(tmp_path / "tasks", ["python", str(script), str(pid_file)])
    task_data = json.loads(task_file(folder, "mini/001").read_text())
    task_data["tests"]["timeout"] = 2.0
    task_file(folder, "mini/001").write_text(json.dumps(task_data))
    task = load_task(folder, "mini/001")
    root = task.prepare(tmp_path / "work")
    started = time.monotonic()
    try:
        verdict = task.check(root)
        assert time.monotonic() - started < 15
        assert not verdict.passed and "did not finish within 2s" in verdict.detail
    finally:  # the daemon left the group, so the check cannot end it: this test does
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_a_test_command_that_prints_hundreds_of_megabytes_is_read_in_bounded_memory(tmp_path):
    """Attack: a test command printing 400 MB. The check held all of it in memory (twice, as
    bytes and text) to keep the last 64,000 characters."""
    flood = "import sys\nline = b'x' * 1023 + b'\\n'\nfor _ in range(400 * 1024): sys.stdout.buffer.write(line)"
    folder = mini_tasks(tmp_path / "tasks", ["python", "-c", flood])
    # The peak of this process's own memory (VmHWM): getrusage's ru_maxrss also holds the
    # peak of the process it was started from (Linux keeps it across exec), a pytest worker
    # of hundreds of MB in a full run.
    probe = (
        "import re, sys\n"
        "from pathlib import Path\n"
        "from grinta_jupyter.experiment.taskdir import load_task\n"
        "task = load_task(sys.argv[1], 'mini/001')\n"
        "verdict = task.check(task.prepare(Path(sys.argv[2])))\n"
        "peak = re.search(r'VmHWM:\\s*(\\d+)', Path('/proc/self/status').read_text())[1]\n"
        "print(verdict.passed, len(verdict.detail), peak)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(folder), str(tmp_path / "work")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    passed, detail_chars, peak_kb = done.stdout.split()
    assert passed == "False" and int(detail_chars) < 70_000
    assert int(peak_kb) < 250_000, f"peak memory {int(peak_kb) // 1024} MB"


def test_a_task_file_pointing_outside_its_package_is_refused(tmp_path):
    """Attack: a task folder from elsewhere whose bug path is ``../../..``: preparing the task
    rewrote a file outside the run's scratch folder (any file holding the bug's text)."""
    victim = tmp_path / "victim.py"
    victim.write_text("def add(a, b):\n    return a + b\n")
    hostile = mini_tasks(tmp_path / "tasks", bug_path="../" * 12 + str(victim).lstrip("/"))
    with pytest.raises(TaskDirError, match="leaves the package"):
        run_one(
            RunSpec("mini/001", "intent", "scripted", 0, tasks_dir=str(hostile)), tmp_path / "out"
        )
    assert victim.read_text() == "def add(a, b):\n    return a + b\n"
    sneaky = mini_tasks(tmp_path / "tasks2", workspace="../../elsewhere")
    with pytest.raises(TaskDirError, match="is not a name"):
        load_task(sneaky, "mini/001")


def test_a_task_file_cut_short_is_refused_before_any_run_starts(tmp_path):
    """Attack: one task file of the folder cut short. The eval planned it, ran the others, and
    died at that run with a JSONDecodeError (an internal error), or reported it lost on Ray."""
    folder = mini_tasks(tmp_path / "tasks")
    path = task_file(folder, "mini/001")
    path.write_text(path.read_text()[:200])
    with pytest.raises(TaskDirError, match="001.json is not a task"):
        eval_specs(eval_args(str(folder)), "scripted", ["intent"])


def test_a_package_folder_that_is_a_link_runs_on_a_ray_worker_as_locally(tmp_path):
    """Attack: the task folder's package is a link to a shared store. Locally the run passed; the
    Ray worker got the link alone, refused it on unpacking, and the run was "lost" every time."""
    folder = mini_tasks(tmp_path / "tasks")
    store = tmp_path / "store" / "mini-1.0"
    store.parent.mkdir()
    shutil.move(folder / "packages" / "mini-1.0", store)
    (folder / "packages" / "mini-1.0").symlink_to(store, target_is_directory=True)
    spec = RunSpec("mini/001", "intent", "scripted", 0, tasks_dir=str(folder))
    local = run_one(spec, tmp_path / "local")
    shipped = run_shipped(
        spec,
        task_file(folder, "mini/001").read_text(),
        pack_folder(folder / "packages" / "mini-1.0"),
    )
    remote = land(shipped, spec, tmp_path / "ray")
    assert local["passed"] and remote["passed"], remote["detail"]
    assert remote["spec"]["tasks_dir"] == str(folder)


# -- what the report says ---------------------------------------------------------------------


def test_the_report_figures_are_the_per_run_records(tmp_path):
    """Attack: a mixed suite (passes, failures, a budget stop), resumed once: the table's runs and
    pass rates, and the page's per-task cells, must be exactly what the run files say."""
    folder = mini_tasks(tmp_path / "tasks")
    specs = plan_runs(["mini/001"], ["intent", "broad"], "scripted", 2, tasks_dir=str(folder))
    specs += plan_runs(["mini/001"], ["broad"], "scripted:noop", 1, tasks_dir=str(folder))
    out = tmp_path / "out"
    run_suite(specs[:3], out, **QUIET)
    results = run_suite(specs, out, **QUIET)
    write_report(results, ["intent", "broad"], out)
    records = [json.loads(p.read_text()) for p in (out / "runs").glob("*.json")]
    assert sorted(r["key"] for r in records) == sorted(s.key for s in specs)
    table = json.loads((out / "results.json").read_text())
    for toolset in ("intent", "broad"):
        mine = [r for r in records if r["spec"]["toolset"] == toolset]
        entry = table["toolsets"][toolset]
        assert entry["runs"] == len(mine) == entry["pass_rate"]["n"]
        assert math.isclose(entry["pass_rate"]["mean"], sum(r["passed"] for r in mine) / len(mine))
        steps = [r["metrics"]["steps"] for r in mine]
        assert math.isclose(entry["steps"]["mean"], sum(steps) / len(steps))
    page = (out / "report.html").read_text()
    assert '<td class="pass">2/2</td><td class="mixed">2/3</td>' in page
    assert "5 runs: 1 tasks &times; 2 toolsets &times; 2 seeds" in page


def test_an_empty_suite_gives_an_empty_report_not_a_crash(tmp_path):
    """Attack: a suite with nothing to run (every task filtered away): no run, no Ray, no
    division by zero, and a report that says n/a."""
    assert run_suite([], tmp_path, **QUIET) == []
    text = write_report([], ["intent", "broad"], tmp_path)
    assert "| runs | 0 | 0 |" in text and "| pass_rate | n/a | n/a | n/a |" in text
    assert "0 runs: 0 tasks" in (tmp_path / "report.html").read_text()


def test_statistics_on_one_sample_equal_samples_and_none():
    """Attack: the smallest inputs: one run, runs that all agree, a toolset with no run."""
    one = bootstrap_mean([0.25])
    assert (one.mean, one.low, one.high, one.n) == (0.25, 0.25, 0.25, 1)
    same = bootstrap_difference([1.0] * 3, [1.0] * 7)
    assert (same.mean, same.low, same.high, same.n) == (0.0, 0.0, 0.0, 3)
    single = bootstrap_difference([2.0], [5.0])
    assert (single.mean, single.low, single.high) == (3.0, 3.0, 3.0)
    nothing = bootstrap_difference([], [1.0, 2.0])
    assert nothing.n == 0 and str(nothing) == "n/a" and math.isnan(nothing.mean)
    lopsided = bootstrap_mean([0.0] * 99 + [1.0])
    assert 0.0 <= lopsided.low <= lopsided.mean == 0.01 <= lopsided.high <= 0.05


def test_a_refused_eval_is_one_user_error_line(tmp_path):
    """Attack: the CLI hits a refusal the user can fix (here: results of other settings). It
    must say ``grinta: error: ...`` and exit 2, not ``grinta: internal error``."""
    out = tmp_path / "eval"
    run_suite([RunSpec(BUNDLED, "intent", "scripted", 0, max_steps=1)], out, **QUIET)
    command = [sys.executable, "-m", "grinta_jupyter.cli", "eval", "--tasks", BUNDLED]
    command += ["--toolsets", "intent", "--model", "scripted", "--runs", "1", "--out", str(out)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert "other settings" in done.stderr
    assert done.stderr.startswith("grinta: error:") and done.returncode == 2, done.stderr
