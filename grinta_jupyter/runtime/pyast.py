"""Parsing and compiling Python from any thread, beside the kernel's.

CPython 3.11 before 3.11.8 counts the depth of the AST it is turning into Python objects
in state the whole interpreter shares (gh-106905). When two threads build trees at once
(``ast.parse``, or ``compile`` with ``PyCF_ONLY_AST``) and a thread switch falls inside
one of them (a garbage collection running a finalizer is enough), the count goes wrong
and one of them fails with ``SystemError: AST constructor recursion depth mismatch``.
The session, the symbol index and the checks run in threads of their own, beside the
kernel's, so every tree grinta builds is built here: one thread at a time, and a tree
that still collided with a thread outside grinta (IPython parsing a cell) is built
again. Compiling a tree back (``compile(tree, ...)``) does not share that state.

Hiding the warnings a compile raises (an invalid escape) takes ``catch_warnings``, which
swaps the interpreter's one list of filters and puts it back on the way out. Two threads
doing it at once can put back each other's list, and leave every warning in the kernel
ignored for good, so grinta's threads do it one at a time too (``quietly``).
"""

from __future__ import annotations

import ast
import contextlib
import threading
import warnings
from collections.abc import Iterator

_LOCK = threading.RLock()  # a finalizer run inside a parse may parse
_MISMATCH = "recursion depth mismatch"
# A tree is built at most this many times. With thread switches forced every 10 us and a
# thread outside grinta parsing in a loop, half of the builds of tarfile.py collide once and
# about one in a hundred twice (tests/test_ast_threads.py); CI under load once saw three
# collisions in a row. Each collision needs a foreign parse at that very moment, so ten in a
# row do not happen; the bound only keeps a count that stays wrong from looping for ever.
_ATTEMPTS = 10


def parse(source: str, filename: str = "<unknown>", flags: int = 0) -> ast.Module:
    """``source`` as a syntax tree (``compile`` with ``flags | PyCF_ONLY_AST``); bad source
    raises what ``ast.parse`` raises, and warnings go where the caller sends them."""
    attempt = 1
    while True:
        try:
            with _LOCK:
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


@contextlib.contextmanager
def quietly() -> Iterator[None]:
    """Warnings ignored inside, and no other grinta thread parsing or swapping the
    filters meanwhile. Keep the block to the compile or parse it hides."""
    with _LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
