"""A huge Python file is compiled in a process of its own (``validation.ASIDE_MIN_CHARS``).

``compile`` is one C call that holds the interpreter's lock throughout: a whole-file check of
a file of a few megabytes stopped every other thread of the kernel, its event loop with the
Stop button among them, for seconds. The answers must stay what ``compile`` here says."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime import validation
from grinta_jupyter.runtime.validation import ASIDE_MIN_CHARS, first_error
from tests.ticker import tick_gaps


def _module(defs: int) -> str:
    return "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(defs))


BIG = _module(60_000)  # about 2.2 MB: a compile here holds the lock for about a second


@pytest.fixture(autouse=True)
def _cold() -> None:
    validation.forget()  # every check below compiles, not a cached answer


def _here(text: str) -> tuple[int, str] | None:
    """What ``compile`` in this process says: the reference."""
    try:
        compile(text, "big.py", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return exc.lineno or 1, exc.msg
    return None


@pytest.mark.parametrize(
    "tail",
    [
        "",
        "def broken(:\n    pass\n",
        "x = (1,\n",
        "    return 1\n",  # an indent where none can be
        "def g():\n\treturn 1\n        return 2\n",  # tabs and spaces mixed
        "f'{'\n",
        "x = 1 +\n",
        "async = 1\n",
        "nonlocal y\n",
    ],
)
def test_a_huge_file_gets_the_answer_compile_gives(tail: str) -> None:
    text = BIG + tail
    assert len(text) >= ASIDE_MIN_CHARS
    assert first_error("big.py", text, "python") == _here(text)


def test_a_huge_file_declaring_its_coding_is_read_by_it() -> None:
    """Python reads a file by its coding declaration: ``# coding: ascii`` and an "é" is an
    error there, while the same text in UTF-8 compiles."""
    text = "# -*- coding: ascii -*-\n" + BIG + "s = 'é'\n"
    error = first_error("big.py", text, "python")
    assert error is not None and "ascii" in error[1], error
    with pytest.raises(SyntaxError) as here:
        compile(text.encode("utf-8"), "big.py", "exec", dont_inherit=True)
    assert error == (here.value.lineno or 1, here.value.msg)
    assert first_error("big.py", BIG + "s = 'é'\n", "python") is None


def test_a_huge_check_leaves_the_interpreter_to_other_threads() -> None:
    """A thread ticking every 10 ms keeps ticking while a huge file is checked."""
    with tick_gaps() as gaps:
        started = time.monotonic()
        assert first_error("big.py", BIG + BIG.replace("def f", "def g"), "python") is None
        took = time.monotonic() - started
    assert took > 0.3, f"too quick to tell ({took:.2f} s): make the text larger"
    assert max(gaps) < 0.25, f"other threads stood still for {max(gaps):.2f} s of {took:.2f} s"


def test_without_a_process_of_its_own_the_check_is_made_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No interpreter to start (a broken ``sys.executable``): the same answers, found here.
    (Compiled whole: the halves helper, started from that path now, would stay off for every
    later test of this process.)"""
    from grinta_jupyter.runtime import halves

    monkeypatch.setattr(halves, "SPLIT_MIN_CHARS", 10**12)
    monkeypatch.setattr(sys, "executable", "/nonexistent/python3")
    assert first_error("big.py", BIG, "python") is None
    broken = BIG + "def broken(:\n"
    assert first_error("big.py", broken, "python") == _here(broken)


def test_the_digit_limit_of_this_interpreter_holds_there_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An integer literal longer than the interpreter's digit limit does not compile; the
    process of its own is given this one's limit, whatever it is now."""
    literal = "x = " + "7" * 5_000 + "\n"
    before = sys.get_int_max_str_digits()
    try:
        sys.set_int_max_str_digits(10_000)
        assert first_error("big.py", BIG + literal, "python") is None
        validation.forget()
        sys.set_int_max_str_digits(4_300)
        assert first_error("big.py", BIG + literal, "python") == _here(BIG + literal)
        assert first_error("big.py", BIG + literal, "python") is not None
    finally:
        sys.set_int_max_str_digits(before)


def test_an_edit_that_breaks_a_huge_file_is_refused_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    (tmp_path / "big.py").write_text(BIG)
    rt = Runtime(tmp_path)
    p = rt.propose(
        "replace_string",
        {"path": "big.py", "old_string": "return x + 7\n", "new_string": "return (x + 7\n"},
    )
    assert not p.ok and p.error is not None and p.error.code == "SYNTAX_ERROR"
    assert (tmp_path / "big.py").read_text() == BIG
    good = rt.propose(
        "replace_string",
        {"path": "big.py", "old_string": "return x + 7\n", "new_string": "return x + 77\n"},
    )
    assert good.ok, good.error
    assert rt.commit(good).ok
    assert "return x + 77\n" in (tmp_path / "big.py").read_text()
