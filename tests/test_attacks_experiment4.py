"""The experiment harness under attack, fourth round: daemons a check leaves running, a test
runner planted in the workspace, report and result files planted in the results folder, task
files asking for a check that never ends.

Real parts only: the hand-made ``mini`` task of tests/test_experiment_attacks.py and its real
pytest run, real processes that leave their session, the offline solver, the local backend.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grinta_jupyter.experiment.runner import RunSpec
from grinta_jupyter.experiment.suite import finished, run_suite, write_report
from grinta_jupyter.experiment.taskdir import TaskDirError, load_task, task_file
from tests.test_attacks_experiment2 import alive
from tests.test_eval import REPO
from tests.test_experiment_attacks import BUNDLED, PYTEST, QUIET, mini_tasks

# A test command that leaves a daemon behind (a double fork into a session of its own, as
# ``setsid cmd &`` does), waits until it runs, then runs the real tests and ends.
LEAVES_A_DAEMON = """\
import os, sys, time
pid_file = sys.argv[1]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(pid_file + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.replace(pid_file + ".tmp", pid_file)
        time.sleep(120)
    os._exit(0)
while not os.path.exists(pid_file):
    time.sleep(0.01)
os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
"""

# What a model may write as workspace/pytest.py: a "test runner" reporting the tests passed.
FAKE_PYTEST = """\
import sys
report = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--junitxml="))
with open(report, "w") as f:
    f.write('<testsuite><testcase classname="tests.test_calc" name="test_add"/></testsuite>')
sys.exit(0)
"""


def kill(pid_file: Path) -> None:
    if pid_file.exists():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_a_daemon_the_test_command_started_ends_with_the_check(tmp_path):
    """Attack: a package's tests start a daemon that leaves their session (setsid, a double
    fork), and end. The check killed only the tests' process group, so the daemon went on
    running after the run, holding its files and ports, for as long as it liked."""
    script, pid_file = tmp_path / "daemon.py", tmp_path / "daemon.pid"
    script.write_text(LEAVES_A_DAEMON)
    command = ["python", str(script), str(pid_file), *PYTEST[1:], "-o", "pythonpath=.", "tests"]
    task = load_task(mini_tasks(tmp_path / "tasks", command), "mini/001")
    root = task.prepare(tmp_path / "work")
    try:
        verdict = task.check(root)
        assert not verdict.passed and "failing: tests/test_calc.py::test_add" in verdict.detail
        assert not alive(int(pid_file.read_text())), "the daemon outlived the check"
    finally:
        kill(pid_file)


def test_a_check_leaves_the_processes_of_another_test_run_alone(tmp_path):
    """Guard (passes before and after the fix): ending what a check started must not end what
    another test run started, as ``grinta tasks build`` runs several at once in one process.
    A process marked as another run's lives through this check."""
    other = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)"],
        env={**os.environ, "GRINTA_TEST_RUN": "another-run"},
        start_new_session=True,
    )
    try:
        task = load_task(mini_tasks(tmp_path / "tasks"), "mini/001")
        assert not task.check(task.prepare(tmp_path / "work")).passed
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_a_pytest_py_put_in_the_workspace_does_not_pass_the_check(tmp_path):
    """Attack: the bug left in, a ``pytest.py`` written at the workspace's root that reports
    the broken test as passed. ``python -m pytest`` ran with the workspace first on its path,
    so the check ran the agent's "pytest", not pytest, and said "1 tests passed"."""
    task = load_task(mini_tasks(tmp_path / "tasks"), "mini/001")
    root = task.prepare(tmp_path / "work")
    (root / "pytest.py").write_text(FAKE_PYTEST)
    verdict = task.check(root)
    assert not verdict.passed
    assert "failing: tests/test_calc.py::test_add" in verdict.detail


@pytest.mark.parametrize("timeout", ["NaN", "Infinity", "0", "-5"])
def test_a_task_file_whose_check_could_never_time_out_is_refused(tmp_path, timeout):
    """Attack: a task file edited by hand to ``"timeout": NaN`` (or Infinity). It loaded, and
    the check's wait never timed out: a test command that hangs hung the run, and the eval,
    for ever."""
    folder = mini_tasks(tmp_path / "tasks")
    path = task_file(folder, "mini/001")
    path.write_text(path.read_text().replace('"timeout": 30.0', f'"timeout": {timeout}'))
    with pytest.raises(TaskDirError, match="test timeout"):
        load_task(folder, "mini/001")


def test_report_files_that_are_links_are_replaced_not_written_through(tmp_path):
    """Attack: a results folder received from elsewhere whose results.json, results.md and
    report.html are links to files of this machine. Writing the report wrote through them,
    overwriting the files they lead to."""
    out = tmp_path / "out"
    out.mkdir()
    precious = {}
    for name in ("results.json", "results.md", "report.html"):
        precious[name] = tmp_path / f"precious-{name}"
        precious[name].write_text("keep me\n")
        (out / name).symlink_to(precious[name])
    results = run_suite([RunSpec(BUNDLED, "intent", "scripted:noop", 0)], out, **QUIET)
    write_report(results, ["intent"], out)
    for name, target in precious.items():
        assert target.read_text() == "keep me\n"
        assert not (out / name).is_symlink() and (out / name).stat().st_size > 0
    assert json.loads((out / "results.json").read_text())["toolsets"]["intent"]["runs"] == 1
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]


def test_a_folder_or_a_named_pipe_in_runs_is_a_run_to_do_again_not_a_hang(tmp_path):
    """Attack: a folder and a named pipe named like results in runs/ (a copy gone wrong, a
    prank). The folder stopped every eval there with IsADirectoryError; the pipe made the eval
    wait for ever, before any run, reading it."""
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "a-folder.json").mkdir()
    os.mkfifo(runs / "a-pipe.json")
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from grinta_jupyter.experiment.suite import read_results\n"
        "print(read_results(Path(sys.argv[1])))\n"
    )
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-c", probe, str(tmp_path)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=15,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"reading runs/ hung (killed after {time.monotonic() - started:.0f}s)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "({}, ['a-folder.json', 'a-pipe.json'])"


def test_a_result_copied_under_another_runs_name_does_not_count_for_it(tmp_path):
    """Attack: a failed run's result file replaced by hand with a copy of another run's
    passing one, under the failed run's name. Results were read by the key inside, so which
    of two files claiming one run counted depended on their names' order."""
    failing = RunSpec(BUNDLED, "intent", "scripted:noop", 0)
    passing = RunSpec(BUNDLED, "intent", "scripted", 0)
    run_suite([failing, passing], tmp_path, **QUIET)
    runs = tmp_path / "runs"
    copy = runs / f"{failing.key}.json"
    copy.write_text((runs / f"{passing.key}.json").read_text())
    assert sorted(finished(tmp_path)) == [passing.key]
    lines: list[str] = []
    results = run_suite([failing, passing], tmp_path, progress=lines.append)
    assert copy.name in lines[0] and "not whole results" in lines[0]
    assert {r["key"]: r["passed"] for r in results} == {failing.key: False, passing.key: True}
