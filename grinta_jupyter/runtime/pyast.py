"""Parsing and compiling Python from any thread, beside the kernel's.

CPython 3.11 before 3.11.8 counts the depth of the AST it is turning into Python objects
in state the whole interpreter shares (gh-106905). When two threads build trees at once
(``ast.parse``, or ``compile`` with ``PyCF_ONLY_AST``) and a thread switch falls inside
one of them (a garbage collection running a finalizer is enough), the count goes wrong
and one of them fails with ``SystemError: AST constructor recursion depth mismatch``.
The session, the symbol index and the checks run in threads of their own, beside the
kernel's, so every tree grinta builds is built here: one thread at a time, with the
automatic garbage collector paused. Turning a tree into objects runs no Python code of
its own, so without a collection (whose finalizers would) the thread never lets go of
the interpreter while it counts, and no other thread can reset the count under it. A
tree that still collided (someone turned the collector back on meanwhile) is built
again. Compiling a tree back (``compile(tree, ...)``) does not share that state. The
kernel's own cell parses are built the same way once the extension is loaded
(``share_with_the_kernel``): otherwise they, not grinta's, would be the ones to fail.

Hiding the warnings a compile raises (an invalid escape) takes ``catch_warnings``, which
swaps the interpreter's one list of filters and puts it back on the way out. Two threads
doing it at once can put back each other's list, and leave every warning in the kernel
ignored for good, so grinta's threads do it one at a time too (``quietly``).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import os
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from grinta_jupyter.runtime import collector

# Held while a tree is built: by grinta's threads and by the kernel's cell parses. Only for
# the build, so a cell waits for nothing longer.
_BUILDING = threading.RLock()
# Held while grinta's threads swap the warning filters (``quietly``) or parse (so a parse's
# warnings are not lost to another thread's "ignore"). Taken before ``_BUILDING``, never after.
_FILTERS = threading.RLock()


def _fresh_locks() -> None:
    """In a forked child: a thread that held a lock at the fork is not there to release it."""
    global _BUILDING, _FILTERS
    _BUILDING, _FILTERS = threading.RLock(), threading.RLock()


os.register_at_fork(after_in_child=_fresh_locks)
_MISMATCH = "recursion depth mismatch"
# A tree is built at most this many times. Only a collection inside the build lets another
# thread in; the bound keeps a count that stays wrong from looping for ever.
_ATTEMPTS = 10


def parse(source: str, filename: str = "<unknown>", flags: int = 0) -> ast.Module:
    """``source`` as a syntax tree (``compile`` with ``flags | PyCF_ONLY_AST``); bad source
    raises what ``ast.parse`` raises, and warnings go where the caller sends them."""
    attempt = 1
    while True:
        try:
            with _FILTERS, _BUILDING, collector.paused():
                tree = compile(
                    source, filename, "exec", flags | ast.PyCF_ONLY_AST, dont_inherit=True
                )
        except SystemError as error:
            if _MISMATCH not in str(error) or attempt == _ATTEMPTS:
                raise
            attempt += 1
            continue
        assert isinstance(tree, ast.Module)
        return tree


def share_with_the_kernel(shell: Any) -> None:
    """The kernel's own cell parses (IPython's ``compile.ast_parse``) built the grinta way.

    A cell the kernel parses while one of grinta's threads builds a tree would otherwise be
    the one to fail: grinta's build resets the shared count under it, and IPython reports
    the ``SystemError`` as the cell's failure. Building under the same lock, with the
    collector paused, costs a cell microseconds, or the wait for one tree grinta is building
    (never for a compile or a check grinta runs). Cells run without the shell's compiler
    (``%run file.ipy``, which asks for a fresh ``compiler_class()``) get a subclass that
    builds the same way. Done once per shell; what a shell lacks or refuses is left as is."""
    compiler = getattr(shell, "compile", None)
    parse_cell = getattr(compiler, "ast_parse", None)
    if callable(parse_cell) and not getattr(parse_cell, "grinta_shared", False):
        with contextlib.suppress(AttributeError, TypeError):
            compiler.ast_parse = _built_here(parse_cell)  # type: ignore[union-attr]
    kind = getattr(shell, "compiler_class", None)
    if (
        isinstance(kind, type)
        and callable(getattr(kind, "ast_parse", None))
        and not getattr(kind, "grinta_shared", False)
    ):
        shared = type(
            kind.__name__,
            (kind,),
            {
                "ast_parse": _built_here(kind.ast_parse),  # type: ignore[attr-defined]
                "grinta_shared": True,
                "__module__": kind.__module__,
                "__qualname__": kind.__qualname__,
            },
        )
        with contextlib.suppress(Exception):  # a configured trait may refuse it
            shell.compiler_class = shared


def _built_here(parse_cell: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(parse_cell)
    def ast_parse(*args: Any, **kwargs: Any) -> Any:
        with _BUILDING, collector.paused():
            return parse_cell(*args, **kwargs)

    ast_parse.grinta_shared = True  # type: ignore[attr-defined]
    return ast_parse


@contextlib.contextmanager
def quietly() -> Iterator[None]:
    """Warnings ignored inside, and no other grinta thread parsing or swapping the
    filters meanwhile. Keep the block to the compile or parse it hides."""
    with _FILTERS, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
