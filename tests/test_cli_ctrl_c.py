"""Ctrl-C in ``grinta run`` is never lost (``terminal._CtrlC``).

A SIGINT that lands in code which swallows exceptions (a finalizer, a library that
reports "Exception ignored in ...") must still stop the session: CI once saw one land
in pydantic's schema set-up, and ``grinta run`` waited on for its stalled model call.
"""

from __future__ import annotations

import asyncio
import signal
import time

from grinta_jupyter import terminal


class _Session:
    """What ``_run_until_done`` asks of a session: whether it ended, and to stop it."""

    def __init__(self) -> None:
        self.done = False
        self.stopped: list[str] = []

    def stop(self, reason: str) -> None:
        self.stopped.append(reason)
        self.done = True


async def _swallows_ctrl_c_then_waits() -> None:
    try:
        signal.raise_signal(signal.SIGINT)
        time.sleep(0.01)  # the handler runs here, and its KeyboardInterrupt is swallowed
    except KeyboardInterrupt:
        pass
    await asyncio.sleep(30)  # the model call that never answers


def test_a_swallowed_ctrl_c_still_stops_the_session() -> None:
    session = _Session()
    start = time.monotonic()
    finished = terminal._run_until_done(session, _swallows_ctrl_c_then_waits())  # type: ignore[arg-type]
    assert finished is False and session.stopped == [terminal.INTERRUPTED]
    assert time.monotonic() - start < 5
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


def test_a_session_that_ends_leaves_no_interrupt_behind() -> None:
    async def quick() -> None:
        await asyncio.sleep(0.5)  # a few ticks of the backstop

    session = _Session()
    assert terminal._run_until_done(session, quick()) is True  # type: ignore[arg-type]
    assert session.stopped == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
