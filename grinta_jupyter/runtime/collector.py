"""Automatic garbage collection paused, by any number of grinta's threads at once.

``gc.disable()`` and ``gc.enable()`` switch one flag for the whole interpreter. Two threads
that each remember the flag, clear it and put back what they remembered can leave it
cleared for good: the second reads it after the first cleared it, the first puts it back,
then the second clears it again and, having seen it cleared, never sets it. So grinta
counts its pauses: the first one remembers the flag and clears it, the last one puts it
back. Code outside grinta that switches the flag meanwhile is left to do so.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_LOCK = threading.Lock()
_pauses = 0
_resume = False  # whether the last pause to end turns collection back on


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No automatic garbage collection inside (``gc.collect()`` still collects)."""
    global _pauses, _resume
    with _LOCK:
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _LOCK:
            _pauses -= 1
            if _pauses == 0 and _resume:
                gc.enable()
