"""Automatic garbage collection paused, by any number of grinta's threads at once.

``gc.disable()`` and ``gc.enable()`` switch one flag for the whole interpreter. Two threads
that each remember the flag, clear it and put back what they remembered can leave it
cleared for good: the second reads it after the first cleared it, the first puts it back,
then the second clears it again and, having seen it cleared, never sets it. So grinta
counts its pauses: the first one remembers the flag and clears it, the last one puts it
back. Code outside grinta that switches the flag meanwhile is left to do so.

The warming after ``%load_ext`` pauses only the full passes (``full_passes_paused``).

A process forked meanwhile (``multiprocessing``, a data loader's workers) has only the
thread that forked: the pauses of the others would never end there, and the child would
run without collection, or without full passes, for life. So in a child only the forking
thread's pauses count, and the lock starts afresh (another thread may have held it at the
fork).
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
from collections.abc import Iterator

_LOCK = threading.Lock()
_pausing: dict[int, int] = {}  # thread ident -> pauses it has open
_resume = False  # whether the last pause to end turns collection back on
# The one pause of full passes open: (thread, thresholds before it, thresholds during it).
_full: tuple[int, tuple[int, ...], tuple[int, ...]] | None = None
_FULL_OFF = 1_000_000_000  # a third threshold no count of passes reaches


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No automatic garbage collection inside (``gc.collect()`` still collects)."""
    global _resume
    me = threading.get_ident()
    with _LOCK:
        if not _pausing:
            _resume = gc.isenabled()
            gc.disable()
        _pausing[me] = _pausing.get(me, 0) + 1
    try:
        yield
    finally:
        with _LOCK:
            _pausing[me] -= 1
            if not _pausing[me]:
                del _pausing[me]
            if not _pausing and _resume:
                gc.enable()


@contextlib.contextmanager
def full_passes_paused() -> Iterator[None]:
    """No full garbage collection inside; young objects are still collected as usual.

    For the warming's imports (seconds): importing litellm creates about a million objects
    that live as long as the kernel, each full pass walks all of them, and the import would
    start a few, together about a tenth of its time. The first full pass after the pause
    walks the heap once. Thresholds someone else set meanwhile are left as they are.
    """
    global _full
    saved = gc.get_threshold()
    during = (*saved[:2], _FULL_OFF)
    gc.set_threshold(*during)
    _full = (threading.get_ident(), saved, during)
    try:
        yield
    finally:
        _full = None
        if gc.get_threshold() == during:
            gc.set_threshold(*saved)


def _before_fork() -> None:
    _LOCK.acquire()  # the count and the flag agree at the fork


def _after_fork_in_parent() -> None:
    _LOCK.release()


def _after_fork_in_child() -> None:
    global _LOCK, _full
    _LOCK = threading.Lock()
    me = threading.get_ident()
    if _full is not None and _full[0] != me:
        _, saved, during = _full
        _full = None
        if gc.get_threshold() == during:
            gc.set_threshold(*saved)
    gone = [ident for ident in _pausing if ident != me]
    for ident in gone:
        del _pausing[ident]
    if gone and not _pausing and _resume:
        gc.enable()


os.register_at_fork(
    before=_before_fork,
    after_in_parent=_after_fork_in_parent,
    after_in_child=_after_fork_in_child,
)
