"""A folder of built tasks: what is in it, a task's starting files, and its check.

``grinta tasks build`` (``taskbuild``) writes the folder; ``grinta eval --tasks
DIR`` reads it through this module. Layout::

    DIR/index.json                 what was built from which package (``INDEX``)
    DIR/packages/<name>-<version>/ a package's source distribution, unpacked, untouched
    DIR/tasks/<name>/<nnn>.json    one task each (``BuiltTask``), id ``<name>/<nnn>``

A task's starting files are its package's folder with one bug in
(``BuiltTask.prepare``); the bug is a ``mutate.Mutation``, and reverting it is
the reference fix. Its check runs the package's own test suite
(``TestCommand``) and passes when the suite passes, every test the bug broke
ran and passed, and no test file was changed (an agent does not get to fix a
bug by editing the tests). ``BuiltTask`` has the interface of the bundled
``samples.core.Task`` that ``runner.run_one`` uses (``id``, ``workspace``,
``prompt``, ``prepare``, ``check``, ``solution``).

A folder that is not a task folder, a task id it does not hold, or a task file
that is cut short or names a path outside its package, raises
(``TaskDirError``): that is the user's mistake, said in one line.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from xml.etree import ElementTree

from grinta_jupyter.experiment.errors import ExperimentUsageError
from grinta_jupyter.experiment.mutate import Mutation
from grinta_jupyter.samples.contained import run_contained
from grinta_jupyter.samples.core import CheckResult, ToolCall

INDEX = "index.json"
FORMAT = 1
# Output kept from one test run: the end, where pytest puts its summary.
MAX_OUTPUT_CHARS = 64_000
_IGNORED = ("__pycache__", "*.pyc", ".pytest_cache", ".grinta")
# Files pytest reads before any test runs: a new one changes what the tests do (a conftest.py
# hook can report every failure as a pass; an ini file next to the tests becomes their config).
TEST_CONFIG_NAMES = (
    "conftest.py",
    "pytest.ini",
    ".pytest.ini",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
)
LINKS_REFUSED = "its package has links that lead out of it, to a folder, or nowhere"
MAX_TEST_TIMEOUT = 86_400.0  # seconds: a task file asking for more (or NaN) is refused


class TaskDirError(ExperimentUsageError):
    """A folder that is not a task folder, or an id it does not hold (a user's mistake)."""


@dataclass(frozen=True)
class TestCommand:
    """How a task's package is tested, and what its check demands of the run."""

    __test__ = False  # not a pytest test class, whatever its name

    command: tuple[str, ...]  # argv, run in the workspace root; "python" is this interpreter
    timeout: float  # seconds
    # Test functions the bug broke (node ids without parameters, which may be numbered in an
    # order that changes between runs): each must run, pass, and fail nowhere.
    required: tuple[str, ...] = ()
    protected: dict[str, str] = field(default_factory=dict)  # test file -> sha256

    def shown(self) -> str:
        """The command as a person types it in a shell (how the prompt and the solution give it).

        Plugin autoloading is off, as in the check: the package's tests need
        only pytest, and the plugins of the agent's own environment cost
        seconds per run.
        """
        return "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 " + shlex.join(self.command)


@dataclass(frozen=True)
class Failure:
    test: str  # pytest node id
    message: str  # the assertion or exception, as pytest reported it


@dataclass(frozen=True)
class TestRun:
    """One run of a test command: exit code (None on timeout), outcomes by node id, failures."""

    __test__ = False

    exit_code: int | None
    output: str
    outcomes: dict[str, str]
    failures: tuple[Failure, ...]
    seconds: float

    @property
    def passed(self) -> bool:
        return self.exit_code == 0 and not self.failures and bool(self.outcomes)


@dataclass(frozen=True)
class BuiltTask:
    """A bug injected into a real package, the user's report of it, and how to check a fix."""

    id: str  # "<package>/<nnn>"
    package: str
    version: str
    workspace: str  # the folder under packages/, and the workspace's name in a run
    prompt: str
    tests: TestCommand
    bug: Mutation
    source: Path  # the package's pristine folder
    kind: str = "bug"
    # Intent calls that fix the bug: the reference fix, then the tests, then finish.
    solution: tuple[ToolCall, ...] = field(default=(), hash=False)

    def prepare(self, dest: Path) -> Path:
        """Copy the package to ``dest`` (absent or empty), put the bug in, return ``dest``.

        A link to a file of the package is copied as that file; a link that leads out of
        the package, to a folder, or nowhere is refused (``TaskDirError``): followed, it
        would copy any file or folder of this machine (a key, a home folder) into the
        workspace the model reads, or copy a folder into itself without end.
        """
        if dest.exists() and any(dest.iterdir()):
            raise FileExistsError(f"{dest} is not empty")
        refused = refused_links(self.source)
        if refused:
            raise TaskDirError(f"task {self.id!r}: {LINKS_REFUSED}: {', '.join(refused)}")
        shutil.copytree(
            self.source, dest, ignore=shutil.ignore_patterns(*_IGNORED), dirs_exist_ok=True
        )
        target = dest / self.bug.path
        target.write_text(self.bug.apply(target.read_text(encoding="utf-8")), encoding="utf-8")
        return dest

    def check(self, root: Path) -> CheckResult:
        """Pass when the suite passes, the broken tests ran and pass, and no test file changed."""
        changed = changed_files(root, self.tests.protected) + added_test_config(root, self.source)
        if changed:
            return CheckResult(False, "test files changed: " + ", ".join(changed[:10]))
        run = run_tests(root, self.tests)
        if run.exit_code is None:
            return CheckResult(False, run.output)
        problems = []
        if run.exit_code != 0:
            problems.append(f"pytest exited with {run.exit_code}")
        if run.failures:
            names = [f.test for f in run.failures]
            more = f" and {len(names) - 10} more" if len(names) > 10 else ""
            problems.append("failing: " + ", ".join(names[:10]) + more)
        seen: dict[str, set[str]] = {}
        for test, outcome in run.outcomes.items():
            seen.setdefault(unparametrized(test), set()).add(outcome)
        not_passed = [
            t
            for t in self.tests.required
            if "passed" not in seen.get(t, set()) or seen[t] & {"failed", "error"}
        ]
        if not_passed:
            problems.append("did not run and pass: " + ", ".join(not_passed[:10]))
        if problems:
            tail = "\n".join(run.output.rstrip().splitlines()[-20:])
            return CheckResult(False, "; ".join(problems) + "\n" + tail)
        return CheckResult(True, f"{len(run.outcomes)} tests passed")

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "id": self.id,
            "kind": self.kind,
            "package": self.package,
            "version": self.version,
            "workspace": self.workspace,
            "prompt": self.prompt,
            "tests": {**asdict(self.tests), "command": list(self.tests.command)},
            "bug": asdict(self.bug),
            "solution": [[name, args] for name, args in self.solution],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], tasks_dir: Path) -> BuiltTask:
        if data.get("format") != FORMAT:
            raise TaskDirError(
                f"task {data.get('id')!r} has format {data.get('format')!r}, not {FORMAT}"
            )
        tests, workspace, bug = data["tests"], data["workspace"], Mutation(**data["bug"])
        if not _stays_inside(workspace) or "/" in workspace:
            raise TaskDirError(f"task {data.get('id')!r}: workspace {workspace!r} is not a name")
        if not _stays_inside(bug.path):
            raise TaskDirError(f"task {data.get('id')!r}: bug path {bug.path!r} leaves the package")
        timeout = float(tests["timeout"])
        if not (0 < timeout <= MAX_TEST_TIMEOUT):  # NaN or Infinity: a check that never ends
            raise TaskDirError(
                f"task {data.get('id')!r}: test timeout {tests['timeout']!r} is not a number of "
                f"seconds from 0 to {MAX_TEST_TIMEOUT:g}"
            )
        return cls(
            id=data["id"],
            package=data["package"],
            version=data["version"],
            workspace=workspace,
            prompt=data["prompt"],
            tests=TestCommand(
                command=tuple(tests["command"]),
                timeout=timeout,
                required=tuple(tests["required"]),
                protected=dict(tests["protected"]),
            ),
            bug=bug,
            source=tasks_dir / "packages" / workspace,
            kind=data.get("kind", "bug"),
            solution=tuple((name, args) for name, args in data["solution"]),
        )


def _stays_inside(path: str) -> bool:
    """A relative path that names something inside its folder: "a/b.py", not "../b.py" or "/b"."""
    parts = PurePosixPath(path).parts
    return bool(parts) and not path.startswith("/") and ".." not in parts and "\\" not in path


def refused_links(folder: Path, shown: int = 3) -> list[str]:
    """Up to ``shown`` links inside ``folder`` (relative paths) that lead out of it, to a
    folder, or nowhere: what a task's package may not hold (``LINKS_REFUSED``). A link to a
    file of the package is fine: it is copied (and shipped to Ray) as that file."""
    inside = folder.resolve()
    found: list[str] = []
    for current, dirs, files in os.walk(folder):  # links to folders are listed, not entered
        for name in sorted(dirs + files):
            path = Path(current, name)
            if path.is_symlink() and (
                not path.is_file() or not path.resolve().is_relative_to(inside)
            ):
                found.append(path.relative_to(folder).as_posix())
                if len(found) == shown:
                    return found
    return found


def is_task_dir(path: str | os.PathLike[str]) -> bool:
    return (Path(path) / INDEX).is_file()


def read_index(tasks_dir: Path) -> dict[str, Any]:
    index = tasks_dir / INDEX
    if not index.is_file():
        raise TaskDirError(f"{tasks_dir} is not a task folder (no {INDEX}; see grinta tasks build)")
    data: dict[str, Any] = json.loads(index.read_text(encoding="utf-8"))
    if data.get("format") != FORMAT:
        raise TaskDirError(f"{index} has format {data.get('format')!r}, not {FORMAT}")
    return data


def task_ids(tasks_dir: Path) -> list[str]:
    """Every task id in ``tasks_dir``, in the index's order."""
    return list(read_index(tasks_dir)["tasks"])


def task_file(tasks_dir: Path, task_id: str) -> Path:
    package, _, number = task_id.partition("/")
    if (
        not package
        or not number.isdigit()
        or any(c in package for c in "/\\")
        or package in (".", "..")
        or not package.isprintable()  # a newline or an escape would forge the progress lines
    ):
        raise TaskDirError(f"{task_id!r} is not a built task id (<package>/<number>)")
    return tasks_dir / "tasks" / package / f"{number}.json"


def load_task(tasks_dir: str | os.PathLike[str], task_id: str) -> BuiltTask:
    """The task ``task_id`` of the folder ``tasks_dir``."""
    folder = Path(tasks_dir)
    path = task_file(folder, task_id)
    if not path.is_file():
        raise TaskDirError(f"no task {task_id!r} in {folder}")
    try:
        return BuiltTask.from_json(json.loads(path.read_text(encoding="utf-8")), folder)
    except TaskDirError:
        raise
    except (ValueError, KeyError, TypeError) as exc:  # cut short, or fields missing
        raise TaskDirError(f"{path} is not a task ({type(exc).__name__}: {exc})") from None


# -- running a package's tests ---------------------------------------------------------------


def run_tests(root: Path, tests: TestCommand, *extra: str) -> TestRun:
    """Run ``tests.command`` (plus ``extra`` arguments) in ``root``; outcomes from a JUnit report.

    Plugin autoloading is off and PYTHONPATH is cleared, so the run sees the
    workspace and pytest, not the agent's environment; "python" runs with ``-P``
    (Python 3.11 and later), so a ``pytest.py`` the agent put in the workspace is
    not the test runner. When the command ends, or at the timeout, or on an
    interrupt, everything it started ends too: its process group, and every
    process that carries this run's mark in its environment (``end_marked``), a
    daemon that left the group included. The output goes to a file and only its
    end is read back, however much the tests print; and a daemon cannot keep the
    run waiting, as it could by holding a pipe open.
    """
    env = {
        **os.environ,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    for name in ("PYTEST_ADDOPTS", "PYTHONPATH"):
        env.pop(name, None)
    command = [sys.executable if part == "python" else part for part in tests.command]
    if tests.command[:1] == ("python",) and sys.version_info >= (3, 11):
        command.insert(1, "-P")  # without it, "python -m pytest" imports the workspace's pytest.py
    with tempfile.TemporaryDirectory(prefix="grinta-tests-") as scratch:
        report = Path(scratch) / "junit.xml"
        ended = run_contained(
            [*command, f"--junitxml={report}", *extra],
            cwd=root,
            env=env,
            timeout=tests.timeout,
            keep_chars=MAX_OUTPUT_CHARS,
        )
        if ended.exit_code is None:
            return TestRun(
                None, f"the tests did not finish within {tests.timeout:g}s", {}, (), ended.seconds
            )
        outcomes, failures = _junit(report, root) if report.exists() else ({}, ())
    return TestRun(ended.exit_code, ended.output, outcomes, failures, ended.seconds)


_OUTCOMES = {"failure": "failed", "error": "error", "skipped": "skipped"}


def _junit(report: Path, root: Path) -> tuple[dict[str, str], tuple[Failure, ...]]:
    try:
        cases = list(ElementTree.parse(report).iter("testcase"))
    except ElementTree.ParseError:
        return {}, ()  # pytest died while writing it; the exit code and output tell the story
    outcomes: dict[str, str] = {}
    failures = []
    for case in cases:
        test = _node_id(case.get("classname", ""), case.get("name", ""), root)
        outcome = "passed"
        for child in case:
            if child.tag in _OUTCOMES:
                outcome = _OUTCOMES[child.tag]
                if outcome in ("failed", "error"):
                    failures.append(Failure(test, child.get("message") or (child.text or "")))
                break
        # A test reported twice (a failing teardown after a pass) keeps its worst outcome.
        if outcomes.get(test) in ("failed", "error"):
            continue
        outcomes[test] = outcome
    return outcomes, tuple(failures)


def _node_id(classname: str, name: str, root: Path) -> str:
    """A pytest node id from JUnit's dotted ``classname`` (module path, then classes)."""
    parts = classname.split(".") if classname else []
    for split in range(len(parts), 0, -1):
        module = "/".join(parts[:split]) + ".py"
        if (root / module).is_file():
            return "::".join([module, *parts[split:], name])
    return f"{classname}::{name}" if classname else name


def unparametrized(test: str) -> str:
    """A node id without its parameters: ``t.py::test_x[1-a]`` -> ``t.py::test_x``."""
    return test.split("[", 1)[0]


def file_hashes(root: Path, paths: list[str]) -> dict[str, str]:
    return {path: hashlib.sha256((root / path).read_bytes()).hexdigest() for path in paths}


def added_test_config(root: Path, source: Path) -> list[str]:
    """Test configuration files (``TEST_CONFIG_NAMES``) in ``root`` that the pristine package
    ``source`` does not have: a conftest.py the agent added is editing the tests, though no
    protected file changed. Hidden folders (.grinta, .git) are not looked in: pytest skips them."""
    added = []
    for current, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(set(files) & set(TEST_CONFIG_NAMES)):
            relative = Path(current, name).relative_to(root)
            if not (source / relative).is_file():
                added.append(f"{relative.as_posix()} (added)")
    return added


def changed_files(root: Path, protected: dict[str, str]) -> list[str]:
    """The protected files that ``root`` deleted or changed."""
    problems = []
    for path, digest in sorted(protected.items()):
        file = root / path
        if not file.is_file():
            problems.append(f"{path} (deleted)")
        elif hashlib.sha256(file.read_bytes()).hexdigest() != digest:
            problems.append(path)
    return problems
