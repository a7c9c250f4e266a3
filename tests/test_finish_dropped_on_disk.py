"""The finish guard and a failing test dropped on disk, not through an edit tool.

A run shows a test failing; then a command (``sed -i``, ``rm``, a script of the session's)
deletes that test, renames it so the runner no longer collects it, or marks it to be
skipped, and the suite passes. The guard read the test's file after the failing run and
reads it again at the finish: the finish is sent back, naming the test and the file.
A test moved to another file, and an honest fix made by a command, finish at once.
Real sessions, real pytest runs, real shell commands.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.test_finish_dropped_tests import (
    ADD_TEST,
    CALC,
    FIXED,
    _finish,
    _finish_refusals,
    _fix,
    _run,
    _session,
    _workspace,
)

PYTHON = Path(sys.executable).name
SUITE = f"{PYTHON} -m pytest -q -p no:cacheprovider"
OTHER = "def test_other():\n    assert True\n"
SKIP_IT = (
    "import pathlib\n"
    "p = pathlib.Path('test_calc.py')\n"
    "p.write_text('import pytest\\n' + p.read_text().replace("
    "'def test_add', '@pytest.mark.skip(reason=\"later\")\\ndef test_add'))\n"
)


@pytest.mark.skipif(shutil.which("sed") is None, reason="needs sed")
@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("sed -i 's/def test_add/def check_add/' test_calc.py", "no longer defines it"),
        ("rm test_calc.py", "no longer defines it"),
        (f"{PYTHON} skip_it.py", "now marks it to be skipped or to fail"),
    ],
    ids=["renamed by sed", "removed by rm", "skipped by a script"],
)
def test_a_failing_test_dropped_by_a_command_sends_the_finish_back(
    tmp_path: Path, command: str, said: str
) -> None:
    root = _workspace(tmp_path)
    (root / "test_other.py").write_text(OTHER)
    (root / "skip_it.py").write_text(SKIP_IT)
    session = _session(
        root, [_run(SUITE), _run(command), _run(SUITE), _finish(), _finish(), _finish()]
    )
    session.run_sync()
    assert session.steps[0].observation is not None and session.steps[0].observation.exit_code
    assert session.steps[2].observation is not None and session.steps[2].observation.exit_code == 0
    refusals = _finish_refusals(session)
    assert refusals, "the finish was accepted"
    assert f"test_calc.py::test_add failed at step 1, and test_calc.py {said}" in refusals[0]
    assert "not through an edit tool" in refusals[0]
    assert (root / "calc.py").read_text() == CALC  # nothing was fixed


def test_a_test_put_back_on_disk_and_fixed_finishes(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    (root / "test_other.py").write_text(OTHER)
    (root / "keep.py").write_text("")
    session = _session(
        root,
        [
            _run(SUITE),
            _run("cp test_calc.py keep.py && sed -i 's/def test_add/def check_add/' test_calc.py"),
            _run(SUITE),
            _finish(),  # refused: test_add is gone
            _run("cp keep.py test_calc.py"),
            _fix(),
            _run(SUITE),
            _finish(),
        ],
    )
    session.run_sync()
    assert len(_finish_refusals(session)) == 1
    assert session.end_reason == "finished"
    assert (root / "calc.py").read_text() == FIXED


def test_a_failing_test_moved_to_another_file_is_not_dropped(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    session = _session(
        root,
        [
            _run(SUITE),
            _fix(),
            _run("mv test_calc.py test_arith.py"),
            _run(SUITE),
            _finish(),
        ],
    )
    session.run_sync()
    assert _finish_refusals(session) == []
    assert session.end_reason == "finished"
    assert ADD_TEST in (root / "test_arith.py").read_text()


@pytest.mark.skipif(shutil.which("sed") is None, reason="needs sed")
def test_an_honest_fix_made_by_a_command_finishes_at_once(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    session = _session(
        root,
        [
            _run(SUITE),
            _run("sed -i '0,/return a - b/s//return a + b/' calc.py"),
            _run(SUITE),
            _finish(),
        ],
    )
    session.run_sync()
    assert _finish_refusals(session) == []
    assert session.end_reason == "finished"
    assert (root / "calc.py").read_text() == FIXED


def test_a_test_file_linked_from_outside_the_workspace_is_not_a_drop(tmp_path: Path) -> None:
    # The guard cannot read a file out of the workspace: it compares nothing, and an honest
    # fix finishes (a link it could read at the failing run and not at the finish is a drop:
    # tests/test_attacks_dropped_on_disk.py).
    root = tmp_path / "ws"
    root.mkdir()
    _workspace(root)
    shared = tmp_path / "shared"
    shared.mkdir()
    (root / "test_calc.py").rename(shared / "test_calc.py")
    (root / "test_calc.py").symlink_to(shared / "test_calc.py")
    session = _session(
        root,
        [
            _run(SUITE),
            _fix(),
            _run(SUITE),
            _finish(),
        ],
    )
    session.run_sync()
    assert session.steps[0].observation is not None and session.steps[0].observation.exit_code
    assert "test_calc.py" in session.guards.finish.disk_missing
    assert _finish_refusals(session) == []
    assert session.end_reason == "finished"


def test_the_verdict_parses_test_files_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether a failing test was dropped is decided by parsing its file (a test file may
    hold thousands of lines): in the worker thread that read it for the finish, not on the
    kernel's event loop, where a long parse would freeze the Stop button."""
    import threading

    from grinta_jupyter.agent import guards

    parsed_on: list[str] = []
    layout = guards.test_layout

    def recording(text: str) -> object:
        parsed_on.append(threading.current_thread().name)
        return layout.__wrapped__(text)  # uncached: every parse is seen

    monkeypatch.setattr(guards, "test_layout", recording)
    root = _workspace(tmp_path)
    (root / "test_other.py").write_text(OTHER)
    session = _session(
        root,
        [
            _run(SUITE),
            _run("sed -i 's/def test_add/def check_add/' test_calc.py"),
            _run(SUITE),
            _finish(),
            _run("sed -i 's/def check_add/def test_add/' test_calc.py"),
            _fix(),
            _run(SUITE),
            _finish(),
        ],
    )
    loop_thread: list[str] = []

    async def drive() -> None:
        loop_thread.append(threading.current_thread().name)
        await session.run()

    import asyncio

    asyncio.run(drive())
    refusals = _finish_refusals(session)
    assert len(refusals) == 1 and "no longer defines it" in refusals[0]
    assert session.steps[-1].observation is not None and session.steps[-1].observation.ok
    assert parsed_on, "the verdict parsed nothing"
    assert loop_thread[0] not in parsed_on, parsed_on
