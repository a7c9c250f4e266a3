"""One way out of a session (``updates()``), one way in (``decide``): typed, in order."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from grinta_jupyter.agent import (
    Approve,
    ApproveHunks,
    Edit,
    ModelText,
    ModelTurn,
    NeedsDecision,
    Session,
    SessionEnded,
    StepCommitted,
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
        "ModelTurn",
        "StepProposed",  # the read runs without asking
        "StepObserved",
        "ModelTurn",
        "StepProposed",
        "NeedsDecision",
        "StepCommitted",
        "StepObserved",
        "ModelTurn",
        "StepProposed",  # the test run asks too
        "NeedsDecision",
        "StepObserved",
        "ModelTurn",
        "StepProposed",
        "StepObserved",
        "SessionEnded",
    ]
    turns = [u.number for u in updates if isinstance(u, ModelTurn)]
    assert turns == [1, 2, 3, 4], "each turn names the step it would propose"
    committed = next(u for u in updates if isinstance(u, StepCommitted))
    assert (
        committed.step.number == 2 and isinstance(committed.commit_id, str) and committed.commit_id
    )
    assert updates[5].step.proposal.tool == "replace_string"
    assert updates[7].step.observation.ok and "return 42" in (ws / "app.py").read_text()
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
    assert isinstance(updates[0], ModelTurn) and isinstance(updates[1], StepProposed)


def test_two_listeners_see_every_update_and_only_one_drives(ws):
    model = ScriptedModel(
        [
            reply("Fixing.", call("replace_string", **EDIT)),
            reply("", call("finish", summary="answer is 42 now")),
        ]
    )
    session = Session("change answer", model=model, root=ws)

    async def go() -> tuple[list, list]:
        async def listen() -> list:
            return [u async for u in session.updates()]

        driver = asyncio.ensure_future(listen())
        watcher = asyncio.ensure_future(listen())  # a second front end, from the start
        while not session.waiting:
            await asyncio.sleep(0.01)
        session.decide(Approve())
        return await driver, await watcher

    first, second = asyncio.run(go())
    assert kinds(first) == kinds(second), "both see the same updates, in the same order"
    assert kinds(first).count("NeedsDecision") == 1
    turns = [u.number for u in first if isinstance(u, ModelTurn)]
    assert turns == [1, 2, 3], "each turn once (the finish guard sends the finish back)"
    assert len(model.requests) == 3, "one driver: the model was asked once per turn"
    assert (ws / "app.py").read_text() == "def answer():\n    return 42\n"


def test_a_decision_made_elsewhere_before_a_listener_looks_is_still_in_its_stream(ws):
    """The question is part of the stream: a slow front end sees it, as a fast one does."""
    model = ScriptedModel(
        [reply("", call("replace_string", **EDIT)), reply("", call("finish", summary="42"))]
    )
    session = Session("change answer", model=model, root=ws)
    still_waiting = []

    async def go() -> tuple[list, list]:
        async def slow() -> list:
            seen = []
            async for update in session.updates():
                seen.append(update)
                if isinstance(update, StepProposed):
                    await asyncio.sleep(0.2)  # the other front end decides meanwhile
                if isinstance(update, NeedsDecision):
                    still_waiting.append(session.waiting)
            return seen

        async def fast() -> list:
            return [u async for u in session.updates()]

        first, second = asyncio.ensure_future(slow()), asyncio.ensure_future(fast())
        while not session.waiting:
            await asyncio.sleep(0.005)
        session.decide(Approve())
        return await first, await second

    first, second = asyncio.run(go())
    assert kinds(first) == kinds(second)
    assert kinds(first).count("NeedsDecision") == 1
    assert still_waiting == [False], "decided already: session.waiting says so"
    assert (ws / "app.py").read_text() == "def answer():\n    return 42\n"


def test_a_consumer_that_edits_then_approves_in_one_handler_is_not_asked_again(ws):
    model = ScriptedModel(
        [reply("", call("replace_string", **EDIT)), reply("", call("finish", summary="42"))]
    )
    session = Session("change answer", model=model, root=ws)
    edited = dict(EDIT, new_string="44")

    async def go() -> tuple[list, list]:
        async def deciding() -> list:
            seen = []
            async for update in session.updates():
                seen.append(update)
                if isinstance(update, NeedsDecision):
                    session.decide(Edit(edited))
                    session.decide(Approve())
            return seen

        async def watching() -> list:
            return [u async for u in session.updates()]

        return await asyncio.gather(deciding(), watching())

    mine, theirs = asyncio.run(go())
    assert kinds(mine).count("NeedsDecision") == 1, "its own edit and approval answered it"
    assert kinds(theirs).count("NeedsDecision") == 2, "the watcher sees both proposals wait"
    assert (ws / "app.py").read_text() == "def answer():\n    return 44\n"


def test_a_listener_that_joins_after_the_end_hears_the_end(ws):
    model = ScriptedModel([reply("", call("finish", summary="nothing to do"))])
    session = Session("nothing", model=model, root=ws)
    collect(session, lambda s, u: None)
    late = collect(session, lambda s, u: None)
    assert late == [SessionEnded("finished", "nothing to do")]


def test_a_stepper_advances_from_plain_code_one_stop_at_a_time(ws):
    from grinta_jupyter.agent.stepper import Stepper

    model = ScriptedModel(
        [
            reply("Reading.", call("read", path="app.py")),
            reply("Fixing.", call("replace_string", **EDIT)),
            reply("", call("run", command="python -m pytest -q -p no:cacheprovider")),
            reply("", call("finish", summary="answer is 43 now")),
        ]
    )
    session = Session("change answer", model=model, root=ws)
    stepper = Stepper(session)
    first = stepper.advance()
    assert kinds(first)[-1] == "StepObserved" and first[-1].step.proposal.tool == "read"
    second = [u for u in stepper.advance() if not isinstance(u, ModelText)]
    assert kinds(second) == ["ModelTurn", "StepProposed", "NeedsDecision"]
    assert stepper.advance() == [], "while the proposal waits, advancing returns at once"
    assert stepper.advance() == []
    # An edit is a new proposal: the stepper shows it and asks again.
    session.decide(Edit({**EDIT, "new_string": "43"}))
    assert kinds(stepper.advance()) == ["StepProposed", "NeedsDecision"]
    session.decide(Approve())  # from this thread, while the stream runs on another loop
    assert kinds(stepper.advance()) == ["StepCommitted", "StepObserved"]
    assert (ws / "app.py").read_text() == "def answer():\n    return 43\n"
    assert kinds(stepper.advance())[-1] == "NeedsDecision"  # the test run
    session.decide(Approve())
    assert kinds(stepper.advance()) == ["StepObserved"]
    rest = stepper.advance()
    assert kinds(rest)[-3:] == ["StepProposed", "StepObserved", "SessionEnded"]
    assert session.end_reason == "finished"
    assert stepper.advance() == []


def test_a_consumer_that_stops_listening_mid_turn_cancels_the_turn(ws):
    class Slow(ScriptedModel):
        async def complete(self, messages, tools, on_text=None):  # type: ignore[no-untyped-def]
            if on_text is not None:
                on_text("thinking")
            await asyncio.sleep(30)
            raise AssertionError("the turn should have been cancelled")

    session = Session("slow", model=Slow([]), root=ws)

    async def go() -> list:
        seen = []
        async for update in session.updates():
            seen.append(update)
            if isinstance(update, ModelText):
                break
        return seen

    seen = asyncio.run(asyncio.wait_for(go(), 10))
    assert kinds(seen) == ["ModelTurn", "ModelText"]
    assert not session.done and session._driver is None, "nothing left running"


LONG = "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(12))
TWO_HUNKS = {
    "edits": [
        {"path": "long.py", "old_string": "return 1\n", "new_string": "return 100\n"},
        {"path": "long.py", "old_string": "return 10\n", "new_string": "return 1000\n"},
    ]
}


def test_approving_some_hunks_commits_only_those_and_tells_the_model_the_rest(ws):
    (ws / "long.py").write_text(LONG)
    model = ScriptedModel(
        [reply("", call("multiedit", **TWO_HUNKS)), reply("", call("finish", summary="x"))]
    )
    session = Session("change two returns", model=model, root=ws)
    answers = []

    def answer(s, u):  # type: ignore[no-untyped-def]
        assert u.step.proposal.diff.count("\n@@ ") + u.step.proposal.diff.startswith("@@") >= 2
        answers.append(s.decide(ApproveHunks([1], "keep f1 as it is")))

    updates = collect(session, answer)
    assert (
        answers[0].ok and "return 1000" in answers[0].diff and "return 100\n" not in answers[0].diff
    )
    text = (ws / "long.py").read_text()
    assert "return 1000\n" in text and "return 100\n" not in text and "    return 1\n" in text
    assert "StepCommitted" in kinds(updates)
    decision = next(e for e in session.log.events if e.type == "user_decision")
    assert (decision.decision, decision.hunks, decision.reason) == (
        "approve_hunks",
        [1],
        "keep f1 as it is",
    )
    told = model.requests[1]["messages"][-1]["content"]
    assert "1 of 2 hunks" in told and "hunk 1 in long.py" in told and "keep f1 as it is" in told
    assert session.steps[0].decision == "approve_hunks"


def test_a_choice_of_hunks_that_does_not_validate_leaves_the_step_waiting(ws):
    (ws / "app.py").write_text("x = 1\n" + LONG + "y = 2\n")
    before = snapshot(ws)
    # Two hunks that only make sense together: one opens a string, the other closes it.
    edits = {
        "edits": [
            {"path": "app.py", "old_string": "x = 1\n", "new_string": 'x = """\n'},
            {"path": "app.py", "old_string": "y = 2\n", "new_string": '"""\n'},
        ]
    }
    model = ScriptedModel(
        [reply("", call("multiedit", **edits)), reply("", call("finish", summary="x"))]
    )
    session = Session("t", model=model, root=ws)
    results = []

    def answer(s, u):  # type: ignore[no-untyped-def]
        if results:
            s.decide(Veto("no"))
            return
        results.append(s.decide(ApproveHunks([0])))
        assert s.waiting, "a choice that does not validate decides nothing"
        results.append(s.decide(ApproveHunks([])))
        results.append(s.decide(ApproveHunks([5])))
        assert s.waiting
        s.decide(Veto("no"))

    collect(session, answer)
    assert [r.error.code for r in results] == ["SYNTAX_ERROR", "INVALID_ARGS", "INVALID_ARGS"]
    assert snapshot(ws) == before
