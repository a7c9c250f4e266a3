"""Running a session's coroutines from synchronous code, in a kernel or not.

A kernel's thread already runs an event loop (the one executing the cell),
so synchronous code there cannot wait on a coroutine of its own loop. Such
work goes to one background loop, started once per process in a daemon
thread and kept: a session stepped from magics or scripts always runs on
that same loop, with no loop made per step.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_lock = threading.Lock()


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop running in this thread, or None."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def background_loop() -> asyncio.AbstractEventLoop:
    """The process's background event loop (started on first use)."""
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="grinta-loop", daemon=True)
            thread.start()
            _loop = loop
        return _loop


def on_background(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the background loop and wait for it; Ctrl-C (a kernel interrupt)
    cancels it there before the KeyboardInterrupt goes on."""
    future = asyncio.run_coroutine_threadsafe(coro, background_loop())
    try:
        return future.result()
    except KeyboardInterrupt:
        future.cancel()
        raise


def run_blocking(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)``, or, when this thread already runs an event loop (a Jupyter
    kernel executing a cell), the same on the background loop."""
    if running_loop() is None:
        return asyncio.run(coro)
    return on_background(coro)
