"""Points where a background re-index gives way to a tool call under way.

A commit leaves the written files' re-index to a thread of its own (``tools/facade.py``,
``_Reindexer``). Its steps (a parse, the definitions query, building the symbols) each hold
the interpreter's lock for milliseconds, so a re-index already running when the next tool
call starts took that call's time. The re-index's thread sets a hook (``pausing``), and the
code it runs calls ``pause`` between its steps: the hook waits there while a call is under
way. Elsewhere (any other thread, a worker process) ``pause`` does nothing.

A pause point must never be reached holding a lock a tool call may want (the symbol index
parses outside its lock for this: ``code/index.py``, ``refresh``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

_local = threading.local()


def pause() -> None:
    """Give way here if this thread asked to (``pausing``); else return at once."""
    hook: Callable[[], None] | None = getattr(_local, "hook", None)
    if hook is not None:
        hook()


@contextlib.contextmanager
def pausing(hook: Callable[[], None]) -> Iterator[None]:
    """Call ``hook`` at every ``pause`` this thread reaches inside the block."""
    before = getattr(_local, "hook", None)
    _local.hook = hook
    try:
        yield
    finally:
        _local.hook = before
