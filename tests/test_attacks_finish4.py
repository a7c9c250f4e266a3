"""Attacks on the premature-finish check: a passing run of another folder's tests, and a
pytest told to collect fewer tests or to load code that may rewrite its report. Real
sessions (``ScriptedModel``) run real pytest on a temp workspace."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import Session
from grinta_jupyter.agent.testruns import parse_test_command
from tests.calc_project import calc_project

FIX = {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}
# An edit that leaves the bug in place, so only a run that leaves test_add out can pass.
NO_FIX = {"path": "calc.py", "old_string": "def add(a, b):", "new_string": "def add(a, b):  # sum"}
PYTEST = f"{sys.executable} -m pytest -q"


def _run(root: Path, *turns: dict, task: str = "fix the failing test") -> Session:  # type: ignore[type-arg]
    script = [reply("", c) for c in turns]
    session = Session(task, model=ScriptedModel(script), root=root, policy="auto")
    asyncio.run(session.run())
    return session


def _finishes(session: Session) -> list[tuple[bool, str]]:
    return [(e.accepted, e.reason) for e in session.log.events if e.type == "finish_attempt"]


FINISH = call("finish", summary="Fixed add; all tests pass.")


def test_a_passing_run_in_another_folder_is_not_evidence(tmp_path: Path) -> None:
    """`cd /elsewhere && pytest` passed on another project: refused; the same run from the
    workspace root is then accepted."""
    root = calc_project(tmp_path, also={"test_ok.py": "def test_ok():\n    assert True\n"})
    other = tmp_path / "old"
    other.mkdir()
    (other / "test_other.py").write_text("def test_other():\n    assert True\n")
    session = _run(
        root,
        call("replace_string", **NO_FIX),
        call("run", command=f"cd {other} && {PYTEST} -p no:cacheprovider"),
        FINISH,
        call("replace_string", **FIX),
        call("run", command=PYTEST),
        FINISH,
    )
    attempts = _finishes(session)
    assert [accepted for accepted, _ in attempts] == [False, True], attempts
    told = next(
        e.output for e in session.log.events if getattr(e, "code", "") == "PREMATURE_FINISH"
    )
    assert "outside the workspace" in told and str(other) in told


@pytest.mark.parametrize(
    "narrowing",
    [
        '-o python_functions=test_ok -k "add or ok"',
        "--override-ini=python_files=test_ok.py",
        "-p no:unittest",
    ],
)
def test_a_run_that_collects_fewer_tests_is_not_evidence(tmp_path: Path, narrowing: str) -> None:
    """test_add (a plain function) and test_sub (a unittest.TestCase) still fail; a run
    that does not collect them says "passed" and must not count."""
    tests = (
        "import unittest\nfrom calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "class Sub(unittest.TestCase):\n    def test_sub(self):\n        self.assertEqual(add(2, 3), 5)\n"
    )
    root = calc_project(
        tmp_path, tests=tests, also={"test_ok.py": "def test_ok():\n    assert True\n"}
    )
    if narrowing.startswith("-p"):  # the plain test is left out by -k; the TestCase by -p
        narrowing += ' -k "Sub or ok"'
    session = _run(
        root, call("replace_string", **NO_FIX), call("run", command=f"{PYTEST} {narrowing}"), FINISH
    )
    ran = next(e for e in session.log.events if e.type == "observation" and "passed" in e.output)
    assert "1 passed" in ran.output  # the run did pass: only the guard can tell
    assert not _finishes(session)[0][0], _finishes(session)


@pytest.mark.parametrize(
    "command",
    [
        "pytest --rootdir=/elsewhere",
        "(cd ../other && pytest)",
        "pytest -c /other/pytest.ini",
        "python -m pytest /abs/path/outside/the/workspace",
        "cd && pytest",
        "cd sub/../.. && pytest",
        "env -C /tmp pytest",
        "pytest tests/../../other/test_x.py",
        "python -m unittest discover -s /tmp/x",
        "make -C /tmp/x test",
        "npm test --prefix /tmp/other",
        "PYTHONPATH=/tmp/fake pytest",
        "pytest --pyargs json",
        "PYTEST_PLUGINS=forge pytest",
        "pytest -p forge_report",
        "PYTEST_ADDOPTS='-o python_classes=Nothing' pytest",
        "pytest -o testpaths=tests/unit",
        "pytest --collectonly",
        "pytest --setupplan",
    ],
)
def test_commands_whose_pass_is_not_the_workspaces_are_distrusted(command: str) -> None:
    assert parse_test_command(command).distrust, command


def test_the_workspace_named_by_its_absolute_path_is_its_own(tmp_path: Path) -> None:
    """Models often run `cd /abs/workspace && pytest`: that run is the workspace's, through
    a link too, while the folder beside it is not."""
    root = calc_project(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(root)
    session = _run(
        root,
        call("replace_string", **FIX),
        call("run", command=f"cd {root} && {PYTEST} -p no:cacheprovider"),
        FINISH,
    )
    assert [accepted for accepted, _ in _finishes(session)] == [True]
    for command in (
        f"cd {link}/ && pytest",
        f"pytest {root}/test_calc.py",
        f"PYTHONPATH={root} pytest",
        f"{sys.executable} -m pytest --rootdir={root}",
    ):
        assert parse_test_command(command, str(root)).distrust is None, command
        assert parse_test_command(command).distrust is not None, command
    for command in (f"cd {root}/.. && pytest", f"cd {root}-old && pytest", f"pytest {tmp_path}"):
        assert parse_test_command(command, str(root)).distrust is not None, command
