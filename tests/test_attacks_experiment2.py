"""The experiment harness under attack, second round: dead workers, strict readers, a Ray that
will not come up.

Each test names its attack and what went wrong before the fix. Real parts only: the offline
solver, real spawned worker processes killed by a real signal, the JSON the eval writes read
by a strict parser, and the real Ray client failing to find a cluster. The built tasks are the
hand-made ``mini`` package of tests/test_experiment_attacks.py, so nothing is fetched.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grinta_jupyter.experiment.backends import (
    LocalBackend,
    RayBackend,
    land,
    pack_folder,
    run_shipped,
)
from grinta_jupyter.experiment.commands import eval_specs
from grinta_jupyter.experiment.errors import ExperimentUsageError
from grinta_jupyter.experiment.report import charts_html
from grinta_jupyter.experiment.runner import run_one
from grinta_jupyter.experiment.suite import finished, plan_runs, run_suite, write_report
from grinta_jupyter.experiment.taskdir import TaskDirError, load_task, task_file
from tests.test_eval import REPO
from tests.test_experiment_attacks import QUIET, eval_args, mini_tasks

# A test command that kills the process running the check: the local backend's worker.
KILL_PARENT = """\
import os, signal, sys
with open(sys.argv[1], "a") as attempts:
    attempts.write("x")
os.kill(os.getppid(), signal.SIGKILL)
"""


def strict_json(text: str) -> object:
    """``text`` as a JSON reader other than Python's reads it: NaN and Infinity are errors."""

    def refuse(constant: str) -> object:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_a_worker_process_killed_mid_run_loses_that_run_only(tmp_path):
    """Attack: a task whose check kills the worker process running it (as the OOM killer or a
    ``kill`` would), with ``--jobs 2``. The whole eval died with an internal error
    (BrokenProcessPool), the run in the other worker was lost with it, the queued runs never
    ran, and running the same eval again died the same way, forever."""
    script, attempts = tmp_path / "kill_parent.py", tmp_path / "attempts"
    script.write_text(KILL_PARENT)
    hostile = mini_tasks(tmp_path / "hostile", ["python", str(script), str(attempts)])
    good = mini_tasks(tmp_path / "good")
    specs = plan_runs(["mini/001"], ["intent"], "scripted", 1, tasks_dir=str(hostile))
    specs += plan_runs(["mini/001"], ["broad"], "scripted", 3, tasks_dir=str(good))
    lines: list[str] = []
    out = tmp_path / "out"
    results = run_suite(specs, out, progress=lines.append, backend=LocalBackend(2, max_retries=1))
    # The three good runs, once each; the hostile one written nowhere, so the next eval redoes it.
    assert sorted(r["key"] for r in results) == sorted(s.key for s in specs[1:])
    assert all(r["passed"] for r in results)
    assert sorted(finished(out)) == sorted(s.key for s in specs[1:])
    assert sum(" passed in " in line for line in lines) == 3
    assert "1 runs were lost" in lines[-1]
    # Tried once beside the others, then alone (the run that died in a shared pool is charged
    # only when it dies alone), and given up after max_retries more.
    assert attempts.read_text() == "xx"


def test_results_json_is_json_when_a_figure_has_no_value(tmp_path):
    """Attack: read results.json with anything but Python (jq, a browser's JSON.parse, pandas
    with a strict parser) after an offline eval, whose cost is unknown. Every figure without
    a value (cost, no run of a toolset) was written as ``NaN``, which is not JSON."""
    folder = mini_tasks(tmp_path / "tasks")
    specs = plan_runs(["mini/001"], ["intent"], "scripted", 1, tasks_dir=str(folder))
    results = run_suite(specs, tmp_path / "out", **QUIET)
    write_report(results, ["intent", "broad"], tmp_path / "out")
    table = strict_json((tmp_path / "out" / "results.json").read_text())
    assert isinstance(table, dict)
    intent, broad = table["toolsets"]["intent"], table["toolsets"]["broad"]
    assert intent["cost"] == {"mean": None, "low": None, "high": None, "n": 0}
    assert intent["pass_rate"] == {"mean": 1.0, "low": 1.0, "high": 1.0, "n": 1}
    assert broad["runs"] == 0 and broad["pass_rate"]["mean"] is None
    assert table["difference"]["pass_rate"]["n"] == 0
    # The table read back draws the same charts (no value: n/a, as before).
    page = charts_html(table)
    assert "n/a" in page and "1 [1, 1]" in page


def test_a_ray_cluster_that_cannot_be_found_is_a_user_error_and_runs_nothing(tmp_path, monkeypatch):
    """Attack: ``--backend ray --address auto`` on a machine where no Ray runs (a careless user,
    or a cluster gone). Ray's ConnectionError escaped as ``grinta: internal error`` (status 1),
    like a bug in grinta, after the eval had announced its runs."""
    ray = pytest.importorskip("ray")
    if ray.is_initialized():  # a Ray of this process would be used as it is
        pytest.skip("a Ray is already running in this process")
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path / "no-ray"))  # no other Ray of this machine
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    specs = plan_runs(["mini/001"], ["intent"], "scripted", 1, tasks_dir=str(mini_tasks(tmp_path)))
    with pytest.raises(ExperimentUsageError, match=r"cannot join the Ray cluster at auto: "):
        run_suite(specs, tmp_path / "out", backend=RayBackend(address="auto"), **QUIET)
    assert not ray.is_initialized()
    assert not list((tmp_path / "out" / "runs").iterdir())
    # Nothing was left holding the folder: the same eval on the local backend goes on.
    (result,) = run_suite(specs, tmp_path / "out", **QUIET)
    assert result["passed"] and (tmp_path / "out" / "runs" / f"{specs[0].key}.json").is_file()


def test_links_in_a_task_package_out_of_it_or_to_a_folder_are_refused_before_any_run(tmp_path):
    """Attack: a task folder from elsewhere whose package holds ``mini/notes.txt`` linked to a
    file of this machine (a key), ``mini/home`` linked to a folder of it, and ``mini/loop``
    linked to the package itself, and ``mini/gone.py`` linked to nothing. Preparing the task
    followed the links: the key, and the whole folder, were copied into the workspace the
    model reads (and sends to its provider), and the loop was copied into itself until the
    path was too long; on Ray the link to nothing crashed the whole eval as it packed the
    package."""
    secret = tmp_path / "secret" / "id_key"
    secret.parent.mkdir()
    secret.write_text("PRIVATE KEY")
    folder = mini_tasks(tmp_path / "tasks")
    package = folder / "packages" / "mini-1.0"
    (package / "mini" / "notes.txt").symlink_to(secret)
    (package / "mini" / "home").symlink_to(secret.parent, target_is_directory=True)
    (package / "mini" / "loop").symlink_to("..", target_is_directory=True)
    (package / "mini" / "gone.py").symlink_to("removed.py")
    refused = "lead out of it, to a folder, or nowhere: mini/gone.py, mini/home, mini/loop"
    with pytest.raises(TaskDirError, match=refused):
        eval_specs(eval_args(str(folder)), "scripted", ["intent"])
    work = tmp_path / "work"
    with pytest.raises(TaskDirError, match=refused):
        load_task(folder, "mini/001").prepare(work)
    assert not work.exists()  # nothing copied


def test_a_link_to_a_file_of_the_package_runs_on_a_ray_worker_as_locally(tmp_path):
    """Attack: a package holding an absolute link to one of its own files (as a checkout made
    with ``cp -s`` has). Locally the run copied the file and passed; the Ray worker got the
    link alone, refused it on unpacking (an absolute link), and the run was lost every time."""
    folder = mini_tasks(tmp_path / "tasks")
    package = folder / "packages" / "mini-1.0"
    (package / "mini" / "same.py").symlink_to(package / "mini" / "calc.py")
    (spec,) = plan_runs(["mini/001"], ["intent"], "scripted", 1, tasks_dir=str(folder))
    eval_specs(eval_args(str(folder)), "scripted", ["intent"])  # not refused
    local = run_one(spec, tmp_path / "local")
    shipped = run_shipped(spec, task_file(folder, "mini/001").read_text(), pack_folder(package))
    remote = land(shipped, spec, tmp_path / "ray")
    assert local["passed"] and remote["passed"], remote["detail"]
    assert (package / "mini" / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


def test_progress_into_a_log_file_is_one_line_per_run(tmp_path):
    """Attack: ``grinta eval ... 2> eval.log`` (nohup, CI, a Ray job's log). The tqdm bar was
    redrawn with carriage returns into the file: one endless line that ``grep`` and ``tail``
    show as the last redraw only, with no line saying which run passed or failed."""
    folder = mini_tasks(tmp_path / "tasks")
    command = [sys.executable, "-m", "grinta_jupyter.cli", "eval", "--tasks", str(folder)]
    command += ["--toolsets", "intent", "--model", "scripted", "--runs", "2"]
    command += ["--out", str(tmp_path / "out")]
    with (tmp_path / "eval.log").open("w+") as log:
        done = subprocess.run(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log, timeout=300)
        log.seek(0)
        text = log.read()
    assert done.returncode == 0, text
    assert "\r" not in text
    lines = text.splitlines()
    assert lines[0].startswith("2 runs: 0 already finished, 2 to go")
    assert "] 1/2 mini/001 intent seed 0: passed in " in lines[1]
    assert "] 2/2 mini/001 intent seed 1: passed in " in lines[2]


JOIN_NOBODY = """\
import sys
from grinta_jupyter.experiment.backends import RayBackend
from grinta_jupyter.experiment.errors import ExperimentUsageError
from grinta_jupyter.experiment.suite import plan_runs, run_suite
specs = plan_runs(["raft_kv/fix-failing-test"], ["intent"], "scripted", 1)
try:
    run_suite(specs, sys.argv[1], backend=RayBackend(address=sys.argv[2]), progress=print)
except ExperimentUsageError as exc:
    print("refused:", exc)
"""


def test_a_ray_address_where_nobody_answers_is_refused_in_seconds(tmp_path):
    """Attack: ``--backend ray --address HEAD:6379`` with the head down, or a typo in the port.
    ``ray.init`` waited for ever, printing a warning every five seconds and deaf to SIGTERM
    (``timeout`` could not end it), with the eval's folder locked."""
    pytest.importorskip("ray")
    with socket.socket() as probe:  # a port nobody listens on (closed again at once)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    child = subprocess.Popen(
        [sys.executable, "-c", JOIN_NOBODY, str(tmp_path / "out"), f"127.0.0.1:{port}"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    assert (
        f"refused: cannot join the Ray cluster at 127.0.0.1:{port}: ConnectionRefusedError"
        in output
    )
    assert not list((tmp_path / "out" / "runs").iterdir())


@pytest.mark.parametrize(
    "package", ["mini\n[####################] all 9 passed", "mini\x1b]0;pwned\x07"]
)
def test_a_task_id_with_control_characters_is_refused(tmp_path, package):
    """Attack: a task folder from elsewhere whose index names ``mini\\n[###...] all 9 passed`` or a
    terminal escape sequence (it sets the terminal's title here; others rewrite the screen).
    The id was accepted, and each progress line printed it to the user's terminal as it was:
    a forged progress line, or the escape run by the terminal."""
    folder = mini_tasks(tmp_path / "tasks")
    (folder / "tasks" / "mini").rename(folder / "tasks" / package)
    (folder / "index.json").write_text(
        json.dumps({"format": 1, "packages": {}, "tasks": [f"{package}/001"]})
    )
    with pytest.raises(TaskDirError, match="is not a built task id"):
        eval_specs(eval_args(str(folder)), "scripted", ["intent"])


def test_a_toolset_named_twice_is_one_toolset_not_a_difference_of_zero(tmp_path):
    """Attack: ``--toolsets intent,intent`` (a careless user). The runs were done once, but the
    table and the page reported a measured "difference (intent - intent)" of 0 [0, 0] and "2
    toolsets", a figure of nothing."""
    folder = mini_tasks(tmp_path / "tasks")
    specs = plan_runs(["mini/001"], ["intent", "intent"], "scripted", 1, tasks_dir=str(folder))
    results = run_suite(specs, tmp_path / "out", **QUIET)
    text = write_report(results, ["intent", "intent"], tmp_path / "out")
    assert text.splitlines()[0] == "| metric | intent |"
    assert json.loads((tmp_path / "out" / "results.json").read_text())["difference"] == {}
    assert "1 runs: 1 tasks &times; 1 toolsets" in (tmp_path / "out" / "report.html").read_text()


HANG = """\
import os, sys, time
with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
time.sleep(300)
"""

CHECK_A_TASK = """\
import sys
from pathlib import Path
from grinta_jupyter.experiment.taskdir import load_task
task = load_task(sys.argv[1], "mini/001")
try:
    task.check(task.prepare(Path(sys.argv[2])))
except KeyboardInterrupt:
    print("interrupted")
"""


def test_an_interrupted_check_leaves_no_test_process_running(tmp_path):
    """Attack: Ctrl-C while a check (or ``grinta tasks build``'s trial of a mutant) runs a
    package's tests, here ones that hang. The tests run in a session of their own, so the
    interrupt never reached them, and the check went without ending them: a mutant that loops
    went on spinning, orphaned, after the eval or the build had stopped."""
    script, pid_file = tmp_path / "hang.py", tmp_path / "tests.pid"
    script.write_text(HANG)
    folder = mini_tasks(tmp_path / "tasks", ["python", str(script), str(pid_file)])
    child = subprocess.Popen(
        [sys.executable, "-c", CHECK_A_TASK, str(folder), str(tmp_path / "work")],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    tests_pid = None
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (pid_file.exists() and pid_file.read_text()):
            time.sleep(0.05)
        tests_pid = int(pid_file.read_text())
        child.send_signal(signal.SIGINT)  # to the checking process only, as a notebook does
        output, _ = child.communicate(timeout=60)
        assert output.strip() == "interrupted"
        assert not alive(tests_pid), "the tests went on running after the interrupt"
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        if tests_pid is not None and alive(tests_pid):
            os.kill(tests_pid, signal.SIGKILL)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not yet reaped by init, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
