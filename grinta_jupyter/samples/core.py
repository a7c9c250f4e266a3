"""What a task is, and the machinery its checks share (copies, test suites, verdicts).

A sample workspace is a small project shipped inside the package
(``grinta_jupyter/samples/<name>/``); the agent always works on a fresh copy.
A ``Task`` is data: the prompt, a ``setup`` that prepares the copy, a
``check`` that judges it afterwards, and a reference ``solution`` (tool calls
that make the check pass, for offline runs and for our own tests). Checks run
the workspace's own suite (pytest for raft_kv, ``node --test`` for ledger_js)
in a subprocess, so they see the files exactly as the agent left them, and they
return a ``CheckResult`` rather than raise when the task is not done.
Developer mistakes (an unknown task or workspace, no ``node`` on PATH) do raise.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from xml.etree import ElementTree

from grinta_jupyter.runtime import pyast
from grinta_jupyter.samples.contained import run_contained

SAMPLES_DIR = Path(__file__).resolve().parent
# Caches and grinta's own state are never part of a workspace or its copies.
IGNORED = ("__pycache__", "*.pyc", ".pytest_cache", ".ruff_cache", ".mypy_cache", ".grinta")
CHECK_TIMEOUT_S = 120.0
# The end of a suite's output kept for its verdict (its summary is there), however much it prints.
MAX_SUITE_OUTPUT_CHARS = 200_000

TaskKind = Literal["bug", "feature", "refactor"]
# One call of the intent toolset: the tool's name and its arguments.
ToolCall = tuple[str, dict[str, Any]]


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
    # Applied in order with ``Runtime(root).call(name, args)`` on a prepared
    # copy, these make ``check`` pass; the last two run the tests and finish.
    # Left out of the hash (arguments are dicts), so a Task stays hashable.
    solution: tuple[ToolCall, ...] = field(default=(), hash=False)

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
    """One run of a workspace's test suite.

    ``outcomes`` maps test ids to ``passed``, ``failed``, ``error`` or
    ``skipped``. For pytest an id is a node id (``tests/test_log.py::test_x``);
    for ``node --test`` it is the chain of suite and test names
    (``parsing amounts > reads negative amounts``). ``exit_code`` is None on a
    timeout.
    """

    exit_code: int | None
    output: str
    outcomes: dict[str, str]

    @property
    def failures(self) -> list[str]:
        """Ids of the tests that failed or errored."""
        return sorted(
            test_id for test_id, outcome in self.outcomes.items() if outcome in {"failed", "error"}
        )

    def tail(self, lines: int = 40) -> str:
        """The end of the output, where the runner puts its summary."""
        return "\n".join(self.output.rstrip().splitlines()[-lines:])


def run_suite(root: Path, *args: str, timeout: float = CHECK_TIMEOUT_S) -> SuiteRun:
    """Run pytest in ``root`` in a subprocess, as a user would from the workspace root.

    Plugin autoloading is off: the workspaces need only pytest, and plugins of
    the agent's own environment (nbval imports Jupyter) cost seconds per run.
    Contained (``samples.contained``): whatever the tests start ends with the run,
    a daemon that left its process group included, and cannot keep it waiting.
    """
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    # The report goes outside the workspace, which must stay as the agent left it.
    with tempfile.TemporaryDirectory(prefix="grinta-suite-") as scratch:
        report = Path(scratch) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        command += [f"--junitxml={report}", *args]
        ended = run_contained(
            command, cwd=root, env=env, timeout=timeout, keep_chars=MAX_SUITE_OUTPUT_CHARS
        )
        if ended.exit_code is None:
            return SuiteRun(None, f"pytest did not finish within {timeout:g}s", {})
        outcomes = _junit_outcomes(report, root) if report.exists() else {}
        return SuiteRun(ended.exit_code, ended.output, outcomes)


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


def run_node_suite(root: Path, *args: str, timeout: float = CHECK_TIMEOUT_S) -> SuiteRun:
    """Run ``node --test`` in ``root`` in a subprocess, as ``npm test`` would.

    Node 20's JUnit reporter gives each test's outcome, nested in its suites
    but without its file, so a test's id is its chain of names. The spec
    reporter's text is the output. Raises FileNotFoundError without ``node``:
    that is the environment's fault, not the agent's.
    """
    node = shutil.which("node")
    if node is None:
        raise FileNotFoundError("node is not on PATH; the ledger_js tasks need Node 20 or later")
    env = dict(os.environ)
    env.pop("NODE_TEST_CONTEXT", None)  # set when we are ourselves run by node --test
    with tempfile.TemporaryDirectory(prefix="grinta-suite-") as scratch:
        report = Path(scratch) / "junit.xml"
        command = [node, "--test", "--test-reporter=junit"]
        command += [f"--test-reporter-destination={report}"]
        command += ["--test-reporter=spec", "--test-reporter-destination=stdout", *args]
        ended = run_contained(
            command, cwd=root, env=env, timeout=timeout, keep_chars=MAX_SUITE_OUTPUT_CHARS
        )
        if ended.exit_code is None:
            return SuiteRun(None, f"node --test did not finish within {timeout:g}s", {})
        outcomes = _node_junit_outcomes(report, root) if report.exists() else {}
        return SuiteRun(ended.exit_code, ended.output, outcomes)


# When one id is reported more than once (the same names in two files), the worst outcome counts.
_SEVERITY = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}


def _node_junit_outcomes(report: Path, root: Path) -> dict[str, str]:
    try:
        tree = ElementTree.parse(report)
    except ElementTree.ParseError:
        return {}  # node died while writing it; the exit code and output tell the story
    prefix = f"{root.resolve()}{os.sep}"
    outcomes: dict[str, str] = {}

    def visit(element: ElementTree.Element, names: tuple[str, ...]) -> None:
        for child in element:
            name = child.get("name", "")
            # A file that fails to load is reported as a test named by its absolute path.
            if name.startswith(prefix):
                name = name[len(prefix) :].replace(os.sep, "/")
            if child.tag == "testsuite":
                visit(child, (*names, name))
            elif child.tag == "testcase":
                test_id = " > ".join((*names, name))
                outcome = next(
                    (_JUNIT_OUTCOMES[r.tag] for r in child if r.tag in _JUNIT_OUTCOMES), "passed"
                )
                previous = outcomes.get(test_id, "passed")
                outcomes[test_id] = max(previous, outcome, key=_SEVERITY.__getitem__)

    visit(tree.getroot(), ())
    return outcomes


def test_ids(source: str, path: str) -> set[str]:
    """Node ids of the module-level test functions in ``source`` (parameters stripped)."""
    tree = pyast.parse(source)
    return {
        f"{path}::{node.name}"
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test")
    }


def workspace_test_ids(root: Path) -> set[str]:
    ids: set[str] = set()
    for path in sorted((root / "tests").glob("test_*.py")):
        ids |= test_ids(path.read_text(encoding="utf-8"), path.relative_to(root).as_posix())
    return ids


def check_suite(root: Path, required: Iterable[str]) -> CheckResult:
    """Pass when pytest exits cleanly and every ``required`` test ran and passed."""
    # A parametrized test counts under its function's id.
    return _verdict(run_suite(root), required, "pytest", lambda node_id: node_id.split("[", 1)[0])


def check_node_suite(root: Path, required: Iterable[str]) -> CheckResult:
    """Pass when ``node --test`` exits cleanly and every ``required`` test ran and passed."""
    return _verdict(run_node_suite(root), required, "node --test", lambda test_id: test_id)


def _verdict(
    run: SuiteRun, required: Iterable[str], runner: str, test_of: Callable[[str], str]
) -> CheckResult:
    if run.exit_code is None:
        return CheckResult(False, run.output)
    seen: dict[str, set[str]] = {}
    for test_id, outcome in run.outcomes.items():
        seen.setdefault(test_of(test_id), set()).add(outcome)
    missing = sorted(test for test in required if test not in seen)
    not_passing = sorted(test for test in required if seen.get(test, {"passed"}) != {"passed"})
    problems = []
    if run.exit_code != 0:
        problems.append(f"{runner} exited with {run.exit_code}")
    if not_passing:
        problems.append("not passing: " + ", ".join(not_passing))
    if missing:
        problems.append("did not run: " + ", ".join(missing))
    if problems:
        return CheckResult(False, "; ".join(problems) + "\n" + run.tail())
    return CheckResult(True, f"{len(run.outcomes)} tests passed")


def changed_files(root: Path, workspace: str, patterns: Iterable[str]) -> list[str]:
    """Files matching ``patterns`` in the pristine workspace that ``root`` deleted or modified."""
    pristine = sample_path(workspace)
    protected = sorted({path for pattern in patterns for path in pristine.glob(pattern)})
    problems = []
    for path in protected:
        relative = path.relative_to(pristine).as_posix()
        copy = root / relative
        if not copy.is_file():
            problems.append(f"{relative} was deleted")
        elif copy.read_bytes() != path.read_bytes():
            problems.append(f"{relative} was modified")
    return problems


def copy_for_trial(root: Path, scratch: str) -> Path:
    """A copy of the agent's workspace to run hidden tests in; the original stays untouched."""
    trial = Path(scratch) / "workspace"
    shutil.copytree(root, trial, ignore=shutil.ignore_patterns(*IGNORED))
    return trial


def replace_once(root: Path, edit: dict[str, str], what: str) -> None:
    """Apply a ``replace_string``-shaped ``edit`` whose old text must occur exactly once."""
    path = root / edit["path"]
    text = path.read_text(encoding="utf-8")
    if text.count(edit["old_string"]) != 1:
        raise RuntimeError(f"{edit['path']} no longer matches {what}; update tasks.py")
    path.write_text(text.replace(edit["old_string"], edit["new_string"]), encoding="utf-8")


def no_setup(root: Path) -> None:
    """The task starts from the pristine workspace."""


def listing(items: list[str], shown: int = 10) -> str:
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return ", ".join(items[:shown]) + more


def script_error(root: Path, command: list[str]) -> str | None:
    """Run ``command`` with ``root`` as the working directory; its error output if it fails."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        completed = subprocess.run(
            command, cwd=root, env=env, capture_output=True, text=True, timeout=CHECK_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return f"{command[0]} did not finish within {CHECK_TIMEOUT_S:g}s"
    return completed.stderr[-2000:] if completed.returncode != 0 else None
