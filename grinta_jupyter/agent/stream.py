"""How a session's updates reach every running ``updates()`` iterator.

``Listeners`` keeps one ``Listener`` per running iterator; ``publish`` puts
an update in each one's queue and wakes it. ``update_for`` says what an
event of the log means to a front end, so the stream and the log cannot
disagree.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING

from grinta_jupyter.agent.updates import (
    ContextCondensed,
    ModelTurn,
    NeedsDecision,
    Rewound,
    SessionEnded,
    SessionResumed,
    StepCommitted,
    StepObserved,
    StepProposed,
    TaskBegan,
    Update,
    UserSaid,
)
from grinta_jupyter.events import models as ev

if TYPE_CHECKING:
    from grinta_jupyter.agent.step import Step


class Listener:
    """One running ``updates()`` iterator: what it has yet to yield, and how to wake it.

    ``push`` and ``wake`` may be called from any thread (a decision typed in a
    kernel while the session runs on a background loop): the event is set on
    the loop the iterator runs on.
    """

    def __init__(self) -> None:
        self.queue: deque[Update] = deque()
        self.loop = asyncio.get_running_loop()
        self.arrived = asyncio.Event()
        # The task handling the update last yielded, while it does (the iterator waits).
        self.consumer: asyncio.Task[object] | None = None

    def push(self, update: Update) -> None:
        self.queue.append(update)
        self.wake()

    def wake(self) -> None:
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is self.loop:
            self.arrived.set()
        elif not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.arrived.set)


class Listeners:
    """The running iterators of one session."""

    def __init__(self) -> None:
        self._all: list[Listener] = []

    def __bool__(self) -> bool:
        return bool(self._all)

    @contextmanager
    def joined(self) -> Iterator[Listener]:
        """A new listener for as long as the iterator runs."""
        me = Listener()
        self._all.append(me)
        try:
            yield me
        finally:
            self._all.remove(me)

    def publish(self, update: Update) -> None:
        for listener in list(self._all):
            listener.push(update)

    def answered(self, step: Step) -> None:
        """``step`` was decided or edited here: no need to ask the consumer that did it again.

        A consumer that decides while handling an update (an edit, then an approval, at
        one prompt) has answered every question about ``step`` still in its queue. Every
        other listener keeps its own, so two front ends see the same stream.
        """
        try:
            here = asyncio.current_task()
        except RuntimeError:  # another thread: no consumer decides from there
            return
        for listener in list(self._all):
            if here is None or listener.consumer is not here:
                continue
            for update in [u for u in listener.queue if isinstance(u, NeedsDecision)]:
                if update.step is step:
                    with suppress(ValueError):  # (taken by its iterator meanwhile)
                        listener.queue.remove(update)

    def wake(self) -> None:
        """Wake every iterator (a decision was made, the driver finished)."""
        for listener in list(self._all):
            listener.wake()


def update_for(event: ev.Event, step: Step | None, summary: str | None) -> Update | None:
    """What ``event`` (of ``step``, if it belongs to one) means to a front end, if anything."""
    if isinstance(event, ev.ModelRequest):
        return ModelTurn(event.step)
    if isinstance(event, ev.SessionEnd):
        return SessionEnded(event.reason, summary)
    if isinstance(event, ev.UserMessage):
        return UserSaid(event.text) if event.source == "user" else None
    if isinstance(event, ev.TaskStarted):
        return TaskBegan(event.number, event.task)
    if isinstance(event, ev.Condensed):
        return ContextCondensed(event.method, event.tokens_before, event.tokens_after, event.budget)
    if isinstance(event, ev.Resumed):
        return SessionResumed(event.step, len(event.requeued), len(event.recovered))
    if isinstance(event, ev.Rewound):
        return Rewound(event.to_step, event.branch, tuple(event.undone), tuple(event.not_undone))
    if step is None:
        return None
    if isinstance(event, ev.ToolProposed):
        return StepProposed(step)
    if isinstance(event, ev.Committed) and event.ok and event.commit_id:
        return StepCommitted(step, event.commit_id)
    if isinstance(event, ev.Observed):
        return StepObserved(step)
    return None
