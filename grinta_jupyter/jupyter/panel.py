"""The live session panel: a header, a card per step, and the controls.

The panel listens to the session's events and redraws the affected card.
It never drives the model itself: clicks record decisions on the session
(``approve``, ``edit``, ``veto``), and whatever drives the session (the
background task, or ``%grinta step``) acts on them.

Its cards are the saved notebook's HTML (``mime.step_html``). Any other text
it shows goes through ``mime.text_html`` / ``line_html`` (control characters
as visible escapes) after the session's secrets are redacted.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from grinta_jupyter.jupyter.actions import ActionBar
from grinta_jupyter.jupyter.mime import (
    line_html,
    session_html,
    session_payload,
    session_secrets,
    step_html,
    step_payload,
    text_html,
)
from grinta_jupyter.runtime.display import visible

if TYPE_CHECKING:
    from grinta_jupyter.agent.session import Session
    from grinta_jupyter.agent.step import Step
    from grinta_jupyter.events.models import Event

# Arguments that carry new text: shown in their own editor when a write is edited.
TEXT_FIELDS = ("new_string", "content", "new_source")


class StepCard:
    """One step: its rendering, and (while pending) the Approve / Edit / Veto controls."""

    def __init__(self, panel: SessionPanel, step: Step):
        self.panel = panel
        self.step = step
        self.view = w.HTML()
        self.actions = ActionBar(enabled=False)
        self.actions.on_action(self._on_action)
        self.args_editor = w.Textarea(layout=w.Layout(width="100%", height="120px"))
        self.text_editor = w.Textarea(layout=w.Layout(width="100%", height="160px"))
        self.text_label = w.HTML()
        self.revalidate = w.Button(description="Re-validate", button_style="info")
        self.cancel_edit = w.Button(description="Cancel")
        self.edit_message = w.HTML()
        self.revalidate.on_click(lambda _b: self.submit_edit())
        self.cancel_edit.on_click(lambda _b: self._show_editor(False))
        self.editor = w.VBox(
            [
                w.HTML("<b>Arguments (JSON)</b>"),
                self.args_editor,
                self.text_label,
                self.text_editor,
                w.HBox([self.revalidate, self.cancel_edit]),
                self.edit_message,
            ]
        )
        self.reason = w.Text(placeholder="Why? The model reads this.", layout=w.Layout(width="60%"))
        self.send_veto = w.Button(description="Send veto", button_style="danger")
        self.send_veto.on_click(lambda _b: self.submit_veto())
        self.veto_box = w.HBox([self.reason, self.send_veto])
        self._show_editor(False)
        self.veto_box.layout.display = "none"
        self.widget = w.VBox([self.view, self.actions, self.editor, self.veto_box])
        self.widget.add_class("grinta-panel-step")  # a stable hook for styles and browser tests
        self.refresh()

    def refresh(self) -> None:
        payload = step_payload(self.step, self.panel.session.id, self.panel.secrets)
        self.view.value = step_html(payload)
        pending = self.panel.session.pending is self.step and not self.panel.session.done
        self.actions.enabled = pending
        if not pending:
            self._show_editor(False)
            self.veto_box.layout.display = "none"

    # -- actions --------------------------------------------------------------------

    def _on_action(self, action: str) -> None:
        if action == "approve":
            self.panel.decide(lambda s: s.approve())
        elif action == "edit":
            self._open_editor()
        else:
            self.veto_box.layout.display = "flex"
            self.reason.value = ""

    def submit_veto(self) -> None:
        reason = self.reason.value.strip() or "vetoed by the user"
        self.veto_box.layout.display = "none"
        self.panel.decide(lambda s: s.veto(reason))

    def _open_editor(self) -> None:
        try:
            args = json.loads(self.step.call.arguments or "{}")
        except ValueError:
            args = None
        field = next(
            (f for f in TEXT_FIELDS if isinstance(args, dict) and isinstance(args.get(f), str)),
            None,
        )
        if field is not None:
            self.text_label.value = f"<b>{line_html(field)}</b> (the proposed new text)"
            self.text_editor.value = args.pop(field)
            self.text_editor.layout.display = "block"
        else:
            self.text_label.value = ""
            self.text_editor.layout.display = "none"
        self._field = field
        self.args_editor.value = (
            json.dumps(args, indent=2) if args is not None else self.step.call.arguments
        )
        self.edit_message.value = ""
        self._show_editor(True)

    def submit_edit(self) -> None:
        """Re-resolve, re-stage and re-validate with the edited arguments; show the new diff."""
        try:
            args = json.loads(self.args_editor.value)
        except ValueError as exc:
            self.edit_message.value = (
                f'<span style="color:#cf222e">not valid JSON: {line_html(exc)}</span>'
            )
            return
        if getattr(self, "_field", None) and isinstance(args, dict):
            args[self._field] = self.text_editor.value
        proposal = self.panel.session.edit(args)
        if proposal.ok:
            self.edit_message.value = (
                '<span style="color:#1a7f37">valid; review the diff above, then approve</span>'
            )
            self._show_editor(False)
        else:
            message = self.panel.secrets.redact(proposal.error.message)
            self.edit_message.value = (
                '<span style="color:#cf222e;white-space:pre-wrap">'
                f"{line_html(proposal.error.code)}: {text_html(message)}</span>"
            )
        self.refresh()

    def _show_editor(self, show: bool) -> None:
        self.editor.layout.display = "flex" if show else "none"


class SessionPanel:
    """The widget for one session: header, step cards, thinking indicator, summary."""

    def __init__(self, session: Session, on_decision: Callable[[], None] | None = None):
        self.session = session
        self.secrets = session_secrets(session)  # kept out of every card and of the model's stream
        self.on_decision = on_decision
        self.header = w.HTML()
        self.stop_button = w.Button(
            description="Stop", button_style="warning", icon="stop", layout=w.Layout(width="90px")
        )
        self.stop_button.on_click(lambda _b: self.stop())
        self.reads_toggle = w.ToggleButton(
            value=session.auto_reads,
            description="Auto-approve reads",
            tooltip="Run reads without asking",
            layout=w.Layout(width="auto", min_width="180px"),
        )
        self.reads_toggle.observe(self._toggle_reads, names="value")
        self.thinking = w.HTML()
        self.cards_box = w.VBox()
        self.summary = w.HTML()
        self.cards: dict[int, StepCard] = {}
        self._stream = ""
        self.widget = w.VBox(
            [
                w.HBox(
                    [self.header, self.reads_toggle, self.stop_button],
                    layout=w.Layout(justify_content="space-between", align_items="center"),
                ),
                self.cards_box,
                self.thinking,
                self.summary,
            ],
            layout=w.Layout(border="1px solid #d0d7de", padding="6px"),
        )
        self.widget.add_class("grinta-panel")
        session.log.listeners.append(self._on_event)
        session.watchers.append(self._on_change)
        session.on_text = self._on_text
        self._render_header()

    def stop(self) -> None:
        self.session.stop("stopped by the user")

    def decide(self, action: Callable[[Session], None]) -> None:
        if self.session.pending is None:
            return
        action(self.session)
        if self.on_decision is not None:
            self.on_decision()

    def _toggle_reads(self, change: dict[str, Any]) -> None:
        self.session.auto_reads = bool(change["new"])

    def _on_text(self, piece: str) -> None:
        self._stream += piece
        self.thinking.value = _thinking_html(self.secrets.redact(self._stream))

    def _on_event(self, event: Event) -> None:
        kind = event.type
        if kind == "model_request":
            self._stream = ""
            self.thinking.value = _thinking_html("")
        elif kind == "model_reply":
            self.thinking.value = ""
        elif kind == "session_end":
            self.thinking.value = ""
            self.stop_button.disabled = True
            self.summary.value = session_html(session_payload(self.session))
            for card in self.cards.values():
                card.refresh()
        if event.step and event.type not in ("model_request", "model_reply"):
            self._refresh_step(event.step)
        self._render_header()

    def _on_change(self) -> None:
        pending = self.session.pending
        if pending is not None:
            self._refresh_step(pending.number)
        for card in self.cards.values():
            if card.actions.enabled and card.step is not pending:
                card.refresh()
        self._render_header()

    def _refresh_step(self, number: int) -> None:
        if number > len(self.session.steps):
            return
        step = self.session.steps[number - 1]
        card = self.cards.get(number)
        if card is None or card.step is not step:
            card = StepCard(self, step)
            self.cards[number] = card
            self.cards_box.children = [*self.cards_box.children, card.widget]
        else:
            card.refresh()

    def _render_header(self) -> None:
        s = self.session
        tokens = s.totals.prompt_tokens + s.totals.completion_tokens
        cost = f"${s.totals.cost:.4f}" if s.totals.cost_known else "cost unknown"
        state = s.end_reason if s.done else ("waiting for you" if s.waiting else s.state.value)
        redact = self.secrets.redact
        root = visible(redact(str(s.root)), keep_newlines=False)
        self.header.value = (
            f'<div style="font-family:sans-serif;font-size:13px;line-height:1.4"><b>grinta</b> · '
            f"{line_html(redact(str(getattr(s.model, 'name', 'model'))))} · "
            f'<code title="{html.escape(root)}">{line_html(redact(s.root.name))}</code> · '
            f"step {len(s.steps)} · {tokens} tokens · {cost} · <i>{line_html(state)}</i></div>"
        )


def _thinking_html(text: str) -> str:
    body = text_html(text[-2000:])
    return (
        '<div class="grinta-thinking" style="font-family:sans-serif;font-size:13px;color:#57606a">'
        f'<span style="color:#0969da">●</span> thinking… <div style="white-space:pre-wrap">{body}</div></div>'
    )
