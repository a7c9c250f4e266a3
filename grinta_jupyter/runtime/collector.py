"""Automatic garbage collection paused, by any number of grinta's threads at once.

``gc.disable()`` and ``gc.enable()`` switch one flag for the whole interpreter. Two threads
that each remember the flag, clear it and put back what they remembered can leave it
cleared for good: the second reads it after the first cleared it, the first puts it back,
then the second clears it again and, having seen it cleared, never sets it. So grinta
counts its pauses: the first one remembers the flag and clears it, the last one puts it
back. Code outside grinta that switches the flag meanwhile is left to do so.

An interrupt (Ctrl-C in the kernel, or an exception another thread raises in this one)
can land between any two calls, and a wait for a lock can end with it. Each step of the
bookkeeping can be run again with the same outcome, so a step an interrupt cut short is
run again to its end before the interrupt goes on (``_to_the_end``).

The warming after ``%load_ext`` pauses only the full passes (``full_passes_paused``).

A process forked meanwhile (``multiprocessing``, a data loader's workers) has only the
thread that forked: the pauses of the others would never end there, and the child would
run without collection, or without full passes, for life. So in a child only the forking
thread's pauses count, and the lock starts afresh. The fork itself waits for the lock, so
it never falls inside a step.
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
from collections.abc import Callable, Iterator

# Held only for steps that allocate no object the collector tracks, so no collection (and
# no finalizer that might wait for another of grinta's locks) starts inside one.
# Re-entrant all the same: should a finalizer run inside a step and pause, it goes on.
_LOCK = threading.RLock()
_pausing: dict[object, int] = {}  # one token per open pause -> the thread that opened it
_resume: bool | None = None  # None: no pause has the flag; else whether to set it at the end
_owed = False  # the flag is still to be cleared for the pauses open now
# The one pause of full passes open: (thread, thresholds before it, thresholds during it).
_full: tuple[int, tuple[int, ...], tuple[int, ...]] | None = None
_FULL_OFF = 1_000_000_000  # a third threshold no count of passes reaches
_RUNS = 100  # a step that fails this often fails for good, not for an interrupt


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No automatic garbage collection inside (``gc.collect()`` still collects)."""
    token = object()
    try:
        _to_the_end(_begin, token)
        yield
    finally:
        _to_the_end(_end, token)


def _begin(token: object) -> None:
    global _resume, _owed
    with _LOCK:
        if _resume is None:
            _resume, _owed = gc.isenabled(), True
        _pausing[token] = threading.get_ident()
        if _owed:
            gc.disable()
            _owed = False


def _end(token: object) -> None:
    global _resume, _owed
    with _LOCK:
        _pausing.pop(token, None)
        if not _pausing and _resume is not None:
            if _resume:
                gc.enable()
            _resume, _owed = None, False


def _to_the_end(step: Callable[[object], None], token: object) -> None:
    """``step(token)`` run to its end even when an interrupt lands inside it (each step may
    run twice); the first interrupt is raised afterwards."""
    interrupted: BaseException | None = None
    for run in range(_RUNS):
        try:
            step(token)
            break
        except BaseException as error:
            if run == _RUNS - 1:
                raise
            interrupted = interrupted or error
    if interrupted is not None:
        raise interrupted


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
    full = (threading.get_ident(), saved, during)
    with _LOCK:  # a fork sees both the thresholds and what to put back, or neither
        gc.set_threshold(*during)
        _full = full
    try:
        yield
    finally:
        ours = gc.get_threshold() == during
        with _LOCK:
            _full = None
            if ours:
                gc.set_threshold(*saved)


def _before_fork() -> None:
    _LOCK.acquire()  # the count and the flag agree at the fork


def _after_fork_in_parent() -> None:
    _LOCK.release()


def _after_fork_in_child() -> None:
    global _LOCK, _full, _resume, _owed
    _LOCK = threading.RLock()
    me = threading.get_ident()
    if _full is not None and _full[0] != me:
        _, saved, during = _full
        _full = None
        if gc.get_threshold() == during:
            gc.set_threshold(*saved)
    gone = [token for token, ident in _pausing.items() if ident != me]
    for token in gone:
        del _pausing[token]
    if gone and not _pausing and _resume is not None:
        if _resume:
            gc.enable()
        _resume, _owed = None, False


os.register_at_fork(
    before=_before_fork,
    after_in_parent=_after_fork_in_parent,
    after_in_child=_after_fork_in_child,
)
