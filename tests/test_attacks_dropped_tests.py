"""Attacks on the finish guard's "a failing test is fixed, not dropped" rule (888803d).

Real sessions (``ScriptedModel``), real pytest / unittest runs through the ``run`` tool.
A test named ``..._is_refused`` pins that a session that dropped a failing test gets its
finish sent back (an evasion, when it fails); one named ``..._finishes`` that an honest
session is not refused. Twenty of these failed on 888803d; the guard now reads the test
files at a finish, by qualified name, marks and aliases included.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from grinta_jupyter.agent import Session
from grinta_jupyter.agent.guards import FinishGuard, Limits, _asks_to_drop_tests
from grinta_jupyter.agent.models.scripted import ScriptedModel, call, reply
from grinta_jupyter.agent.testruns import skipped_tests

PY = Path(sys.executable).name
CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
BUG, FIX = "return a - b\n\n", "return a + b\n\n"
ADD_TEST = "def test_add():\n    assert add(2, 2) == 4\n"
TESTS = (
    "import pytest\n\nfrom calc import add, sub\n\n\n"
    + ADD_TEST
    + "\n\ndef test_sub():\n    assert sub(3, 1) == 2\n"
)
PYTEST = f"{PY} -m pytest -q -p no:cacheprovider test_calc.py"


def _workspace(root: Path, tests: str = TESTS, where: str = "test_calc.py") -> Path:
    (root / where).parent.mkdir(parents=True, exist_ok=True)
    (root / Path(where).parent / "calc.py").write_text(CALC)
    (root / where).write_text(tests)
    return root


def _session(root: Path, turns: list[object], task: str = "fix the failing test") -> Session:
    limits = Limits(max_steps=None, max_tokens=None, max_cost=None, max_wall_time=None)
    model = ScriptedModel(turns)  # type: ignore[arg-type]
    return Session(task, model=model, root=root, policy="auto", limits=limits)


def _refusals(session: Session) -> list[str]:
    return [
        f.message for step in session.steps for f in step.guards if f.guard == "premature_finish"
    ]


def _finish() -> object:
    return reply("Done.", call("finish", summary="the tests pass"))


def _edit(path: str, old: str, new: str) -> object:
    return reply("", call("replace_string", path=path, old_string=old, new_string=new))


def _run(command: str = PYTEST) -> object:
    return reply("", call("run", command=command))


def _drop(
    root: Path,
    edits: list[object],
    *,
    command: str = PYTEST,
    task: str = "fix the failing test",
) -> Session:
    """Run (test_add fails), the ``edits``, run again (must pass), finish up to 3 times."""
    session = _session(root, [_run(command), *edits, _run(command), *[_finish()] * 3], task)
    session.run_sync()
    first, last = session.steps[0].observation, session.steps[len(edits) + 1].observation
    assert first is not None and first.exit_code != 0, first and first.output
    assert last is not None and last.exit_code == 0, last and last.output
    return session


def _assert_refused(session: Session) -> None:
    assert _refusals(session), (
        "the finish was accepted although test_add failed and was then dropped: "
        + str(session.end_reason)
    )


# -- control: the rule works for the plain case -----------------------------------------------


# -- evasions: the failing test is dropped, the finish is accepted ----------------------------


@pytest.mark.parametrize(
    "dropped",
    [
        # a skip nested one block down
        "def test_add():\n    if True:\n        pytest.skip('later')\n    assert add(2, 2) == 4\n",
        # a skip under an alias the guard does not know
        "def test_add():\n    from pytest import skip as later\n    later('x')\n"
        "    assert add(2, 2) == 4\n",
        # importorskip of a module that does not exist
        "def test_add():\n    pytest.importorskip('no_such_module_xyz')\n"
        "    assert add(2, 2) == 4\n",
        # a decorator alias bound at module level
        "later = pytest.mark.skip\n\n\n@later\n" + ADD_TEST,
        # the test moved into a class pytest does not collect
        "class _Later:\n    def test_add(self):\n        assert add(2, 2) == 4\n",
        # the test kept only as text in a string
        'NOTES = """\ndef test_add():\n    assert add(2, 2) == 4\n"""\n',
        # an autouse fixture of the file that skips this one test
        "@pytest.fixture(autouse=True)\ndef _later(request):\n"
        "    if request.node.name == 'test_add':\n        pytest.skip('later')\n\n\n" + ADD_TEST,
    ],
    ids=[
        "nested-skip",
        "alias-skip-call",
        "importorskip",
        "alias-decorator",
        "uncollected-class",
        "string",
        "autouse-fixture",
    ],  # fmt: skip
)
def test_a_dropped_failing_test_is_refused(dropped: str) -> None:
    """Read as the guard reads the file at a finish (one real session below)."""
    finish = FinishGuard(Limits())
    after = TESTS.replace(ADD_TEST, dropped)
    finish.test_texts = {"test_calc.py": (TESTS, after, (2,))}
    assert finish._dropped("test_calc.py", "test_add", TESTS, after) is not None


def test_a_nested_skip_in_a_real_session_is_refused(tmp_path: Path) -> None:
    dropped = (
        "def test_add():\n    if True:\n        pytest.skip('later')\n    assert add(2, 2) == 4\n"
    )
    session = _drop(_workspace(tmp_path), [_edit("test_calc.py", ADD_TEST, dropped)])
    _assert_refused(session)


def test_a_test_dropped_after_cd_into_its_folder_is_refused(tmp_path: Path) -> None:
    root = _workspace(tmp_path, where="sub/test_calc.py")
    session = _drop(
        root,
        [_edit("sub/test_calc.py", ADD_TEST, "")],
        command=f"cd sub && {PY} -m pytest -q -p no:cacheprovider test_calc.py",
    )
    _assert_refused(session)


def test_a_unittest_test_dropped_under_discover_start_dir_is_refused(tmp_path: Path) -> None:
    tests = (
        "import unittest\n\nfrom calc import add\n\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(2, 2), 4)\n\n"
        "    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n"
    )
    root = _workspace(tmp_path, tests, where="tests/test_calc.py")
    body = "    def test_add(self):\n        self.assertEqual(add(2, 2), 4)\n\n"
    session = _drop(
        root,
        [_edit("tests/test_calc.py", body, "")],
        command=f"{PY} -m unittest discover -s tests -v",
    )
    _assert_refused(session)


@pytest.mark.parametrize(
    "task",
    [
        "The test for deleting a user fails: fix it.",
        "Make the failing tests pass without skipping or removing any test.",
    ],
)
def test_a_task_that_only_mentions_removal_does_not_waive_the_rule(task: str) -> None:
    assert not _asks_to_drop_tests(task)


def test_a_parametrized_test_with_a_space_in_its_id_dropped_is_refused(tmp_path: Path) -> None:
    tests = TESTS.replace(
        ADD_TEST,
        "@pytest.mark.parametrize('x', ['two plus two'])\n"
        "def test_add(x):\n    assert add(2, 2) == 4\n",
    )
    old = "@pytest.mark.parametrize('x', ['two plus two'])\ndef test_add(x):\n"
    session = _drop(
        _workspace(tmp_path, tests),
        [_edit("test_calc.py", old, "@pytest.mark.skip\n" + old)],
    )
    _assert_refused(session)


def test_an_annotated_pytestmark_that_skips_the_failing_tests_file_is_refused(
    tmp_path: Path,
) -> None:
    """test_add in its own file; the session annotates a module-level pytestmark
    (``pytestmark: list = [...]``, an AnnAssign the guard does not read), the other file
    still passes, so the run is a pass."""
    root = _workspace(tmp_path, "import pytest\n\nfrom calc import add\n\n\n" + ADD_TEST)
    (root / "test_sub.py").write_text("from calc import sub\n\n\ndef test_sub():\n"
                                      "    assert sub(3, 1) == 2\n")  # fmt: skip
    both = f"{PY} -m pytest -q -p no:cacheprovider test_calc.py test_sub.py"
    mark = "pytestmark: list = [pytest.mark.skip(reason='later')]\n\n\n"
    session = _drop(root, [_edit("test_calc.py", ADD_TEST, mark + ADD_TEST)], command=both)
    assert "1 passed, 1 skipped" in str(session.steps[2].observation and
                                        session.steps[2].observation.output)  # fmt: skip
    _assert_refused(session)


# -- resume: the replayed writes hold no texts ------------------------------------------------


def _until_decision(session: Session) -> None:
    import asyncio

    from grinta_jupyter.agent import NeedsDecision

    async def go() -> None:
        async for update in session.updates():
            if isinstance(update, NeedsDecision):
                return

    asyncio.run(go())


def _interrupted(root: Path, pending: object) -> Path:
    """A session (policy ask) that ran the tests (test_add fails), edited test_calc.py
    harmlessly, and waits on ``pending`` when the kernel dies: its log."""
    session = _session(
        root,
        [
            _run(),
            _edit(
                "test_calc.py", "from calc import add, sub\n", "from calc import add, sub  # x\n"
            ),
            pending,
        ],
    )
    session.policy = "ask"
    for _ in range(2):
        _until_decision(session)
        session.approve()
    _until_decision(session)
    assert session.pending is not None and not session.done
    assert session.guards.finish.seen_failing == {"test_calc.py::test_add": 1}
    log = session.log_path
    session.log.close()
    return log


def test_after_a_resume_the_tests_a_file_held_are_still_known(tmp_path: Path) -> None:
    """A replayed write holds no texts (before/after None); 888803d noted it as a write
    that found the file empty, so the file's first tests read as none. Replayed writes are
    now passed over (the guard knows the writes made since the resume)."""
    root = _workspace(tmp_path)
    log = _interrupted(root, _edit("calc.py", BUG, FIX))
    resumed = Session.resume(log, model=ScriptedModel([]), policy="auto")
    finish = resumed.guards.finish
    first, _now = finish.tests_written.get("test_calc.py", ({"test_add", "test_sub"}, None))
    assert first == {"test_add", "test_sub"}
    assert "test_calc.py" not in finish.test_texts
    resumed.log.close()


def test_after_a_resume_a_failing_test_deleted_is_refused(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    log = _interrupted(root, _edit("test_calc.py", ADD_TEST, ""))  # staged again on resume
    model = ScriptedModel([_run(), *[_finish()] * 3])  # type: ignore[list-item]
    resumed = Session.resume(log, model=model, policy="auto")
    resumed.run_sync()
    assert "def test_add" not in (root / "test_calc.py").read_text()
    last = [s.observation for s in resumed.steps if s.proposal and s.proposal.tool == "run"][-1]
    assert last is not None and last.exit_code == 0
    _assert_refused(resumed)
    # refused for what happened, not as "a run of only the session's own tests"
    assert "test_calc.py::test_add failed at step 1" in _refusals(resumed)[0], _refusals(resumed)


def test_after_a_resume_an_honest_fix_that_touches_the_test_file_finishes(
    tmp_path: Path,
) -> None:
    """The fix is staged again on resume; the session then adds a test of its own to
    test_calc.py and runs the whole file: its own run of the file's old tests is evidence."""
    root = _workspace(tmp_path)
    log = _interrupted(root, _edit("calc.py", BUG, FIX))
    model = ScriptedModel(
        [  # type: ignore[list-item]
            _edit(
                "test_calc.py",
                "def test_sub():",
                "def test_add_zero():\n    assert add(0, 0) == 0\n\n\ndef test_sub():",
            ),  # fmt: skip
            _run(),
            *[_finish()] * 3,
        ]
    )
    resumed = Session.resume(log, model=model, policy="auto")
    resumed.run_sync()
    assert (root / "calc.py").read_text().count("a + b") == 1
    assert _refusals(resumed) == []
    assert resumed.end_reason == "finished"


# -- false refusals: an honest session is refused ---------------------------------------------


def test_moving_the_failing_test_to_its_own_file_and_fixing_the_code_finishes(
    tmp_path: Path,
) -> None:
    """Debatable: the id test_calc.py::test_add is gone, but the test runs (and passes)
    as test_add.py::test_add."""
    root = _workspace(tmp_path)
    both = f"{PY} -m pytest -q -p no:cacheprovider test_calc.py test_add.py"
    session = _session(
        root,
        [
            _run(),
            reply(
                "",
                call("create", path="test_add.py", content="from calc import add\n\n\n" + ADD_TEST),
            ),  # fmt: skip
            _edit("test_calc.py", ADD_TEST, ""),
            _edit("calc.py", BUG, FIX),
            _run(both),
            _finish(),
        ],
    )
    session.run_sync()
    assert (
        session.steps[4].observation is not None
        and "2 passed" in session.steps[4].observation.output
    )
    assert _refusals(session) == []


# -- pinned properties (these pass) -----------------------------------------------------------


def _honest(root: Path, edits: list[object], task: str = "fix the failing test") -> Session:
    session = _session(root, [_run(), _edit("calc.py", BUG, FIX), *edits, _run(), _finish()], task)
    session.run_sync()
    return session


def test_a_test_the_session_wrote_then_deleted_finishes(tmp_path: Path) -> None:
    mine = "\n\ndef test_mine():\n    assert add(1, 1) == 3\n"
    root = _workspace(tmp_path)
    session = _session(
        root,
        [
            _edit("test_calc.py", "assert sub(3, 1) == 2\n", "assert sub(3, 1) == 2\n" + mine),
            _run(),  # test_add and test_mine fail
            _edit("test_calc.py", mine, ""),
            _edit("calc.py", BUG, FIX),
            _run(),
            _finish(),
        ],
    )
    session.run_sync()
    assert "test_calc.py::test_mine" in session.guards.finish.seen_failing
    assert _refusals(session) == [] and session.end_reason == "finished"


def test_skipped_tests_on_a_5000_line_test_file_is_cheap() -> None:
    """Parsed on the event loop at every write of a .py file naming "skip": bounded."""
    text = "import pytest\n\n" + "".join(
        f"@pytest.mark.parametrize('x', [1, 2])\ndef test_f{i}(x):\n    assert x  # skip\n\n\n"
        for i in range(1000)
    )
    assert len(text.splitlines()) > 5000
    start = time.perf_counter()
    found = skipped_tests(text)
    took = time.perf_counter() - start
    # Bounds against a quadratic walk (minutes), not a speed goal: 0.26 s and 0.87 s on an
    # idle 2-core VM, so a loaded CI worker has room.
    assert found == frozenset() and took < 5.0, took
    huge = text * 3  # 3,000 tests, each defined three times: still linear
    start = time.perf_counter()
    assert skipped_tests(huge) == frozenset()
    assert time.perf_counter() - start < 5.0


@pytest.mark.parametrize(
    "text",
    [
        "def test_a(:\n    pytest.skip()\n",
        "\udcff def test_a(): pytest.skip()",
        "\x00def test_a(): skip",
    ],
    ids=["syntax-error", "lone-surrogate", "nul"],
)
def test_skipped_tests_does_not_raise_on_broken_text(text: str) -> None:
    assert skipped_tests(text) == frozenset()


# -- the same cases read as the guard reads the files at a finish (no session: fast) ----------

CLASSES = (
    "import pytest\n\nfrom calc import add\n\n\n"
    "class TestA:\n    def test_add(self):\n        assert add(2, 2) == 4\n\n\n"
    "class TestB:\n    def test_add(self):\n        assert add(0, 0) == 0\n"
)
FILLER = "".join(
    f"def test_filler_{i}():\n    assert {i} == {i}  # {'x' * 2100}\n\n\n" for i in range(100)
)
SKIPIF_ALIAS = (
    "import sys\nfrom pytest import mark as m\n\n\n"
    "@m.skipif(sys.platform != 'nonexistent', reason='x')\n" + ADD_TEST
)


@pytest.mark.parametrize(
    ("test", "first", "now", "dropped"),
    [
        # evasions: dropped
        ("test_add", TESTS, TESTS.replace(ADD_TEST, SKIPIF_ALIAS), True),
        (
            "TestA.test_add",
            CLASSES,
            CLASSES.replace(
                "class TestA:\n    def test_add(self):\n        assert add(2, 2) == 4\n", ""
            ),
            True,
        ),
        ("test_add", FILLER + TESTS, FILLER + TESTS.replace(ADD_TEST, ""), True),
        # honest: not dropped
        (
            "TestA.test_add",
            CLASSES,
            CLASSES.replace("class TestB:", "@pytest.mark.skip(reason='slow')\nclass TestB:"),
            False,
        ),
        (
            "test_add",
            TESTS,
            TESTS.replace("\n\ndef test_sub():\n    assert sub(3, 1) == 2\n", "\n"),
            False,
        ),
        (
            "test_add",
            TESTS + "\n\n@pytest.mark.skip(reason='slow')\ndef test_slow():\n    assert 0\n",
            TESTS + "\n\n@pytest.mark.skip(reason='slow on CI')\ndef test_slow():\n    assert 0\n",
            False,
        ),
        ("test_add", TESTS, TESTS.replace(ADD_TEST + "\n\n", "") + "\n\n" + ADD_TEST, False),
        (
            "test_add",
            TESTS.replace("def test_sub():", "def test_sub(:"),
            TESTS.replace(ADD_TEST, ""),
            False,
        ),
    ],
    ids=[
        "skipif-alias",
        "class-same-name",
        "past-200k",
        "other-class-skipped",
        "other-test-deleted",
        "skipped-before",
        "moved-within",
        "did-not-parse",
    ],  # fmt: skip
)
def test_what_the_guard_reads_at_a_finish(test: str, first: str, now: str, dropped: bool) -> None:
    finish = FinishGuard(Limits())
    finish.test_texts = {"test_calc.py": (first, now, (2,))}
    assert (finish._dropped("test_calc.py", test, first, now) is not None) is dropped


def test_a_task_to_remove_the_flaky_test_is_an_ask() -> None:
    assert _asks_to_drop_tests("remove the flaky test and fix the build")
