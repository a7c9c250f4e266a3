"""Whole sessions on the raft_kv sample with ScriptedModel: approve, edit, veto."""

from __future__ import annotations

import asyncio
import json

import pytest

from grinta_jupyter.agent.context import unfence
from grinta_jupyter.agent.guards import Limits
from grinta_jupyter.agent.models import ScriptedModel, call, raw_call, reply
from grinta_jupyter.agent.session import Session, State
from grinta_jupyter.agent.stepper import Stepper
from grinta_jupyter.events.log import read_events
from grinta_jupyter.samples.tasks import DEMO_FIX, copy_workspace, get_task
from tests.conftest import drive, until_decision

TESTS = "python -m pytest"
WRONG_FIX = {**DEMO_FIX, "new_string": DEMO_FIX["old_string"].replace("<", "<=")}


@pytest.fixture
def raft(tmp_path):
    return copy_workspace("raft_kv", tmp_path / "raft_kv")


def types(session: Session) -> list[str]:
    return [e.type for e in session.log.events]


def test_approve_path_fixes_the_bug_and_logs_every_stage(raft):
    model = ScriptedModel(
        [
            reply("Run the tests.", call("run", command=TESTS)),
            reply("Read it.", call("read", symbol="RaftNode.handle_append_entries")),
            reply("Fix.", call("replace_string", **DEMO_FIX)),
            reply("Again.", call("run", command=TESTS)),
            reply("", call("finish", summary="Fixed the prev_log_term check; 44 passed.")),
        ]
    )
    session = drive(Session("fix the failing test", model=model, root=raft), lambda s: s.approve())
    assert session.end_reason == "finished"
    assert get_task("raft_kv/fix-failing-test").check(raft).passed
    assert [s.decision for s in session.steps] == ["approve", "auto", "approve", "approve", None]
    kinds = types(session)
    assert kinds[0] == "session_start" and kinds[-1] == "session_end"
    for expected in [
        "model_request",
        "model_reply",
        "tool_proposed",
        "symbol_resolved",
        "diff_staged",
        "validation",
        "user_decision",
        "commit",
        "observation",
        "finish_attempt",
    ]:
        assert expected in kinds, expected
    # The log on disk holds the same events, one JSON object per line.
    on_disk = read_events(session.log_path)
    assert [e.type for e in on_disk] == kinds
    assert [e.seq for e in on_disk] == list(range(1, len(kinds) + 1))
    commit = next(e for e in on_disk if e.type == "commit")
    assert commit.ok and commit.paths == ["raft_kv/node.py"] and commit.step == 3


def test_edit_path_restages_and_commits_the_users_arguments(raft):
    model = ScriptedModel(
        [
            reply("Fix.", call("replace_string", **WRONG_FIX)),
            reply("", call("run", command=TESTS)),
            reply("", call("finish", summary="done")),
        ]
    )
    session = Session("fix", model=model, root=raft)
    until_decision(session)
    assert session.waiting and "<=" in session.pending.proposal.diff
    bad = session.edit({"path": "raft_kv/node.py", "old_string": "no such text", "new_string": "x"})
    assert bad.error.code == "NOT_FOUND" and session.waiting, "an invalid edit keeps waiting"
    good = session.edit(DEMO_FIX)
    assert good.ok and "!= request.prev_log_term" in good.diff
    node = (raft / "raft_kv/node.py").read_text()
    assert "!= request.prev_log_term" not in node, "edit stages; only approve writes"
    drive(session, lambda s: s.approve())
    assert "!= request.prev_log_term" in (raft / "raft_kv/node.py").read_text()
    decisions = [(e.decision, e.arguments) for e in session.log.events if e.type == "user_decision"]
    assert decisions[0][0] == "edit" and decisions[1] == ("edit", json.dumps(DEMO_FIX))
    assert sum(1 for e in session.log.events if e.type == "tool_proposed" and e.edited) == 2
    assert session.end_reason == "finished"


def test_veto_sends_the_reason_to_the_model_and_writes_nothing(raft):
    before = (raft / "raft_kv/node.py").read_bytes()
    model = ScriptedModel(
        [
            reply("Fix.", call("replace_string", **WRONG_FIX)),
            reply("", call("finish", summary="Stopped; nothing changed.")),
        ]
    )
    session = drive(
        Session("fix", model=model, root=raft), lambda s: s.veto("that comparison is wrong")
    )
    assert (raft / "raft_kv/node.py").read_bytes() == before
    tool_message = model.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert (
        "vetoed" in tool_message["content"]
        and "that comparison is wrong" in tool_message["content"]
    )
    veto = next(e for e in session.log.events if e.type == "user_decision")
    assert veto.decision == "veto" and veto.reason == "that comparison is wrong"
    assert session.end_reason == "finished"


def test_malformed_tool_arguments_go_back_as_a_structured_error(raft):
    model = ScriptedModel(
        [
            reply("", raw_call("replace_string", '{"path": "raft_kv/node.py", "old_string": ')),
            reply("", call("finish", summary="gave up")),
        ]
    )
    session = drive(Session("fix", model=model, root=raft), lambda s: s.approve())
    content = unfence(model.requests[1]["messages"][-1]["content"])
    assert content.startswith("ERROR INVALID_ARGS") and "JSON" in content
    assert session.steps[0].decision is None, "an invalid call never asks the user"


def test_several_calls_in_one_reply_are_gated_in_order(raft):
    model = ScriptedModel(
        [
            reply(
                "Two edits.",
                call("create", path="a.txt", content="a\n"),
                call("create", path="b.txt", content="b\n"),
            ),
            reply("", call("run", command="ls")),
            reply("", call("finish", summary="made two files")),
        ]
    )
    session = Session("two", model=model, root=raft)
    until_decision(session)
    assert session.pending.proposal.args["path"] == "a.txt"
    session.approve()
    until_decision(session)
    assert session.pending.proposal.args["path"] == "b.txt"
    session.veto("only one file please")
    drive(session, lambda s: s.approve())
    assert (raft / "a.txt").exists() and not (raft / "b.txt").exists()


def test_callable_policy_and_auto_policy(raft):
    model = ScriptedModel(
        [
            reply("", call("create", path="x.txt", content="x\n")),
            reply("", call("run", command="rm -rf /nonexistent-for-sure")),
            reply("", call("run", command="ls")),
            reply("", call("finish", summary="ok")),
        ]
    )

    def policy(proposal):
        if "rm -rf" in (proposal.command or ""):
            return ("veto", "no deletions")
        return True

    session = Session("p", model=model, root=raft, policy=policy)
    asyncio.run(session.run())
    assert [s.decision for s in session.steps[:3]] == ["auto", "veto", "auto"]
    assert session.steps[1].reason == "no deletions"
    assert (raft / "x.txt").read_text() == "x\n"


class HangingModel:
    name = "hanging"

    def __init__(self):
        self.cancelled = False

    async def complete(self, messages, tools, on_text=None):
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled = True
            raise


def test_stop_cancels_a_running_model_call_at_once(raft):
    model = HangingModel()
    session = Session("hang", model=model, root=raft)

    async def go() -> float:
        task = asyncio.ensure_future(session.run())
        await asyncio.sleep(0.05)
        assert session.state is State.THINKING
        loop = asyncio.get_running_loop()
        started = loop.time()
        session.stop()
        await asyncio.wait_for(task, 2)
        return loop.time() - started

    elapsed = asyncio.run(go())
    assert elapsed < 0.5 and model.cancelled
    assert session.end_reason == "stopped"
    assert session.log.events[-1].type == "session_end"


def test_secrets_never_reach_the_log(raft, monkeypatch):
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("MY_SERVICE_API_KEY", secret)
    model = ScriptedModel(
        [
            reply(f"my key is {secret}", call("run", command="echo $MY_SERVICE_API_KEY")),
            reply("", call("finish", summary="printed it")),
        ]
    )
    session = drive(Session("leak", model=model, root=raft, policy="auto"), lambda s: s.approve())
    text = session.log_path.read_text()
    assert secret not in text and "[REDACTED]" in text


def test_observations_beyond_the_window_are_masked(raft):
    turns = [
        reply("", call("read", path="raft_kv/log.py", start_line=i, end_line=i))
        for i in range(1, 9)
    ]
    model = ScriptedModel([*turns, reply("", call("finish", summary="read a lot"))])
    session = drive(
        Session("read", model=model, root=raft, keep_observations=3), lambda s: s.approve()
    )
    last = model.requests[-1]["messages"]
    tools = [m for m in last if m["role"] == "tool"]
    assert len(tools) == 8
    assert all(m["content"].startswith("[older result masked") for m in tools[:5])
    assert not any(m["content"].startswith("[older result masked") for m in tools[5:])
    requests = [e for e in session.log.events if e.type == "model_request"]
    assert requests[-1].masked == 5 and all(r.tokens > 0 for r in requests)


def test_model_error_ends_the_session_with_an_error_event(raft):
    session = drive(Session("x", model=ScriptedModel([]), root=raft), lambda s: s.approve())
    assert session.end_reason == "error"
    error = next(e for e in session.log.events if e.type == "error")
    assert error.code == "BAD_RESPONSE"


def test_user_undo_is_recorded_and_told_to_the_model(raft):
    model = ScriptedModel(
        [
            reply("", call("replace_string", **DEMO_FIX)),
            reply("", call("run", command=TESTS)),
            reply("", call("finish", summary="fixed then undone")),
        ]
    )
    session = Session("u", model=model, root=raft, policy="auto")
    Stepper(session).advance()  # the model turn and the committed fix
    assert session.undo().ok
    assert "< request.prev_log_term" in (raft / "raft_kv/node.py").read_text()
    asyncio.run(session.run())
    assert any(e.type == "undo" and e.ok for e in session.log.events)
    assert "undid" in model.requests[1]["messages"][-1]["content"]


def test_a_sessions_undo_undoes_its_own_commit_never_another_sessions(tmp_path):
    """Two sessions in one folder (two notebooks): each one's undo restores its own last
    commit. It undid the folder's last commit, another session's, and logged it as its own."""
    (tmp_path / "a.py").write_text("A = 1\n")
    (tmp_path / "b.py").write_text("B = 1\n")

    def edit(path: str, old: str, new: str) -> Session:
        model = ScriptedModel(
            [reply("", call("replace_string", path=path, old_string=old, new_string=new))]
        )
        session = Session(f"edit {path}", model=model, root=tmp_path, policy="auto")
        Stepper(session).advance()
        return session

    first = edit("a.py", "A = 1", "A = 2")
    second = edit("b.py", "B = 1", "B = 2")
    undone = first.undo()
    assert undone.ok, undone.error
    assert (tmp_path / "a.py").read_text() == "A = 1\n"
    assert (tmp_path / "b.py").read_text() == "B = 2\n"  # the other session's commit stays
    again = first.undo()
    assert not again.ok and again.error is not None and again.error.code == "NOTHING_TO_UNDO"
    assert (tmp_path / "b.py").read_text() == "B = 2\n"
    assert second.undo().ok and (tmp_path / "b.py").read_text() == "B = 1\n"


def test_limits_are_settings(raft):
    model = ScriptedModel(
        [reply("", call("read", path=f"raft_kv/{n}.py")) for n in ("log", "node", "cluster")]
    )
    session = drive(
        Session("x", model=model, root=raft, limits=Limits(max_steps=2)), lambda s: s.approve()
    )
    assert session.end_reason == "budget:steps" and len(session.steps) == 2
