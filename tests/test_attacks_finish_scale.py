"""Attacks on the finish guard at scale and on odd inputs: nothing may hang the kernel.

The session runs on the kernel's event loop; the finish guard reads failing tests' files
after a failing run and at a finish, and parses them (``testruns.test_layout``). Each case
drives a real session (scripted model, real pytest runs, real files) while a task on the
same loop ticks every 10 ms: the largest gap between ticks is how long the loop (the
kernel's Stop button, every widget) was frozen. Over ``FROZEN`` is a hole. The time spent in
``FinishGuard.check`` is measured too (it runs on the loop, ``Session._finish_check``).

pytest runs with plugin autoloading off (a trusted runner all the same) to keep the file
fast on a small machine.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from grinta_jupyter.agent import Session
from tests.test_attacks_dropped_on_disk import _assert_finished, _assert_refused, _exit, _output
from tests.test_finish_dropped_on_disk import PYTHON, SUITE
from tests.test_finish_dropped_tests import (
    CALC,
    FIXED,
    TESTS,
    _finish,
    _finish_refusals,
    _fix,
    _run,
    _session,
    _workspace,
)

FAST = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {SUITE}"
FROZEN = 1.0  # seconds the event loop may be blocked at most (0.5 measured idle; a loaded CI
# machine's scheduler is not what these cases test)

needs_sed = pytest.mark.skipif(shutil.which("sed") is None, reason="needs sed")


@dataclass
class Driven:
    gap: float  # the largest gap between 10 ms ticks on the session's loop
    check: float  # the longest FinishGuard.check (on the loop)
    error: BaseException | None  # what session.run() raised


def _drive(session: Session) -> Driven:
    """Run ``session`` on a fresh event loop beside a 10 ms ticker."""
    finish = session.guards.finish
    original = finish.check
    checks: list[float] = [0.0]

    def timed(summary: str):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        try:
            return original(summary)
        finally:
            checks.append(time.perf_counter() - start)

    finish.check = timed  # type: ignore[method-assign]
    gaps: list[float] = [0.0]

    async def main() -> BaseException | None:
        done = asyncio.Event()

        async def tick() -> None:
            last = time.perf_counter()
            while not done.is_set():
                await asyncio.sleep(0.01)
                now = time.perf_counter()
                if session.steps:  # not the first model turn: a one-off import, not ours
                    gaps.append(now - last - 0.01)
                last = now

        ticker = asyncio.create_task(tick())
        await asyncio.sleep(0)
        try:
            await session.run()
            return None
        except BaseException as exc:  # noqa: BLE001 - the measure is whether it raises
            return exc
        finally:
            done.set()
            await ticker

    error = asyncio.run(main())
    return Driven(max(gaps), max(checks), error)


def _data_lines(count: int, tag: str = "") -> str:
    """``count`` module-level constants, as a generated table of test data is."""
    return "\n".join(
        f"CASE{tag}_{i} = {{'a': [{i}, {i + 1}, 'x{i}'], 'b': ({i}, 'y')}}" for i in range(count)
    )


def _honest(root: Path, *between: object) -> Session:
    """Run the suite (fails), fix add, ``between``, run the suite (passes), finish."""
    return _session(root, [_run(FAST), _fix(), *between, _run(FAST), _finish(), _finish()])


# -- 1. scale: the event loop must keep turning ------------------------------------------


LONG = "\n\nTOTAL = " + " + ".join(["1"] * 400) + "\n"


def test_long_expression_in_a_test_file_does_not_crash_the_finish(tmp_path: Path) -> None:
    """A 400-term expression pytest runs fine once raised RecursionError out of the
    guard's walk (``ast.unparse``), and ``session.run()`` with it."""
    root = _workspace(tmp_path, TESTS + LONG)
    session = _honest(root)
    driven = _drive(session)
    assert _exit(session, 0) == 1 and _exit(session, 2) == 0  # pytest runs the file fine
    assert driven.error is None, repr(driven.error)
    _assert_finished(session)


@needs_sed
def test_a_test_dropped_beside_a_long_expression_is_refused(tmp_path: Path) -> None:
    root = _workspace(tmp_path, TESTS + LONG)
    (root / "test_other.py").write_text("def test_other():\n    assert True\n")
    session = _session(
        root,
        [
            _run(FAST),
            _run("sed -i 's/def test_add/def check_add/' test_calc.py"),
            _run(FAST),
            _finish(),
            _finish(),
        ],
    )
    driven = _drive(session)
    assert driven.error is None, repr(driven.error)
    _assert_refused(session)


def test_a_big_test_file_is_parsed_off_the_loop_at_the_finish(tmp_path: Path) -> None:
    """A 20,000-line test data file (1.2 MB): the verdict is made in the worker thread
    (``FinishGuard.settle``), so the check on the loop only reads it. The parse itself
    holds the GIL (one C call, as ``compile`` does: 0.6-0.8 s for this file here, against
    1.3-2.3 s when the check parsed on the loop and unparsed every assignment); that limit
    is documented (docs/guarantees.md), not timed here."""
    root = _workspace(tmp_path, TESTS + "\n\n" + _data_lines(20_000) + "\n")
    session = _honest(root)
    driven = _drive(session)
    assert driven.error is None
    _assert_finished(session)  # the guard's verdict holds: an honest fix finishes
    assert driven.check < FROZEN, driven.check  # FinishGuard.check parses nothing


GENERATE = (
    "import pathlib\n"
    "d = pathlib.Path('gen')\n"
    "d.mkdir()\n"
    "for i in range(2000):\n"
    "    body = ''.join(f'def test_add_{i}_{j}():\\n    assert {j} + 1 == {j + 1}\\n\\n\\n'"
    " for j in range(6))\n"
    "    (d / f'test_g{i:04}.py').write_text(body)\n"
)


@needs_sed
def test_two_thousand_new_test_files_do_not_freeze_the_loop(tmp_path: Path) -> None:
    """test_add dropped, and a script made 2,000 new test files whose text holds 'test_add'
    (test_add_<i>_<j>): each is read and parsed for a move, in the worker thread."""
    root = _workspace(tmp_path)
    (root / "gen.py").write_text(GENERATE)
    session = _session(
        root,
        [
            _run(FAST),
            _run(f"{PYTHON} gen.py && sed -i 's/def test_add/def check_add/' test_calc.py"),
            _run(f"{FAST} test_calc.py"),
            _finish(),
            _finish(),
        ],
    )
    driven = _drive(session)
    assert len(list((root / "gen").iterdir())) == 2_000
    assert driven.error is None
    _assert_refused(session)  # the verdict holds
    assert driven.check < FROZEN and driven.gap < FROZEN, (driven.check, driven.gap)


PARAMETRIZED = (
    "import pytest\nfrom calc import add\n\n\n"
    "@pytest.mark.parametrize('n', range(2000))\n"
    "def test_many(n):\n    assert add(n, 1) == n + 1\n"
)


def test_two_thousand_failing_cases_keep_the_loop_turning(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    (root / "test_many.py").write_text(PARAMETRIZED)
    session = _session(root, [_run(f"{FAST} --tb=line"), _fix(), _run(FAST), _finish(), _finish()])
    driven = _drive(session)
    assert "2001 failed" in _output(session, 0)
    assert driven.error is None
    _assert_finished(session)
    assert driven.check < FROZEN and driven.gap < FROZEN, (driven.check, driven.gap)


# -- 2. odd inputs -------------------------------------------------------------------------


def test_a_parameter_id_with_double_colons_is_no_false_refusal(tmp_path: Path) -> None:
    root = _workspace(
        tmp_path,
        "import pytest\nfrom calc import add\n\n\n"
        "@pytest.mark.parametrize('key', ['a::b'])\n"
        "def test_p(key):\n    assert add(2, 2) == 4\n",
    )
    session = _honest(root)
    driven = _drive(session)
    assert "test_calc.py::test_p[a::b]" in session.guards.finish.seen_failing
    assert driven.error is None
    _assert_finished(session)


def test_a_parameter_id_with_a_bracket_dropped_is_refused(tmp_path: Path) -> None:
    root = _workspace(
        tmp_path,
        TESTS + "\n\nimport pytest\n\n\n@pytest.mark.parametrize('key', ['x]y'])\n"
        "def test_p(key):\n    assert add(2, 2) == 4\n",
    )
    drop = (
        f"{PYTHON} -c \"import pathlib; p = pathlib.Path('test_calc.py'); "
        "p.write_text(p.read_text().split('import pytest')[0])\""
    )
    session = _session(root, [_run(FAST), _fix(), _run(drop), _run(FAST), _finish(), _finish()])
    driven = _drive(session)
    assert "test_p[x]y]" in _output(session, 0) and _exit(session, 3) == 0
    assert "def test_p" not in (root / "test_calc.py").read_text()
    assert driven.error is None
    _assert_refused(session, "test_calc.py::test_p[x]y]")


@needs_sed
def test_a_unicode_test_file_name_dropped_is_refused(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    (root / "test_calc.py").rename(root / "test_çalc_é.py")
    session = _session(
        root,
        [
            _run(FAST),
            _run("sed -i 's/def test_add/def check_add/' test_çalc_é.py"),
            _run(FAST),
            _finish(),
            _finish(),
        ],
    )
    driven = _drive(session)
    assert driven.error is None and driven.gap < FROZEN
    _assert_refused(session, "test_çalc_é.py::test_add")


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
@pytest.mark.parametrize(
    "swap",
    [
        "ln -sf /dev/zero test_calc.py",
        "mkfifo pipe && ln -sf pipe test_calc.py",
        "rm test_calc.py && mkfifo test_calc.py",
    ],
    ids=["link to /dev/zero", "link to a FIFO in the workspace", "a FIFO"],
)
def test_a_test_file_swapped_for_an_endless_or_blocking_file_does_not_hang(
    tmp_path: Path, swap: str
) -> None:
    if "mkfifo" in swap and shutil.which("mkfifo") is None:
        pytest.skip("needs mkfifo")
    root = _workspace(tmp_path)
    (root / "test_other.py").write_text("def test_other():\n    assert True\n")
    session = _session(
        root, [_run(FAST), _run(swap), _run(f"{FAST} test_other.py"), _finish(), _finish()]
    )
    start = time.perf_counter()
    driven = _drive(session)
    assert time.perf_counter() - start < 30
    assert driven.error is None and driven.gap < FROZEN, (driven.error, driven.gap)
    assert _exit(session, 2) == 0
    refusals = _finish_refusals(session)
    assert refusals and "test_calc.py::test_add" in refusals[0]
    assert "no longer reads as a Python test file" in refusals[0]


GROW = (
    "import os, time\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    with open('test_calc.py', 'a') as f:\n"
    "        end = time.time() + 4\n"
    "        while time.time() < end and f.tell() < 12_000_000:\n"
    "            f.write('# ' + 'x' * 4000 + '\\n')\n"
    "            f.flush()\n"
    "            time.sleep(0.001)\n"
    "    os._exit(0)\n"
)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_test_file_growing_while_read_does_not_hang(tmp_path: Path) -> None:
    """A process left running appends to the test file (to 12 MB, past the 8 MB read cap)
    while the session runs the tests, reads it and finishes."""
    root = _workspace(tmp_path)
    (root / "grow.py").write_text(GROW)
    session = _honest(root, _run(f"{PYTHON} grow.py"))
    start = time.perf_counter()
    driven = _drive(session)
    assert time.perf_counter() - start < 30
    assert driven.error is None and driven.gap < FROZEN, (driven.error, driven.gap)
    assert session.end_reason in {"finished", "error"}
    assert (root / "calc.py").read_text() == FIXED


# -- 3. false refusals -----------------------------------------------------------------------


@needs_sed
def test_a_test_class_renamed_with_its_tests_as_the_task_asks(tmp_path: Path) -> None:
    root = _workspace(
        tmp_path,
        "from calc import add\n\n\nclass TestCalc:\n"
        "    def test_add(self):\n        assert add(2, 2) == 4\n",
    )
    session = _session(
        root,
        [
            _run(FAST),
            _fix(),
            _run(
                "sed -i -e 's/TestCalc/TestArithmetic/' -e 's/test_add/test_addition/' test_calc.py"
            ),
            _run(FAST),
            _finish(),
            _finish(),
        ],
        task="Fix add, and rename the class TestCalc to TestArithmetic and its test_add to "
        "test_addition.",
    )
    driven = _drive(session)
    assert driven.error is None
    _assert_finished(session)


@needs_sed
def test_a_test_calling_a_method_named_skip_is_no_false_refusal(tmp_path: Path) -> None:
    root = tmp_path
    (root / "calc.py").write_text(CALC)
    (root / "reader.py").write_text(
        "class Reader:\n    def __init__(self, s):\n        self.s, self.i = s, 0\n\n"
        "    def skip(self, n):\n        self.i += n\n\n"
        "    def read(self):\n        return self.s[self.i]\n"
    )
    (root / "test_reader.py").write_text(
        "from reader import Reader\n\n\ndef test_read():\n"
        "    r = Reader('ab')\n    assert r.read() == 'b'\n"
    )
    correct = (
        "sed -i \"s/    r = Reader('ab')/    r = Reader('ab')\\n    r.skip(1)/\" test_reader.py"
    )
    session = _session(
        root,
        [_run(FAST), _run(correct), _run(FAST), _finish(), _finish()],
        task="test_read fails: the test forgot to move past the first character; correct it",
    )
    driven = _drive(session)
    assert "r.skip(1)" in (root / "test_reader.py").read_text()
    assert _exit(session, 0) == 1 and _exit(session, 2) == 0
    assert driven.error is None
    _assert_finished(session)
