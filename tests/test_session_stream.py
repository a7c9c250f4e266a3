"""One way out of a session (``updates()``), one way in (``decide``): typed, in order."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from grinta_jupyter.agent import (
    Approve,
    Edit,
    ModelText,
    NeedsDecision,
    Session,
    SessionEnded,
    StepObserved,
    StepProposed,
    Veto,
)
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from tests.conftest import snapshot

EDIT = {"path": "app.py", "old_string": "41", "new_string": "42"}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text("def answer():\n    return 41\n")
    (root / "test_app.py").write_text(
        "from app import answer\n\n\ndef test_answer():\n    assert answer() in (41, 42, 43)\n"
    )
    return root


def collect(session: Session, answer) -> list:  # type: ignore[no-untyped-def]
    async def go() -> list:
        seen = []
        async for update in session.updates():
            seen.append(update)
            if isinstance(update, NeedsDecision):
                answer(session, update)
        return seen

    return asyncio.run(go())


def kinds(updates: list) -> list[str]:
    return [type(u).__name__ for u in updates]


def test_a_session_is_a_stream_of_typed_updates_answered_by_decisions(ws):
    model = ScriptedModel(
        [
            reply("Reading first.", call("read", path="app.py")),
            reply("Fixing.", call("replace_string", **EDIT)),
            reply("Testing.", call("run", command="python -m pytest -q -p no:cacheprovider")),
            reply("", call("finish", summary="answer is 42 now")),
        ]
    )
    session = Session("explain then change answer", model=model, root=ws)
    updates = [
        u
        for u in collect(session, lambda s, u: s.decide(Approve()))
        if not isinstance(u, ModelText)
    ]
    assert kinds(updates) == [
        "StepProposed",  # the read runs without asking
        "StepObserved",
        "StepProposed",
        "NeedsDecision",
        "StepObserved",
        "StepProposed",  # the test run asks too
        "NeedsDecision",
        "StepObserved",
        "StepProposed",
        "StepObserved",
        "SessionEnded",
    ]
    assert updates[3].step.proposal.tool == "replace_string"
    assert updates[4].step.observation.ok and "return 42" in (ws / "app.py").read_text()
    assert updates[-1] == SessionEnded("finished", "answer is 42 now")


def test_model_text_streams_as_updates(ws):
    model = ScriptedModel([reply("Thinking hard.", call("finish", summary="nothing to do"))])
    updates = collect(Session("explain app.py", model=model, root=ws), lambda s, u: None)
    text = "".join(u.text for u in updates if isinstance(u, ModelText))
    assert text == "Thinking hard."


def test_an_edit_is_staged_again_and_asked_about_again(ws):
    model = ScriptedModel(
        [reply("", call("replace_string", **EDIT)), reply("", call("finish", summary="done"))]
    )
    answers = iter([Edit({**EDIT, "new_string": "43"}), Approve()])

    def answer(session, update):  # type: ignore[no-untyped-def]
        proposal = session.decide(next(answers))
        if proposal is not None:
            assert proposal.ok and "+    return 43" in proposal.diff

    updates = collect(Session("explain answer", model=model, root=ws), answer)
    asked = [u for u in updates if isinstance(u, NeedsDecision)]
    assert len(asked) == 2 and asked[0].step is asked[1].step  # the same step, a new proposal
    assert "return 43" in (ws / "app.py").read_text()


def test_a_veto_writes_nothing_and_its_reason_reaches_the_model(ws):
    before = snapshot(ws)
    model = ScriptedModel(
        [reply("", call("replace_string", **EDIT)), reply("", call("finish", summary="left it"))]
    )
    updates = collect(
        Session("change answer", model=model, root=ws), lambda s, u: s.decide(Veto("keep 41"))
    )
    observed = [u for u in updates if isinstance(u, StepObserved)][0]
    assert not observed.step.observation.ok and observed.step.reason == "keep 41"
    assert snapshot(ws) == before
    assert "keep 41" in model.requests[1]["messages"][-1]["content"]


def test_a_decision_from_another_task_wakes_the_stream(ws):
    model = ScriptedModel(
        [reply("", call("replace_string", **EDIT)), reply("", call("finish", summary="done"))]
    )
    session = Session("explain answer", model=model, root=ws)

    async def go() -> list:
        seen = []

        async def click_later() -> None:  # as a widget click would, on the same loop
            while not session.waiting:
                await asyncio.sleep(0.01)
            session.decide(Approve())

        clicker = asyncio.ensure_future(click_later())
        async for update in session.updates():
            seen.append(update)  # the body does not answer
        await clicker
        return seen

    updates = asyncio.run(go())
    assert isinstance(updates[-1], SessionEnded)
    assert "return 42" in (ws / "app.py").read_text()  # the click approved the edit


def test_decide_refuses_what_is_not_a_decision(ws):
    model = ScriptedModel([reply("", call("replace_string", **EDIT))])
    session = Session("change answer", model=model, root=ws)
    with pytest.raises(RuntimeError, match="no proposal is waiting"):
        session.decide(Approve())
    with pytest.raises(TypeError, match="Approve"):
        session.decide("yes")  # type: ignore[arg-type]


def test_stopping_ends_the_stream(ws):
    model = ScriptedModel([reply("", call("replace_string", **EDIT))])
    session = Session("change answer", model=model, root=ws)
    updates = collect(session, lambda s, u: s.stop("stopped by the user"))
    assert isinstance(updates[-1], SessionEnded) and updates[-1].reason == "stopped by the user"
    assert isinstance(updates[0], StepProposed)
