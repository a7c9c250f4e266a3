"""More attacks on sessions that last: repeated call ids, logs gone or replaced between
tasks, undos on an older branch, hostile logs. Each test failed before its fix."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import pytest

from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.models.base import ToolCall
from grinta_jupyter.agent.session import Session
from grinta_jupyter.agent.updates import NeedsDecision
from grinta_jupyter.events import models as ev
from grinta_jupyter.events.log import LogError, read_events
from tests.conftest import snapshot, until_decision
from tests.test_lasting import ADD, NEW, SUB


def _as(call_id: str, tool_call: ToolCall) -> ToolCall:
    """The call with the id a local model gives every first call of its replies."""
    return ToolCall(call_id, tool_call.name, tool_call.arguments)


def _lines(log: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in log.read_text().splitlines()]


def _write(log: Path, lines: list[dict[str, object]]) -> None:
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))


# -- 1. a call id reused across replies is not "recovered" from the earlier call's commit -------


def test_a_reused_call_id_is_staged_again_not_taken_for_the_earlier_commit(ws: Path) -> None:
    model = ScriptedModel(
        [
            reply("", _as("call_0", call("replace_string", **ADD))),
            reply("", _as("call_0", call("replace_string", **SUB))),
        ]
    )
    session = Session("two", model=model, root=ws, policy="auto")
    log = session.log_path
    assert log is not None

    async def until_second_reply() -> None:
        async for _update in session.updates():
            replies = [e for e in session.log.events if isinstance(e, ev.ModelReplied)]
            if len(replies) == 2:
                return

    asyncio.run(until_second_reply())
    session.log.close()
    # The process died right after the second reply was logged, before its call was staged.
    lines = _lines(log)
    last_reply = max(i for i, x in enumerate(lines) if x["type"] == "model_reply")
    _write(log, lines[: last_reply + 1])
    resumed = Session.resume(log, model=ScriptedModel([]))
    assert [c.id for c, _ in resumed.queue] == ["call_0"], "the second call runs, not recovered"
    assert not any(isinstance(e, ev.Resumed) and e.recovered for e in resumed.log.events)
    resumed.log.close()


# -- 2. a log gone, or replaced, between tasks ------------------------------------------------


def _ended(ws: Path) -> Session:
    model = ScriptedModel(
        [reply("", call("replace_string", **ADD)), reply("", call("finish", summary="done"))]
    )
    session = Session("swap", model=model, root=ws, policy="auto").run_sync()
    assert session.done
    return session


def test_continue_after_the_log_was_deleted_writes_a_log_that_resumes(ws: Path) -> None:
    session = _ended(ws)
    log = session.log_path
    assert log is not None
    log.unlink()  # grinta clean, or a person tidying up, while the kernel still holds it
    session.continue_task("and the other one")
    session.stop("later")
    events = read_events(log)
    assert isinstance(events[0], ev.SessionStart), "the log still begins with its start"
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    Session.resume(log, model=ScriptedModel([])).log.close()


def test_continue_after_the_log_was_replaced_by_a_symlink_is_refused(ws: Path) -> None:
    session = _ended(ws)
    log = session.log_path
    assert log is not None
    elsewhere = ws / "elsewhere.jsonl"
    elsewhere.write_text("")
    log.unlink()
    log.symlink_to(elsewhere)
    with pytest.raises(LogError):
        session.continue_task("go on")
    assert session.done and session.tasks == ["swap"], "nothing changed"
    assert elsewhere.read_text() == ""


def test_a_rewind_whose_log_cannot_be_opened_restores_nothing(ws: Path) -> None:
    session = _ended(ws)
    log = session.log_path
    assert log is not None
    after = snapshot(ws)
    log.unlink()
    os.mkdir(log)  # the log's name taken by a folder: no event can be written
    with pytest.raises(LogError):
        session.rewind(0)
    assert snapshot(ws) == after, "a rewind that cannot be recorded changes no file"
    with pytest.raises(LogError):
        session.undo()
    assert snapshot(ws) == after, "nor does an undo"


def test_continue_after_the_log_was_replaced_by_another_file_is_refused(ws: Path) -> None:
    session = _ended(ws)
    log = session.log_path
    assert log is not None
    other = _ended(ws).log_path
    assert other is not None
    os.replace(other, log)  # another session's log now has this one's name
    before = log.read_bytes()
    with pytest.raises(LogError):
        session.continue_task("go on")
    assert log.read_bytes() == before


# -- 3. an undo made on a branch before a rewind is still an undo after it ---------------------


def test_an_undo_before_a_rewind_is_known_to_the_next_rewind(ws: Path) -> None:
    start = snapshot(ws)
    model = ScriptedModel(
        [
            reply("", call("replace_string", **ADD)),
            reply("", call("read", path="README.md")),
            reply("", call("read", path="pkg/core.py")),
        ]
    )
    session = until_decision(Session("go", model=model, root=ws, policy="auto"))
    assert session.done  # the script ran out: three steps
    assert session.undo().ok  # the commit of step 1, undone at step 3
    session.rewind(2)
    session.model = ScriptedModel([reply("", call("replace_string", **SUB))])

    async def one_more() -> None:
        async for update in session.updates():
            if isinstance(update, NeedsDecision):
                return

    session.policy = "auto"
    asyncio.run(one_more())
    assert session.rewind(0) is not None  # step 1's commit was undone: only step 3's remains
    assert snapshot(ws) == start


# -- 4. hostile logs: valid JSON, odd meaning ----------------------------------------------------


def test_a_reply_whose_tool_calls_lack_fields_is_refused_in_one_line(ws: Path) -> None:
    session = _ended(ws)
    log = session.log_path
    assert log is not None
    lines = _lines(log)
    for line in lines:
        if line["type"] == "model_reply":
            line["tool_calls"] = [{"id": "x"}]
    _write(log, lines)
    with pytest.raises(LogError):
        Session.resume(log, model=ScriptedModel([]))


def test_an_ended_session_resumed_elsewhere_cannot_append_after_it(ws: Path) -> None:
    session = _ended(ws)
    log = session.log_path
    assert log is not None
    other = Session.resume(log, model=ScriptedModel([]))
    other.continue_task("next")
    other.stop("later")  # closes the log: no lock is held any more
    before = log.read_bytes()
    with pytest.raises(LogError):  # its numbers would repeat the other's: a broken log
        session.continue_task("mine")
    assert log.read_bytes() == before
    Session.resume(log, model=ScriptedModel([])).log.close()


# -- 5. one id for two calls of the same reply (some local models number nothing) ---------------


def test_two_calls_of_one_reply_with_one_id_both_run_after_a_resume(ws: Path) -> None:
    model = ScriptedModel(
        [
            reply(
                "",
                _as("call_0", call("read", path="README.md")),
                _as("call_0", call("create", **NEW)),
            )
        ]
    )
    session = until_decision(Session("two", model=model, root=ws, policy="ask"))
    assert session.pending is not None and session.pending.call.name == "create"
    log = session.log_path
    assert log is not None
    session.log.close()
    # The process died while the second call waited: the first has its result, not the second.
    lines = _lines(log)
    last = max(i for i, x in enumerate(lines) if x["type"] == "observation")
    _write(log, lines[: last + 1])
    resumed = Session.resume(log, model=ScriptedModel([]))
    assert [(c.id, c.name) for c, _ in resumed.queue] == [("call_0", "create")]
    resumed = until_decision(resumed)
    assert resumed.pending is not None and resumed.pending.call.name == "create"
    assert resumed.pending.number == 2
    resumed.log.close()


# -- 6. replay of a branch rewound to the step that was waiting ------------------------------------


def test_a_branch_rewound_to_its_waiting_step_replays_whole(ws: Path, tmp_path: Path) -> None:
    from grinta_jupyter.agent.replay import replay
    from tests.conftest import drive

    start = tmp_path / "start"
    shutil.copytree(ws, start)
    model = ScriptedModel(
        [
            reply("", call("read", path="README.md")),
            reply("", call("replace_string", **ADD)),
            reply("", call("replace_string", **SUB)),
        ]
    )
    session = until_decision(Session("t", model=model, root=ws))
    assert session.pending is not None and session.pending.number == 2
    session.rewind(2)  # a second thought: not this edit, and not a veto either
    drive(session, lambda s: s.approve())
    assert [(s.number, s.call.name) for s in session.steps] == [
        (1, "read"),
        (2, "replace_string"),
        (3, "replace_string"),
    ]
    log = session.log_path
    assert log is not None
    report = replay(log, root=start)
    assert report.differences == []
