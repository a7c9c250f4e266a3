"""A thread that ticks every 10 ms while a test runs something: the gaps between its ticks
show whether that something held the interpreter's lock (a frozen kernel: no widget, no
Stop button) instead of leaving it to other threads."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator


@contextlib.contextmanager
def tick_gaps() -> Iterator[list[float]]:
    """Seconds between consecutive ticks, filled while the ``with`` block runs."""
    gaps: list[float] = []
    done = threading.Event()

    def tick() -> None:
        last = time.monotonic()
        while not done.is_set():
            time.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        yield gaps
    finally:
        done.set()
        ticker.join()
