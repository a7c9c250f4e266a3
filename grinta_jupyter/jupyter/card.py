"""The live panel's parts drawn by the labextension's TypeScript: step cards, marks, the box.

The front end is ``static/card.js``, bundled from ``labextension/src/widget.ts``
(the same ``renderStep`` that draws the saved trace, plus the Approve / Edit /
Veto bar and the hunk checkboxes; docs/labextension.md), with the cards' CSS in
``static/card.css``. So a step looks the same live and saved, in every theme.

Traits (synced to the front end):

- ``payload``: the step payload (``mime.step_payload``), or a session payload
  when ``kind`` is ``"session"``;
- ``pending``: the step waits for a decision (the bar shows);
- ``status``: the kernel's word on the last edit (``CODE: message`` when it
  did not validate);
- ``editable``: the pending call's arguments as the model sent them, the edit
  form's starting text (only while pending);
- ``key``: names the card to the page, so a review under way (the veto reason,
  the edit form, the hunks unchecked) outlives a view of it: the kernel redraws
  the cell's display after each step, and anywidget gives each view a wrapper
  of its own, so the view's model is no key.

What the reviewer decides arrives as a custom message, turned into a typed
decision (``grinta_jupyter.agent.updates``) and handed to ``on_decision``:
``{"event": "approve"}``, ``{"event": "veto", "reason": str}``,
``{"event": "edit", "arguments": {...}}``,
``{"event": "hunks", "accepted": [int, ...], "reason": str}``. A message of
any other shape is ignored and said so in ``status``: nothing is decided on
a guess. An approval (whole or of hunks) from the page carries the ``edits``
count of the proposal it drew; when the proposal was edited since (a click that
crossed the edit's new diff on its way), it is refused and said so in
``status``: nobody approves a diff, or hunk numbers, they did not see.

Two more widgets load the same module (``kind`` tells it what to draw):

- ``MarkWidget``: a mark of the trace between step cards (a task began, the
  user said, a rewind, a condensation, a resume; ``jupyter/timeline.py``), its
  ``payload`` the saved trace's mark (``mime.mark_payload``).
- ``MessageBoxWidget``: the panel's message box. Enter sends
  ``{"event": "say" | "continue", "text": str}`` (which one is the ``mode`` the
  box showed: ``"say"`` while the session runs, ``"continue"`` once it has
  ended) and clears the box. It never decides a proposal. The kernel's word on
  what it sent goes in ``status``; a message that could not be delivered as
  sent comes back in ``draft``, so nothing typed is lost. ``key`` names the
  box to the page: what is typed, and the focus, outlive a view of it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, TypeGuard

import anywidget
import traitlets

from grinta_jupyter.agent.updates import (
    DEFAULT_VETO_REASON,
    Approve,
    ApproveHunks,
    Decision,
    Edit,
    Veto,
)

STATIC = Path(__file__).parent / "static"


def decision_of(content: object) -> Decision | None:
    """The decision a front-end message carries, or None when it is not one."""
    if not isinstance(content, dict):
        return None
    event = content.get("event")
    if event == "approve":
        return Approve()
    if event == "veto":
        reason = content.get("reason")
        return Veto(
            reason.strip() if isinstance(reason, str) and reason.strip() else DEFAULT_VETO_REASON
        )
    if event == "edit" and isinstance(content.get("arguments"), dict):
        return Edit(content["arguments"])
    if event == "hunks":
        accepted = content.get("accepted")
        reason = content.get("reason", "")
        if _indices(accepted) and isinstance(reason, str):
            return ApproveHunks(accepted, reason.strip())
    return None


def _indices(value: object) -> TypeGuard[list[int]]:
    return isinstance(value, list) and all(
        isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in value
    )


class StepCardWidget(anywidget.AnyWidget):
    """One step (or the session summary) of the live panel, drawn by the TypeScript card."""

    _esm = STATIC / "card.js"
    _css = STATIC / "card.css"
    kind = traitlets.Unicode("step").tag(sync=True)
    key = traitlets.Unicode().tag(sync=True)
    payload = traitlets.Dict().tag(sync=True)
    pending = traitlets.Bool(False).tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)
    editable = traitlets.Unicode("").tag(sync=True)

    def __init__(
        self, on_decision: Callable[[Decision], None] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**{"key": uuid.uuid4().hex, **kwargs})
        self.on_decision = on_decision
        self.on_msg(self._received)
        # Stable hooks for styles and browser tests.
        self.add_class("grinta-panel-step" if self.kind == "step" else "grinta-panel-summary")

    def receive(self, content: object) -> None:
        """Act on a front-end message, as if it came from the browser (tests, magics)."""
        if not self.pending:
            return  # a second click, or a click that crossed the kernel's own decision
        decision = decision_of(content)
        if decision is None:
            self.status = f"grinta: ignored a message that is not a decision: {content!r:.200}"
            return
        if isinstance(decision, (Approve, ApproveHunks)) and not self._seen(content):
            self.status = (
                "grinta: the proposal was edited after the card you approved was drawn: "
                "look at its diff again (nothing was decided)"
            )
            return
        if self.on_decision is not None:
            self.on_decision(decision)

    def _seen(self, content: object) -> bool:
        """Whether an approval names the proposal the card shows now: the page sends the
        ``edits`` count of the one it drew (none from a caller that drew nothing)."""
        seen = content.get("edits") if isinstance(content, dict) else None
        if seen is None:
            return True
        # A count, exactly: ``true`` or ``1.0`` equal 1 in Python but name no drawing.
        return type(seen) is int and seen == self.payload.get("edits", seen)

    def _received(self, _widget: object, content: object, _buffers: Sequence[object]) -> None:
        self.receive(content)


class MarkWidget(anywidget.AnyWidget):
    """A mark of the live trace (``mime.mark_payload``), drawn as the saved trace draws it."""

    _esm = STATIC / "card.js"
    _css = STATIC / "card.css"
    kind = traitlets.Unicode("mark").tag(sync=True)
    payload = traitlets.Dict().tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_class("grinta-panel-mark")


BoxEvent = Literal["say", "continue"]


def box_message(content: object) -> tuple[BoxEvent, str] | None:
    """What a message from the box carries (``say`` or ``continue``, and the text), or None."""
    if not isinstance(content, dict):
        return None
    event, text = content.get("event"), content.get("text")
    if event not in ("say", "continue") or not isinstance(text, str) or not text.strip():
        return None
    return ("say" if event == "say" else "continue"), text.strip()


class MessageBoxWidget(anywidget.AnyWidget):
    """The panel's message box: what the person types to the model, or the next task."""

    _esm = STATIC / "card.js"
    _css = STATIC / "card.css"
    kind = traitlets.Unicode("message").tag(sync=True)
    # Names this box to the page: what is typed and the focus outlive a view by it.
    key = traitlets.Unicode().tag(sync=True)
    mode = traitlets.Unicode("say").tag(sync=True)  # "say" | "continue" | "off"
    status = traitlets.Unicode("").tag(sync=True)
    draft = traitlets.Unicode("").tag(sync=True)

    def __init__(
        self, on_message: Callable[[BoxEvent, str], None] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**{"key": uuid.uuid4().hex, **kwargs})
        self.on_message = on_message
        self.on_msg(self._received)
        self.add_class("grinta-panel-box")

    def receive(self, content: object) -> None:
        """Act on a front-end message, as if it came from the browser (tests)."""
        message = box_message(content)
        if message is None:
            return  # an empty line, or not a message of the box's: nothing to send
        if self.on_message is not None:
            self.on_message(*message)

    def _received(self, _widget: object, content: object, _buffers: Sequence[object]) -> None:
        self.receive(content)
