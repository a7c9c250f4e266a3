"""Sessions that last: say, continue, resume, rewind, and the context rebuilt from the log."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from grinta_jupyter.agent.history import branch_events, latest_unfinished, rebuild
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import RewindError, Session
from grinta_jupyter.agent.updates import NeedsDecision, Rewound, SessionEnded, TaskBegan, UserSaid
from grinta_jupyter.events import models as ev
from grinta_jupyter.events.log import read_events
from tests.conftest import drive, snapshot, until_decision

ADD = {"path": "pkg/core.py", "old_string": "return a + b", "new_string": "return b + a"}
SUB = {"path": "pkg/core.py", "old_string": "return a - b", "new_string": "return -(b - a)"}
NEW = {"path": "pkg/extra.py", "content": "X = 1\n"}
TESTS = "python -m pytest -q -p no:cacheprovider"


def with_a_test(ws: Path) -> Path:
    """The shared small workspace, with a test the finish guard accepts as a real run."""
    (ws / "test_core.py").write_text(
        "from pkg.core import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    )
    return ws


@pytest.fixture
def ws(ws: Path) -> Path:
    return with_a_test(ws)


def contents(messages: list[dict]) -> str:
    return json.dumps(messages)


def test_say_reaches_the_next_request_and_a_pending_proposal_stays_pending(ws: Path) -> None:
    model = ScriptedModel(
        [
            reply("", call("replace_string", **ADD)),
            reply("", call("run", command=TESTS)),
            reply("", call("finish", summary="swapped")),
        ]
    )
    session = until_decision(Session("swap the operands of add", model=model, root=ws))
    assert session.waiting
    session.say("use the keyword argument order, please")
    assert session.waiting and session.pending is not None  # not decided, not cancelled
    assert "keyword argument order" not in contents(model.requests[-1]["messages"])
    drive(session, lambda s: s.approve())
    second = model.requests[1]["messages"]
    # After the tool result of the pending call (the API wants results right after the call).
    roles = [m["role"] for m in second]
    assert roles[-2:] == ["tool", "user"], roles
    assert second[-1]["content"] == "use the keyword argument order, please"
    said = [e for e in session.log.events if isinstance(e, ev.UserMessage)]
    assert [(e.text, e.source) for e in said] == [
        ("use the keyword argument order, please", "user")
    ]


def test_say_from_another_thread_while_the_model_thinks(ws: Path) -> None:
    import threading

    gate = threading.Event()
    said = threading.Event()

    def slow(messages):  # the model is busy while the user talks
        gate.set()
        said.wait(5)
        return reply("", call("read", path="README.md"))

    model = ScriptedModel([slow, reply("", call("finish", summary="read it"))])
    session = Session("look at the readme", model=model, root=ws, policy="auto")

    def talk() -> None:
        gate.wait(5)
        session.say("the readme is short")
        said.set()

    updates = []

    async def go() -> None:
        thread = threading.Thread(target=talk)
        thread.start()
        async for update in session.updates():
            updates.append(update)
        thread.join()

    asyncio.run(go())
    assert any(isinstance(u, UserSaid) for u in updates)
    assert model.requests[1]["messages"][-1] == {"role": "user", "content": "the readme is short"}


def test_say_on_an_ended_session_and_continue_on_a_running_one_are_refused(ws: Path) -> None:
    model = ScriptedModel([reply("", call("finish", summary="nothing to do"))])
    session = Session("explain the package", model=model, root=ws)
    with pytest.raises(RuntimeError, match="still working"):
        session.continue_task("next")
    drive(session, lambda s: s.approve())
    with pytest.raises(RuntimeError, match="continue"):
        session.say("hello")
    with pytest.raises(ValueError):
        session.continue_task("   ")


def test_continue_carries_the_context_and_the_log_shows_each_task(ws: Path) -> None:
    model = ScriptedModel(
        [
            reply("", call("read", path="pkg/core.py")),
            reply("", call("finish", summary="add adds")),
            reply("", call("replace_string", **ADD)),
            reply("", call("run", command=TESTS)),
            reply("", call("finish", summary="swapped")),
        ]
    )
    session = drive(Session("explain add", model=model, root=ws), lambda s: s.approve())
    assert session.end_reason == "finished"
    session.continue_task("now swap the operands of add")
    updates: list[object] = []

    async def go() -> None:
        async for update in session.updates():
            updates.append(update)
            if isinstance(update, NeedsDecision):
                session.approve()

    asyncio.run(go())
    assert isinstance(updates[0], TaskBegan) and updates[0].number == 2
    assert isinstance(updates[-1], SessionEnded) and updates[-1].reason == "finished"
    assert "return b + a" in (ws / "pkg" / "core.py").read_text()
    third = model.requests[2]["messages"]
    assert "add adds" not in third[-1]["content"]  # the finish result says "accepted"
    assert "now swap the operands of add" in third[-1]["content"]
    assert any("pkg/core.py" in json.dumps(m) for m in third[:-1])  # the first task's read
    events = read_events(session.log_path)
    assert [type(e).__name__ for e in events].count("SessionEnd") == 2
    assert [e.task for e in events if isinstance(e, ev.TaskStarted)] == [
        "now swap the operands of add"
    ]
    assert session.tasks == ["explain add", "now swap the operands of add"]
    assert [s.number for s in session.steps] == [1, 2, 3, 4, 5]


def test_the_context_rebuilt_from_the_log_is_the_live_one(ws: Path) -> None:
    """Every kind of context change (replies, results, vetoes, refused finishes, notes,
    user messages, a second task): the rebuild's request digest is the live one."""
    model = ScriptedModel(
        [
            reply("", call("read", path="pkg/core.py"), call("replace_string", **ADD)),
            reply("no tool"),
            reply("", call("replace_string", **SUB)),
            reply("", call("finish", summary="all tests pass")),
            reply("", call("run", command=TESTS)),
            reply("", call("finish", summary="done")),
            reply("", call("create", **NEW)),
            reply("", call("finish", summary="created")),
        ]
    )
    session = Session("change add and sub", model=model, root=ws, keep_observations=2)
    decisions = iter(["approve", "say", "veto", "approve", "approve", "approve"])

    def decide(s: Session) -> None:
        what = next(decisions)
        if what == "say":
            s.say("careful with sub")
            s.approve()
        elif what == "veto":
            s.veto("not like that")
        else:
            s.approve()

    drive(session, decide)
    session.continue_task("add a module")
    drive(session, lambda s: s.approve())
    live = session.context.request()
    events = read_events(session.log_path)
    rebuilt = rebuild(
        branch_events(events, 0), root=str(ws), boundary=session.context.boundary
    ).context.request()
    assert rebuilt.messages == live.messages
    assert rebuilt.digest == live.digest
    requests = [e for e in events if isinstance(e, ev.ModelRequest)]
    assert requests[-1].tokens >= live.tokens


def test_resume_after_a_crash_asks_again_and_commits_on_approval(ws: Path) -> None:
    model = ScriptedModel([reply("", call("replace_string", **ADD))])
    first = until_decision(Session("swap", model=model, root=ws))
    log = first.log_path
    assert log is not None and latest_unfinished(ws) == log
    first.log.close()  # the kernel died: nothing ended the session (its lock went with it)
    later = ScriptedModel(
        [reply("", call("run", command=TESTS)), reply("", call("finish", summary="ok"))]
    )
    session = Session.resume(log, model=later)
    assert session.id == log.stem and not session.done
    session = until_decision(session)
    assert session.pending is not None and session.pending.restaged
    assert session.pending.stale is None
    assert session.pending.number == 1
    drive(session, lambda s: s.approve())
    assert session.end_reason == "finished"
    assert "return b + a" in (ws / "pkg" / "core.py").read_text()
    events = read_events(log)
    assert sum(isinstance(e, ev.SessionStart) for e in events) == 1
    assert any(isinstance(e, ev.Resumed) and e.requeued for e in events)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert latest_unfinished(ws) is None
    # The resumed model saw the first reply and its result, not a dangling call.
    sent = later.requests[0]["messages"]
    assert sent[-1]["role"] == "tool" and "return b + a" not in sent[-1]["content"][:0]


def test_a_resumed_proposal_on_changed_files_is_stale_and_asks_even_in_auto(ws: Path) -> None:
    model = ScriptedModel([reply("", call("replace_string", **ADD))])
    crashed = until_decision(Session("swap", model=model, root=ws))
    crashed.log.close()
    log = crashed.log_path
    core = ws / "pkg" / "core.py"
    core.write_text(core.read_text() + "\n\ndef mul(a, b):\n    return a * b\n")
    session = until_decision(
        Session.resume(log, model=ScriptedModel([]), policy="auto")  # auto, yet it asks
    )
    assert session.waiting and session.pending is not None
    assert session.pending.stale and "pkg/core.py changed" in session.pending.stale
    proposed = [e for e in session.log.events if isinstance(e, ev.ToolProposed)]
    assert proposed[-1].restaged and proposed[-1].stale


def crash_after_decision(ws: Path) -> Path:
    """A session whose commit landed, killed after the decision was logged and the commit
    landed, before the commit's event was written; its log."""
    model = ScriptedModel([reply("", call("replace_string", **ADD))])
    session = until_decision(Session("swap", model=model, root=ws))
    log = session.log_path
    assert log is not None
    session.approve()

    async def commit_only() -> None:
        async for update in session.updates():
            if not isinstance(update, NeedsDecision):
                return

    asyncio.run(commit_only())
    assert "return b + a" in (ws / "pkg" / "core.py").read_text()
    lines = log.read_text().splitlines(keepends=True)
    decided = next(i for i, line in enumerate(lines) if '"user_decision"' in line)
    session.log.close()
    log.write_text("".join(lines[: decided + 1]))
    return log


def test_a_commit_that_landed_before_the_crash_is_not_made_again(ws: Path) -> None:
    log = crash_after_decision(ws)
    resumed = Session.resume(log, model=ScriptedModel([reply("", call("finish", summary="x"))]))
    assert resumed.queue == []
    assert resumed.steps[-1].observation is not None and resumed.steps[-1].observation.ok
    assert "before the session was interrupted" in resumed.steps[-1].observation.output
    assert (ws / "pkg" / "core.py").read_text().count("return b + a") == 1
    assert [e.recovered for e in resumed.log.events if isinstance(e, ev.Resumed)] == [["call_0_0"]]


def test_resume_cuts_a_torn_last_line(ws: Path) -> None:
    model = ScriptedModel([reply("", call("replace_string", **ADD))])
    crashed = until_decision(Session("swap", model=model, root=ws))
    crashed.log.close()
    log = crashed.log_path
    with log.open("a") as handle:
        handle.write('{"type": "user_decis')
    session = Session.resume(log, model=ScriptedModel([]))
    assert read_events(log)[-1].type == "resume"
    assert session.queue


def test_a_finished_session_resumes_done_and_continues(ws: Path) -> None:
    model = ScriptedModel([reply("", call("finish", summary="nothing"))])
    log = drive(Session("explain", model=model, root=ws), lambda s: s.approve()).log_path
    session = Session.resume(
        log, model=ScriptedModel([reply("", call("finish", summary="still nothing"))])
    )
    assert session.done and session.end_reason == "finished"
    session.continue_task("explain again")
    drive(session, lambda s: s.approve())
    assert session.summary == "still nothing"


def _three_writes(ws: Path) -> Session:
    model = ScriptedModel(
        [
            reply("", call("replace_string", **ADD)),
            reply("", call("replace_string", **SUB)),
            reply("", call("create", **NEW)),
            reply("", call("run", command=TESTS)),
            reply("", call("finish", summary="three changes")),
            reply("", call("run", command=TESTS)),
            reply("", call("finish", summary="again")),
        ]
    )
    return drive(Session("three changes", model=model, root=ws), lambda s: s.approve())


def test_rewind_restores_the_files_byte_for_byte_and_branches(ws: Path) -> None:
    before = snapshot(ws)
    ScriptedModel([])
    session = _three_writes(ws)
    after_one = dict(before)
    after_one["pkg/core.py"] = before["pkg/core.py"].replace(b"return a + b", b"return b + a")
    update = session.rewind(1)
    assert isinstance(update, Rewound) and update.branch == 1 and update.to_step == 1
    assert len(update.undone) == 2 and update.not_undone  # the test run cannot be undone
    assert snapshot(ws) == after_one
    assert not session.done and len(session.steps) == 1 and session.branch == 1
    drive(session, lambda s: s.approve())
    assert session.summary == "again"
    events = read_events(session.log_path)
    numbers = [e.step for e in branch_events(events, 1) if isinstance(e, ev.ToolProposed)]
    assert numbers == [1, 2, 3]
    assert [e.step for e in branch_events(events, 0) if isinstance(e, ev.ToolProposed)] == [
        1,
        2,
        3,
        4,
        5,
    ]
    # The model was told, and saw only the steps kept.
    told = session.model.requests[-2]["messages"]
    assert "rewound the session to step 1" in json.dumps(told)
    assert "return -(b - a)" not in json.dumps(told)
    # Rewind to 0 on the new branch: back to the start.
    session.rewind(0)
    assert snapshot(ws) == before


def test_rewind_is_refused_when_a_file_changed_outside_and_changes_nothing(ws: Path) -> None:
    session = _three_writes(ws)
    (ws / "pkg" / "extra.py").write_text("X = 2\n")
    state = snapshot(ws)
    with pytest.raises(RewindError, match="pkg/extra.py changed"):
        session.rewind(0)
    assert snapshot(ws) == state and session.done and session.branch == 0
    with pytest.raises(RewindError, match="no step 9"):
        session.rewind(9)


def test_a_rewound_session_resumes_on_its_branch(ws: Path) -> None:
    session = _three_writes(ws)
    session.rewind(2)
    log = session.log_path
    session.log.close()
    resumed = Session.resume(
        log,
        model=ScriptedModel(
            [reply("", call("run", command=TESTS)), reply("", call("finish", summary="b"))]
        ),
    )
    assert resumed.branch == 1 and len(resumed.steps) == 2
    drive(resumed, lambda s: s.approve())
    assert resumed.summary == "b"


def test_the_log_of_a_live_session_cannot_be_resumed(ws: Path) -> None:
    from grinta_jupyter.events.log import LogBusy

    model = ScriptedModel([reply("", call("replace_string", **ADD))])
    live = until_decision(Session("swap", model=model, root=ws))
    before = live.log_path.read_bytes()
    with pytest.raises(LogBusy, match="still running"):
        Session.resume(live.log_path, model=ScriptedModel([]))
    assert live.log_path.read_bytes() == before
    live.stop()  # an ended session's log is free: it can be resumed and continued
    assert Session.resume(live.log_path, model=ScriptedModel([])).done


def test_rewind_from_the_loop_while_a_proposal_waits(ws: Path) -> None:
    """A front end rewinds instead of deciding: the waiting proposal is dropped, the loop
    goes on from the rewound step, and the model sees the rewind."""
    model = ScriptedModel(
        [
            reply("", call("replace_string", **ADD)),
            reply("", call("replace_string", **SUB)),
            reply("", call("create", **NEW)),
            reply("", call("run", command=TESTS)),
            reply("", call("finish", summary="after the rewind")),
        ]
    )
    session = Session("change things", model=model, root=ws)
    seen: list[object] = []

    async def go() -> None:
        async for update in session.updates():
            seen.append(update)
            if isinstance(update, NeedsDecision):
                if update.step.number == 2 and session.branch == 0:
                    session.rewind(1)
                else:
                    session.approve()

    asyncio.run(go())
    assert session.summary == "after the rewind" and session.branch == 1
    assert any(isinstance(u, Rewound) for u in seen)
    assert "return -(b - a)" not in (ws / "pkg" / "core.py").read_text()  # never approved
    assert (ws / "pkg" / "extra.py").read_text() == "X = 1\n"
    vetoed = [e for e in session.log.events if isinstance(e, ev.UserDecision) and e.step == 2]
    assert [e.branch for e in vetoed] == [1]  # branch 0's step 2 was never decided


def test_rewind_while_the_model_thinks_cancels_the_call(ws: Path) -> None:
    from grinta_jupyter.agent.models.base import ModelReply

    class Slow(ScriptedModel):
        async def complete(self, messages, tools, on_text=None) -> ModelReply:  # type: ignore[no-untyped-def,override]
            if len(self.requests) == 1:  # the second turn hangs until cancelled
                self.requests.append({"messages": messages, "tools": tools})
                await asyncio.sleep(60)
            return await super().complete(messages, tools, on_text)

    model = Slow(
        [
            reply("", call("replace_string", **ADD)),
            reply("", call("replace_string", **ADD)),
            reply("", call("run", command=TESTS)),
            reply("", call("finish", summary="fine")),
        ]
    )
    session = Session("swap", model=model, root=ws, policy="auto")

    async def go() -> None:
        async def rewind_soon() -> None:
            while len(model.requests) < 2:
                await asyncio.sleep(0.01)
            session.rewind(0)

        helper = asyncio.ensure_future(rewind_soon())
        async for _update in session.updates():
            pass
        await helper

    asyncio.run(asyncio.wait_for(go(), 30))
    assert session.branch == 1 and session.end_reason == "finished"
    # After the rewind the model proposed the same edit again on the restored file.
    assert "return b + a" in (ws / "pkg" / "core.py").read_text()
    commits = [e for e in session.log.events if isinstance(e, ev.Committed) and e.ok]
    assert [e.branch for e in commits] == [0, 1]


def test_hostile_logs_are_refused_before_anything_runs(ws: Path, tmp_path: Path) -> None:
    from grinta_jupyter.events.log import LogError

    model = ScriptedModel([reply("", call("replace_string", **ADD))])
    crashed = until_decision(Session("swap", model=model, root=ws))
    crashed.log.close()
    log = crashed.log_path
    # A log copied elsewhere names its workspace, but does not get to choose it.
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_bytes(log.read_bytes())
    with pytest.raises(LogError, match="pass the workspace"):
        Session.resume(elsewhere, model=ScriptedModel([]))
    assert Session.resume(elsewhere, model=ScriptedModel([]), root=ws).queue
    # A rewind that makes a branch from itself would make the paths loop.
    looped = tmp_path / "looped.jsonl"
    seq = len(log.read_text().splitlines()) + 1
    line = json.dumps(
        {"type": "rewind", "seq": seq, "session": log.stem, "to_step": 0, "parent": 1, "branch": 1}
    )
    looped.write_text(log.read_text() + line + "\n")
    with pytest.raises(LogError, match="not a branch history"):
        Session.resume(looped, model=ScriptedModel([]), root=ws)
    # A symlinked log is neither cut nor appended to.
    target = tmp_path / "target.jsonl"
    target.write_bytes(log.read_bytes() + b'{"type": "torn')
    link = ws / ".grinta" / "sessions" / "link.jsonl"
    link.symlink_to(target)
    before = target.read_bytes()
    with pytest.raises((LogError, OSError)):
        Session.resume(link, model=ScriptedModel([]))
    assert target.read_bytes() == before


def test_what_a_person_says_is_bounded(ws: Path) -> None:
    model = ScriptedModel([reply("", call("replace_string", **ADD))])
    session = until_decision(Session("swap", model=model, root=ws))
    with pytest.raises(ValueError, match="too long"):
        session.say("x" * 20_001)
    assert not any(isinstance(e, ev.UserMessage) for e in session.log.events)
    session.say("x" * 20_000)
