"""The saved session card's link to this kernel: the comm target ``grinta.session``.

When a task ends, its cell's output becomes the saved trace (the session card,
drawn by the labextension; no widget view, so a saved notebook holds none), and
the live panel goes with its message box. The card brings the box back where it
can act: rendered in a notebook, it asks that notebook's kernel which session is
its current one (labextension/src/sessionLink.ts), and shows the box when that is
the card's own session and it has ended. Enter there gives the session its next
task by the path ``%grinta continue TASK`` takes (``controller.continue_task``):
the panel is displayed again, and the page puts it in the output of the card
that asked, where it follows the new task (docs/session.md, *In a notebook*)::

    page → kernel   comm_open grinta.session  {}
    kernel → page   comm_msg  {"current": {"session": ID, "state": "running" | "ended"} | null}
                    at once, then whenever the current session or its state changes
    page → kernel   comm_msg  {"request": "continue", "session": ID, "task": TEXT, "ask": N}
    kernel → page   display_data (its parent: that comm_msg): the panel, shown again
                    comm_msg  {"answer": N, "ok": BOOL, "message": TEXT}

Only ``continue`` is taken, for the kernel's current session, once it has ended. So
a message from the box can never decide a proposal (an ended session has none
waiting) nor reach a session that is not current: anything else that carries an
``ask`` is answered ``ok: false`` with a one-line reason, and the page hands the
text back; a message without one is ignored.

Cheap and lazy: ``register`` (called when the extension loads, from the magics'
constructor) adds one comm target and imports nothing. The controller tells this
module what the current session is (``announce``), so answering a page never
imports the controller; a ``continue`` imports it only when a session is current,
that is, when it is already imported. At most ``MAX_LINKS`` pages are linked at
once (the oldest link is closed past that); a task's length is bounded by the
session (``continue_task``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, Literal, Protocol

TARGET = "grinta.session"
MAX_LINKS = 32  # pages (or their reloads) linked at once: more is not one person's desk
MAX_ASK = 2**53  # ask ids are JavaScript numbers

SessionState = Literal["running", "ended"]


class Comm(Protocol):
    """What is used of a kernel comm (ipykernel's)."""

    def send(self, data: dict[str, Any]) -> None: ...
    def close(self) -> None: ...
    def on_msg(self, callback: Callable[[dict[str, Any]], None] | None) -> None: ...
    def on_close(self, callback: Callable[[dict[str, Any]], None] | None) -> None: ...


# The kernel's current session as the pages are told (None: none), and the linked pages.
_current: dict[str, str] | None = None
_links: list[Comm] = []


def register(shell: Any) -> None:
    """Register the comm target on ``shell``'s kernel (nothing outside a kernel)."""
    if getattr(shell, "kernel", None) is None:
        return
    try:
        import comm

        comm.get_comm_manager().register_target(TARGET, _opened)
    except Exception:  # a kernel without comms: no page can link, the cards show no box
        return


def announce(session: str | None, state: SessionState | None = None) -> None:
    """The kernel's current session is ``session`` (None: none), ``state``; every linked
    page is told when that changed. Called by the controller, on the kernel's thread."""
    global _current
    current = None if session is None else {"session": session, "state": state or "running"}
    if current == _current:
        return
    _current = current
    for link in list(_links):
        _send(link, {"current": current})


def _opened(link: Comm, _msg: dict[str, Any]) -> None:
    """A page opened a link (the comm target's callback): tell it the current session."""
    _links.append(link)
    while len(_links) > MAX_LINKS:
        _drop(_links[0], close=True)
    link.on_msg(lambda msg: _received(link, msg))
    link.on_close(lambda _msg: _drop(link, close=False))
    _send(link, {"current": _current})


def _received(link: Comm, msg: dict[str, Any]) -> None:
    content = msg.get("content")
    data = content.get("data") if isinstance(content, dict) else None
    if not isinstance(data, dict):
        return
    ask = data.get("ask")
    if isinstance(ask, bool) or not isinstance(ask, int) or not 0 <= ask <= MAX_ASK:
        return  # not a request: nothing to answer
    why = _continue(data)
    _send(link, {"answer": ask, "ok": why is None, "message": why or "given"})


def _continue(data: dict[str, Any]) -> str | None:
    """Give the current session the request's task; None when given, else why not."""
    if data.get("request") != "continue":
        return "the box only gives an ended session its next task"
    session, task = data.get("session"), data.get("task")
    if not isinstance(session, str) or not isinstance(task, str) or not task.strip():
        return "a next task needs the session and the task's text"
    if _current is None or _current["session"] != session:
        return "this session is not the current one in this kernel: nothing was sent"
    from grinta_jupyter.jupyter import controller

    return controller.continue_from_box(session, task)


def _send(link: Comm, data: dict[str, Any]) -> None:
    try:
        link.send(data)
    except Exception:  # the page is gone: forget it
        _drop(link, close=False)


def _drop(link: Comm, *, close: bool) -> None:
    with contextlib.suppress(ValueError):
        _links.remove(link)
    if close:
        with contextlib.suppress(Exception):
            link.close()
