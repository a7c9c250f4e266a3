"""The experiment harness under attack, third round: a check gamed by an added conftest.py,
results edited by hand, a planted lock file.

Real parts only: the hand-made ``mini`` task of tests/test_experiment_attacks.py, its real
pytest run, the offline solver and the local backend.
"""

from __future__ import annotations

import json

import pytest

from grinta_jupyter.experiment.errors import ExperimentUsageError
from grinta_jupyter.experiment.runner import RunSpec
from grinta_jupyter.experiment.suite import load_results, run_suite, write_report
from grinta_jupyter.experiment.taskdir import load_task
from tests.test_experiment_attacks import BUNDLED, QUIET, mini_tasks

# A conftest.py hook that reports every test as passed: what a model may write to "fix" a bug.
EVERYTHING_PASSES = """\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
"""


@pytest.mark.parametrize("where", ["conftest.py", "tests/conftest.py"])
def test_a_conftest_added_to_turn_failures_into_passes_does_not_pass_the_check(tmp_path, where):
    """Attack: the bug left in, a new conftest.py whose hook reports every failure as a pass.
    Only files the package had were protected, so the check said "1 tests passed"."""
    task = load_task(mini_tasks(tmp_path / "tasks"), "mini/001")
    root = task.prepare(tmp_path / "work")
    assert not task.check(root).passed
    (root / where).write_text(EVERYTHING_PASSES)
    verdict = task.check(root)
    assert not verdict.passed
    assert f"{where} (added)" in verdict.detail


def test_a_result_edited_by_hand_is_redone_not_counted_as_a_pass(tmp_path):
    """Attack: a failed run's result edited to "passed": "false" (a string), and another's
    metric set to Infinity. The string was truthy, so the pass rate said 1 for a failure; the
    Infinity stopped write_report with a ValidationError after every run was done."""
    spec = RunSpec(BUNDLED, "intent", "scripted:noop", 0)
    (result,) = run_suite([spec], tmp_path, **QUIET)
    assert not result["passed"]
    path = tmp_path / "runs" / f"{spec.key}.json"
    for edit in ({"passed": "false"}, {"metrics": {**result["metrics"], "steps": float("inf")}}):
        path.write_text(json.dumps({**result, **edit}))
        lines: list[str] = []
        results = run_suite([spec], tmp_path, progress=lines.append)
        assert "not whole results" in lines[0] and path.name in lines[0]
        assert [r["passed"] for r in results] == [False]
        assert "| pass_rate | 0 [0, 0] |" in write_report(results, ["intent"], tmp_path)


def test_a_nan_metric_is_not_read_back_into_the_figures(tmp_path):
    """Attack: a result whose cost is NaN (JSON as Python writes it). It was counted, and one
    NaN made the whole column's mean, and the notebook's chart, n/a without a word."""
    spec = RunSpec(BUNDLED, "intent", "scripted:noop", 0)
    (result,) = run_suite([spec], tmp_path, **QUIET)
    path = tmp_path / "runs" / f"{spec.key}.json"
    path.write_text(json.dumps({**result, "metrics": {**result["metrics"], "cost": float("nan")}}))
    with pytest.raises(ExperimentUsageError, match="not whole results"):
        load_results(tmp_path)


def test_a_lock_file_that_is_a_link_leaves_its_target_as_it_was(tmp_path):
    """Attack: a results folder received from someone else whose .lock is a link to a file of
    this machine. The lock was opened for writing, which emptied the file the link leads to."""
    precious = tmp_path / "precious"
    precious.write_text("keep me\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / ".lock").symlink_to(precious)
    run_suite([RunSpec(BUNDLED, "intent", "scripted:noop", 0)], out, **QUIET)
    assert precious.read_text() == "keep me\n"
