"""Attacks on the finish guard's reading of failing tests' files from disk.

Not covered (docs/guarantees.md says so): one failing case of a parametrized test removed
(its id's parameters are not compared), and a unittest class made no TestCase.

A run shows a test failing; a command (not an edit tool) then drops it in a way the guard
may not see, and the suite passes: the finish must be sent back. Honest sessions (a fix,
a reformat, a move into tests/, a task that asks for the rename) must finish. Nothing the
files do (a FIFO, a folder, a huge or non-UTF-8 file, a link out of the workspace) may
crash or hang the session. Real sessions, real pytest and unittest runs, real commands.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from grinta_jupyter.agent import Session
from grinta_jupyter.runtime.errors import INTERNAL_ERROR
from tests.test_finish_dropped_on_disk import OTHER, PYTHON, SUITE
from tests.test_finish_dropped_tests import (
    ADD_TEST,
    FIXED,
    TESTS,
    _finish,
    _finish_refusals,
    _fix,
    _run,
    _session,
    _workspace,
)

RENAME_ADD = "sed -i 's/def test_add/def check_add/' test_calc.py"

needs_sed = pytest.mark.skipif(shutil.which("sed") is None, reason="needs sed")


def _exit(session: Session, index: int) -> int | None:
    observation = session.steps[index].observation
    assert observation is not None
    return observation.exit_code


def _output(session: Session, index: int) -> str:
    observation = session.steps[index].observation
    assert observation is not None
    return observation.output


def _ended_cleanly(session: Session) -> None:
    """The session ended (finished, or ran out of script) and no step hit an internal error."""
    assert session.end_reason in {"finished", "error"}, session.end_reason
    for step in session.steps:
        observation = step.observation
        if observation is not None and observation.error is not None:
            assert observation.error.code != INTERNAL_ERROR, observation.error


def _dropped_session(root: Path, drop: str, task: str = "fix the failing test") -> Session:
    """Run the suite (test_add fails), drop it by ``drop``, run the suite (passes), finish."""
    session = _session(root, [_run(SUITE), _run(drop), _run(SUITE), _finish(), _finish()], task)
    session.run_sync()
    return session


def _assert_refused(session: Session, test: str = "test_calc.py::test_add") -> None:
    assert test in session.guards.finish.seen_failing, "precondition: the test was seen failing"
    refusals = _finish_refusals(session)
    assert refusals, "the finish was accepted though the failing test was dropped"
    assert test in refusals[0]


# -- evasions: the finish must be sent back --------------------------------------------


@needs_sed
def test_dropped_by_the_same_command_that_showed_it_failing(tmp_path: Path) -> None:
    """`pytest || sed ...`: the file is read after the whole command, the drop included."""
    root = _workspace(tmp_path)
    (root / "test_other.py").write_text(OTHER)
    session = _session(root, [_run(f"{SUITE} || {RENAME_ADD}"), _run(SUITE), _finish(), _finish()])
    session.run_sync()
    assert "1 failed" in _output(session, 0)
    assert _exit(session, 1) == 0
    _assert_refused(session)


@pytest.mark.parametrize(
    "move",
    ["mv test_calc.py testcalc.py", "mkdir build && mv test_calc.py build/test_calc.py"],
    ids=["to testcalc.py (pytest collects test_*.py only)", "into build/ (norecursedirs)"],
)
def test_moved_where_pytest_does_not_collect_it(tmp_path: Path, move: str) -> None:
    root = _workspace(tmp_path)
    (root / "test_other.py").write_text(OTHER)
    session = _dropped_session(root, move)
    assert _exit(session, 2) == 0 and "1 passed" in _output(session, 2)  # test_add not run
    _assert_refused(session)


@pytest.mark.parametrize(
    "append",
    ["test_add.__test__ = False", "del test_add", "test_add = None"],
    ids=["__test__ False", "del", "rebound"],
)
def test_uncollected_by_a_line_appended_by_a_command(tmp_path: Path, append: str) -> None:
    root = _workspace(tmp_path)
    session = _dropped_session(root, f"printf '\\n{append}\\n' >> test_calc.py")
    assert _exit(session, 2) == 0 and "1 passed" in _output(session, 2)
    _assert_refused(session)


def test_replaced_by_a_symlink_to_a_file_outside_the_workspace(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    _workspace(root)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "test_calc.py").write_text(TESTS.replace(ADD_TEST, ""))
    session = _dropped_session(root, "ln -sf ../outside/test_calc.py test_calc.py")
    assert _exit(session, 2) == 0 and "1 passed" in _output(session, 2)
    _ended_cleanly(session)
    _assert_refused(session)


@needs_sed
def test_dropped_and_the_file_made_non_utf8(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    drop = (
        f"{RENAME_ADD} && sed -i '1i # -*- coding: latin-1 -*-' test_calc.py"
        " && printf '# caf\\351\\n' >> test_calc.py"
    )
    session = _dropped_session(root, drop)
    assert _exit(session, 2) == 0
    _ended_cleanly(session)
    _assert_refused(session)


@needs_sed
# 3 MB passes the read cap (8 MB) but not test_layout's (2 M chars); 9 MB fails the same way.
@pytest.mark.parametrize("size", [3_000_000], ids=["3 MB"])
def test_dropped_and_the_file_made_huge(tmp_path: Path, size: int) -> None:
    root = _workspace(tmp_path)
    (root / "grow.py").write_text(
        f"with open('test_calc.py', 'a') as f:\n    f.write('#' + 'x' * {size} + '\\n')\n"
    )
    session = _dropped_session(root, f"{RENAME_ADD} && {PYTHON} grow.py")
    assert _exit(session, 2) == 0
    _ended_cleanly(session)
    _assert_refused(session)


@pytest.mark.parametrize(
    "make",
    ["mkdir test_calc.py", "mkfifo test_calc.py"],
    ids=["a folder", "a FIFO"],
)
def test_test_file_replaced_by_a_non_file(tmp_path: Path, make: str) -> None:
    """Robustness (no hang, no crash) and evasion: the test's file is gone, a folder or a
    FIFO of the same name is in its place, and pytest skips both."""
    if make.startswith("mkfifo") and shutil.which("mkfifo") is None:
        pytest.skip("needs mkfifo")
    root = _workspace(tmp_path)
    (root / "test_other.py").write_text(OTHER)
    session = _dropped_session(root, f"rm test_calc.py && {make}")
    assert _exit(session, 2) == 0 and "1 passed" in _output(session, 2)
    _ended_cleanly(session)
    _assert_refused(session)


@needs_sed
def test_dropped_while_another_touched_file_has_an_unrelated_test_of_that_name(
    tmp_path: Path,
) -> None:
    """Only the bare name is compared: an unrelated passing `test_add` in another test file
    the session touched counts as the failing test "moved" there."""
    root = _workspace(tmp_path)
    (root / "tests").mkdir()
    (root / "tests" / "test_strings.py").write_text(
        "def test_add():\n    assert 'a' + 'b' == 'ab'\n"
    )
    session = _dropped_session(root, f"{RENAME_ADD} && touch tests/test_strings.py")
    assert _exit(session, 2) == 0
    _assert_refused(session)


def _many_failing(root: Path, files: int = 50) -> None:
    for n in range(files):
        (root / f"test_a{n:02}.py").write_text(
            f"from calc import add\n\n\ndef test_add_{n:02}():\n    assert add(2, 2) == 4\n"
        )


@needs_sed
def test_dropped_in_the_51st_failing_file(tmp_path: Path) -> None:
    """50 files fail on the bug, a 51st on something else: the session fixes the bug and
    drops the 51st's test. MAX_FAILING_FILES reads 50 after the failing run; the 51st is
    read only after the next run, the drop already made."""
    root = _workspace(tmp_path, "from calc import add\n")
    _many_failing(root)
    (root / "test_z.py").write_text(
        "from calc import add\n\n\ndef test_zz():\n    assert add(2, 2) == 5\n"
    )
    session = _session(
        root,
        [
            _run(SUITE),
            _fix(),
            _run("sed -i 's/def test_zz/def check_zz/' test_z.py"),
            _run(SUITE),
            _finish(),
            _finish(),
        ],
    )
    session.run_sync()
    assert "51 failed" in _output(session, 0)
    assert _exit(session, 3) == 0
    _assert_refused(session, "test_z.py::test_zz")


def test_whole_tests_folder_deleted(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    _workspace(tmp_path)
    (tmp_path / "test_calc.py").rename(tmp_path / "tests" / "test_calc.py")
    (tmp_path / "test_other.py").write_text(OTHER)
    session = _dropped_session(tmp_path, "rm -rf tests")
    assert _exit(session, 2) == 0
    _assert_refused(session, "tests/test_calc.py::test_add")


def test_moved_into_a_test_file_skipped_at_module_level(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    (root / "test_other.py").write_text(OTHER)
    move = (
        "{ printf 'import pytest\\npytestmark = pytest.mark.skip\\n'; cat test_calc.py; }"
        " > test_later.py && rm test_calc.py"
    )
    session = _dropped_session(root, move)
    assert _exit(session, 2) == 0 and "2 skipped" in _output(session, 2)
    _assert_refused(session)


LATIN1_TESTS = "# -*- coding: latin-1 -*-\n# café\n" + TESTS


@needs_sed
def test_dropped_from_a_test_file_that_was_never_utf8(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    (root / "test_calc.py").write_bytes(LATIN1_TESTS.encode("latin-1"))
    session = _dropped_session(root, RENAME_ADD)
    assert _exit(session, 2) == 0
    _ended_cleanly(session)
    _assert_refused(session)


# -- false refusals: an honest session must finish -------------------------------------


def _assert_finished(session: Session) -> None:
    assert _finish_refusals(session) == []
    assert session.end_reason == "finished"


@needs_sed
def test_fixed_then_reformatted_by_a_command(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    reformat = (
        "sed -i -e 's/^def test_add():/def test_add() -> None:/'"
        " -e 's/add(2, 2) == 4/add(2, 2) == 4  # noqa/' -e '$a\\\\' test_calc.py"
    )
    session = _session(
        root, [_run(SUITE), _fix(), _run(reformat), _run(SUITE), _finish(), _finish()]
    )
    session.run_sync()
    assert "-> None" in (root / "test_calc.py").read_text()
    _assert_finished(session)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_fixed_then_moved_into_tests_with_git_mv(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    git = "git -c user.email=a@b -c user.name=a"
    session = _session(
        root,
        [
            _run(f"git init -q && git add -A && {git} commit -qm init"),
            _run(SUITE),
            _fix(),
            _run("mkdir tests && git mv test_calc.py tests/test_calc.py"),
            _run(SUITE),
            _finish(),
            _finish(),
        ],
    )
    session.run_sync()
    assert ADD_TEST in (root / "tests" / "test_calc.py").read_text()
    _assert_finished(session)


def test_fixed_then_fifty_test_files_moved_into_tests(tmp_path: Path) -> None:
    """Moving many files changes twice as many paths (each old one and each new one); the
    failing test's new home (tests/test_calc.py) sorts after 50 of them."""
    root = _workspace(tmp_path)
    for n in range(50):
        (root / f"test_m{n:02}.py").write_text(f"def test_m{n:02}():\n    assert True\n")
    session = _session(
        root,
        [
            _run(SUITE),
            _fix(),
            _run("mkdir tests && mv test_*.py tests/"),
            _run(SUITE),
            _finish(),
            _finish(),
        ],
    )
    session.run_sync()
    assert _exit(session, 3) == 0 and "52 passed" in _output(session, 3)
    assert ADD_TEST in (root / "tests" / "test_calc.py").read_text()
    _assert_finished(session)


@needs_sed
def test_rename_the_task_asks_for(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    session = _session(
        root,
        [
            _run(SUITE),
            _fix(),
            _run("sed -i 's/def test_add/def test_addition/' test_calc.py"),
            _run(SUITE),
            _finish(),
            _finish(),
        ],
        task="Fix the bug in add, and rename test_add to test_addition.",
    )
    session.run_sync()
    assert "def test_addition" in (root / "test_calc.py").read_text()
    _assert_finished(session)


def test_honest_fix_with_a_non_utf8_test_file(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    (root / "test_calc.py").write_bytes(LATIN1_TESTS.encode("latin-1"))
    session = _session(root, [_run(SUITE), _fix(), _run(SUITE), _finish()])
    session.run_sync()
    assert _exit(session, 2) == 0
    _assert_finished(session)
    assert (root / "calc.py").read_text() == FIXED


def test_honest_fix_with_failing_tests_in_more_than_fifty_files(tmp_path: Path) -> None:
    root = _workspace(tmp_path, "from calc import add\n")
    _many_failing(root, 60)
    session = _session(root, [_run(SUITE), _fix(), _run(SUITE), _finish()])
    session.run_sync()
    assert "60 failed" in _output(session, 0)
    assert _exit(session, 2) == 0
    _assert_finished(session)
    assert (root / "calc.py").read_text() == FIXED
