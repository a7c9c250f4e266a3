"""A large Python file's compile started ahead (``halves.ahead``, ``validation.compiling_ahead``).

A write proposal sends the second half of a large new Python text to the helper process
before it makes the diff and runs the content guards, so the helper compiles beside them.
What must hold: the half is out before the diff is made; answers are exactly the whole
compile's; a half nobody asked about is never read as the next caller's answer; another
thread never takes this thread's half; an error inside the block leaves nothing pending;
nothing is sent for a text already answered, a text the region check proves, or another
language.
"""

from __future__ import annotations

import sysconfig
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime import halves, regions, validation
from grinta_jupyter.tools import facade

STDLIB = Path(sysconfig.get_paths()["stdlib"])
MODULE = (STDLIB / "tarfile.py").read_text(encoding="utf-8")  # about 3,000 lines


@pytest.fixture(autouse=True)
def _fresh_helper() -> Iterator[None]:
    halves._HELPER.close()
    halves._HELPER = halves._Helper()
    validation.forget()
    yield
    halves._HELPER.close()


def _helper_up() -> None:
    """Start the helper and wait until it has said which Python it runs."""
    for _ in range(100):
        if halves.compiles(MODULE):
            return
        time.sleep(0.05)
    pytest.fail("the helper never came up")


def _whole_ok(text: str) -> bool:
    try:
        compile(text, "<whole>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def _cut_ahead(text: str) -> int:
    cut = halves._cut(text, halves._SHARE_AHEAD)
    assert cut is not None
    return cut


def _broken_after_cut(text: str) -> str:
    """``text`` with an error only the helper's half sees (after the cut ``ahead`` makes)."""
    cut = _cut_ahead(text)
    end = text.index("\n\n", cut + 200)
    broken = text[:end] + "\n\ndef broken(:\n    pass\n" + text[end:]
    assert _cut_ahead(broken) == cut, "the cut moved"
    return broken


def test_a_create_sends_the_half_before_its_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _helper_up()
    seen: list[tuple[bool, bool]] = []
    diff = facade.unified_diff

    def watched(*args: Any, **kwargs: Any) -> Any:
        started = getattr(halves._AHEAD, "started", None)
        seen.append((started is not None, halves._HELPER._lock.locked()))
        return diff(*args, **kwargs)

    monkeypatch.setattr(facade, "unified_diff", watched)
    rt = Runtime(tmp_path)
    proposal = rt.propose("create", {"path": "pkg/big.py", "content": MODULE})
    assert proposal.error is None, proposal.error
    assert seen == [(True, True)], "the half was not out while the diff was made"
    # Taken by the syntax check, and the helper given back when the check ended.
    assert getattr(halves._AHEAD, "started", None) is None
    assert not halves._HELPER._lock.locked()
    assert rt.commit(proposal).ok
    assert (tmp_path / "pkg/big.py").read_text(encoding="utf-8") == MODULE


def test_an_error_in_the_helpers_half_is_refused_at_its_line(tmp_path: Path) -> None:
    _helper_up()
    broken = _broken_after_cut(MODULE)
    try:
        compile(broken, "big.py", "exec", dont_inherit=True)
    except SyntaxError as exc:
        line = exc.lineno
    else:
        pytest.fail("the broken text compiles")
    rt = Runtime(tmp_path)
    proposal = rt.propose("create", {"path": "big.py", "content": broken})
    assert proposal.error is not None and proposal.error.code == "SYNTAX_ERROR"
    assert proposal.error.line == line
    assert not (tmp_path / "big.py").exists()
    # The same text, fixed, is taken.
    assert rt.propose("create", {"path": "big.py", "content": MODULE}).error is None


@pytest.mark.parametrize(
    "case", ["valid", "error before the cut", "error after the cut", "global after", "future"]
)
def test_answers_under_ahead_are_the_whole_compiles(case: str) -> None:
    _helper_up()
    text = MODULE
    cut = _cut_ahead(text)
    if case == "error before the cut":
        text = text[:200] + "\nx = (\n" + text[200:]
    elif case == "error after the cut":
        text = _broken_after_cut(text)
    elif case == "global after":
        # The first half assigns a name at module level; the second declares it global in
        # the module's scope: fine alone, an error whole ("assigned to before global").
        name = "ahead_name"
        text = f"{name} = 1\n" + text + f"\n\nglobal {name}\n"
    elif case == "future":
        text = text[:cut] + "from __future__ import annotations\n" + text[cut:]
    with halves.ahead(text):
        answer = halves.compiles(text)
    assert _whole_ok(text) is (case == "valid"), "the case is not what it says"
    assert answer is (case == "valid"), case


def test_a_half_nobody_asked_about_is_not_the_next_callers_answer() -> None:
    _helper_up()
    broken = _broken_after_cut(MODULE)
    with halves.ahead(MODULE):
        pass  # its answer ("compiles") is left unread
    # A stale "1" read here would prove the broken text.
    assert halves.compiles(broken) is False
    with halves.ahead(broken):
        pass
    assert halves.compiles(MODULE) is True


def test_another_thread_neither_takes_the_half_nor_waits_for_it() -> None:
    _helper_up()
    answers: list[bool] = []
    with halves.ahead(MODULE):
        worker = threading.Thread(target=lambda: answers.append(halves.compiles(MODULE)))
        worker.start()
        worker.join(10)
        # Busy helper: that thread was sent to the whole compile, and this half is still out.
        assert answers == [False]
        assert getattr(halves._AHEAD, "started", None) is not None
        assert halves.compiles(MODULE) is True


def test_an_error_inside_the_block_leaves_nothing_pending() -> None:
    _helper_up()
    broken = _broken_after_cut(MODULE)
    with pytest.raises(KeyError), halves.ahead(MODULE):
        raise KeyError("boom")
    assert getattr(halves._AHEAD, "started", None) is None
    assert not halves._HELPER._lock.locked()
    assert halves.compiles(broken) is False
    _helper_up()  # a stopped helper is started again
    assert halves.compiles(broken) is False


def test_nothing_is_sent_where_no_whole_compile_will_be_made(tmp_path: Path) -> None:
    _helper_up()

    def sends(changes: list[tuple[str, str | None, str]]) -> bool:
        with validation.compiling_ahead(changes):
            return getattr(halves._AHEAD, "started", None) is not None

    assert sends([("notes.txt", None, MODULE), ("big.py", None, MODULE)])
    assert not sends([("big.txt", None, MODULE)])
    assert not sends([("small.py", None, "x = 1\n")])
    validation.first_error("big.py", MODULE)  # answered: the check will not compile again
    assert not sends([("big.py", None, MODULE)])
    # An edit of a file whose layout is known, inside one function: the region check proves
    # it, so no whole compile is made.
    regions.learn("edit.py", MODULE)
    target = "    def _get_filtered_attrs(self, members, ignore):"
    if target not in MODULE:  # another Python's tarfile: any method line will do
        target = next(line for line in MODULE.splitlines() if line.startswith("    def "))
    edited = MODULE.replace(target, target + "  # edited", 1)
    assert not sends([("edit.py", MODULE, edited)])
    assert validation.check_syntax("edit.py", MODULE, edited) is None
