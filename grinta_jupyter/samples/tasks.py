"""Tasks on the bundled sample workspaces: what a user asks, and how to tell it was done.

A sample workspace is a small project shipped inside the package
(``grinta_jupyter/samples/<name>/``); the agent always works on a fresh copy.
A ``Task`` is data: the prompt, a ``setup`` that prepares the copy and a
``check`` that judges it afterwards. Checks run the workspace's own pytest
suite in a subprocess, so they see the files exactly as the agent left them,
and they return a ``CheckResult`` rather than raise when the task is not done.
Developer mistakes (an unknown task or workspace) do raise.
"""

from __future__ import annotations

import ast
import io
import os
import shutil
import subprocess
import sys
import tempfile
import tokenize
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from xml.etree import ElementTree

SAMPLES_DIR = Path(__file__).resolve().parent
# Caches and grinta's own state are never part of a workspace or its copies.
IGNORED = ("__pycache__", "*.pyc", ".pytest_cache", ".grinta")
CHECK_TIMEOUT_S = 120.0

TaskKind = Literal["bug", "feature", "refactor"]


@dataclass(frozen=True)
class CheckResult:
    """The verdict of a task check; ``detail`` says why, for a person reading it."""

    passed: bool
    detail: str


@dataclass(frozen=True)
class Task:
    """Something a user asks the agent to do in a sample workspace, and how to check it."""

    id: str
    workspace: str
    kind: TaskKind
    prompt: str
    setup: Callable[[Path], None]
    check: Callable[[Path], CheckResult]

    def prepare(self, dest: Path) -> Path:
        """Copy the pristine workspace to ``dest``, run ``setup`` on it and return it."""
        root = copy_workspace(self.workspace, dest)
        self.setup(root)
        return root


def sample_path(name: str) -> Path:
    """The pristine sample workspace ``name`` inside the package (never edit it in place)."""
    if name not in _workspace_names():
        known = ", ".join(sorted(_workspace_names()))
        raise ValueError(f"no sample workspace named {name!r}; known: {known}")
    return SAMPLES_DIR / name


def copy_workspace(name: str, dest: Path) -> Path:
    """Copy the pristine workspace ``name`` to ``dest`` (absent or empty) and return ``dest``."""
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty")
    shutil.copytree(
        sample_path(name), dest, ignore=shutil.ignore_patterns(*IGNORED), dirs_exist_ok=True
    )
    return dest


def _workspace_names() -> set[str]:
    return {
        path.name
        for path in SAMPLES_DIR.iterdir()
        if path.is_dir() and not path.name.startswith(("_", "."))
    }


# -- running a workspace's suite ----------------------------------------------


@dataclass(frozen=True)
class SuiteRun:
    """One pytest run in a workspace.

    ``outcomes`` maps node ids (``tests/test_log.py::test_x``) to ``passed``,
    ``failed``, ``error`` or ``skipped``; ``exit_code`` is None on a timeout.
    """

    exit_code: int | None
    output: str
    outcomes: dict[str, str]

    @property
    def failures(self) -> list[str]:
        """Node ids that failed or errored."""
        return sorted(
            nid for nid, outcome in self.outcomes.items() if outcome in {"failed", "error"}
        )

    def tail(self, lines: int = 40) -> str:
        """The end of the output, where pytest puts its summary."""
        return "\n".join(self.output.rstrip().splitlines()[-lines:])


def run_suite(root: Path, *args: str, timeout: float = CHECK_TIMEOUT_S) -> SuiteRun:
    """Run pytest in ``root`` in a subprocess, as a user would from the workspace root.

    Plugin autoloading is off: the workspaces need only pytest, and plugins of
    the agent's own environment (nbval imports Jupyter) cost seconds per run.
    """
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    # The report goes outside the workspace, which must stay as the agent left it.
    with tempfile.TemporaryDirectory(prefix="grinta-suite-") as scratch:
        report = Path(scratch) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        command += [f"--junitxml={report}", *args]
        try:
            completed = subprocess.run(
                command, cwd=root, env=env, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return SuiteRun(None, f"pytest did not finish within {timeout:g}s", {})
        outcomes = _junit_outcomes(report, root) if report.exists() else {}
        return SuiteRun(completed.returncode, completed.stdout + completed.stderr, outcomes)


_JUNIT_OUTCOMES = {"failure": "failed", "error": "error", "skipped": "skipped"}


def _junit_outcomes(report: Path, root: Path) -> dict[str, str]:
    try:
        cases = list(ElementTree.parse(report).iter("testcase"))
    except ElementTree.ParseError:
        return {}  # pytest died while writing it; the exit code and output tell the story
    outcomes: dict[str, str] = {}
    for case in cases:
        node_id = _node_id(case.get("classname", ""), case.get("name", ""), root)
        outcome = "passed"
        for child in case:
            if child.tag in _JUNIT_OUTCOMES:
                outcome = _JUNIT_OUTCOMES[child.tag]
                break
        outcomes[node_id] = outcome
    return outcomes


def _node_id(classname: str, name: str, root: Path) -> str:
    """Rebuild a pytest node id from JUnit's dotted ``classname`` (module, then classes)."""
    parts = classname.split(".")
    for split in range(len(parts), 0, -1):
        module = "/".join(parts[:split]) + ".py"
        if (root / module).is_file():
            return "::".join([module, *parts[split:], name])
    return f"{classname}::{name}"


def _test_ids(source: str, path: str) -> set[str]:
    """Node ids of the module-level test functions in ``source`` (parameters stripped)."""
    tree = ast.parse(source)
    return {
        f"{path}::{node.name}"
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test")
    }


def _workspace_test_ids(root: Path) -> set[str]:
    ids: set[str] = set()
    for path in sorted((root / "tests").glob("test_*.py")):
        ids |= _test_ids(path.read_text(encoding="utf-8"), path.relative_to(root).as_posix())
    return ids


def _check_suite(root: Path, required: Iterable[str]) -> CheckResult:
    """Pass when pytest exits cleanly and every ``required`` test ran and passed."""
    run = run_suite(root)
    if run.exit_code is None:
        return CheckResult(False, run.output)
    seen: dict[str, set[str]] = {}
    for node_id, outcome in run.outcomes.items():
        seen.setdefault(node_id.split("[", 1)[0], set()).add(outcome)
    missing = sorted(test for test in required if test not in seen)
    not_passing = sorted(test for test in required if seen.get(test, {"passed"}) != {"passed"})
    problems = []
    if run.exit_code != 0:
        problems.append(f"pytest exited with {run.exit_code}")
    if not_passing:
        problems.append("not passing: " + ", ".join(not_passing))
    if missing:
        problems.append("did not run: " + ", ".join(missing))
    if problems:
        return CheckResult(False, "; ".join(problems) + "\n" + run.tail())
    return CheckResult(True, f"{len(run.outcomes)} tests passed")


# -- raft_kv ---------------------------------------------------------------

# The bug in the pristine raft_kv: a follower compares the terms at
# prev_log_index with ``<`` instead of ``!=``, so it accepts entries after an
# entry from a *newer* term than the leader's, and its log diverges.
DEMO_FIX: dict[str, str] = {
    "path": "raft_kv/node.py",
    "old_string": "if self.log.term_at(request.prev_log_index) < request.prev_log_term:",
    "new_string": "if self.log.term_at(request.prev_log_index) != request.prev_log_term:",
}
DEMO_FAILING_TEST = (
    "tests/test_replication.py::test_follower_rejects_entries_when_prev_log_term_mismatches"
)


_RAFT_KV_PROTECTED = ("tests/*.py", "conftest.py", "pyproject.toml")


def _no_setup(root: Path) -> None:
    """The task starts from the pristine workspace."""


def _apply_demo_fix(root: Path) -> None:
    """Fix the planted bug, so that only the task at hand decides the check."""
    path = root / DEMO_FIX["path"]
    text = path.read_text(encoding="utf-8")
    if text.count(DEMO_FIX["old_string"]) != 1:
        raise RuntimeError(f"{DEMO_FIX['path']} no longer matches DEMO_FIX; update tasks.py")
    path.write_text(text.replace(DEMO_FIX["old_string"], DEMO_FIX["new_string"]), encoding="utf-8")


def _check_fix_failing_test(root: Path) -> CheckResult:
    pristine = sample_path("raft_kv")
    # The tests and the pytest configuration must be exactly the pristine ones:
    # deleting or weakening the failing test is not a fix.
    protected = sorted({path for pattern in _RAFT_KV_PROTECTED for path in pristine.glob(pattern)})
    problems = []
    for path in protected:
        relative = path.relative_to(pristine).as_posix()
        copy = root / relative
        if not copy.is_file():
            problems.append(f"{relative} was deleted")
        elif copy.read_bytes() != path.read_bytes():
            problems.append(f"{relative} was modified")
    pristine_conftests = {p.relative_to(pristine) for p in pristine.rglob("conftest.py")}
    for path in sorted(root.rglob("conftest.py")):
        if path.relative_to(root) not in pristine_conftests:
            problems.append(f"{path.relative_to(root).as_posix()} was added")
    if problems:
        return CheckResult(False, "; ".join(problems))
    return _check_suite(root, _workspace_test_ids(pristine))


HIDDEN_CAS_TEST_PATH = "tests/test_hidden_cas.py"
HIDDEN_CAS_TEST = '''\
"""Acceptance tests for compare-and-swap, added by the task check (not shipped)."""

import pytest

from raft_kv.cluster import Cluster, KVClient
from raft_kv.state_machine import KVStateMachine


def test_cas_swaps_when_the_value_matches():
    store = KVStateMachine()
    store.apply("set k a")
    assert store.apply("cas k a b") == "a"
    assert store.data == {"k": "b"}


def test_cas_leaves_a_different_value_alone():
    store = KVStateMachine()
    store.apply("set k a")
    assert store.apply("cas k x b") == "a"
    assert store.data == {"k": "a"}


def test_cas_on_a_missing_key_does_nothing():
    store = KVStateMachine()
    assert store.apply("cas k a b") is None
    assert store.data == {}


@pytest.mark.parametrize("command", ["cas k a", "cas k a b c"])
def test_cas_with_the_wrong_number_of_arguments_is_rejected(command):
    with pytest.raises(ValueError):
        KVStateMachine().apply(command)


def test_client_cas_goes_through_the_log():
    cluster = Cluster(seed=21)
    client = KVClient(cluster)
    client.set("lock", "free")
    assert client.cas("lock", "free", "taken") is True
    assert client.cas("lock", "free", "taken") is False
    assert client.get("lock") == "taken"
    cluster.run_for(500)
    assert all(store.data == {"lock": "taken"} for store in cluster.stores.values())
'''


def _check_compare_and_swap(root: Path) -> CheckResult:
    # Run the hidden tests in a scratch copy: the agent's workspace is left untouched.
    with tempfile.TemporaryDirectory(prefix="grinta-check-") as scratch:
        trial = Path(scratch) / "workspace"
        shutil.copytree(root, trial, ignore=shutil.ignore_patterns(*IGNORED))
        (trial / HIDDEN_CAS_TEST_PATH).write_text(HIDDEN_CAS_TEST, encoding="utf-8")
        required = _workspace_test_ids(sample_path("raft_kv"))
        required |= _test_ids(HIDDEN_CAS_TEST, HIDDEN_CAS_TEST_PATH)
        return _check_suite(trial, required)


def _check_rename_entry(root: Path) -> CheckResult:
    sources = sorted([root / "conftest.py", *root.glob("raft_kv/*.py"), *root.glob("tests/*.py")])
    leftovers = []
    for path in sources:
        relative = path.relative_to(root).as_posix()
        try:
            lines = _lines_naming(path, "Entry")
        except (SyntaxError, tokenize.TokenError) as error:
            return CheckResult(False, f"{relative} does not parse: {error}")
        leftovers += [f"{relative}:{line}" for line in lines]
    if leftovers:
        more = f" and {len(leftovers) - 10} more" if len(leftovers) > 10 else ""
        return CheckResult(False, f"Entry is still used at {', '.join(leftovers[:10])}{more}")
    error = _import_error(root, "from raft_kv import LogEntry\nfrom raft_kv.log import LogEntry")
    if error:
        return CheckResult(False, f"LogEntry is not importable:\n{error}")
    return _check_suite(root, _workspace_test_ids(sample_path("raft_kv")))


def _import_error(root: Path, code: str) -> str | None:
    """Run ``code`` with ``root`` as the working directory; its error output if it fails."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        completed = subprocess.run(
            [sys.executable, "-c", code],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=CHECK_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return f"import did not finish within {CHECK_TIMEOUT_S:g}s"
    return completed.stderr[-2000:] if completed.returncode != 0 else None


def _lines_naming(path: Path, name: str) -> list[int]:
    """Lines where ``name`` appears as an identifier (not inside strings or comments)."""
    if not path.is_file():
        return []
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return [
        token.start[0] for token in tokens if token.type == tokenize.NAME and token.string == name
    ]


TASKS: dict[str, Task] = {
    task.id: task
    for task in [
        Task(
            id="raft_kv/fix-failing-test",
            workspace="raft_kv",
            kind="bug",
            prompt="fix the failing test in raft_kv",
            setup=_no_setup,
            check=_check_fix_failing_test,
        ),
        Task(
            id="raft_kv/compare-and-swap",
            workspace="raft_kv",
            kind="feature",
            prompt=(
                "add compare-and-swap to raft_kv: a command `cas KEY EXPECTED NEW` in "
                "KVStateMachine.apply that sets KEY to NEW only if KEY currently holds "
                "EXPECTED (a missing key never matches) and, like the other commands, "
                "returns the value KEY held before; and KVClient.cas(key, expected, new), "
                "which returns True when the swap happened"
            ),
            setup=_apply_demo_fix,
            check=_check_compare_and_swap,
        ),
        Task(
            id="raft_kv/rename-entry",
            workspace="raft_kv",
            kind="refactor",
            prompt=(
                "rename the Entry class of raft_kv to LogEntry everywhere, tests included, "
                "without keeping an alias for the old name"
            ),
            setup=_apply_demo_fix,
            check=_check_rename_entry,
        ),
    ]
}


def get_task(task_id: str) -> Task:
    """The task with id ``task_id``; raises KeyError naming the known ids otherwise."""
    try:
        return TASKS[task_id]
    except KeyError:
        raise KeyError(f"unknown task {task_id!r}; known: {', '.join(sorted(TASKS))}") from None
