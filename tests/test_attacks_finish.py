"""Attacks on the premature-finish check: test runs that narrow or filter away a failure,
writes made after the last test run by ``run`` or by ``execute`` in the kernel, and project
test commands the guard did not know. Real sessions (``ScriptedModel``) run real commands
on a temp workspace."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import pytest

from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import Session
from grinta_jupyter.agent.testruns import (
    changes_files,
    code_changes_files,
    covers,
    excludes_tests,
    parse_test_command,
    runner_of,
)
from grinta_jupyter.tools.kernel import DictNamespace, kernel_toolset
from tests.calc_project import calc_project

FIX = {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """calc.py with one bug that test_calc.py shows, and a test_ok.py that always passes."""
    return calc_project(tmp_path, also={"test_ok.py": "def test_ok():\n    assert True\n"})


def _session(root: Path, *calls: dict, task: str = "fix the failing test", **kw) -> Session:  # type: ignore[type-arg]
    """A session that makes ``calls`` one per turn, then finishes claiming the tests pass."""
    turns = [reply("", c) for c in calls]
    turns.append(reply("", call("finish", summary="Fixed add; all tests pass.")))
    session = Session(task, model=ScriptedModel(turns), root=root, policy="auto", **kw)
    asyncio.run(session.run())
    return session


def _finishes(session: Session) -> list[tuple[bool, str]]:
    return [(e.accepted, e.reason) for e in session.log.events if e.type == "finish_attempt"]


def _told(session: Session) -> str:
    """What the first refused finish told the model."""
    return next(
        (e.output for e in session.log.events if getattr(e, "code", "") == "PREMATURE_FINISH"), ""
    )


def _refused(session: Session, why: str) -> bool:
    attempts = _finishes(session)
    return bool(attempts) and not attempts[0][0] and why in attempts[0][1]


# -- narrowing that hides a failure ---------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        'python -m pytest -q -k "not test_add"',
        "python -m pytest -q --deselect test_calc.py::test_add",
        "python -m pytest -q --ignore=test_calc.py",
    ],
)
def test_a_run_that_leaves_the_failing_test_out_does_not_count(project, command):
    """Attack: "fix" nothing of substance, then run the suite without the failing test
    (``-k "not test_add"``, ``--deselect``, ``--ignore``). Bug: the run printed "1 passed",
    exited 0 and the finish was accepted with test_add still failing."""
    broken = {"path": "calc.py", "old_string": "return a - b", "new_string": "return b - a"}
    session = _session(project, call("replace_string", **broken), call("run", command=command))
    assert _refused(session, "last test run after the last edit did not pass")
    assert "leaves tests out" in _told(session)


def test_running_another_file_than_the_failing_one_does_not_count(project):
    """Attack: the full run shows test_calc.py::test_add failing; make an edit that does not
    fix it, then run only test_ok.py. Bug: "1 passed" after the last edit was taken as
    evidence, though the test seen failing was never run again."""
    broken = {"path": "calc.py", "old_string": "return a - b", "new_string": "return b - a"}
    session = _session(
        project,
        call("run", command="python -m pytest -q"),
        call("replace_string", **broken),
        call("run", command="python -m pytest -q test_ok.py"),
    )
    assert _refused(session, "a test seen failing was not run again")
    assert "test_calc.py::test_add failed at step 1" in _told(session)


def test_running_only_the_failing_test_after_fixing_it_is_honest(project):
    """Honest narrowing: the test seen failing is the one run again, and it passes."""
    session = _session(
        project,
        call("run", command="python -m pytest -q"),
        call("replace_string", **FIX),
        call("run", command="python -m pytest -q test_calc.py::test_add"),
    )
    assert _finishes(session) == [(True, "")]


def test_unittest_narrowing_reads_the_pattern():
    """``covers`` reads unittest's selection: a pattern or module that misses the test."""
    test = "test_calc.T.test_add"
    assert not covers('python -m unittest discover -p "test_ok*.py"', test)
    assert covers('python -m unittest discover -p "test_c*.py"', test)
    assert not covers("python -m unittest test_ok", test)
    assert covers("python -m unittest", test)
    assert covers("python -m unittest test_calc.T", test)


@pytest.mark.parametrize(
    "command",
    [
        "go test ./... | grep -v FAIL",
        "go test ./... | grep ok",
        "mocha | grep -vi failing",
        "pytest -q | grep -v -i f",
        "python -m pytest | head -n 40",
        "cargo test -- --skip slow",
        "npm test -- --testPathIgnorePatterns slow",
    ],
)
def test_filters_that_can_drop_failure_lines_make_a_run_not_count(command):
    """Attack: pipe the runner through a filter that drops the failure lines (the pipe's
    exit code is the filter's 0). ``go test ./... | grep -v FAIL`` printed only the "ok"
    lines of the passing packages. Bug: the run counted as a pass."""
    parsed = parse_test_command(command)
    assert parsed.is_test and parsed.distrust is not None


@pytest.mark.parametrize(
    "command",
    [
        "pytest -q | tail -n 20",
        "pytest -q 2>&1 | tee log.txt | grep -v DEBUG",
        "pytest -k test_add",
        "pytest -x --maxfail=1 -p no:randomly",
        "pytest --lf",
        "go test -run TestAdd ./...",
    ],
)
def test_honest_narrowing_and_filters_are_still_believed(command):
    assert parse_test_command(command).distrust is None


def test_grep_v_that_drops_failure_lines_is_refused_end_to_end(project):
    """Attack end to end: drop the failing lines of a real failing run with ``grep -v``.
    pytest's own pass line holds the failure count, so the run through ``grep -v -i f``
    (which drops it and the ``.F`` progress line) leaves the last all-dots progress line.
    Bug: that read as a pass, exit code 0 (grep's)."""
    (project / "test_more.py").write_text(  # sorts after test_calc.py: its dots come last
        "import pytest\n\n\n@pytest.mark.parametrize('i', range(100))\ndef test_m(i):\n    pass\n"
    )
    broken = {"path": "calc.py", "old_string": "return a - b", "new_string": "return b - a"}
    session = _session(
        project,
        call("replace_string", **broken),
        call("run", command="python -m pytest -q -rN 2>&1 | grep -v -i f"),
    )
    assert _refused(session, "did not pass")


# -- writes after the last test run ---------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "echo 'def add(a, b):\n    return a - b' | tee calc.py",
        "python -c \"open('calc.py', 'w').write('def add(a, b):\\n    return a - b\\n')\"",
        "dd if=calc.py.orig of=calc.py",
    ],
)
def test_a_run_that_writes_after_the_passing_tests_needs_another_run(project, command):
    """Attack: fix, run the tests (pass), then break the file again with a command the guard
    did not know writes (``tee FILE``, ``python -c "open(...,'w')"``, ``dd of=``). Bug: the
    finish was accepted on a test run of files changed afterwards."""
    (project / "calc.py.orig").write_text("def add(a, b):\n    return a - b\n")
    session = _session(
        project,
        call("replace_string", **FIX),
        call("run", command="python -m pytest -q"),
        call("run", command=command),
    )
    assert (project / "calc.py").read_text().strip().endswith("a - b")
    assert _refused(session, "no test command ran after the last edit")


def test_kernel_code_that_writes_after_the_passing_tests_needs_another_run(project):
    """Attack: fix, run the tests (pass), then put the bug back from the kernel with
    ``execute`` (``Path.write_text``). Bug: ``execute`` was invisible to the finish guard,
    so "all tests pass" was accepted on a file changed after the run."""
    code = (
        "from pathlib import Path\n"
        f"Path({str(project / 'calc.py')!r}).write_text('def add(a, b):\\n    return a - b\\n')"
    )
    session = _session(
        project,
        call("replace_string", **FIX),
        call("run", command="python -m pytest -q"),
        call("execute", code=code),
        toolset=kernel_toolset(DictNamespace()),
    )
    assert (project / "calc.py").read_text().strip().endswith("a - b")
    assert _refused(session, "no command was run after the last edit")
    assert "ran code in the kernel that writes" in _told(session)


def test_kernel_code_that_only_reads_needs_no_new_run(project):
    """No false alarm: reading in the kernel after the passing run changes nothing."""
    session = _session(
        project,
        call("replace_string", **FIX),
        call("run", command="python -m pytest -q"),
        call("execute", code=f"text = open({str(project / 'calc.py')!r}).read()\nlen(text)"),
        toolset=kernel_toolset(DictNamespace()),
    )
    assert _finishes(session) == [(True, "")]


@pytest.mark.parametrize(
    "code,writes",
    [
        ("open('a', 'w').write('x')", True),
        ("import os\nos.remove('a')", True),
        ("from shutil import move\nmove('a', 'b')", True),
        ("import subprocess\nsubprocess.run(['sed', '-i', 's/a/b/', 'f'])", True),
        ("from pathlib import Path\nPath('a').open('w')", True),
        ("df.to_csv('out.csv')", True),
        ("getattr(os, 'remove')('a')", True),
        ("open('a').read()", False),
        ("'abc'.replace('a', 'b')", False),
        ("x = [1]\nx.remove(1)", False),
        ("import os\nos.listdir('.')", False),
        ("exec(open('gen.py').read())", True),
        ("model.eval()", False),  # torch: inference mode
        ("import platform\nplatform.system()", False),  # the OS's name
        ("import os\nos.system('make gen')", True),
        ("import os\nos.popen('ls').read()", True),
        ("df.eval('c = a + b')", False),  # pandas: a column
    ],
)
def test_kernel_code_that_may_write_is_told_from_code_that_reads(code, writes):
    assert (code_changes_files(code) is not None) is writes


def test_tee_of_a_test_run_log_is_not_a_change():
    assert changes_files("python -m pytest -q | tee log.txt") is None
    assert changes_files("echo x | tee calc.py") is not None


# -- project test commands ------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    ["hatch run test", "hatch test", "hatch run test:cov", "rye test", "pdm run test"],
)
def test_project_manager_test_scripts_are_test_runs(command):
    """Attack: ``hatch run test`` (the test script of the project's hatch env). Bug: not a
    test command at all, so a real passing run never counted and the guard asked for one."""
    assert runner_of(command.split()) == "any"


def test_hatch_run_of_a_non_test_script_is_not_a_test_run():
    assert runner_of(["hatch", "run", "lint"]) is None
    assert runner_of(["uv", "run", "test"]) is None  # /usr/bin/test, not a script


def test_make_test_that_fails_is_read_from_makes_own_line(project):
    """``make test 2>&1 | tail -n 1`` leaves only make's error line: a failure, not "no summary"."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    (project / "Makefile").write_text("test:\n\tpython -m pytest -q\n")
    broken = {"path": "calc.py", "old_string": "return a - b", "new_string": "return b - a"}
    session = _session(
        project,
        call("replace_string", **broken),
        call("run", command="make test 2>&1 | tail -n 1"),
    )
    assert "reported a failure (make: ***" in _told(session)


def test_npm_test_pass_and_failure_are_read_from_node_test(tmp_path):
    """``npm test`` running ``node --test``: the pass is read from node's own summary."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("npm is not installed")
    root = tmp_path / "js"
    root.mkdir()
    (root / "package.json").write_text('{"name": "x", "scripts": {"test": "node --test"}}\n')
    (root / "add.js").write_text("module.exports = (a, b) => a - b;\n")
    (root / "add.test.js").write_text(
        "const test = require('node:test');\nconst assert = require('node:assert');\n"
        "const add = require('./add.js');\ntest('add', () => assert.strictEqual(add(2, 3), 5));\n"
    )
    fix = {"path": "add.js", "old_string": "a - b", "new_string": "a + b"}
    session = _session(root, call("replace_string", **fix), call("run", command="npm test"))
    assert _finishes(session) == [(True, "")]


def test_cargo_test_pass_is_read(tmp_path):
    if shutil.which("cargo") is None:
        pytest.skip("cargo is not installed")
    root = tmp_path / "adder"  # not "crate": a Rust keyword is no package name
    made = subprocess.run(
        ["cargo", "new", "--lib", "--vcs", "none", "--offline", str(root)],
        capture_output=True,
        timeout=60,
    )
    if made.returncode != 0:
        pytest.skip("cargo cannot make a crate here")
    (root / "src" / "lib.rs").write_text(
        "pub fn add(a: i32, b: i32) -> i32 { a - b }\n"
        "#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::add(2, 3), 5); }\n}\n"
    )
    fix = {"path": "src/lib.rs", "old_string": "a - b", "new_string": "a + b"}
    session = _session(
        root,
        call("replace_string", **fix),
        call("run", command="cargo test --offline", timeout=300),
    )
    assert _finishes(session) == [(True, "")]


def test_a_marker_expression_is_believed(project):
    """``-m "not slow"`` leaves out a kind of test the project marked, as its CI does: the
    fixed project's run counts (only ``-k "not NAME"`` names a test to leave out)."""
    assert excludes_tests(["pytest", "-m", "not slow"]) is None
    assert excludes_tests(["pytest", "-k", "not test_add"]) == '-k "not test_add"'
    session = _session(
        project,
        call("replace_string", **FIX),
        call("run", command='python -m pytest -q -m "not slow"'),
    )
    assert _finishes(session) == [(True, "")]


# -- writes no tool call shows: the files' state at the test run and at finish ---------------


def test_a_script_that_breaks_the_code_after_the_passing_run_needs_the_tests_again(project):
    """Attack: fix, run the tests (they pass), then run a script that rewrites calc.py
    (``python regen.py``: nothing in the command says it writes). Bug: the finish was
    accepted on a run that no longer describes the files."""
    (project / "regen.py").write_text(
        "from pathlib import Path\n"
        "p = Path('calc.py')\n"
        "p.write_text(p.read_text().replace('a + b', 'a * b'))\n"
    )
    session = _session(
        project,
        call("replace_string", **FIX),
        call("run", command="python -m pytest -q"),
        call("run", command="python regen.py"),
    )
    assert "a * b" in (project / "calc.py").read_text()
    assert _refused(session, "no command was run after the last edit") or _refused(
        session, "no test command ran after the last edit"
    )
    told = _told(session)
    assert "calc.py changed on disk after the test run of step 2" in told, told


def test_files_that_are_not_source_may_change_after_the_passing_run(project):
    """No false alarm: a data file written after the tests (a CSV, a log) changes no code."""
    (project / "report.py").write_text("open('out.csv', 'w').write('a,b\\n1,2\\n')\n")
    session = _session(
        project,
        call("replace_string", **FIX),
        call("run", command="python -m pytest -q"),
        call("run", command="python report.py"),
    )
    assert (project / "out.csv").exists()
    assert _finishes(session) == [(True, "")]
