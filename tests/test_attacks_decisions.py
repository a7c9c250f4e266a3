"""Attacks on decisions arriving from the user's surfaces: a decision applies only to the
exact staged proposal the person saw.

Real sessions (``ScriptedModel``), real panels and cards (their messages as the page sends
them), IPython's own shell for the magics; nothing of grinta's is mocked. Holes found (each
test below failed on the code of c523672):

- A card's approval was checked against the card's own drawing only: a ``%grinta edit`` (or
  an edit from a kernel subshell's thread) that the panel had not drawn yet left the card
  showing the old diff, and an Approve carrying that drawing's ``edits`` count committed the
  edited proposal nobody had looked at.
- Hunks chosen on one proposal were recorded against the step, not the proposal: an edit
  landing while the hunks were selected (the panel selects them in a worker thread) was
  followed by the commit of hunks of the proposal the edit had replaced.
- A veto's reason from the page had no bound: megabytes went whole to the model and the log
  (what a person says is bounded at ``MAX_MESSAGE_CHARS``).
- A rewind to the step that waited left that step's card showing its Approve bar, for a
  proposal that will never be decided.
- ``decide(..., step=True)`` (or ``1.0``) decided step 1: a bool or a float is no step
  number.
- ``%grinta veto`` after the pending step was already decided (from the Python API, say)
  raised a traceback instead of its one line.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import grinta_jupyter
from grinta_jupyter.agent import (
    Approve,
    ApproveHunks,
    NeedsDecision,
    Rewound,
    Session,
    Update,
    Veto,
)
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import MAX_MESSAGE_CHARS
from grinta_jupyter.jupyter.panel import SessionPanel
from tests.conftest import grinta_shell

LIMIT = 60  # seconds any one scenario may take before it counts as a hang
EDIT = {"path": "a.py", "old_string": "x = 1\n", "new_string": "x = 10\n"}
LONG = "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(12))
TWO_HUNKS = {
    "edits": [
        {"path": "long.py", "old_string": "return 1\n", "new_string": "return 100\n"},
        {"path": "long.py", "old_string": "return 10\n", "new_string": "return 1000\n"},
    ]
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    (tmp_path / "long.py").write_text(LONG)
    return tmp_path


def finish() -> Any:
    return reply("", call("finish", summary="done"))


def run(session: Session, on_update: Callable[[Update], Awaitable[None] | None]) -> None:
    """Drive ``session`` to its end, handing every update to ``on_update`` (awaited if it
    returns an awaitable)."""

    async def go() -> None:
        async for update in session.updates():
            answer = on_update(update)
            if answer is not None:
                await answer

    asyncio.run(asyncio.wait_for(go(), LIMIT))


def decisions(session: Session) -> list[str]:
    return [e.decision for e in session.log.events if e.type == "user_decision"]


# -- approvals of a proposal the person did not see ------------------------------------------


def test_an_approval_from_a_card_drawn_before_a_magic_edit_is_refused(root: Path) -> None:
    """``%grinta edit`` re-stages the step on the kernel's thread; the panel draws the new
    proposal only when its loop gets to the update. An Approve from the page in between
    names the proposal it saw (``edits`` 0): it must not commit the edited one."""
    model = ScriptedModel([reply("", call("replace_string", **EDIT)), finish()])
    session = Session("t", model=model, root=root)
    panel = SessionPanel(session)
    statuses: list[str] = []

    def on_update(update: Update) -> None:
        panel.apply(update)
        if not isinstance(update, NeedsDecision):
            return
        card = panel.cards[update.step.number]
        if update.step.edits == 0:
            session.edit({**EDIT, "new_string": "x = 666\n"})  # the magic's edit
            assert "x = 10" in card.payload["diff"], "the panel has not drawn the edit yet"
            card.receive({"event": "approve", "edits": 0})  # what the page saw: x = 10
            statuses.append(card.status)
            assert session.waiting, "nothing was decided"
            return
        assert "x = 666" in card.payload["diff"]
        card.receive({"event": "approve", "edits": card.payload["edits"]})

    run(session, on_update)
    assert "edited" in statuses[0], statuses
    assert (root / "a.py").read_text() == "x = 666\ny = 2\n", "approved once it was shown"
    assert decisions(session) == ["edit", "approve"]


def _when_called(code: Any, action: Callable[[], None]) -> Callable[..., Any]:
    """A trace function that runs ``action`` once, as ``code`` is entered on this thread:
    another thread's work landing at that instant, made deterministic."""
    fired = False

    def trace(frame: FrameType, event: str, _arg: object) -> None:
        nonlocal fired
        if event == "call" and frame.f_code is code and not fired:
            fired = True
            action()

    return trace


def test_hunks_chosen_while_an_edit_lands_are_not_committed(root: Path) -> None:
    """The panel selects hunks in a worker thread; an edit (a magic on the kernel's thread)
    may land before the selection is recorded. The hunks were of the replaced proposal:
    they must not be committed over the edited one the card now shows."""
    model = ScriptedModel([reply("", call("multiedit", **TWO_HUNKS)), finish()])
    session = Session("t", model=model, root=root)
    edited = {
        "edits": [{"path": "long.py", "old_string": "return 5\n", "new_string": "return 55\n"}]
    }
    refused: list[str] = []

    def on_update(update: Update) -> None:
        if not isinstance(update, NeedsDecision):
            return
        if update.step.edits == 1:
            session.decide(Approve())
            return
        step = update.step
        sys.settrace(_when_called(Session._record.__code__, lambda: session.edit(edited)))
        try:
            session.decide(ApproveHunks([1], "only f10"), step)
        except RuntimeError as exc:
            refused.append(str(exc))
        finally:
            sys.settrace(None)

    run(session, on_update)
    assert refused and "edited" in refused[0], refused
    text = (root / "long.py").read_text()
    assert "return 55\n" in text and "return 1000\n" not in text, "the edited proposal landed"
    assert decisions(session) == ["edit", "approve"]


def test_the_panel_refuses_hunks_of_a_card_drawn_before_an_edit(root: Path) -> None:
    """The same crossing for hunks chosen on the page: checked against the session, which
    holds the proposal that will be committed, not against the card's drawing."""
    model = ScriptedModel([reply("", call("multiedit", **TWO_HUNKS)), finish()])
    session = Session("t", model=model, root=root)
    panel = SessionPanel(session)
    edited = {  # two hunks again: hunk 1 is now another change than the one the page showed
        "edits": [
            {"path": "long.py", "old_string": "return 5\n", "new_string": "return 55\n"},
            {"path": "long.py", "old_string": "return 9\n", "new_string": "return 99\n"},
        ]
    }
    statuses: list[str] = []

    async def on_update(update: Update) -> None:
        panel.apply(update)
        if not isinstance(update, NeedsDecision):
            return
        if update.step.edits == 0:
            session.edit(edited)  # not drawn by the panel yet
            card = panel.cards[update.step.number]
            card.receive({"event": "hunks", "accepted": [1], "reason": "", "edits": 0})
            while card.status == "staging…" and card.pending:  # selected in a worker thread
                await asyncio.sleep(0.01)
            statuses.append(card.status)
            return
        session.decide(Veto("enough"))

    run(session, on_update)
    assert "edited" in statuses[0], statuses
    assert (root / "long.py").read_text() == LONG, "nothing was written"
    assert decisions(session) == ["edit", "veto"]


# -- what a decision carries --------------------------------------------------------------------


def test_a_huge_veto_reason_from_the_page_reaches_the_model_cut(root: Path) -> None:
    model = ScriptedModel([reply("", call("replace_string", **EDIT)), finish()])
    session = Session("t", model=model, root=root)
    panel = SessionPanel(session)
    reason = "no " * 1_000_000

    def on_update(update: Update) -> None:
        panel.apply(update)
        if isinstance(update, NeedsDecision):
            panel.cards[update.step.number].receive({"event": "veto", "reason": reason})

    run(session, on_update)
    assert decisions(session) == ["veto"]
    (tool,) = [m for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert MAX_MESSAGE_CHARS < len(tool["content"]) < MAX_MESSAGE_CHARS + 1_000
    assert "characters cut" in tool["content"]
    assert (root / "a.py").read_text() == "x = 1\ny = 2\n"


def test_a_huge_reason_for_declined_hunks_is_cut_too(root: Path) -> None:
    model = ScriptedModel([reply("", call("multiedit", **TWO_HUNKS)), finish()])
    session = Session("t", model=model, root=root)

    def on_update(update: Update) -> None:
        if isinstance(update, NeedsDecision):
            assert session.decide(ApproveHunks([1], "why " * 500_000)).ok  # type: ignore[union-attr]

    run(session, on_update)
    (event,) = [e for e in session.log.events if e.type == "user_decision"]
    assert event.reason is not None and len(event.reason) < MAX_MESSAGE_CHARS + 1_000
    assert "return 1000\n" in (root / "long.py").read_text()


@pytest.mark.parametrize("number", [True, 1.0], ids=["bool", "float"])
def test_a_step_number_that_is_not_an_int_decides_nothing(root: Path, number: Any) -> None:
    model = ScriptedModel([reply("", call("replace_string", **EDIT)), finish()])
    session = Session("t", model=model, root=root)

    def on_update(update: Update) -> None:
        if isinstance(update, NeedsDecision):
            assert update.step.number == 1
            with pytest.raises(TypeError, match="step number"):
                session.decide(Approve(), number)
            assert session.waiting
            session.decide(Veto("no"), 1)

    run(session, on_update)
    assert decisions(session) == ["veto"]
    assert (root / "a.py").read_text() == "x = 1\ny = 2\n"


# -- the panel after the session moved on --------------------------------------------------------


def test_a_rewind_to_the_waiting_step_leaves_no_card_asking(root: Path) -> None:
    turns = [
        reply("", call("replace_string", **EDIT)),
        reply("", call("replace_string", path="a.py", old_string="y = 2\n", new_string="y = 3\n")),
        finish(),
    ]
    session = Session("t", model=ScriptedModel(turns), root=root)
    panel = SessionPanel(session)
    asking: list[dict[int, bool]] = []

    def on_update(update: Update) -> None:
        panel.apply(update)
        if isinstance(update, Rewound):
            asking.append({n: c.pending for n, c in panel.cards.items()})
        if not isinstance(update, NeedsDecision):
            return
        if update.step.number == 2 and not asking:
            panel.apply(session.rewind(2))  # step 2 waits: it is never decided now
            return
        panel.cards[update.step.number].receive({"event": "approve"})

    run(session, on_update)
    assert asking and not any(asking[0].values()), asking
    card = panel.cards[2]
    card.receive({"event": "approve"})  # a click on what it showed decides nothing
    assert (root / "a.py").read_text() == "x = 10\ny = 2\n"


# -- the magics ------------------------------------------------------------------------------------


@pytest.fixture
def ip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GRINTA_MODEL", raising=False)
    yield from grinta_shell()


def test_a_magic_decision_on_a_step_already_decided_is_one_line(
    ip: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    ip.run_line_magic("grinta", "--manual fix the failing test in raft_kv")
    session = grinta_jupyter.current()
    assert session is not None, capsys.readouterr().out
    ip.run_line_magic("grinta", "step")
    assert session.waiting, capsys.readouterr().out
    session.decide(Veto("from the Python API"))
    capsys.readouterr()
    for line in ("approve", "veto later", 'edit {"command": "true"}'):
        assert ip.run_line_magic("grinta", line) is None  # no traceback
        out = capsys.readouterr().out
        assert out.startswith("%grinta: ") and "already decided" in out, out
    ip.run_line_magic("grinta", "step")
    assert decisions(session) == ["veto"], "the API's veto, once"


def test_a_huge_name_from_the_model_bar_is_not_echoed_whole() -> None:
    """The bar's status says which name it did not take; a page may send megabytes."""
    from grinta_jupyter.jupyter.modelbar import ModelBarWidget

    bar = ModelBarWidget()
    bar.receive({"event": "choose", "model": "x" * 3_000_000})
    assert "not offered" in bar.status and len(bar.status) < 1_000
    bar.receive({"event": "forget", "provider": "y" * 3_000_000})
    assert "nothing to forget" in bar.status and len(bar.status) < 1_000


@pytest.mark.parametrize("edits", [True, 1.0, "1", [1]])
def test_a_card_takes_only_an_int_as_the_edits_count_the_page_drew(edits: object) -> None:
    from grinta_jupyter.jupyter.card import StepCardWidget

    card = StepCardWidget(payload={"edits": 1, "status": "pending"})
    decided: list[object] = []
    card.on_decision = decided.append
    card.pending = True
    card.receive({"event": "approve", "edits": edits})
    assert decided == [] and "edited after the card you approved" in card.status
    card.receive({"event": "approve", "edits": 1})
    assert len(decided) == 1


def test_approve_n_approves_only_step_n(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """``%grinta approve`` run again (Run All, a cell re-run) approved whatever waited by
    then, a proposal nobody had seen; ``%grinta approve N`` approves step N only."""
    ip.run_line_magic("grinta", "--manual fix the failing test in raft_kv")
    session = grinta_jupyter.current()
    assert session is not None, capsys.readouterr().out
    ip.run_line_magic("grinta", "step")
    assert session.waiting and session.pending is not None, capsys.readouterr().out
    number = session.pending.number
    capsys.readouterr()
    ip.run_line_magic("grinta", f"approve {number + 1}")
    out = capsys.readouterr().out
    assert out.startswith("%grinta: ") and f"not step {number + 1}" in out, out
    assert decisions(session) == []
    ip.run_line_magic("grinta", "approve 1x")
    assert "takes nothing after it" in capsys.readouterr().out
    ip.run_line_magic("grinta", f"approve {number}")
    assert decisions(session) == ["approve"]


def hunks_from_the_page(root: Path, *selections: list[int]) -> tuple[list[object], list[str]]:
    """A two-hunk write waits; the page sends each of ``selections`` (hunk numbers) at once,
    as clicks do; what the card said once the kernel answered (status, still pending), and
    the session's decisions."""
    model = ScriptedModel([reply("", call("multiedit", **TWO_HUNKS)), finish()])
    session = Session("t", model=model, root=root)
    panel = SessionPanel(session)
    seen: list[object] = []

    async def on_update(update: Update) -> None:
        panel.apply(update)
        if isinstance(update, NeedsDecision):
            card = panel.cards[update.step.number]
            for accepted in selections:
                card.receive({"event": "hunks", "accepted": accepted, "reason": "", "edits": 0})
            for _ in range(2_000):  # chosen in a worker thread: at most 20 s
                if not card.pending:
                    break
                await asyncio.sleep(0.01)
            seen.append((card.status, card.pending))

    run(session, on_update)
    return seen, decisions(session)


def test_hunks_approved_from_the_page_leave_no_staging_note(root: Path) -> None:
    """The card said "staging…" while the hunks were chosen in a worker thread, and kept
    saying it after they were approved."""
    assert hunks_from_the_page(root, [0]) == ([("", False)], ["approve_hunks"])
