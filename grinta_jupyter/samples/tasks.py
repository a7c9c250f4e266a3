"""Tasks on the bundled sample workspaces: what a user asks, and how to tell it was done.

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
import functools
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tokenize
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from xml.etree import ElementTree

SAMPLES_DIR = Path(__file__).resolve().parent
# Caches and grinta's own state are never part of a workspace or its copies.
IGNORED = ("__pycache__", "*.pyc", ".pytest_cache", ".grinta")
CHECK_TIMEOUT_S = 120.0

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
        try:
            completed = subprocess.run(
                command, cwd=root, env=env, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return SuiteRun(None, f"node --test did not finish within {timeout:g}s", {})
        outcomes = _node_junit_outcomes(report, root) if report.exists() else {}
        return SuiteRun(completed.returncode, completed.stdout + completed.stderr, outcomes)


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
    # A parametrized test counts under its function's id.
    return _verdict(run_suite(root), required, "pytest", lambda node_id: node_id.split("[", 1)[0])


def _check_node_suite(root: Path, required: Iterable[str]) -> CheckResult:
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


def _changed_files(root: Path, workspace: str, patterns: Iterable[str]) -> list[str]:
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


def _copy_for_trial(root: Path, scratch: str) -> Path:
    """A copy of the agent's workspace to run hidden tests in; the original stays untouched."""
    trial = Path(scratch) / "workspace"
    shutil.copytree(root, trial, ignore=shutil.ignore_patterns(*IGNORED))
    return trial


def _replace_once(root: Path, edit: dict[str, str], what: str) -> None:
    """Apply a ``replace_string``-shaped ``edit`` whose old text must occur exactly once."""
    path = root / edit["path"]
    text = path.read_text(encoding="utf-8")
    if text.count(edit["old_string"]) != 1:
        raise RuntimeError(f"{edit['path']} no longer matches {what}; update tasks.py")
    path.write_text(text.replace(edit["old_string"], edit["new_string"]), encoding="utf-8")


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

# The bug the stale-vote task plants, once the demo bug is fixed: a voter
# compares only the last terms of the two logs, not then their lengths, so a
# candidate missing entries of that term can win and lose committed entries.
STALE_VOTE_BUG: dict[str, str] = {
    "path": "raft_kv/node.py",
    "old_string": """\
        # §5.4.1: a candidate's log must be at least as up to date as ours (compare
        # the last terms, then the lengths), so every leader holds every committed entry.
        candidate_log = (request.last_log_term, request.last_log_index)
        granted = (
            request.term == self.current_term
            and self.voted_for in (None, request.sender)
            and candidate_log >= (self.log.last_term, self.log.last_index)
        )
""",
    "new_string": """\
        # §5.4.1: a candidate's log must be at least as up to date as ours, so
        # every leader holds every committed entry.
        granted = (
            request.term == self.current_term
            and self.voted_for in (None, request.sender)
            and request.last_log_term >= self.log.last_term
        )
""",
}
STALE_VOTE_FAILING_TEST = (
    "tests/test_election.py::test_a_node_refuses_a_candidate_whose_log_is_behind"
)

_RAFT_KV_PROTECTED = ("tests/*.py", "conftest.py", "pyproject.toml")
_RAFT_KV_TESTS: ToolCall = ("run", {"command": "python -m pytest -q"})


def _no_setup(root: Path) -> None:
    """The task starts from the pristine workspace."""


def _apply_demo_fix(root: Path) -> None:
    """Fix the planted bug, so that only the task at hand decides the check."""
    _replace_once(root, DEMO_FIX, "DEMO_FIX")


def _plant_stale_vote_bug(root: Path) -> None:
    _apply_demo_fix(root)
    _replace_once(root, STALE_VOTE_BUG, "STALE_VOTE_BUG")


def _check_raft_kv_fixed(root: Path) -> CheckResult:
    """The whole pristine suite passes, and the tests are the pristine ones."""
    pristine = sample_path("raft_kv")
    # The tests and the pytest configuration must be exactly the pristine ones:
    # deleting or weakening the failing test is not a fix.
    problems = _changed_files(root, "raft_kv", _RAFT_KV_PROTECTED)
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
    return _check_hidden_tests(root, HIDDEN_CAS_TEST_PATH, HIDDEN_CAS_TEST)


def _check_hidden_tests(root: Path, path: str, source: str) -> CheckResult:
    """The pristine suite and the hidden tests pass, run in a scratch copy of ``root``."""
    with tempfile.TemporaryDirectory(prefix="grinta-check-") as scratch:
        trial = _copy_for_trial(root, scratch)
        (trial / path).write_text(source, encoding="utf-8")
        required = _workspace_test_ids(sample_path("raft_kv")) | _test_ids(source, path)
        return _check_suite(trial, required)


HIDDEN_LEASE_TEST_PATH = "tests/test_hidden_lease.py"
HIDDEN_LEASE_TEST = '''\
"""Acceptance tests for lease reads, added by the task check (not shipped)."""

from raft_kv.cluster import Cluster, KVClient


def test_a_leader_holds_a_lease_in_a_healthy_cluster():
    cluster = Cluster(seed=31)
    leader = cluster.wait_for_leader()
    cluster.run_for(300)
    assert leader.has_lease()
    assert not any(node.has_lease() for node in cluster.nodes.values() if node is not leader)


def test_a_single_node_leads_with_a_lease():
    cluster = Cluster(["solo"], seed=32)
    assert cluster.wait_for_leader().has_lease()


def test_a_new_leader_has_no_lease_before_its_followers_answer():
    cluster = Cluster(seed=33)
    leader = cluster.wait_for_leader()
    assert not leader.has_lease()


def test_an_isolated_leader_loses_its_lease():
    cluster = Cluster(seed=34)
    old = cluster.wait_for_leader()
    cluster.run_for(300)
    assert old.has_lease()
    cluster.isolate(old.id)
    cluster.run_for(400)
    assert old.is_leader  # it has heard of no newer term, so it still believes it leads
    assert not old.has_lease()
    new = cluster.leader()
    assert new is not None and new is not old
    cluster.run_for(300)
    assert new.has_lease()


def test_a_lease_read_does_not_touch_the_log():
    cluster = Cluster(seed=35)
    client = KVClient(cluster)
    client.set("color", "blue")
    cluster.run_for(300)
    lengths = {node_id: node.log.last_index for node_id, node in cluster.nodes.items()}
    assert client.read("color") == "blue"
    assert client.read("shape") is None
    assert {node_id: node.log.last_index for node_id, node in cluster.nodes.items()} == lengths


def test_a_read_without_a_lease_goes_through_the_log():
    cluster = Cluster(seed=36)
    leader = cluster.wait_for_leader()
    last_index = leader.log.last_index
    assert KVClient(cluster).read("color") is None
    assert leader.log.last_index == last_index + 1
'''


def _check_lease_read(root: Path) -> CheckResult:
    return _check_hidden_tests(root, HIDDEN_LEASE_TEST_PATH, HIDDEN_LEASE_TEST)


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
        return CheckResult(False, f"Entry is still used at {_some(leftovers)}")
    code = "from raft_kv import LogEntry\nfrom raft_kv.log import LogEntry"
    error = _script_error(root, [sys.executable, "-c", code])
    if error:
        return CheckResult(False, f"LogEntry is not importable:\n{error}")
    return _check_suite(root, _workspace_test_ids(sample_path("raft_kv")))


def _some(items: list[str], shown: int = 10) -> str:
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return ", ".join(items[:shown]) + more


def _script_error(root: Path, command: list[str]) -> str | None:
    """Run ``command`` with ``root`` as the working directory; its error output if it fails."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        completed = subprocess.run(
            command, cwd=root, env=env, capture_output=True, text=True, timeout=CHECK_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return f"{command[0]} did not finish within {CHECK_TIMEOUT_S:g}s"
    return completed.stderr[-2000:] if completed.returncode != 0 else None


def _lines_naming(path: Path, name: str) -> list[int]:
    """Lines where ``name`` appears as an identifier (not inside strings or comments)."""
    if not path.is_file():
        return []
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return [
        token.start[0] for token in tokens if token.type == tokenize.NAME and token.string == name
    ]


# Reference solutions. Edits name their target the way a model would: by a
# unique string, or by a symbol.

_FIX_FAILING_TEST_SOLUTION: tuple[ToolCall, ...] = (
    ("search", {"query": "prev_log_term", "path": "raft_kv"}),
    ("replace_string", dict(DEMO_FIX)),
    _RAFT_KV_TESTS,
    (
        "finish",
        {"summary": "A follower now rejects entries unless the terms at prev_log_index match."},
    ),
)

_COMPARE_AND_SWAP_SOLUTION: tuple[ToolCall, ...] = (
    ("read", {"symbol": "KVStateMachine.apply"}),
    (
        "multiedit",
        {
            "edits": [
                {
                    "path": "raft_kv/state_machine.py",
                    "old_string": "    delete KEY        remove KEY\n",
                    "new_string": "    delete KEY        remove KEY\n"
                    "    cas KEY OLD NEW   set KEY to NEW if it holds OLD\n",
                },
                {
                    "path": "raft_kv/state_machine.py",
                    "old_string": '{"get": 1, "set": 2, "delete": 1}',
                    "new_string": '{"get": 1, "set": 2, "delete": 1, "cas": 3}',
                },
            ]
        },
    ),
    (
        "edit_symbols",
        {
            "edits": [
                {
                    "symbol": "KVStateMachine.apply",
                    "action": "replace",
                    "new_source": '''\
def apply(self, command: str) -> str | None:
    """Execute ``command`` and return the value its key held before."""
    operation, args = parse_command(command)
    key = args[0]
    previous = self.data.get(key)
    if operation == "set":
        self.data[key] = args[1]
    elif operation == "delete":
        self.data.pop(key, None)
    elif operation == "cas" and previous == args[1]:
        self.data[key] = args[2]
    return previous
''',
                },
                {
                    "symbol": "KVClient.delete",
                    "action": "insert_after",
                    "new_source": '''\
def cas(self, key: str, expected: str, new: str) -> bool:
    """Set ``key`` to ``new`` if it holds ``expected``; return whether it did."""
    return self.execute(f"cas {key} {expected} {new}") == expected
''',
                },
            ]
        },
    ),
    _RAFT_KV_TESTS,
    ("finish", {"summary": "Added the cas command and KVClient.cas."}),
)

_RAFT_KV_FILES_NAMING_ENTRY = (
    "raft_kv/__init__.py",
    "raft_kv/cluster.py",
    "raft_kv/log.py",
    "raft_kv/messages.py",
    "raft_kv/node.py",
    "tests/test_election.py",
    "tests/test_log.py",
    "tests/test_replication.py",
)

# "Entry" occurs in these files only as the whole word (never inside
# AppendEntries or entries), so a plain replace_all is the rename.
_RENAME_ENTRY_SOLUTION: tuple[ToolCall, ...] = (
    ("search", {"query": r"\bEntry\b", "regex": True}),
    (
        "multiedit",
        {
            "edits": [
                {"path": path, "old_string": "Entry", "new_string": "LogEntry", "replace_all": True}
                for path in _RAFT_KV_FILES_NAMING_ENTRY
            ]
        },
    ),
    _RAFT_KV_TESTS,
    ("finish", {"summary": "Renamed Entry to LogEntry in the package and the tests."}),
)

_LEASE_READ_SOLUTION: tuple[ToolCall, ...] = (
    ("read", {"path": "raft_kv/node.py", "outline": True}),
    (
        "multiedit",
        {
            "edits": [
                {
                    "path": "raft_kv/messages.py",
                    "old_string": "    leader_commit: int\n",
                    "new_string": "    leader_commit: int\n"
                    "    # The leader's clock when it sent this; the reply echoes it for leases.\n"
                    "    sent_at: float = 0.0\n",
                },
                {
                    "path": "raft_kv/messages.py",
                    "old_string": "    conflict_index: int = 0\n",
                    "new_string": "    conflict_index: int = 0\n"
                    "    request_sent_at: float = 0.0  # the sent_at of the request answered\n",
                },
                {
                    "path": "raft_kv/node.py",
                    "old_string": "            leader_commit=self.commit_index,\n",
                    "new_string": "            leader_commit=self.commit_index,\n"
                    "            sent_at=self._clock(),\n",
                },
                {
                    "path": "raft_kv/node.py",
                    "old_string": "            conflict_index=conflict_index,\n",
                    "new_string": "            conflict_index=conflict_index,\n"
                    "            request_sent_at=request.sent_at,\n",
                },
                {
                    "path": "raft_kv/node.py",
                    "old_string": "        self.match_index: dict[str, int] = {}\n",
                    "new_string": "        self.match_index: dict[str, int] = {}\n"
                    "        # When the newest request each peer answered in our term was sent.\n"
                    "        self._acked_at: dict[str, float] = {}\n",
                },
                {
                    "path": "raft_kv/node.py",
                    "old_string": "        self.match_index = {peer: 0 for peer in self.peers}\n",
                    "new_string": "        self.match_index = {peer: 0 for peer in self.peers}\n"
                    "        self._acked_at = {}\n",
                },
                {
                    "path": "raft_kv/node.py",
                    "old_string": "        peer = response.sender\n",
                    "new_string": "        peer = response.sender\n"
                    "        # Any reply in our term, even a log mismatch, acknowledges our leadership.\n"
                    "        acked_at = max(self._acked_at.get(peer, 0.0), response.request_sent_at)\n"
                    "        self._acked_at[peer] = acked_at\n",
                },
            ]
        },
    ),
    (
        "edit_symbols",
        {
            "edits": [
                {
                    "symbol": "RaftNode.is_leader",
                    "action": "insert_after",
                    "new_source": '''\
def has_lease(self) -> bool:
    """Whether this leader may answer reads from its state machine, without the log.

    It must have applied an entry of its own term (so it holds every committed
    entry), and a majority, itself included, must have answered requests it
    sent less than the shortest election timeout ago: until then no follower
    that answered can start an election, so no newer leader exists.
    """
    if self.role is not Role.LEADER:
        return False
    if self.log.term_at(self.last_applied) != self.current_term:
        return False
    since = self._clock() - self._election_timeout_ms[0]
    fresh = sum(1 for peer in self.peers if self._acked_at.get(peer, since) > since)
    return 1 + fresh >= self.quorum
''',
                },
                {
                    "symbol": "KVClient.get",
                    "action": "insert_after",
                    "new_source": '''\
def read(self, key: str) -> str | None:
    """Like ``get``, but a leader holding a lease answers at once, without the log."""
    leader = self.cluster.leader()
    if leader is not None and leader.has_lease():
        return leader.state_machine.apply(f"get {key}")
    return self.get(key)
''',
                },
            ]
        },
    ),
    _RAFT_KV_TESTS,
    ("finish", {"summary": "Added RaftNode.has_lease and KVClient.read (lease reads)."}),
)

_STALE_VOTE_SOLUTION: tuple[ToolCall, ...] = (
    ("read", {"symbol": "RaftNode.handle_request_vote"}),
    (
        "replace_string",
        {
            "path": STALE_VOTE_BUG["path"],
            "old_string": STALE_VOTE_BUG["new_string"],
            "new_string": STALE_VOTE_BUG["old_string"],
        },
    ),
    _RAFT_KV_TESTS,
    ("finish", {"summary": "A vote now compares the last terms, then the log lengths (§5.4.1)."}),
)


# -- ledger_js ---------------------------------------------------------------

# The bug in the pristine ledger_js: Money.parse takes the sign from the whole
# units, and parseInt("-0") is -0, which is not < 0; so "-0.50" parses as
# +50 cents. Amounts of a unit or more keep their sign, which hides it.
LEDGER_FIX: dict[str, str] = {
    "path": "src/money.js",
    "old_string": "(units < 0 ? -cents : cents)",
    "new_string": "(whole.startsWith('-') ? -cents : cents)",
}
LEDGER_FAILING_TEST = "parsing amounts > keeps the sign of negative amounts under one unit"

_LEDGER_PROTECTED = ("test/**/*.js", "package.json")
_LEDGER_TESTS: ToolCall = ("run", {"command": "node --test"})


def _apply_ledger_fix(root: Path) -> None:
    """Fix the planted bug, so that only the task at hand decides the check."""
    _replace_once(root, LEDGER_FIX, "LEDGER_FIX")


@functools.cache
def pristine_node_tests(workspace: str) -> frozenset[str]:
    """The ids of every test in the pristine ``workspace``, from a run of a scratch copy.

    Node has no collect-only mode, so the suite runs once per process. The
    planted bug's test is among them: it fails, but it runs.
    """
    with tempfile.TemporaryDirectory(prefix="grinta-pristine-") as scratch:
        run = run_node_suite(copy_workspace(workspace, Path(scratch) / "workspace"))
    if run.exit_code is None or not run.outcomes:
        raise RuntimeError(f"the pristine {workspace} suite did not run:\n{run.tail()}")
    return frozenset(run.outcomes)


def _check_ledger_fixed(root: Path) -> CheckResult:
    """The whole pristine suite passes, and the tests and package.json are the pristine ones."""
    problems = _changed_files(root, "ledger_js", _LEDGER_PROTECTED)
    if problems:
        return CheckResult(False, "; ".join(problems))
    return _check_node_suite(root, pristine_node_tests("ledger_js"))


HIDDEN_REVERSE_TEST_PATH = "test/hidden_reverse.test.js"
HIDDEN_REVERSE_TEST = """\
// Acceptance tests for Ledger.reverse, added by the task check (not shipped).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import * as errors from '../src/errors.js';
import { JournalEntry, Ledger, LedgerError, UnknownEntryError } from '../src/index.js';

function ledgerWithASale() {
  const ledger = new Ledger();
  ledger.openAccount({ code: '1000', name: 'Cash', type: 'asset' });
  ledger.openAccount({ code: '2100', name: 'Sales tax payable', type: 'liability' });
  ledger.openAccount({ code: '4000', name: 'Sales', type: 'income' });
  ledger.post(
    new JournalEntry({ date: '2024-06-01', description: 'Sale' })
      .debit('1000', '108.00', 'till')
      .credit('4000', '100.00')
      .credit('2100', '8.00', 'tax'),
  );
  return ledger;
}

describe('reversing entries', () => {
  it('posts the same lines with debits and credits swapped', () => {
    const ledger = ledgerWithASale();
    const reversal = ledger.reverse(1, '2024-06-03');
    assert.equal(reversal.id, 2);
    assert.equal(ledger.entry(2), reversal);
    assert.equal(reversal.date, '2024-06-03');
    assert.equal(reversal.description, 'Reversal of #1: Sale');
    assert.deepEqual(
      reversal.lines.map((line) => [line.account, line.side, line.amount.format(), line.memo]),
      [
        ['1000', 'credit', '108.00', 'till'],
        ['4000', 'debit', '100.00', ''],
        ['2100', 'debit', '8.00', 'tax'],
      ],
    );
  });

  it('brings every balance back to zero from its date', () => {
    const ledger = ledgerWithASale();
    ledger.reverse(1, '2024-06-03');
    for (const account of ledger.accounts) {
      assert.ok(ledger.balance(account.code).isZero(), account.code);
    }
    assert.equal(ledger.balance('1000', { asOf: '2024-06-02' }).format(), '108.00');
    assert.ok(ledger.trialBalance().isBalanced());
  });

  it('throws UnknownEntryError for an id that was never posted', () => {
    const ledger = ledgerWithASale();
    assert.equal(errors.UnknownEntryError, UnknownEntryError);
    assert.throws(
      () => ledger.reverse(7, '2024-06-03'),
      (error) => error instanceof UnknownEntryError && error instanceof LedgerError,
    );
    assert.equal(ledger.entries.length, 1);
  });

  it('reverses an entry only once', () => {
    const ledger = ledgerWithASale();
    ledger.reverse(1, '2024-06-03');
    assert.throws(() => ledger.reverse(1, '2024-06-04'), LedgerError);
    assert.equal(ledger.entries.length, 2);
  });

  it('does not reverse a reversal', () => {
    const ledger = ledgerWithASale();
    const reversal = ledger.reverse(1, '2024-06-03');
    assert.throws(() => ledger.reverse(reversal.id, '2024-06-04'), LedgerError);
    assert.equal(ledger.entries.length, 2);
  });

  it('refuses a date that is not a day, posting nothing', () => {
    const ledger = ledgerWithASale();
    assert.throws(() => ledger.reverse(1, '2024-06-31'), LedgerError);
    assert.equal(ledger.entries.length, 1);
    assert.equal(ledger.reverse(1, '2024-06-30').id, 2);
  });
});
"""
HIDDEN_REVERSE_TESTS = tuple(
    f"reversing entries > {name}"
    for name in (
        "posts the same lines with debits and credits swapped",
        "brings every balance back to zero from its date",
        "throws UnknownEntryError for an id that was never posted",
        "reverses an entry only once",
        "does not reverse a reversal",
        "refuses a date that is not a day, posting nothing",
    )
)


def _check_reverse_entry(root: Path) -> CheckResult:
    with tempfile.TemporaryDirectory(prefix="grinta-check-") as scratch:
        trial = _copy_for_trial(root, scratch)
        (trial / HIDDEN_REVERSE_TEST_PATH).write_text(HIDDEN_REVERSE_TEST, encoding="utf-8")
        required = pristine_node_tests("ledger_js") | set(HIDDEN_REVERSE_TESTS)
        return _check_node_suite(trial, required)


# Imports the moved module and the public API, and fails unless both export
# the same Transaction class.
_TRANSACTION_IMPORT = """\
const moved = await import('./src/transaction.js');
const api = await import('./src/index.js');
if (typeof moved.Transaction !== 'function') {
  throw new Error('src/transaction.js does not export a Transaction class');
}
if (api.Transaction !== moved.Transaction) {
  throw new Error('src/index.js does not export the Transaction of src/transaction.js');
}
"""


def _check_rename_journal_entry(root: Path) -> CheckResult:
    if (root / "src" / "journal.js").exists():
        return CheckResult(False, "src/journal.js still exists; it should have moved")
    if not (root / "src" / "transaction.js").is_file():
        return CheckResult(False, "src/transaction.js does not exist")
    sources = sorted([*root.glob("src/**/*.js"), *root.glob("test/**/*.js")])
    leftovers = []
    for path in sources:
        relative = path.relative_to(root).as_posix()
        source = path.read_text(encoding="utf-8")
        leftovers += [f"{relative}:{line}" for line in _js_lines_naming(source, "JournalEntry")]
    if leftovers:
        return CheckResult(False, f"JournalEntry is still used at {_some(leftovers)}")
    node = shutil.which("node") or "node"
    error = _script_error(root, [node, "--input-type=module", "-e", _TRANSACTION_IMPORT])
    if error:
        return CheckResult(False, f"Transaction is not importable:\n{error}")
    return _check_node_suite(root, pristine_node_tests("ledger_js"))


# Tokens of JavaScript that can hide an identifier, or end a `${...}` of a
# template literal. Regular-expression literals are not told apart from
# division; read as code, they can only add identifiers, never hide one.
_JS_CODE_TOKEN = re.compile(
    r"""
      (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
    | (?P<string>'(?:\\.|[^'\\\n])*'?|"(?:\\.|[^"\\\n])*"?)
    | (?P<tick>`)
    | (?P<open>\{)
    | (?P<close>\})
    | (?P<name>[A-Za-z_$][\w$]*)
    | (?P<other>.)
    """,
    re.S | re.X,
)
_JS_TEMPLATE_TOKEN = re.compile(
    r"(?P<escape>\\.)|(?P<open>\$\{)|(?P<tick>`)|(?P<other>[^\\$`]+|.)", re.S
)


def _js_lines_naming(source: str, name: str) -> list[int]:
    """Lines where ``name`` is an identifier of JavaScript ``source``.

    Comments, strings and the text of template literals do not count; the
    code inside a template's ``${...}`` does.
    """
    lines = []
    in_template = [False]  # one level per template, and per `${...}` inside one
    braces = [0]  # open braces at each code level, to find where a `${...}` ends
    pos = 0
    while pos < len(source):
        pattern = _JS_TEMPLATE_TOKEN if in_template[-1] else _JS_CODE_TOKEN
        match = pattern.match(source, pos)
        assert match is not None  # both patterns end in a catch-all
        kind = match.lastgroup
        if in_template[-1]:
            if kind == "tick":
                in_template.pop()
            elif kind == "open":
                in_template.append(False)
                braces.append(0)
        elif kind == "name" and match.group() == name:
            lines.append(source.count("\n", 0, pos) + 1)
        elif kind == "tick":
            in_template.append(True)
        elif kind == "open":
            braces[-1] += 1
        elif kind == "close" and braces[-1] > 0:
            braces[-1] -= 1
        elif kind == "close" and len(in_template) > 1:
            in_template.pop()  # the end of a `${...}`: back into its template
            braces.pop()
        pos = match.end()
    return lines


_LEDGER_FIX_SOLUTION: tuple[ToolCall, ...] = (
    ("run", {"command": "node --test"}),
    ("read", {"symbol": "Money.parse"}),
    ("replace_string", dict(LEDGER_FIX)),
    _LEDGER_TESTS,
    ("finish", {"summary": "Money.parse takes the sign from the text, so -0.50 is -50 cents."}),
)

_REVERSE_ENTRY_SOLUTION: tuple[ToolCall, ...] = (
    ("read", {"symbol": "Ledger.post"}),
    (
        "create",
        {
            "path": "src/errors.js",
            "into": "*",
            "content": """\
/** An entry number that the ledger has not posted. */
export class UnknownEntryError extends LedgerError {
  constructor(id) {
    super(`no posted entry #${id}`);
    this.id = id;
  }
}
""",
        },
    ),
    (
        "multiedit",
        {
            "edits": [
                {
                    "path": "src/index.js",
                    "old_string": "  UnknownAccountError,\n",
                    "new_string": "  UnknownAccountError,\n  UnknownEntryError,\n",
                },
                {
                    "path": "src/ledger.js",
                    "old_string": "import { LedgerError, UnknownAccountError } from './errors.js';\n",
                    "new_string": "import { LedgerError, UnknownAccountError, UnknownEntryError } "
                    "from './errors.js';\nimport { JournalEntry } from './journal.js';\n",
                },
                {
                    "path": "src/ledger.js",
                    "old_string": "  #entries = [];\n",
                    "new_string": "  #entries = [];\n  #reversals = new Map(); // entry id -> id of its reversal\n",
                },
            ]
        },
    ),
    (
        "edit_symbols",
        {
            "edits": [
                {
                    "symbol": "Ledger.postAll",
                    "action": "insert_after",
                    "new_source": """\
/**
 * Post an entry dated `date` that undoes entry `id`: the same lines with
 * debits and credits swapped. An entry is reversed at most once, and a
 * reversal is never reversed itself.
 */
reverse(id, date) {
  const original = this.entry(id);
  if (original === undefined) {
    throw new UnknownEntryError(id);
  }
  if (this.#reversals.has(id)) {
    throw new LedgerError(`entry #${id} is already reversed by #${this.#reversals.get(id)}`);
  }
  if ([...this.#reversals.values()].includes(id)) {
    throw new LedgerError(`entry #${id} is a reversal and cannot be reversed`);
  }
  const reversal = new JournalEntry({
    date,
    description: `Reversal of #${id}: ${original.description}`,
    lines: original.lines.map((line) => ({
      ...line,
      side: line.side === 'debit' ? 'credit' : 'debit',
    })),
  });
  this.post(reversal);
  this.#reversals.set(id, reversal.id);
  return reversal;
}
""",
                }
            ]
        },
    ),
    _LEDGER_TESTS,
    ("finish", {"summary": "Added Ledger.reverse and UnknownEntryError."}),
)

_LEDGER_FILES_NAMING_JOURNAL_ENTRY = (
    "test/journal.test.js",
    "test/ledger.test.js",
    "test/report.test.js",
)

_RENAME_JOURNAL_ENTRY_SOLUTION: tuple[ToolCall, ...] = (
    ("search", {"query": "JournalEntry|journal\\.js", "regex": True}),
    ("run", {"command": "mv src/journal.js src/transaction.js"}),
    (
        "multiedit",
        {
            "edits": [
                {
                    "path": "src/transaction.js",
                    "old_string": " * Journal entries: a dated description",
                    "new_string": " * Transactions: a dated description",
                },
                {
                    "path": "src/transaction.js",
                    "old_string": "export class JournalEntry {",
                    "new_string": "export class Transaction {",
                },
                {
                    "path": "src/csv.js",
                    "old_string": "import { JournalEntry } from './journal.js';",
                    "new_string": "import { Transaction } from './transaction.js';",
                },
                {
                    "path": "src/csv.js",
                    "old_string": "new JournalEntry(",
                    "new_string": "new Transaction(",
                },
                {
                    "path": "src/index.js",
                    "old_string": " * - `journal.js`: `JournalEntry`, balanced",
                    "new_string": " * - `transaction.js`: `Transaction`, balanced",
                },
                {
                    "path": "src/index.js",
                    "old_string": "export { JournalEntry, SIDES, parseDate } from './journal.js';",
                    "new_string": "export { SIDES, Transaction, parseDate } from './transaction.js';",
                },
                *(
                    {
                        "path": path,
                        "old_string": "JournalEntry",
                        "new_string": "Transaction",
                        "replace_all": True,
                    }
                    for path in _LEDGER_FILES_NAMING_JOURNAL_ENTRY
                ),
                {
                    "path": "README.md",
                    "old_string": "`src/journal.js`",
                    "new_string": "`src/transaction.js`",
                },
                {
                    "path": "README.md",
                    "old_string": "JournalEntry",
                    "new_string": "Transaction",
                    "replace_all": True,
                },
            ]
        },
    ),
    _LEDGER_TESTS,
    ("finish", {"summary": "JournalEntry is now Transaction, in src/transaction.js."}),
)


# -- the tasks ------------------------------------------------------------------

TASKS: dict[str, Task] = {
    task.id: task
    for task in [
        Task(
            id="raft_kv/fix-failing-test",
            workspace="raft_kv",
            kind="bug",
            prompt="fix the failing test in raft_kv",
            setup=_no_setup,
            check=_check_raft_kv_fixed,
            solution=_FIX_FAILING_TEST_SOLUTION,
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
            solution=_COMPARE_AND_SWAP_SOLUTION,
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
            solution=_RENAME_ENTRY_SOLUTION,
        ),
        Task(
            id="raft_kv/lease-read",
            workspace="raft_kv",
            kind="feature",
            prompt=(
                "add leader lease reads to raft_kv. RaftNode.has_lease() returns True when "
                "the node is the leader, has applied an entry of its current term, and a "
                "majority of the cluster (itself included) has answered AppendEntries "
                "requests of its current term that it sent less than its shortest election "
                "timeout (election_timeout_ms[0]) ago; time each answer from when the "
                "request was sent, not from when the reply arrived. KVClient.read(key) "
                "returns the key's value straight from the state machine of the cluster's "
                "leader when that leader holds a lease, without appending anything to any "
                "log, and otherwise falls back to KVClient.get"
            ),
            setup=_apply_demo_fix,
            check=_check_lease_read,
            solution=_LEASE_READ_SOLUTION,
        ),
        Task(
            id="raft_kv/stale-vote",
            workspace="raft_kv",
            kind="bug",
            prompt=(
                "raft_kv: a node sometimes votes for a candidate whose log is shorter than "
                "its own when both logs end in the same term, so a leader can be elected "
                "without every committed entry. Find the bug and fix it; the tests must "
                "stay as they are"
            ),
            setup=_plant_stale_vote_bug,
            check=_check_raft_kv_fixed,
            solution=_STALE_VOTE_SOLUTION,
        ),
        Task(
            id="ledger_js/fix-failing-test",
            workspace="ledger_js",
            kind="bug",
            prompt="fix the failing test in ledger_js",
            setup=_no_setup,
            check=_check_ledger_fixed,
            solution=_LEDGER_FIX_SOLUTION,
        ),
        Task(
            id="ledger_js/reverse-entry",
            workspace="ledger_js",
            kind="feature",
            prompt=(
                "add reversing entries to ledger_js: Ledger.reverse(id, date) posts and "
                "returns a new entry dated `date` that undoes the posted entry number `id`: "
                "the same lines (accounts, amounts and memos, in the same order) with debits "
                "and credits swapped, and the description `Reversal of #<id>: <description "
                "of the original>`. An id that was never posted throws UnknownEntryError, a "
                "new LedgerError subclass exported from src/errors.js and src/index.js; "
                "reversing an entry a second time, or reversing a reversal, throws "
                "LedgerError. Nothing is posted when it throws"
            ),
            setup=_apply_ledger_fix,
            check=_check_reverse_entry,
            solution=_REVERSE_ENTRY_SOLUTION,
        ),
        Task(
            id="ledger_js/rename-journal-entry",
            workspace="ledger_js",
            kind="refactor",
            prompt=(
                "in ledger_js, rename the JournalEntry class to Transaction and move "
                "src/journal.js, with everything in it, to src/transaction.js; update every "
                "import and use, tests included, and keep no alias, re-export or file under "
                "the old name"
            ),
            setup=_apply_ledger_fix,
            check=_check_rename_journal_entry,
            solution=_RENAME_JOURNAL_ENTRY_SOLUTION,
        ),
    ]
}


def get_task(task_id: str) -> Task:
    """The task with id ``task_id``; raises KeyError naming the known ids otherwise."""
    try:
        return TASKS[task_id]
    except KeyError:
        raise KeyError(f"unknown task {task_id!r}; known: {', '.join(sorted(TASKS))}") from None
