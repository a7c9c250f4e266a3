"""Attacks on the session stream (issue 11): decisions at the wrong time, several
iterators, the Stepper, stop() at awkward moments, and per-hunk approval on odd files.

Every test runs the real session, runtime and workspace (ScriptedModel or a small
Model subclass plays the model). Nothing may hang: async tests run under
``asyncio.wait_for`` and a watchdog dumps the stacks and exits if one ever does.
Tests marked ``xfail(strict=True)`` show a bug; the reason says what it is.
"""

from __future__ import annotations

import asyncio
import faulthandler
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

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
    StepObserved,
    StepProposed,
    Update,
    Veto,
)
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.models.base import ModelReply
from grinta_jupyter.agent.stepper import Stepper
from grinta_jupyter.runtime.hunks import hunks
from tests.conftest import snapshot

LIMIT = 20  # seconds any one scenario may take before it counts as a hang

EDIT = {"path": "app.py", "old_string": "41", "new_string": "42"}
LONG = "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(12))
TWO_HUNKS = {
    "edits": [
        {"path": "long.py", "old_string": "return 1\n", "new_string": "return 100\n"},
        {"path": "long.py", "old_string": "return 10\n", "new_string": "return 1000\n"},
    ]
}


@pytest.fixture(autouse=True)
def watchdog() -> Iterator[None]:
    """A test that hangs despite its own timeouts dumps every stack and ends the run."""
    faulthandler.dump_traceback_later(120, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text("def answer():\n    return 41\n")
    (root / "long.py").write_text(LONG)
    return root


def finish() -> ModelReply:
    return reply("", call("finish", summary="done"))


def kinds(updates: list[Update]) -> list[str]:
    return [type(u).__name__ for u in updates if not isinstance(u, ModelText)]


def decisions(session: Session) -> list[str]:
    return [e.decision for e in session.log.events if e.type == "user_decision"]


def of_type(session: Session, kind: str) -> list[Any]:
    return [e for e in session.log.events if e.type == kind]


def drive(session: Session, answer: Callable[[Session, NeedsDecision], None]) -> list[Update]:
    """Iterate the stream to its end (bounded), answering each NeedsDecision with ``answer``."""

    async def go() -> list[Update]:
        seen: list[Update] = []
        async for update in session.updates():
            seen.append(update)
            if isinstance(update, NeedsDecision):
                answer(session, update)
        return seen

    return asyncio.run(asyncio.wait_for(go(), LIMIT))


def until_waiting(session: Session) -> list[Update]:
    """Iterate until a proposal waits (or the end), then stop iterating."""

    async def go() -> list[Update]:
        seen: list[Update] = []
        async for update in session.updates():
            seen.append(update)
            if isinstance(update, NeedsDecision):
                break
        return seen

    return asyncio.run(asyncio.wait_for(go(), LIMIT))


class SlowCommits:
    """Makes the session's commits take ``delay`` seconds before the real commit runs,
    as an fsync on a slow disk or a long command would: the window a stop or a
    cancellation can land in."""

    def __init__(self, session: Session, delay: float):
        self.started = threading.Event()
        real = session.runtime.commit

        def slow(proposal: Any, **kw: Any) -> Any:
            self.started.set()
            time.sleep(delay)
            return real(proposal, **kw)

        session.runtime.commit = slow  # type: ignore[method-assign]


# -- decisions at the wrong time -------------------------------------------------------------


def test_a_decision_with_nothing_pending_is_refused_and_logs_nothing(ws):
    session = Session("t", model=ScriptedModel([finish()]), root=ws)
    for decision in (Approve(), Veto("x"), Edit(EDIT), ApproveHunks([0])):
        with pytest.raises(RuntimeError, match="no proposal is waiting"):
            session.decide(decision)
    assert decisions(session) == []
    drive(session, lambda s, u: None)
    for decision in (Approve(), Veto("x"), Edit(EDIT), ApproveHunks([0])):
        with pytest.raises(RuntimeError, match="no proposal is waiting"):
            session.decide(decision)  # after the end too
    assert decisions(session) == []


def test_a_second_decision_before_the_driver_acts_is_refused_and_the_first_stands(ws):
    # One decision per proposal: a second click (or a change of mind typed too late) is
    # refused, so what is committed is exactly what was decided, and the log says so.
    model = ScriptedModel([reply("", call("replace_string", **EDIT)), finish()])
    session = Session("t", model=model, root=ws)
    refused: list[str] = []

    def answer(s: Session, u: NeedsDecision) -> None:
        s.decide(Approve())
        assert not s.waiting
        for late in (Veto("changed my mind"), Edit({**EDIT, "new_string": "666"}), Approve()):
            with pytest.raises(RuntimeError, match="already decided") as info:
                s.decide(late)
            refused.append(str(info.value))

    drive(session, answer)
    assert len(refused) == 3
    assert [(e.decision, e.reason) for e in of_type(session, "user_decision")] == [
        ("approve", None)
    ]
    assert "return 42" in (ws / "app.py").read_text() and "666" not in (ws / "app.py").read_text()
    assert len(of_type(session, "commit")) == 1


def test_hunks_chosen_then_an_edit_the_edit_is_refused_and_the_hunks_stand(ws):
    model = ScriptedModel([reply("", call("multiedit", **TWO_HUNKS)), finish()])
    session = Session("t", model=model, root=ws)

    def answer(s: Session, u: NeedsDecision) -> None:
        assert s.decide(ApproveHunks([1])).ok  # type: ignore[union-attr]
        with pytest.raises(RuntimeError, match="already decided"):
            s.decide(
                Edit({"path": "long.py", "old_string": "return 5\n", "new_string": "return 55\n"})
            )

    drive(session, answer)
    text = (ws / "long.py").read_text()
    assert "return 1000\n" in text and "    return 1\n" in text and "return 55\n" not in text
    assert decisions(session) == ["approve_hunks"]


def test_every_decision_is_logged_once_through_edits_and_refused_choices(ws):
    model = ScriptedModel([reply("", call("multiedit", **TWO_HUNKS)), finish()])
    session = Session("t", model=model, root=ws)

    def answer(s: Session, u: NeedsDecision) -> None:
        if u.step.edits == 0:
            assert not s.decide(Edit("{not json")).ok  # type: ignore[union-attr]
            return  # asked again for the refused proposal
        if u.step.edits == 1:
            assert not s.decide(Edit("[1, 2]")).ok  # type: ignore[union-attr]
            assert not s.decide(ApproveHunks([0])).ok  # a refused proposal has no hunks
            s.decide(Edit(TWO_HUNKS))
            return
        assert not s.decide(ApproveHunks([7])).ok  # type: ignore[union-attr]
        assert s.decide(ApproveHunks([1], "f1 stays")).ok  # type: ignore[union-attr]

    updates = drive(session, answer)
    assert decisions(session) == ["edit", "edit", "edit", "approve_hunks"]
    assert kinds(updates).count("NeedsDecision") == 3
    assert kinds(updates).count("SessionEnded") == 1 and isinstance(updates[-1], SessionEnded)
    text = (ws / "long.py").read_text()
    assert "return 1000\n" in text and "    return 1\n" in text


@pytest.mark.parametrize(
    "indexes",
    [[-1], [0, 0], [10**30], [True], [0.0], ["0"], [None], [1, -1]],
    ids=["negative", "duplicate", "huge", "bool", "float", "string", "none", "mixed"],
)
def test_hunk_indexes_that_are_not_hunks_decide_nothing(ws, indexes):
    before = snapshot(ws)
    model = ScriptedModel([reply("", call("multiedit", **TWO_HUNKS)), finish()])
    session = Session("t", model=model, root=ws)
    results = []

    def answer(s: Session, u: NeedsDecision) -> None:
        results.append(s.decide(ApproveHunks(indexes)))
        assert s.waiting, "a refused choice decides nothing"
        s.decide(Veto("no"))

    drive(session, answer)
    assert [r.error.code for r in results] == ["INVALID_ARGS"]
    assert decisions(session) == ["veto"] and snapshot(ws) == before


def test_hunks_of_a_command_are_refused_and_the_command_does_not_run(ws):
    model = ScriptedModel([reply("", call("run", command="touch ran")), finish()])
    session = Session("t", model=model, root=ws)
    results = []

    def answer(s: Session, u: NeedsDecision) -> None:
        results.append(s.decide(ApproveHunks([0])))
        s.decide(Veto("no"))

    drive(session, answer)
    assert results[0].error.code == "INVALID_ARGS" and "command" in results[0].error.message
    assert not (ws / "ran").exists()


def test_a_file_changed_after_choosing_hunks_is_stale_and_nothing_is_written(ws):
    model = ScriptedModel([reply("", call("multiedit", **TWO_HUNKS)), finish()])
    session = Session("t", model=model, root=ws)
    theirs = LONG.replace("return 11", "return 11  # the user's edit in JupyterLab")

    def answer(s: Session, u: NeedsDecision) -> None:
        assert s.decide(ApproveHunks([1])).ok  # type: ignore[union-attr]
        (ws / "long.py").write_text(theirs)  # before the driver commits

    updates = drive(session, answer)
    observed = next(u for u in updates if isinstance(u, StepObserved))
    assert observed.step.observation.error.code == "STALE_FILE"
    assert (ws / "long.py").read_text() == theirs
    assert "StepCommitted" not in kinds(updates)


def test_a_new_file_is_one_hunk_and_choosing_it_writes_the_same_bytes(tmp_path):
    content = "a = 1\r\nb = 2"  # CRLF and no final newline, as the model sent it
    written = {}
    for how in ("approve", "hunks"):
        root = tmp_path / how
        root.mkdir()
        model = ScriptedModel([reply("", call("create", path="new.py", content=content)), finish()])
        session = Session("t", model=model, root=root)

        def answer(s: Session, u: NeedsDecision, how: str = how) -> None:
            if how == "approve":
                s.decide(Approve())
            else:
                assert len(hunks(u.step.proposal)) == 1
                assert s.decide(ApproveHunks([0])).ok  # type: ignore[union-attr]

        drive(session, answer)
        written[how] = (root / "new.py").read_bytes()
    assert written["approve"] == written["hunks"]


ODD_FILES = {
    "crlf": b"".join(b"def f%d():\r\n    return %d\r\n\r\n\r\n" % (i, i) for i in range(12)),
    "no_final_newline": LONG.rstrip("\n").encode(),
    "bom": b"\xef\xbb\xbf" + LONG.encode(),
    "mixed_endings": LONG.encode().replace(b"return 3\n", b"return 3\r\n"),
    "lone_cr": LONG.encode().replace(b"return 4\n", b"return 4\r\r\n"),
    "unicode_lines": LONG.replace("return 7\n", "return 7  # \u2028 \x0c \u00e9\n").encode(),
}


@pytest.mark.parametrize("kind", sorted(ODD_FILES))
def test_accepting_every_hunk_writes_exactly_what_approve_writes(tmp_path, kind):
    edits = {
        "edits": [
            {"path": "long.py", "old_string": "return 1\n", "new_string": "return 100\n"},
            {"path": "long.py", "old_string": "return 10\n", "new_string": "return 1000\n"},
        ]
    }
    written = {}
    for how in ("approve", "hunks"):
        root = tmp_path / how
        root.mkdir()
        (root / "long.py").write_bytes(ODD_FILES[kind])
        model = ScriptedModel([reply("", call("multiedit", **edits)), finish()])
        session = Session("t", model=model, root=root)

        def answer(s: Session, u: NeedsDecision, how: str = how) -> None:
            if how == "approve":
                s.decide(Approve())
                return
            assert u.step.proposal.ok, u.step.proposal.error
            every = [h.index for h in hunks(u.step.proposal)]
            assert len(every) == 2
            assert s.decide(ApproveHunks(list(reversed(every)))).ok  # type: ignore[union-attr]

        drive(session, answer)
        written[how] = (root / "long.py").read_bytes()
    assert written["approve"] != ODD_FILES[kind]
    assert written["hunks"] == written["approve"]


def test_accepting_every_hunk_is_an_approval_to_the_model_and_the_log(ws):
    model = ScriptedModel([reply("", call("multiedit", **TWO_HUNKS)), finish()])
    session = Session("t", model=model, root=ws)
    drive(session, lambda s, u: s.decide(ApproveHunks([0, 1])))
    told = model.requests[1]["messages"][-1]["content"]
    assert "Declined" not in told
    assert decisions(session) == ["approve"]


def test_a_file_that_is_not_utf8_is_refused_and_has_no_hunks(ws):
    (ws / "latin.py").write_bytes("x = 'caf\xe9'\ny = 1\n".encode("latin-1"))
    before = snapshot(ws)
    edit = {"path": "latin.py", "old_string": "y = 1", "new_string": "y = 2"}
    model = ScriptedModel([reply("", call("replace_string", **edit)), finish()])
    session = Session("t", model=model, root=ws)
    updates = drive(session, lambda s, u: pytest.fail("a refused proposal asks nothing"))
    observed = next(u for u in updates if isinstance(u, StepObserved))
    assert observed.step.observation.error.code == "UNSUPPORTED_ENCODING"
    assert snapshot(ws) == before


# -- several iterators -----------------------------------------------------------------------


class Streaming(ScriptedModel):
    """A scripted model whose turns stream ``pieces`` pieces of text, ``pause`` apart."""

    def __init__(self, turns: list[ModelReply], pieces: int = 5, pause: float = 0.05):
        super().__init__(turns)
        self.pieces, self.pause = pieces, pause
        self.running = 0
        self.most_at_once = 0

    async def complete(self, messages, tools, on_text=None):  # type: ignore[no-untyped-def]
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        try:
            for n in range(self.pieces):
                if on_text is not None:
                    on_text(f"piece {n} ")
                await asyncio.sleep(self.pause)
            return await super().complete(messages, tools, None)
        finally:
            self.running -= 1


def test_two_iterators_breaking_early_leave_nothing_running_and_a_third_finishes(ws):
    model = Streaming([reply("", call("replace_string", **EDIT)), finish()])
    session = Session("t", model=model, root=ws)

    async def go() -> tuple[list[Update], list[Update], list[Update]]:
        async def until_text() -> list[Update]:
            seen: list[Update] = []
            async for update in session.updates():
                seen.append(update)
                if isinstance(update, ModelText):
                    break
            return seen

        a, b = await asyncio.gather(until_text(), until_text())
        assert session._driver is None and not session.done
        rest: list[Update] = []
        async for update in session.updates():
            rest.append(update)
            if isinstance(update, NeedsDecision):
                session.decide(Approve())
        return a, b, rest

    a, b, rest = asyncio.run(asyncio.wait_for(go(), LIMIT))
    assert kinds(a) == kinds(b) == ["ModelTurn"]
    assert kinds(rest).count("SessionEnded") == 1 and isinstance(rest[-1], SessionEnded)
    assert (ws / "app.py").read_text() == "def answer():\n    return 42\n"
    assert decisions(session) == ["approve"]


def test_a_paused_iterator_does_not_block_the_others(ws):
    model = Streaming([reply("", call("replace_string", **EDIT)), finish()])
    session = Session("t", model=model, root=ws)

    async def go() -> list[Update]:
        paused = session.updates()
        first = await anext(paused)  # a cell that looked at one update, then moved on
        assert isinstance(first, ModelTurn)
        assert isinstance(await anext(paused), ModelText)
        seen: list[Update] = []

        async def panel() -> None:
            async for update in session.updates():
                seen.append(update)
                if isinstance(update, NeedsDecision):
                    session.decide(Approve())

        try:
            await asyncio.wait_for(panel(), 5)
        finally:
            await paused.aclose()
        return seen

    seen = asyncio.run(asyncio.wait_for(go(), LIMIT))
    assert isinstance(seen[-1], SessionEnded)


def test_an_iterator_abandoned_mid_command_loses_no_result(ws):
    command = "touch started; sleep 1; printf x >> ran"
    model = ScriptedModel([reply("", call("run", command=command)), finish(), finish()])
    session = Session("t", model=model, root=ws, policy="auto")

    async def go() -> None:
        driver = session.updates()  # the first iterator to ask drives
        assert isinstance(await anext(driver), ModelTurn)

        async def watches() -> None:
            async for _ in session.updates():
                pass

        watcher = asyncio.ensure_future(watches())
        async for update in driver:
            if isinstance(update, StepProposed):
                while not (ws / "started").exists():
                    await asyncio.sleep(0.01)
                break  # the command runs in its worker thread
        await driver.aclose()  # the cell is interrupted, or the panel closed
        await watcher

    asyncio.run(asyncio.wait_for(go(), LIMIT))
    time.sleep(1.5)  # past the command's end, had it gone on unseen
    ran = (ws / "ran").read_text() if (ws / "ran").exists() else ""
    assert ran in ("", "x"), "the command ran at most once (finished, or ended by the cancel)"
    observed = [e for e in of_type(session, "observation") if e.tool == "run"]
    assert len(observed) == 1, "the command's result is recorded"
    for request in model.requests[1:]:
        asked = {c["id"] for m in request["messages"] for c in m.get("tool_calls") or []}
        answered = {m.get("tool_call_id") for m in request["messages"] if m["role"] == "tool"}
        assert asked <= answered, "every tool call the model made has a result"


def test_iterators_on_two_threads_each_end_once_and_the_model_is_asked_once_per_turn(ws):
    # The finish guard sends back two finishes that follow an untested edit; the third ends it.
    turns = [reply("", call("replace_string", **EDIT)), finish(), finish(), finish()]
    model = Streaming(turns, pause=0.01)
    session = Session("t", model=model, root=ws)
    results: dict[str, list[Update]] = {}
    errors: list[BaseException] = []

    def on_own_loop(name: str) -> None:
        async def go() -> list[Update]:
            seen: list[Update] = []
            async for update in session.updates():
                seen.append(update)
                if isinstance(update, NeedsDecision) and name == "a":
                    session.decide(Approve())
            return seen

        try:
            results[name] = asyncio.run(asyncio.wait_for(go(), LIMIT))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=on_own_loop, args=(n,)) for n in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(LIMIT + 5)
    assert not errors and set(results) == {"a", "b"}
    for seen in results.values():
        assert kinds(seen).count("SessionEnded") == 1 and isinstance(seen[-1], SessionEnded)
    assert model.most_at_once == 1 and len(model.requests) == 4 == len(
        of_type(session, "model_request")
    )
    assert session.end_reason == "finished"
    assert (ws / "app.py").read_text() == "def answer():\n    return 42\n"


# -- the Stepper -----------------------------------------------------------------------------


def test_advance_after_a_stop_from_outside_returns_the_end_once(ws):
    session = Session(
        "t", model=ScriptedModel([reply("", call("replace_string", **EDIT))]), root=ws
    )
    stepper = Stepper(session)
    assert kinds(stepper.advance())[-1] == "NeedsDecision"
    session.stop("closed the panel")
    assert stepper.advance() == [SessionEnded("closed the panel", None)]
    assert stepper.advance() == [] and stepper.advance() == []
    with pytest.raises(RuntimeError):
        session.decide(Approve())
    assert decisions(session) == []


def test_a_stop_from_another_thread_ends_a_model_call_the_stepper_waits_on(ws):
    model = Streaming([finish()], pieces=1000, pause=0.05)  # 50 s of text unless stopped
    session = Session("t", model=model, root=ws)
    stepper = Stepper(session)
    threading.Timer(0.3, session.stop, args=("stopped",)).start()
    started = time.monotonic()
    pulled = stepper.advance()
    assert time.monotonic() - started < 5
    assert isinstance(pulled[-1], SessionEnded) and pulled[-1].reason == "stopped"
    assert stepper.advance() == []


def test_advance_from_two_threads_at_once_is_safe(ws):
    model = Streaming([reply("", call("replace_string", **EDIT)), finish()], pause=0.1)
    session = Session("t", model=model, root=ws)
    stepper = Stepper(session)
    results: list[list[Update]] = []
    errors: list[BaseException] = []

    def advance() -> None:
        try:
            results.append(stepper.advance())
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=advance) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(LIMIT)
    assert errors == []
    assert sum(kinds(r).count("NeedsDecision") for r in results) >= 1


def test_a_decision_from_the_steppers_loop_and_from_this_thread_both_wake_it(ws):
    from grinta_jupyter.agent.blocking import on_background

    model = ScriptedModel(
        [
            reply("", call("replace_string", **EDIT)),
            reply(
                "", call("replace_string", path="app.py", old_string="def", new_string="async def")
            ),
            finish(),
            finish(),
            finish(),
        ]
    )
    session = Session("t", model=model, root=ws)
    stepper = Stepper(session)
    assert kinds(stepper.advance())[-1] == "NeedsDecision"

    async def click() -> None:  # a widget click, on the loop the stream runs on
        session.decide(Approve())

    on_background(click())
    assert kinds(stepper.advance()) == ["StepCommitted", "StepObserved"]
    assert kinds(stepper.advance())[-1] == "NeedsDecision"
    session.decide(Veto("keep it sync"))  # from this thread
    assert kinds(stepper.advance()) == ["StepObserved"]
    assert decisions(session) == ["approve", "veto"]
    assert (ws / "app.py").read_text() == "def answer():\n    return 42\n"


def test_ctrl_c_during_advance_cancels_the_model_call_and_the_next_advance_goes_on(ws):
    import os
    import signal

    model = Streaming([finish()], pieces=40, pause=0.05)  # 2 s of text
    session = Session("t", model=model, root=ws)
    stepper = Stepper(session)
    threading.Timer(0.3, os.kill, args=(os.getpid(), signal.SIGINT)).start()
    with pytest.raises(KeyboardInterrupt):
        stepper.advance()
    deadline = time.monotonic() + 5
    while model.running and time.monotonic() < deadline:
        time.sleep(0.01)
    assert model.running == 0 and session._driver is None and not session.done
    model.pieces = 1
    rest = stepper.advance()
    assert isinstance(rest[-1], SessionEnded) and rest[-1].reason == "finished"
    assert len(of_type(session, "session_end")) == 1


# -- stop() at awkward moments, and parts that misbehave -------------------------------------


def test_a_stop_during_a_commit_never_leaves_an_unrecorded_write(ws):
    model = ScriptedModel([reply("", call("replace_string", **EDIT)), finish()])
    session = Session("t", model=model, root=ws)
    slow = SlowCommits(session, 0.5)

    async def go() -> list[Update]:
        seen: list[Update] = []

        async def stop_mid_commit() -> None:
            while not slow.started.is_set():
                await asyncio.sleep(0.01)
            session.stop("stopped by the user")

        stopper = asyncio.ensure_future(stop_mid_commit())
        async for update in session.updates():
            seen.append(update)
            if isinstance(update, NeedsDecision):
                session.decide(Approve())
        await stopper
        return seen

    seen = asyncio.run(asyncio.wait_for(go(), LIMIT))
    assert kinds(seen).count("SessionEnded") == 1
    written = "return 42" in (ws / "app.py").read_text()
    recorded = [e for e in of_type(session, "commit") if e.ok]
    assert written == bool(recorded), "what is on disk is what the log says was committed"
    if written:
        ends = [e.seq for e in of_type(session, "session_end")]
        assert recorded[0].seq < ends[0], "the commit is recorded before the session ends"


def test_a_stop_during_staging_commits_nothing_and_asks_nothing(ws):
    before = snapshot(ws)
    model = ScriptedModel([reply("", call("replace_string", **EDIT)), finish()])
    session = Session("t", model=model, root=ws, policy="auto")
    real = session.runtime.propose
    staging = threading.Event()

    def slow_propose(*args: Any, **kw: Any) -> Any:
        staging.set()
        time.sleep(0.3)
        return real(*args, **kw)

    session.runtime.propose = slow_propose  # type: ignore[method-assign]

    async def go() -> list[Update]:
        async def stop_mid_staging() -> None:
            while not staging.is_set():
                await asyncio.sleep(0.01)
            session.stop("stopped")

        stopper = asyncio.ensure_future(stop_mid_staging())
        seen = [u async for u in session.updates()]
        await stopper
        return seen

    seen = asyncio.run(asyncio.wait_for(go(), LIMIT))
    assert kinds(seen) == ["ModelTurn", "SessionEnded"]
    assert snapshot(ws) == before and session.pending is None
    assert of_type(session, "commit") == [] and decisions(session) == []


def test_a_stop_during_a_long_command_returns_promptly_and_ends_the_command(ws):
    command = "touch started; sleep 6; touch finished"
    model = ScriptedModel([reply("", call("run", command=command)), finish()])
    session = Session("t", model=model, root=ws, policy="auto")

    async def go() -> list[Update]:
        async def stop_when_running() -> None:
            while not (ws / "started").exists():
                await asyncio.sleep(0.01)
            session.stop("stopped by the user")

        stopper = asyncio.ensure_future(stop_when_running())
        seen = [u async for u in session.updates()]
        await stopper
        return seen

    started = time.monotonic()
    seen = asyncio.run(asyncio.wait_for(go(), LIMIT))
    took = time.monotonic() - started
    assert isinstance(seen[-1], SessionEnded)
    time.sleep(max(0.0, 6.5 - took))  # past the command's own end, had it gone on
    assert not (ws / "finished").exists(), "the stopped command was ended"
    assert took < 4, f"stopping took {took:.1f}s"


def test_a_model_that_raises_unexpectedly_ends_the_session_once(ws):
    class Broken(ScriptedModel):
        async def complete(self, messages, tools, on_text=None):  # type: ignore[no-untyped-def]
            self.requests.append({"messages": messages, "tools": []})
            raise ValueError("the client has a bug")

    model = Broken([])
    session = Session("t", model=model, root=ws)

    async def go() -> tuple[Any, Any]:
        async def listen() -> list[Update]:
            return [u async for u in session.updates()]

        first = asyncio.ensure_future(listen())
        second = asyncio.ensure_future(listen())
        return tuple(await asyncio.gather(first, second, return_exceptions=True))  # type: ignore[return-value]

    first, second = asyncio.run(asyncio.wait_for(go(), LIMIT))
    assert session.done, "the session ended"
    assert len(of_type(session, "session_end")) == 1
    assert len(model.requests) == 1, "the model was asked once for the turn"
    for seen in (first, second):  # each iterator either raised or saw the end once
        if not isinstance(seen, BaseException):
            assert kinds(seen).count("SessionEnded") == 1


def test_a_policy_that_raises_ends_the_session_and_commits_nothing(ws):
    from grinta_jupyter.agent.step import PolicyError

    before = snapshot(ws)

    def policy(proposal: Any) -> bool:
        raise KeyError("oops")

    model = ScriptedModel([reply("", call("replace_string", **EDIT)), finish()])
    session = Session("t", model=model, root=ws, policy=policy)

    async def go() -> tuple[Any, Any]:
        async def listen() -> list[Update]:
            return [u async for u in session.updates()]

        driver = asyncio.ensure_future(listen())
        await asyncio.sleep(0)
        watcher = asyncio.ensure_future(listen())
        return tuple(await asyncio.gather(driver, watcher, return_exceptions=True))  # type: ignore[return-value]

    driver, watcher = asyncio.run(asyncio.wait_for(go(), LIMIT))
    assert isinstance(driver, PolicyError) and "KeyError" in str(driver)
    assert kinds(watcher)[-1] == "SessionEnded" and watcher[-1].reason == "policy_error"
    assert session.done and session.pending is None and snapshot(ws) == before
    assert len(of_type(session, "session_end")) == 1 and decisions(session) == []


def test_a_model_that_streams_text_forever_is_stopped_from_the_loop_body(ws):
    class Endless(ScriptedModel):
        async def complete(self, messages, tools, on_text=None):  # type: ignore[no-untyped-def]
            while True:
                if on_text is not None:
                    on_text("more ")
                await asyncio.sleep(0)

    session = Session("t", model=Endless([]), root=ws)

    async def go() -> list[Update]:
        seen: list[Update] = []
        async for update in session.updates():
            seen.append(update)
            if len(seen) == 500:
                session.stop("enough")
        return seen

    seen = asyncio.run(asyncio.wait_for(go(), LIMIT))
    assert isinstance(seen[-1], SessionEnded) and seen[-1].reason == "enough"
    assert kinds(seen).count("SessionEnded") == 1 and session._model_task is None
    assert len(seen) < 1000, "the text stops at the stop"


_ABANDONED: list[Any] = []  # loops a broken stop left stuck (see below)


def test_a_stop_from_another_thread_is_thread_safe(ws):
    model = Streaming([finish()], pieces=400, pause=0.05)
    session = Session("t", model=model, root=ws)
    loop = asyncio.new_event_loop()
    loop.set_debug(True)  # asyncio then checks that loop-only calls come from the loop's thread
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    streaming = threading.Event()

    async def go() -> list[Update]:
        seen: list[Update] = []
        async for update in session.updates():
            seen.append(update)
            if isinstance(update, ModelText):
                streaming.set()
        return seen

    future = asyncio.run_coroutine_threadsafe(go(), loop)
    try:
        assert streaming.wait(LIMIT)
        session.stop("stopped from another thread")  # as a kernel thread stops a panel's session
        seen = future.result(LIMIT)
    finally:
        if not future.done():  # a broken stop leaves the loop stuck: abandon it
            loop.call_soon_threadsafe(loop.stop)
            runner.join(LIMIT)
            # Kept alive, so its stuck tasks are not reported as destroyed in later tests.
            _ABANDONED.append((loop, future, session))
    assert isinstance(seen[-1], SessionEnded) and seen[-1].reason == "stopped from another thread"


# -- the CLI's hunk-by-hunk prompt, through the real entry point -----------------------------

THREE_HUNKS = [
    ("return 1\n", "return 100\n"),
    ("return 5\n", "return 500\n"),
    ("return 10\n", "return 1000\n"),
]


def cli_run(root: Path, answers: str, edits: list[tuple[str, str]]) -> tuple[str, list[dict]]:
    """``grinta run`` on ``root`` with a local model proposing one multiedit, then finish."""
    from tests.openai_server import OpenAIServer, tool_call, tool_reply
    from tests.test_cli_hostile import events, grinta

    multiedit = tool_call(
        "multiedit",
        {"edits": [{"path": "long.py", "old_string": a, "new_string": b} for a, b in edits]},
    )
    with OpenAIServer() as server:
        server.queue(
            tool_reply(multiedit), *[tool_reply(tool_call("finish", {"summary": "d"}))] * 3
        )
        done = grinta(
            "run",
            "change returns",
            "--root",
            str(root),
            answers=answers,
            timeout=60,
            GRINTA_MODEL="openai/test",
            GRINTA_API_BASE=server.url,
            GRINTA_API_KEY="sk-test",
        )
    return done.stdout, events(root)


def test_cli_stdin_closing_between_hunks_vetoes_once_and_stops(ws):
    out, logged = cli_run(ws, "h\ny\n", THREE_HUNKS)  # the pipe ends at hunk 2 of 3
    assert "--- hunk 2 of 3 in long.py" in out
    assert (ws / "long.py").read_text() == LONG, "hunk 1 was answered yes, but nothing decided"
    decided = [(e["decision"], e.get("reason")) for e in logged if e["type"] == "user_decision"]
    assert decided == [("veto", "no answer: standard input closed")]
    ends = [e["reason"] for e in logged if e["type"] == "session_end"]
    assert ends == ["stopped: standard input closed"]


def test_cli_hunks_show_control_characters_escaped(ws):
    hostile = LONG.replace("return 2\n", "return 2  # \x1b]0;pwned\x07\x1b[2J\n")
    (ws / "long.py").write_text(hostile)
    out, logged = cli_run(ws, "h\nn\ny\nleave f1\n", [THREE_HUNKS[0], THREE_HUNKS[2]])
    assert "\x1b]0;pwned" not in out and "\x1b[2J" not in out
    assert "--- hunk 1 of 2 in long.py" in out
    text = (ws / "long.py").read_text()
    assert "return 1000\n" in text and "return 100\n" not in text and "\x1b[2J" in text
    decided = [e["decision"] for e in logged if e["type"] == "user_decision"]
    assert decided == ["approve_hunks"]


# -- decisions that cost time, and int-like hunk numbers -------------------------------------


def test_an_edit_clicked_on_the_loop_does_not_freeze_it(ws):
    """A card's click runs on the kernel's event loop; ``decide(Edit)`` stages on its caller's
    thread (it returns the new proposal), so the panel hands it to a worker thread: the loop
    keeps turning while a 5 MB file is staged again."""
    from grinta_jupyter.jupyter.panel import SessionPanel

    # 5 MB of Python: staging an edit of it (match, diff, validate) takes about half a second
    # even once the first staging has warmed the caches (a 2 MB file took 0.13 s: too close).
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(150000))
    (ws / "big.py").write_text(body)
    edit = {"path": "big.py", "old_string": "return x + 5\n", "new_string": "return x + 55\n"}
    model = ScriptedModel([reply("", call("replace_string", **edit))])
    session = Session("t", model=model, root=ws)
    panel = SessionPanel(session)
    gaps: list[float] = []

    async def go() -> None:
        async for update in session.updates():
            panel.apply(update)
            if isinstance(update, NeedsDecision):
                break
        step = session.pending
        assert step is not None

        async def heartbeat() -> None:
            last = time.monotonic()
            while True:
                await asyncio.sleep(0.01)
                now = time.monotonic()
                gaps.append(now - last)
                last = now

        beating = asyncio.ensure_future(heartbeat())
        await asyncio.sleep(0.05)
        panel.decide(step, Edit({**edit, "new_string": "return x + 56\n"}))  # the click
        card = panel.cards[step.number]
        while card.status == "staging…":
            await asyncio.sleep(0.01)
        beating.cancel()
        assert session.pending is not None
        assert "return x + 56" in session.pending.proposal.diff
        session.stop("done")

    asyncio.run(asyncio.wait_for(go(), LIMIT))
    assert max(gaps) < 0.15, f"the event loop stood still for {max(gaps):.2f}s"


def test_numpy_hunk_numbers_are_hunk_numbers(ws):
    import numpy as np

    model = ScriptedModel([reply("", call("multiedit", **TWO_HUNKS)), finish(), finish(), finish()])
    session = Session("t", model=model, root=ws)
    chosen = []

    def answer(s: Session, u: NeedsDecision) -> None:
        chosen.append(s.decide(ApproveHunks(np.array([1]))))
        if s.waiting:
            s.decide(Veto("numpy refused"))

    drive(session, answer)
    assert chosen[0].ok, chosen[0].error
