"""Stepping a session from synchronous code: manual mode, magics, scripts.

``Stepper(session).advance()`` pulls the session's update stream until
there is something for a person to look at (a proposal that needs a
decision, a step's outcome, or the end) and returns what it pulled. The
stream runs on the process's one background loop (agent/blocking.py): the
same loop for every call, however many steps.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from grinta_jupyter.agent.blocking import on_background
from grinta_jupyter.agent.updates import NeedsDecision, SessionEnded, StepObserved, Update

if TYPE_CHECKING:
    from grinta_jupyter.agent.session import Session

# Where advance() stops: something a person may want to see or answer.
STOPS = (NeedsDecision, StepObserved, SessionEnded)


class Stepper:
    """Advances one session a stop at a time, from code that cannot ``await``."""

    def __init__(self, session: Session):
        self.session = session
        self._stream: AsyncIterator[Update] | None = None
        self._ended = False
        self._asked: tuple[int, int] | None = None  # the proposal last returned as NeedsDecision
        self._lock = threading.Lock()  # one pull at a time, whichever thread asks

    def advance(self) -> list[Update]:
        with self._lock:
            return self._advance()

    def _advance(self) -> list[Update]:
        """Pull updates until the next stop.

        Nothing, at once, while the proposal already returned as ``NeedsDecision``
        still waits: the stream would wait for a decision that only this thread can give.
        An edited proposal is a new one, and is returned.
        """
        pending = self.session.pending
        if self._ended or (
            self.session.waiting
            and pending is not None
            and (pending.number, pending.proposal.id) == self._asked
        ):
            return []
        return on_background(self._pull())

    async def _pull(self) -> list[Update]:
        if self._stream is None:  # made on the background loop, where it will always run
            self._stream = self.session.updates()
        pulled: list[Update] = []
        while True:
            try:
                update = await anext(self._stream)
            except StopAsyncIteration:
                self._ended = True
                return pulled
            except BaseException:
                self._stream = None  # an interrupted stream is closed: the next call starts anew
                raise
            pulled.append(update)
            if isinstance(update, NeedsDecision):
                self._asked = (update.step.number, update.step.proposal.id)
            if isinstance(update, SessionEnded):
                self._ended = True
            if isinstance(update, STOPS) and not (
                (isinstance(update, StepObserved) and self.session.done)
                or (isinstance(update, NeedsDecision) and not self.session.waiting)
            ):
                return pulled  # (a step that ended the session stops at its SessionEnded)
