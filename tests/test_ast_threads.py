"""Syntax trees built in several threads at once (``runtime/pyast.py``).

On CPython 3.11.7 two threads building AST objects at once can fail one of them with
``SystemError: AST constructor recursion depth mismatch``; a thread switch inside a
parse is provoked here by garbage whose finalizer runs Python code. The session, the
symbol index and the kernel each parse in their own thread, so grinta's parses must
neither fail among themselves nor when a thread outside grinta parses beside them.
"""

from __future__ import annotations

import ast
import re
import sys
import tarfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

import grinta_jupyter
from grinta_jupyter.runtime import pyast

_BIG = Path(tarfile.__file__).read_text(encoding="utf-8")
_SMALL = "def f(x):\n    return [(a, b) for a in x for b in a]\n" * 50


class _Litter:
    """Cyclic garbage whose finalizer runs bytecode: a collection inside a parse then
    lets another thread take the interpreter."""

    def __del__(self) -> None:
        for _ in range(200):
            pass


def _litter() -> None:
    for _ in range(50):
        item = _Litter()
        item.me = item  # type: ignore[attr-defined]


@pytest.fixture
def eager_switches() -> Iterator[None]:
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def _race(
    parsers: Sequence[Callable[[], object]], until: Callable[[], bool], seconds: float
) -> None:
    """Run each parser in its own thread, over and over, until ``until()`` or ``seconds``."""
    deadline = time.monotonic() + seconds

    def loop(parse: Callable[[], object]) -> None:
        while time.monotonic() < deadline and not until():
            _litter()
            parse()

    threads = [threading.Thread(target=loop, args=(parse,)) for parse in parsers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _counting(parse: Callable[[str], object], source: str, errors: list[str]) -> Callable[[], None]:
    def run() -> None:
        try:
            parse(source)
        except SystemError as error:
            errors.append(str(error))

    return run


def test_grinta_threads_parsing_at_once_never_fail(eager_switches: None) -> None:
    errors: list[str] = []
    parses = [_counting(pyast.parse, source, errors) for source in (_BIG, _SMALL, _SMALL)]
    _race(parses, until=lambda: False, seconds=3.0)
    assert errors == []
    assert ast.dump(pyast.parse(_BIG)) == ast.dump(ast.parse(_BIG))


def test_a_parse_that_collides_with_a_foreign_thread_is_built_again(eager_switches: None) -> None:
    """A thread outside grinta (IPython parsing a cell) does not take grinta's lock; its
    own parses may fail (CPython's bug, not ours to mend), grinta's must not."""
    ours: list[str] = []
    foreign: list[str] = []
    _race(
        [_counting(pyast.parse, _BIG, ours), _counting(ast.parse, _SMALL, foreign)],
        until=lambda: len(foreign) >= 10,
        seconds=20.0,
    )
    if not foreign and sys.version_info >= (3, 11, 8):
        pytest.skip("this interpreter keeps the AST depth per thread: nothing collides")
    assert foreign, "the race was never provoked: the test proves nothing"
    assert ours == []


@pytest.mark.parametrize(
    "source", ["def f(:\n", "x = 1\0", "if x:\n  y\n    z\n", "(" * 300 + ")" * 300]
)
def test_a_bad_source_raises_what_ast_parse_raises(source: str) -> None:
    with pytest.raises(Exception) as expected:
        ast.parse(source, "bad.py")
    with pytest.raises(type(expected.value)) as caught:
        pyast.parse(source, "bad.py")
    assert str(caught.value) == str(expected.value)


def test_flags_reach_the_parser() -> None:
    source = "x = []  # type: list[int]\n"
    assert pyast.parse(source).body[0].type_comment is None  # type: ignore[attr-defined]
    typed = pyast.parse(source, flags=ast.PyCF_TYPE_COMMENTS).body[0]
    assert typed.type_comment == "list[int]"  # type: ignore[attr-defined]


def test_quiet_compiles_in_several_threads_leave_the_kernels_filters_as_they_were() -> None:
    """``catch_warnings`` swaps the one list of filters; unserialised, two threads put
    back each other's copy and every warning of the kernel stays ignored."""
    source = _BIG + '\npattern = "\\d"\n'  # an invalid escape: a warning to hide
    interval = sys.getswitchinterval()
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        before = list(warnings.filters)

        def compile_quietly() -> None:
            with pyast.quietly():
                compile(source, "quiet.py", "exec", dont_inherit=True)

        sys.setswitchinterval(1e-4)
        try:
            _race([compile_quietly] * 3, until=lambda: False, seconds=2.0)
        finally:
            sys.setswitchinterval(interval)
        assert warnings.filters == before
        with warnings.catch_warnings(record=True) as shown:
            compile(source, "loud.py", "exec", dont_inherit=True)
        assert shown, "outside quietly() the warning is shown again"


def test_every_tree_and_every_hidden_warning_goes_through_pyast() -> None:
    """A new ``ast.parse`` (or ``compile(..., PyCF_ONLY_AST)``, or ``catch_warnings``)
    elsewhere in the package would bring the races back."""
    package = Path(grinta_jupyter.__file__).parent
    raw = re.compile(r"\bast\.parse\(|PyCF_ONLY_AST|catch_warnings|simplefilter|filterwarnings")
    offenders = [
        f"{path.relative_to(package)}:{number}"
        for path in sorted(package.rglob("*.py"))
        if path.name != "pyast.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if raw.search(line.split("#", 1)[0])
    ]
    assert offenders == []
