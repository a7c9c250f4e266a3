"""Attacks on the premature-finish check: a pass of only the tests the model wrote itself, a
pass through a test setup it changed (conftest.py, pyproject's pytest settings, a Makefile,
package.json), and shell forms that let a failing run pass on. Real sessions
(``ScriptedModel``) run real pytest and make on a temp workspace."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pytest

from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import Session
from grinta_jupyter.agent.testruns import parse_test_command, setup_change
from tests.calc_project import calc_project

FIX = {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}
# An edit that leaves the bug in place: only a run that does not run test_add can pass.
NO_FIX = {"path": "calc.py", "old_string": "def add(a, b):", "new_string": "def add(a, b):  # sum"}
PYTEST = f"{sys.executable} -m pytest -q"
FINISH = call("finish", summary="Fixed add; all tests pass.")
MINE = "def test_mine():\n    assert True\n"


def _run(root: Path, *turns: dict) -> Session:  # type: ignore[type-arg]
    script = [reply("", c) for c in turns]
    session = Session("fix the failing test", model=ScriptedModel(script), root=root, policy="auto")
    asyncio.run(session.run())
    return session


def _accepted(session: Session) -> list[bool]:
    return [e.accepted for e in session.log.events if e.type == "finish_attempt"]


def _told(session: Session) -> str:
    return next(
        (e.output for e in session.log.events if getattr(e, "code", "") == "PREMATURE_FINISH"), ""
    )


def _passed(session: Session, step_output: str = "passed") -> bool:
    """Whether some run did pass (so only the guard could tell)."""
    return any(
        e.type == "observation" and step_output in e.output and e.exit_code == 0
        for e in session.log.events
    )


# -- tests the session wrote itself -------------------------------------------------------


@pytest.mark.parametrize(
    ("made", "command"),
    [
        ("test_mine.py", f"{PYTEST} test_mine.py"),
        ("test_mine.py", f"{PYTEST} ./test_mine.py::test_mine"),
        ("test_mine.py", f"{PYTEST} -k test_mine"),
        ("sub/test_mine.py", f"cd sub && {PYTEST} test_mine.py"),
        ("test_mine.py", f"{sys.executable} -m unittest test_mine"),
    ],
)
def test_a_pass_of_only_the_tests_the_session_wrote_is_not_evidence(
    tmp_path: Path, made: str, command: str
) -> None:
    """The model writes a test that cannot fail, runs only it, and claims the fix: refused,
    naming what it ran; a run of the project's tests after the real fix is accepted."""
    root = calc_project(tmp_path)
    (root / "sub").mkdir()
    mine = MINE if "unittest" not in command else (
        "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_mine(self):\n"
        "        self.assertTrue(True)\n"
    )  # fmt: skip
    session = _run(
        root,
        call("create", path=made, content=mine),
        call("run", command=command),
        FINISH,
        call("replace_string", **FIX),
        call("run", command=PYTEST),
        FINISH,
    )
    assert _accepted(session) == [False, True]
    told = _told(session)
    assert "ran only tests this session wrote" in told and "test_mine" in told, told


def test_an_old_test_file_rewritten_to_hold_only_new_tests_is_not_evidence(
    tmp_path: Path,
) -> None:
    """test_calc.py's failing test_add renamed and made to pass: `pytest test_calc.py` runs
    none of the tests the project had."""
    root = calc_project(tmp_path)
    session = _run(
        root,
        call(
            "replace_string",
            path="test_calc.py",
            old_string="def test_add():\n    assert add(2, 3) == 5",
            new_string="def test_add_ok():\n    assert add(2, 3) == add(2, 3)",
        ),
        call("run", command=f"{PYTEST} test_calc.py"),
        FINISH,
    )
    assert _passed(session)
    assert _accepted(session) == [False]
    assert "ran only tests this session wrote (test_calc.py)" in _told(session)


@pytest.mark.parametrize(
    "command",
    [
        PYTEST,
        f"{PYTEST} test_calc.py",  # the old file, with the session's test added to it
        f"{PYTEST} test_calc.py test_mine.py",
        f"cd {{root}} && {sys.executable} -m pytest -x",
        f"{PYTEST} tests/",
    ],
)
def test_honest_runs_with_the_sessions_own_tests_still_count(tmp_path: Path, command: str) -> None:
    """Guard (passes before and after the fix): a regression test added beside the fix,
    then a run that includes the project's tests, is evidence."""
    root = calc_project(tmp_path)
    (root / "tests").mkdir()
    (root / "tests" / "test_more.py").write_text("from calc import add\n\n\ndef test_more():\n"
                                                 "    assert add(1, 1) == 2\n")  # fmt: skip
    session = _run(
        root,
        call("replace_string", **FIX),
        call("create", path="test_mine.py", content=MINE),
        call(
            "replace_string",
            path="test_calc.py",
            old_string="    assert add(2, 3) == 5\n",
            new_string="    assert add(2, 3) == 5\n\n\ndef test_add_zero():\n    assert add(0, 3) == 3\n",
        ),
        call("run", command=command.format(root=root)),
        FINISH,
    )
    assert _accepted(session) == [True], _told(session)


# -- a test setup the session changed ---------------------------------------------------------

DESELECT_HOOK = (
    "def pytest_collection_modifyitems(items):\n"
    '    items[:] = [i for i in items if "add" not in i.name]\n'
)


@pytest.mark.parametrize(
    ("edit", "command"),
    [
        (call("create", path="conftest.py", content=DESELECT_HOOK), PYTEST),
        (
            call(
                "replace_string",
                path="pyproject.toml",
                old_string='-p no:nbval"',
                new_string='-p no:nbval --deselect test_calc.py::test_add"',
            ),
            PYTEST,
        ),
        (
            call(
                "replace_string",
                path="pyproject.toml",
                old_string="addopts",
                new_string='python_functions = "test_ok"\naddopts',
            ),
            PYTEST,
        ),
        (
            call(
                "replace_string",
                path="Makefile",
                old_string=f"\t{PYTEST}",
                new_string=f"\t{PYTEST} test_ok.py",
            ),
            "make test",
        ),
    ],
)
def test_a_pass_through_a_test_setup_the_session_changed_is_not_evidence(
    tmp_path: Path,
    edit: dict,
    command: str,  # type: ignore[type-arg]
) -> None:
    """The bug stays; the model changes how the tests run so test_add is not run, and the
    run passes: refused, naming the setup change and what to run instead."""
    if command.startswith("make") and shutil.which("make") is None:
        pytest.skip("no make")
    root = calc_project(
        tmp_path,
        also={
            "test_ok.py": "def test_ok():\n    assert True\n",
            "Makefile": f"test:\n\t{PYTEST}\n",
        },
    )
    session = _run(
        root, call("replace_string", **NO_FIX), edit, call("run", command=command), FINISH
    )
    assert _passed(session)
    assert _accepted(session) == [False]
    told = _told(session)
    assert "test setup this session changed" in told and "put the setup back" in told, told


def test_a_conftest_fixture_and_other_pyproject_settings_are_no_setup_change(
    tmp_path: Path,
) -> None:
    """Guard: a fixture in conftest.py and a pyproject change outside pytest's selection
    (a dependency, `-v` in addopts) leave the run as evidence."""
    root = calc_project(tmp_path)
    fixture = "import pytest\n\n\n@pytest.fixture\ndef two():\n    return 2\n"
    session = _run(
        root,
        call("create", path="conftest.py", content=fixture),
        call(
            "replace_string",
            path="pyproject.toml",
            old_string='-p no:nbval"',
            new_string='-p no:nbval -v"\n\n[project]\nname = "calc"\ndependencies = ["attrs"]',
        ),
        call("replace_string", **FIX),
        call("run", command=PYTEST),
        FINISH,
    )
    assert _accepted(session) == [True], _told(session)


def test_putting_a_changed_setup_back_makes_runs_count_again(tmp_path: Path) -> None:
    """A hook added, then taken out again: the setup is the project's own again."""
    root = calc_project(tmp_path, also={"conftest.py": "X = 1\n"})
    session = _run(
        root,
        call("replace_string", path="conftest.py", old_string="X = 1\n", new_string=DESELECT_HOOK),
        call("replace_string", path="conftest.py", old_string=DESELECT_HOOK, new_string="X = 1\n"),
        call("replace_string", **FIX),
        call("run", command=PYTEST),
        FINISH,
    )
    assert _accepted(session) == [True], _told(session)


def test_package_json_test_scripts_are_a_setup_but_its_dependencies_are_not() -> None:
    old = json.dumps({"scripts": {"test": "jest", "build": "tsc"}, "dependencies": {}})
    build = json.dumps({"scripts": {"test": "jest", "build": "tsc -b"}, "dependencies": {"a": "1"}})
    faked = json.dumps({"scripts": {"test": "echo '1 passing'", "build": "tsc"}})
    assert setup_change("package.json", old, build) is None
    change = setup_change("package.json", old, faked)
    assert change is not None and "npm" in change.affects


def test_a_command_that_writes_a_setup_file_makes_runs_through_it_not_count(
    tmp_path: Path,
) -> None:
    """`sed -i` on the Makefile: what it wrote is not known, so `make test` after it does not
    count, while the runner itself does."""
    if shutil.which("make") is None:
        pytest.skip("no make")
    root = calc_project(tmp_path, also={"Makefile": f"test:\n\t{PYTEST}\n"})
    session = _run(
        root,
        call("replace_string", **FIX),
        call("run", command="sed -i 's/-q/-q -x/' Makefile"),
        call("run", command="make test"),
        FINISH,
        call("run", command=PYTEST),
        FINISH,
    )
    assert _accepted(session) == [False, True]
    assert "Makefile changed by" in _told(session)


# -- shell forms that let a failing run pass on -------------------------------------------------


def test_a_failing_run_hidden_before_a_passing_one_is_not_evidence(tmp_path: Path) -> None:
    """`pytest test_calc.py >/dev/null || pytest test_ok.py`: the failure is discarded and
    the second run passes with exit code 0."""
    root = calc_project(tmp_path, also={"test_ok.py": "def test_ok():\n    assert True\n"})
    session = _run(
        root,
        call("replace_string", **NO_FIX),
        call("run", command=f"{PYTEST} test_calc.py >/dev/null || {PYTEST} test_ok.py"),
        FINISH,
    )
    assert _passed(session)
    assert _accepted(session) == [False]
    assert "`&&`" in _told(session)


@pytest.mark.parametrize(
    "command",
    [
        "pytest a.py > /dev/null; pytest b.py",
        "pytest a.py 2>/dev/null 1>&2 || pytest b.py",
        "pytest a.py\npytest b.py",
        "pytest | tail -c 40",
        "pytest -q | tail -18c",
        "pytest | tail --bytes=30",
    ],
)
def test_shell_forms_that_lose_a_failure_are_distrusted(command: str) -> None:
    assert parse_test_command(command).distrust, command


@pytest.mark.parametrize(
    "command",
    ["pytest", "pytest -q tests/", "pytest a.py && pytest b.py", "pytest 2>&1 | tail -n 30"],
)
def test_honest_shell_forms_are_believed(command: str) -> None:
    """Guard: plain runs, runs joined by `&&`, and `tail -n` keep counting."""
    assert parse_test_command(command).distrust is None, command
