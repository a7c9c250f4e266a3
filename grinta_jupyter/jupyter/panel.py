"""The live session panel: a header, a card per step, the marks between them, the controls.

A pure renderer of the session's update stream: whatever drives the session
(the controller's one loop over ``session.updates()``) calls ``apply(update)``
for every update, and the panel redraws what it names. It never drives the
model itself and listens to nothing else. A click answers the pending step
with ``session.decide(...)`` (``Approve``, ``Edit``, ``Veto``, ``ApproveHunks``)
and then calls ``on_decision`` (manual mode advances the session there).

A session that lasts: the panel opens on everything the session did so far
(``jupyter/timeline.py``: a resumed session's earlier steps too), and shows the
marks between steps (a task began, the user said, a rewind, a condensation, a
resume) as the saved trace does. After a rewind the cards of the steps it undid
stay, marked rewound (``rewound``), and the steps after it get new cards.
The message box under the cards talks to the session: while it runs, Enter
says the text to the model (``session.say``), and a proposal that waits keeps
waiting; once it has ended, Enter gives it as the next task (``on_next_task``,
which the controller makes ``session.continue_task`` plus driving it again).
The box never decides a proposal. The header names the rules files the session
loaded (``session.rules``).

Under the header, the model bar (``jupyter/modelbar.py``): the model picker and
the key field. What it picks is the next session's model; this session keeps
its own (the header names it).

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
    Approve,
    ApproveHunks,
    ContextCondensed,
    Decision,
    Edit,
    ModelText,
    ModelTurn,
    NeedsDecision,
    Rewound,
    SessionEnded,
    SessionResumed,
    StepCommitted,
    StepObserved,
    StepProposed,
    TaskBegan,
    Undone,
    Update,
    UserSaid,
)
from grinta_jupyter.jupyter.card import BoxEvent, MarkWidget, MessageBoxWidget, StepCardWidget
from grinta_jupyter.jupyter.mime import (
    line_html,
    mark_payload,
    rules_line,
    session_payload,
    session_secrets,
    step_payload,
    text_html,
)
from grinta_jupyter.jupyter.modelbar import model_bar
from grinta_jupyter.jupyter.timeline import Mark, timeline
from grinta_jupyter.runtime.display import visible
from grinta_jupyter.runtime.secrets import StreamRedactor

if TYPE_CHECKING:
    from grinta_jupyter.agent.session import Session
    from grinta_jupyter.agent.step import Step
    from grinta_jupyter.runtime.proposal import Proposal

MAX_THINKING_CHARS = 2_000  # the tail of the model's streamed text that the thinking line shows
# Theme colours with fallbacks, for front ends without JupyterLab's variables.
_TEXT = "var(--jp-ui-font-color1, #1f2328)"
_MUTED = "var(--jp-ui-font-color2, #57606a)"
_ACCENT = "var(--jp-brand-color1, #0969da)"
# Updates that add a mark to the trace (the panel reads the marks from the session's log).
MARK_UPDATES = (UserSaid, TaskBegan, Rewound, ContextCondensed, SessionResumed)
SAY_HINT = "sent: the model reads it at its next turn"


class SessionPanel:
    """The widget for one session: header, step cards, thinking line, summary."""

    def __init__(
        self,
        session: Session,
        on_decision: Callable[[], None] | None = None,
        on_next_task: Callable[[str], None] | None = None,
    ):
        self.session = session
        self.secrets = session_secrets(session)  # kept out of every card and of the model's stream
        self.on_decision = on_decision
        self.on_next_task = on_next_task
        # The cards of the steps on the session's current branch, by step number, and the
        # branch each was made on; the cards a rewind took off the branch, in order.
        self.cards: dict[int, StepCardWidget] = {}
        self.branch_of: dict[int, int] = {}
        self.rewound: list[StepCardWidget] = []
        self.marks: list[MarkWidget] = []
        self.retired = False  # another session became current: the box takes nothing
        self.state = "starting"
        # The model's streamed text shown so far (redacted), and what redacts it as it comes.
        self._stream = ""
        self._redactor = StreamRedactor(self.secrets)
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
        self.box = MessageBoxWidget(on_message=self.message)
        self.models = model_bar(running=str(getattr(session.model, "name", "")))
        self.widget = w.VBox(
            [
                w.HBox(
                    [self.header, self.reads_toggle, self.stop_button],
                    layout=w.Layout(justify_content="space-between", align_items="center"),
                ),
                self.models,
                self.cards_box,
                self.thinking,
                self.notice,
                self.summary,
                self.box,
            ],
            layout=w.Layout(border="1px solid var(--jp-border-color2, #d0d7de)", padding="6px"),
        )
        self.widget.add_class("grinta-panel")
        self._open()
        self._render_header()

    def _open(self) -> None:
        """Show what the session did before this panel (a resumed or continued session)."""
        if not self.session.log.events:
            return
        for item in timeline(self.session):
            if isinstance(item, Mark):
                self._add_mark(item)
                continue
            card = self._card(item.step.number, item.branch, item.rewound)
            with card.hold_sync():
                card.payload = self._payload(item.step, item.branch, item.rewound)
        if self.session.done:
            self._end(SessionEnded(self.session.end_reason or "", self.session.summary))
        self._sync_box()

    # -- the update stream ---------------------------------------------------------------

    def apply(self, update: Update) -> None:
        """Show ``update`` (one of agent/updates.py's); the controller calls this for each."""
        if isinstance(update, ModelTurn):
            self._stream = ""
            self._redactor = StreamRedactor(self.secrets)
            self.state = "thinking"
            self.thinking.value = _thinking_html("")
        elif isinstance(update, ModelText):
            shown = self._stream + self._redactor.feed(update.text)  # redacted as it streams
            self._stream = shown[-4 * MAX_THINKING_CHARS :]
            self.thinking.value = _thinking_html(self._stream)
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
        elif isinstance(update, Rewound):
            self._rewound(update)
        elif isinstance(update, TaskBegan):
            self._reopened(f"task {update.number}")
        elif isinstance(update, SessionEnded):
            self._end(update)
        if isinstance(update, MARK_UPDATES):
            self.sync_marks()
        self._sync_box()
        self._render_header()

    def _show(self, step: Step, *, pending: bool | None = None) -> None:
        """Create or redraw the card of ``step``; ``pending`` None keeps whether it waits."""
        branch = self.branch_of.get(step.number, self.session.branch)
        card = self._card(step.number, branch)
        pending = card.pending if pending is None else pending
        with card.hold_sync():  # one message: the card redraws once, with all of it
            card.payload = self._payload(step, branch)
            if pending and not card.pending:
                card.status = ""  # a new wait: the last edit's verdict is old news
            # The editor starts from the call as the model sent it: a payload cuts long strings.
            card.editable = step.call.arguments if pending else ""
            card.pending = pending

    def _card(self, number: int, branch: int, rewound: bool = False) -> StepCardWidget:
        """The card of step ``number`` on the current branch (made, and placed last, if new)."""
        card = None if rewound else self.cards.get(number)
        if card is None:
            card = StepCardWidget(on_decision=functools.partial(self._decide_number, number))
            if rewound:
                self.rewound.append(card)
            else:
                self.cards[number] = card
                self.branch_of[number] = branch
            self.cards_box.children = [*self.cards_box.children, card]
        return card

    def _payload(self, step: Step, branch: int, rewound: bool = False) -> dict[str, Any]:
        return step_payload(
            step, self.session.id, self.secrets, branch=branch, rewound=rewound, live=True
        )

    def _add_mark(self, mark: Mark) -> None:
        at = len(self.cards) + len(self.rewound)
        widget = MarkWidget(payload=mark_payload(mark, at, self.secrets))
        self.marks.append(widget)
        self.cards_box.children = [*self.cards_box.children, widget]

    def sync_marks(self) -> None:
        """Add the marks the session's log holds that the panel does not show yet.

        Marks only ever come after the ones before them (the log is append-only),
        so the new ones are the last ones: a mark is never shown twice, whichever
        update (or the controller, for a session no loop follows) asked first.
        """
        found = [item for item in timeline(self.session) if isinstance(item, Mark)]
        for mark in found[len(self.marks) :]:
            self._add_mark(mark)

    def _rewound(self, update: Rewound) -> None:
        """The steps after ``update.to_step`` were undone: their cards stay, marked rewound."""
        for number in sorted(n for n in self.cards if n > update.to_step):
            card = self.cards.pop(number)
            branch = self.branch_of.pop(number)
            with card.hold_sync():
                card.pending = False
                card.payload = {**card.payload, "rewound": True, "branch": branch}
            self.rewound.append(card)
        for card in self.cards.values():
            card.pending = False  # a rewind leaves nothing waiting (step N itself, if it did)
        self._reopened(f"rewound to step {update.to_step}")

    def _reopened(self, state: str) -> None:
        """The session runs again (a next task, a rewind): the controls come back."""
        self.state = state
        self.stop_button.disabled = False
        self.reads_toggle.disabled = False
        self.summary.children = []

    def _end(self, update: SessionEnded) -> None:
        self.thinking.value = ""
        self.state = update.reason
        self.stop_button.disabled = True
        self.reads_toggle.disabled = True
        for card in self.cards.values():
            card.pending = False
        summary = StepCardWidget(kind="session", payload=session_payload(self.session))
        self.summary.children = [summary]

    # -- the message box --------------------------------------------------------------------

    def message(self, event: BoxEvent, text: str) -> None:
        """What the box sent: said to the running session, or the ended session's next task.

        ``event`` is what the box offered when Enter was pressed. When the session
        changed meanwhile (it ended before a message arrived, or runs again), the text
        is handed back to the box with a word on why, and nothing is done with it: a
        message meant for the model never becomes a task, nor the reverse.
        """
        box = self.box
        done = self.session.done
        if self.retired:
            self._hand_back(text, "another session is current in this kernel: this one is over")
            return
        if event == "say" and done:
            self._hand_back(
                text, "the session ended before this arrived: Enter gives it as the next task"
            )
            return
        if event == "continue" and not done:
            self._hand_back(text, "the session runs again: Enter says this to the model")
            return
        try:
            if event == "say":
                self.session.say(text)
            elif self.on_next_task is not None:
                self.on_next_task(text)
            else:
                self.session.continue_task(text)
        except (RuntimeError, ValueError) as exc:
            self._hand_back(text, f"not sent: {exc}")
            return
        waiting = self.session.waiting and event == "say"
        box.status = SAY_HINT + (" (the step above still waits for you)" if waiting else "")
        if event == "continue":
            box.status = "the next task is given: the session runs again"
        self._sync_box()
        self._render_header()

    def _hand_back(self, text: str, why: str) -> None:
        with self.box.hold_sync():
            self.box.draft = text
            self.box.status = self.secrets.redact(why)
        self._sync_box()

    def retire(self) -> None:
        """Another session is current now: the box is switched off for good (two sessions
        must not both be talked to from panels of one kernel)."""
        self.retired = True
        self._sync_box()

    def _sync_box(self) -> None:
        self.box.mode = "off" if self.retired else "continue" if self.session.done else "say"

    # -- what the reviewer does ------------------------------------------------------------

    def _decide_number(self, number: int, decision: Decision) -> None:
        """A card's click: it answers the step the card shows, if that step still waits."""
        pending = self.session.pending
        card = self.cards.get(number)
        if pending is None or pending.number != number or card is None:
            for shown in (card, *self.rewound):
                if shown is not None:
                    shown.pending = False  # decided elsewhere, rewound, or the session ended
            return
        self.decide(pending, decision)

    def decide(self, step: Step, decision: Decision) -> None:
        """Answer ``step`` (a card's click) with ``decision``; then ``on_decision``.

        An approval is of the proposal the card shows: the session refuses it, nothing
        decided, when the step was edited after the card was drawn (a ``%grinta edit``, or
        an edit from another thread, that this panel has not drawn yet).
        """
        card = self.cards[step.number]
        if self.session.pending is not step:
            card.pending = False  # decided elsewhere (a magic), or the session ended
            return
        shown = card.payload.get("edits")
        edits = shown if isinstance(shown, int) and not isinstance(shown, bool) else -1
        decide = functools.partial(
            self.session.decide,
            decision,
            step,  # for this step only: another may wait by the time it runs
            edits=edits if isinstance(decision, Approve | ApproveHunks) else None,
        )
        loop = running_loop()
        if isinstance(decision, Edit | ApproveHunks) and loop is not None:
            # Re-staging reads and validates files: off the kernel's event loop, so the
            # Stop button and every other widget keep working meanwhile.
            card.status = "staging…"
            staging = loop.run_in_executor(None, decide)
            staging.add_done_callback(lambda done: self._decided(card, step, decision, done))
            return
        try:
            proposal = decide()
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
            card.status = ""  # "staging…" said while the hunks were chosen: done now

    def stop(self) -> None:
        self.session.stop("stopped by the user")
        if self.on_decision is not None:
            self.on_decision()  # manual mode: the end is pulled onto the panel there

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
        task = f" · task {len(s.tasks)}" if len(s.tasks) > 1 else ""
        branch = f" · branch {s.branch}" if s.branch else ""
        rules = [{"path": r.path, "chars": r.chars, "truncated": r.truncated} for r in s.rules]
        rules_html = (
            f' · <span class="grinta-panel-rules" title="rules files in the system prompt" '
            f'style="color:{_MUTED}">rules: {line_html(redact(rules_line(rules)))}</span>'
            if rules
            else ""
        )
        self.header.value = (
            f'<div class="grinta-panel-header" style="font-family:var(--jp-ui-font-family,'
            f'sans-serif);font-size:13px;line-height:1.4;color:{_TEXT}"><b>grinta</b> · '
            f"{line_html(redact(str(getattr(s.model, 'name', 'model'))))} · "
            f'<code title="{html.escape(root)}" style="color:{_TEXT}">'
            f"{line_html(redact(s.root.name))}</code>{rules_html}{task}{branch} · "
            f"step {len(s.steps)} · {tokens} tokens · "
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
