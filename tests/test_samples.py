"""The bundled sample workspace raft_kv and its first three tasks.

Every test works on a fresh copy in a temp directory; the pristine workspace
inside the package is never run or edited in place. Each of these tasks' checks
must fail on the copy its setup prepares and pass once a reference solution
(kept here, as before/after strings) is applied. Every task's own ``solution``
(tool calls), ledger_js and the later tasks are in test_samples_more.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from grinta_jupyter.samples.tasks import (
    DEMO_FAILING_TEST,
    DEMO_FIX,
    TASKS,
    copy_workspace,
    get_task,
    run_suite,
    sample_path,
)


def replace_once(root: Path, path: str, old: str, new: str) -> None:
    """Replace ``old`` with ``new`` in ``root/path``; ``old`` must occur exactly once."""
    file = root / path
    text = file.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} should occur once in {path}"
    file.write_text(text.replace(old, new), encoding="utf-8")


CACHES = {"__pycache__", ".pytest_cache", ".grinta"}


def files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by relative path, caches left out."""
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not CACHES & set(path.relative_to(root).parts)
    }


# -- reference solutions ----------------------------------------------------


def solve_fix_failing_test(root: Path) -> None:
    replace_once(root, DEMO_FIX["path"], DEMO_FIX["old_string"], DEMO_FIX["new_string"])


def solve_compare_and_swap(root: Path) -> None:
    replace_once(
        root,
        "raft_kv/state_machine.py",
        '{"get": 1, "set": 2, "delete": 1}',
        '{"get": 1, "set": 2, "delete": 1, "cas": 3}',
    )
    replace_once(
        root,
        "raft_kv/state_machine.py",
        "            self.data.pop(key, None)\n",
        "            self.data.pop(key, None)\n"
        '        elif operation == "cas" and previous == args[1]:\n'
        "            self.data[key] = args[2]\n",
    )
    replace_once(
        root,
        "raft_kv/cluster.py",
        "    def execute(self, command: str) -> str | None:\n",
        "    def cas(self, key: str, expected: str, new: str) -> bool:\n"
        '        """Set ``key`` to ``new`` if it holds ``expected``; return whether it did."""\n'
        '        return self.execute(f"cas {key} {expected} {new}") == expected\n'
        "\n"
        "    def execute(self, command: str) -> str | None:\n",
    )


def solve_rename_entry(root: Path) -> None:
    for path in [*root.glob("raft_kv/*.py"), *root.glob("tests/*.py")]:
        text = path.read_text(encoding="utf-8")
        path.write_text(re.sub(r"\bEntry\b", "LogEntry", text), encoding="utf-8")


REFERENCE_SOLUTIONS: dict[str, Callable[[Path], None]] = {
    "raft_kv/fix-failing-test": solve_fix_failing_test,
    "raft_kv/compare-and-swap": solve_compare_and_swap,
    "raft_kv/rename-entry": solve_rename_entry,
}


# -- the pristine workspace -------------------------------------------------


def test_pristine_suite_fails_exactly_the_demo_test(tmp_path: Path) -> None:
    run = run_suite(copy_workspace("raft_kv", tmp_path / "ws"))
    assert run.exit_code == 1, run.output
    assert run.failures == [DEMO_FAILING_TEST]
    assert len(run.outcomes) > 30  # the rest of the suite ran, and passed


def test_demo_fix_targets_one_line_of_the_pristine_workspace() -> None:
    source = (sample_path("raft_kv") / DEMO_FIX["path"]).read_text(encoding="utf-8")
    assert source.count(DEMO_FIX["old_string"]) == 1
    assert DEMO_FIX["new_string"] not in source
    assert "\n" not in DEMO_FIX["old_string"] + DEMO_FIX["new_string"]


def test_demo_fix_makes_the_whole_suite_pass(tmp_path: Path) -> None:
    root = copy_workspace("raft_kv", tmp_path / "ws")
    solve_fix_failing_test(root)
    run = run_suite(root)
    assert run.exit_code == 0, run.tail()
    assert run.outcomes[DEMO_FAILING_TEST] == "passed"


def test_copy_workspace_copies_the_sample_without_caches(tmp_path: Path) -> None:
    root = copy_workspace("raft_kv", tmp_path / "ws")
    copied = {path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file()}
    assert copied == set(files(sample_path("raft_kv")))
    assert {"conftest.py", "pyproject.toml", "tests/test_replication.py"} <= copied


def test_copy_workspace_refuses_a_non_empty_destination(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        copy_workspace("raft_kv", tmp_path / "ws")


def test_unknown_names_are_developer_errors() -> None:
    with pytest.raises(ValueError, match="raft_kv"):
        sample_path("nope")
    with pytest.raises(KeyError, match="raft_kv/fix-failing-test"):
        get_task("raft_kv/nope")


# -- every task: fails as set up, passes when solved --------------------------


def test_every_task_has_a_reference_solution() -> None:
    assert set(REFERENCE_SOLUTIONS) <= set(TASKS)
    assert all(task.solution for task in TASKS.values())
    assert {task.kind for task in TASKS.values()} == {"bug", "feature", "refactor"}
    assert all(get_task(task_id).id == task_id for task_id in TASKS)


@pytest.mark.parametrize("task_id", sorted(REFERENCE_SOLUTIONS))
def test_check_fails_on_the_prepared_workspace(task_id: str, tmp_path: Path) -> None:
    root = get_task(task_id).prepare(tmp_path / "ws")
    result = get_task(task_id).check(root)
    assert not result.passed
    assert result.detail


@pytest.mark.parametrize("task_id", sorted(REFERENCE_SOLUTIONS))
def test_check_passes_with_the_reference_solution(task_id: str, tmp_path: Path) -> None:
    root = get_task(task_id).prepare(tmp_path / "ws")
    REFERENCE_SOLUTIONS[task_id](root)
    result = get_task(task_id).check(root)
    assert result.passed, result.detail


# -- checks cannot be satisfied by weakening the tests ----------------------------


def test_fix_check_refuses_a_deleted_test(tmp_path: Path) -> None:
    root = get_task("raft_kv/fix-failing-test").prepare(tmp_path / "ws")
    replace_once(
        root,
        "tests/test_replication.py",
        "def test_follower_rejects_entries_when_prev_log_term_mismatches",
        "def _disabled",
    )
    result = get_task("raft_kv/fix-failing-test").check(root)
    assert not result.passed
    assert "tests/test_replication.py was modified" in result.detail


def test_fix_check_refuses_an_added_conftest(tmp_path: Path) -> None:
    root = get_task("raft_kv/fix-failing-test").prepare(tmp_path / "ws")
    solve_fix_failing_test(root)
    (root / "tests" / "conftest.py").write_text("collect_ignore = ['test_replication.py']\n")
    result = get_task("raft_kv/fix-failing-test").check(root)
    assert not result.passed
    assert "tests/conftest.py was added" in result.detail


def test_rename_check_refuses_an_alias_for_the_old_name(tmp_path: Path) -> None:
    root = get_task("raft_kv/rename-entry").prepare(tmp_path / "ws")
    solve_rename_entry(root)
    log = root / "raft_kv" / "log.py"
    log.write_text(log.read_text(encoding="utf-8") + "\nEntry = LogEntry\n", encoding="utf-8")
    result = get_task("raft_kv/rename-entry").check(root)
    assert not result.passed
    assert "raft_kv/log.py" in result.detail


def test_feature_check_leaves_the_workspace_untouched(tmp_path: Path) -> None:
    root = get_task("raft_kv/compare-and-swap").prepare(tmp_path / "ws")
    solve_compare_and_swap(root)
    before = files(root)
    assert get_task("raft_kv/compare-and-swap").check(root).passed
    assert files(root) == before
