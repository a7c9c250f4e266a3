"""The live session panel: a header, a card per step, and the controls.

A pure renderer of the session's update stream: whatever drives the session
(the controller's one loop over ``session.updates()``) calls ``apply(update)``
for every update, and the panel redraws what it names. It never drives the
model itself and listens to nothing else. A click answers the pending step
with ``session.decide(...)`` (``Approve``, ``Edit``, ``Veto``, ``ApproveHunks``)
and then calls ``on_decision`` (manual mode advances the session there).

Each step is the labextension's TypeScript card (``card.StepCardWidget``), the
card the saved trace shows. The header and the thinking line are small HTML
in JupyterLab's theme colours; any text in them goes through
``mime.line_html`` / ``text_html`` (control characters as visible escapes)
after the session's secrets are redacted.
"""

from __future__ import annotations

import asyncio
import functools
import html
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from grinta_jupyter.agent.blocking import running_loop
from grinta_jupyter.agent.updates import (
    ApproveHunks,
    Decision,
    Edit,
    ModelText,
    ModelTurn,
    NeedsDecision,
    SessionEnded,
    StepCommitted,
    StepObserved,
    StepProposed,
    Undone,
    Update,
)
from grinta_jupyter.jupyter.card import StepCardWidget
from grinta_jupyter.jupyter.mime import (
    line_html,
    session_payload,
    session_secrets,
    step_payload,
    text_html,
)
from grinta_jupyter.runtime.display import visible

if TYPE_CHECKING:
    from grinta_jupyter.agent.session import Session
    from grinta_jupyter.agent.step import Step
    from grinta_jupyter.runtime.proposal import Proposal

MAX_THINKING_CHARS = 2_000  # the tail of the model's streamed text that the thinking line shows
# Theme colours with fallbacks, for front ends without JupyterLab's variables.
_TEXT = "var(--jp-ui-font-color1, #1f2328)"
_MUTED = "var(--jp-ui-font-color2, #57606a)"
_ACCENT = "var(--jp-brand-color1, #0969da)"


class SessionPanel:
    """The widget for one session: header, step cards, thinking line, summary."""

    def __init__(self, session: Session, on_decision: Callable[[], None] | None = None):
        self.session = session
        self.secrets = session_secrets(session)  # kept out of every card and of the model's stream
        self.on_decision = on_decision
        self.cards: dict[int, StepCardWidget] = {}
        self.state = "starting"
        self._stream = ""
        self.header = w.HTML()
        self.stop_button = w.Button(
            description="Stop", button_style="warning", icon="stop", layout=w.Layout(width="90px")
        )
        self.stop_button.on_click(lambda _b: self.stop())
        self.reads_toggle = w.ToggleButton(
            value=session.auto_reads,
            tooltip="Run reads (read, search) without asking",
            layout=w.Layout(width="auto", min_width="190px"),
        )
        self.reads_toggle.observe(self._toggle_reads, names="value")
        self._label_reads()
        self.thinking = w.HTML()
        self.notice = w.HTML()
        self.cards_box = w.VBox()
        self.summary = w.Box()
        self.widget = w.VBox(
            [
                w.HBox(
                    [self.header, self.reads_toggle, self.stop_button],
                    layout=w.Layout(justify_content="space-between", align_items="center"),
                ),
                self.cards_box,
                self.thinking,
                self.notice,
                self.summary,
            ],
            layout=w.Layout(border="1px solid var(--jp-border-color2, #d0d7de)", padding="6px"),
        )
        self.widget.add_class("grinta-panel")
        self._render_header()

    # -- the update stream ---------------------------------------------------------------

    def apply(self, update: Update) -> None:
        """Show ``update`` (one of agent/updates.py's); the controller calls this for each."""
        if isinstance(update, ModelTurn):
            self._stream = ""
            self.state = "thinking"
            self.thinking.value = _thinking_html("")
        elif isinstance(update, ModelText):
            self._stream = (self._stream + update.text)[-4 * MAX_THINKING_CHARS :]
            self.thinking.value = _thinking_html(self.secrets.redact(self._stream))
        elif isinstance(update, StepProposed):  # a re-staged (edited) proposal stays pending
            self.thinking.value = ""
            self.state = "staged"
            self._show(update.step)
        elif isinstance(update, NeedsDecision):  # unless decided elsewhere meanwhile
            waits = self.session.waiting and self.session.pending is update.step
            self.state = "waiting for you" if waits else self.state
            self._show(update.step, pending=waits)
        elif isinstance(update, StepCommitted):
            self.state = "committed"
            self._show(update.step, pending=False)
        elif isinstance(update, StepObserved):
            self.state = "observed"
            self._show(update.step, pending=False)
        elif isinstance(update, Undone):
            self.notice.value = _notice_html(self.secrets.redact(update.message))
        elif isinstance(update, SessionEnded):
            self._end(update)
        self._render_header()

    def _show(self, step: Step, *, pending: bool | None = None) -> None:
        """Create or redraw the card of ``step``; ``pending`` None keeps whether it waits."""
        card = self.cards.get(step.number)
        if card is None:
            card = StepCardWidget(on_decision=functools.partial(self.decide, step))
            self.cards[step.number] = card
            self.cards_box.children = [*self.cards_box.children, card]
        pending = card.pending if pending is None else pending
        with card.hold_sync():  # one message: the card redraws once, with all of it
            card.payload = step_payload(step, self.session.id, self.secrets)
            if pending and not card.pending:
                card.status = ""  # a new wait: the last edit's verdict is old news
            # The editor starts from the call as the model sent it: a payload cuts long strings.
            card.editable = step.call.arguments if pending else ""
            card.pending = pending

    def _end(self, update: SessionEnded) -> None:
        self.thinking.value = ""
        self.state = update.reason
        self.stop_button.disabled = True
        self.reads_toggle.disabled = True
        for card in self.cards.values():
            card.pending = False
        summary = StepCardWidget(kind="session", payload=session_payload(self.session))
        self.summary.children = [summary]

    # -- what the reviewer does ------------------------------------------------------------

    def decide(self, step: Step, decision: Decision) -> None:
        """Answer ``step`` (a card's click) with ``decision``; then ``on_decision``."""
        card = self.cards[step.number]
        if self.session.pending is not step:
            card.pending = False  # decided elsewhere (a magic), or the session ended
            return
        loop = running_loop()
        if isinstance(decision, Edit | ApproveHunks) and loop is not None:
            # Re-staging reads and validates files: off the kernel's event loop, so the
            # Stop button and every other widget keep working meanwhile.
            card.status = "staging…"
            staging = loop.run_in_executor(None, self.session.decide, decision)
            staging.add_done_callback(lambda done: self._decided(card, step, decision, done))
            return
        try:
            proposal = self.session.decide(decision)
        except (RuntimeError, TypeError, ValueError) as exc:
            card.status = self.secrets.redact(f"not decided: {exc}")
            return
        self._after(card, step, decision, proposal)

    def _decided(
        self,
        card: StepCardWidget,
        step: Step,
        decision: Decision,
        done: asyncio.Future[Proposal | None],
    ) -> None:
        error = done.exception()
        if error is not None:
            card.status = self.secrets.redact(f"not decided: {error}")
            return
        self._after(card, step, decision, done.result())

    def _after(
        self, card: StepCardWidget, step: Step, decision: Decision, proposal: Proposal | None
    ) -> None:
        if isinstance(decision, Edit | ApproveHunks):
            self._staged(card, step, decision, proposal)
        else:
            card.pending = False
        if self.on_decision is not None:
            self.on_decision()

    def _staged(
        self,
        card: StepCardWidget,
        step: Step,
        decision: Edit | ApproveHunks,
        proposal: Proposal | None,
    ) -> None:
        """After an edit or a hunk selection: what the kernel made of it, on the card."""
        if proposal is not None and not proposal.ok and proposal.error is not None:
            card.status = self.secrets.redact(f"{proposal.error.code}: {proposal.error.message}")
        elif isinstance(decision, Edit):
            card.status = "valid: review the new diff above, then approve"
        if isinstance(decision, Edit):
            self._show(step, pending=True)  # the re-staged proposal, at once
        elif proposal is not None and proposal.ok:
            card.pending = False

    def stop(self) -> None:
        self.session.stop("stopped by the user")

    def _toggle_reads(self, change: dict[str, Any]) -> None:
        self.session.auto_reads = bool(change["new"])
        self._label_reads()

    def _label_reads(self) -> None:
        on = self.reads_toggle.value
        self.reads_toggle.description = f"Auto-approve reads: {'on' if on else 'off'}"
        self.reads_toggle.icon = "check-square-o" if on else "square-o"

    def _render_header(self) -> None:
        s = self.session
        tokens = s.totals.prompt_tokens + s.totals.completion_tokens
        cost = f"${s.totals.cost:.4f}" if s.totals.cost_known else "cost unknown"
        redact = self.secrets.redact
        root = visible(redact(str(s.root)), keep_newlines=False)
        self.header.value = (
            f'<div class="grinta-panel-header" style="font-family:var(--jp-ui-font-family,'
            f'sans-serif);font-size:13px;line-height:1.4;color:{_TEXT}"><b>grinta</b> · '
            f"{line_html(redact(str(getattr(s.model, 'name', 'model'))))} · "
            f'<code title="{html.escape(root)}" style="color:{_TEXT}">'
            f"{line_html(redact(s.root.name))}</code> · step {len(s.steps)} · {tokens} tokens · "
            f'{cost} · <i class="grinta-panel-state">{line_html(self.state)}</i></div>'
        )


def _thinking_html(text: str) -> str:
    body = text_html(text[-MAX_THINKING_CHARS:])
    return (
        f'<div class="grinta-thinking" style="font-family:var(--jp-ui-font-family,sans-serif);'
        f'font-size:13px;color:{_MUTED}"><span style="color:{_ACCENT}">●</span> thinking… '
        f'<div style="white-space:pre-wrap">{body}</div></div>'
    )


def _notice_html(text: str) -> str:
    return (
        f'<div class="grinta-notice" style="font-family:var(--jp-ui-font-family,sans-serif);'
        f'font-size:13px;color:{_TEXT}">{text_html(text)}</div>'
    )
