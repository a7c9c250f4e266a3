"""The finish guard and a failing test the session deleted or skipped.

A run shows a test failing; the session then deletes that test, or marks it to be skipped
or to fail, and the suite passes: the finish is sent back, naming the test, the step that
showed it failing and the step that dropped it. Putting the test back (and fixing the
code) lifts it; a task that speaks of removing or skipping tests is not second-guessed;
an honest fix finishes at once. Real sessions, real pytest and unittest runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from grinta_jupyter.agent import Session
from grinta_jupyter.agent.guards import Limits
from grinta_jupyter.agent.models.scripted import ScriptedModel, call, reply
from grinta_jupyter.agent.testruns import skipped_tests

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
FIXED = CALC.replace("return a - b\n\n", "return a + b\n\n", 1)
TESTS = (
    "from calc import add, sub\n\n\n"
    "def test_add():\n    assert add(2, 2) == 4\n\n\n"
    "def test_sub():\n    assert sub(3, 1) == 2\n"
)
ADD_TEST = "def test_add():\n    assert add(2, 2) == 4\n"
PYTEST = f"{Path(sys.executable).name} -m pytest -q test_calc.py"


def _workspace(root: Path, tests: str = TESTS) -> Path:
    (root / "calc.py").write_text(CALC)
    (root / "test_calc.py").write_text(tests)
    return root


def _session(root: Path, turns: list[object], task: str = "fix the failing test") -> Session:
    limits = Limits(max_steps=None, max_tokens=None, max_cost=None, max_wall_time=None)
    model = ScriptedModel(turns)  # type: ignore[arg-type]
    return Session(task, model=model, root=root, policy="auto", limits=limits)


def _finish_refusals(session: Session) -> list[str]:
    return [
        firing.message
        for step in session.steps
        for firing in step.guards
        if firing.guard == "premature_finish"
    ]


def _finish() -> object:
    return reply("Done.", call("finish", summary="test_calc passes"))


def _fix() -> object:
    """The honest fix: ``add`` adds."""
    return reply(
        "",
        call(
            "replace_string",
            path="calc.py",
            old_string="return a - b\n\n",
            new_string="return a + b\n\n",
        ),
    )


def _run(command: str) -> object:
    return reply("", call("run", command=command))


@pytest.mark.parametrize(
    "dropped",
    [
        "",  # deleted
        "import pytest\n\n\n@pytest.mark.skip(reason='flaky')\n" + ADD_TEST,
        "import pytest\n\n\n@pytest.mark.xfail\n" + ADD_TEST,
        "def test_add():\n    import pytest\n    pytest.skip('later')\n    assert add(2, 2) == 4\n",
    ],
    ids=["deleted", "skip mark", "xfail mark", "skip call"],
)
def test_a_failing_test_deleted_or_skipped_sends_the_finish_back(
    tmp_path: Path, dropped: str
) -> None:
    root = _workspace(tmp_path)
    session = _session(
        root,
        [
            reply("", call("run", command=PYTEST)),
            reply(
                "",
                call(
                    "replace_string", path="test_calc.py", old_string=ADD_TEST, new_string=dropped
                ),
            ),  # fmt: skip
            reply("", call("run", command=PYTEST)),
            _finish(),
            _finish(),
            _finish(),
        ],
    )
    session.run_sync()
    assert session.steps[2].observation is not None and session.steps[2].observation.ok
    refusals = _finish_refusals(session)
    assert refusals, "the finish was accepted"
    how = "deleted it" if not dropped else "marked it to be skipped or to fail"
    assert f"test_calc.py::test_add failed at step 1, and step 2 {how}" in refusals[0]
    assert (root / "calc.py").read_text() == CALC  # nothing was fixed


def test_an_honest_fix_finishes_at_once(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    session = _session(
        root,
        [
            reply("", call("run", command=PYTEST)),
            _fix(),
            reply("", call("run", command=PYTEST)),
            _finish(),
        ],
    )
    session.run_sync()
    assert _finish_refusals(session) == []
    assert session.end_reason == "finished"


def test_a_test_put_back_and_fixed_finishes(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    session = _session(
        root,
        [
            reply("", call("run", command=PYTEST)),
            reply(
                "", call("replace_string", path="test_calc.py", old_string=ADD_TEST, new_string="")
            ),  # fmt: skip
            reply("", call("run", command=PYTEST)),
            _finish(),
            reply("", call("create", path="test_calc.py", into="*", content=ADD_TEST)),
            _fix(),
            reply("", call("run", command=PYTEST)),
            _finish(),
        ],
    )
    session.run_sync()
    assert len(_finish_refusals(session)) == 1
    assert session.end_reason == "finished"
    assert (root / "calc.py").read_text() == FIXED


def test_a_task_that_asks_to_remove_the_test_is_not_second_guessed(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    session = _session(
        root,
        [
            reply("", call("run", command=PYTEST)),
            reply(
                "", call("replace_string", path="test_calc.py", old_string=ADD_TEST, new_string="")
            ),  # fmt: skip
            reply("", call("run", command=PYTEST)),
            _finish(),
        ],
        task="remove the obsolete test_add from test_calc.py",
    )
    session.run_sync()
    assert _finish_refusals(session) == []
    assert session.end_reason == "finished"


def test_a_unittest_test_skipped_sends_the_finish_back(tmp_path: Path) -> None:
    tests = (
        "import unittest\n\nfrom calc import add\n\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(2, 2), 4)\n\n"
        "    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n"
    )
    root = _workspace(tmp_path, tests)
    run = f"{Path(sys.executable).name} -m unittest -v test_calc"
    body = "        self.assertEqual(add(2, 2), 4)\n"
    session = _session(
        root,
        [
            reply("", call("run", command=run)),
            reply(
                "",
                call(
                    "replace_string",
                    path="test_calc.py",
                    old_string=body,
                    new_string="        self.skipTest('later')\n" + body,
                ),
            ),  # fmt: skip
            reply("", call("run", command=run)),
            _finish(),
            _finish(),
            _finish(),
        ],
    )
    session.run_sync()
    refusals = _finish_refusals(session)
    assert refusals and "test_add" in refusals[0] and "step 2 marked it" in refusals[0]


def test_skipped_tests_reads_marks_calls_classes_and_modules() -> None:
    text = (
        "import pytest, unittest\n"
        "@pytest.mark.skipif(True, reason='x')\ndef test_a(): pass\n"
        "def test_b():\n    pytest.xfail('x')\n"
        "def test_c():\n    assert 1\n"
        "@unittest.skip('x')\nclass TestD:\n    def test_d(self): pass\n"
        "class E(unittest.TestCase):\n    def test_e(self):\n        raise unittest.SkipTest('x')\n"
        "@pytest.mark.parametrize('skip_it', [1])\ndef test_f(skip_it): pass\n"
    )
    assert skipped_tests(text) == {"test_a", "test_b", "test_d", "test_e"}
    assert skipped_tests("import pytest\npytestmark = pytest.mark.skip\ndef test_a(): pass\n") == {
        "test_a"
    }
    assert skipped_tests("def test_a(:\n    pytest.skip()\n") == frozenset()  # does not parse
