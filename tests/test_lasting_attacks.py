"""Attacks on sessions that last: races, crashes and hostile logs around say, undo, rewind
and resume. Each test failed before its fix (see docs/session.md, "What resume refuses")."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from grinta_jupyter.agent.history import rebuild
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import RewindError, Session
from grinta_jupyter.agent.step import Step
from grinta_jupyter.agent.updates import Approve, ApproveHunks
from grinta_jupyter.events import models as ev
from grinta_jupyter.events.log import LogBusy, LogError, read_events
from tests.conftest import drive, snapshot, until_decision
from tests.test_lasting import ADD, NEW, SUB, TESTS, crash_after_decision, with_a_test


@pytest.fixture
def ws(ws: Path) -> Path:
    return with_a_test(ws)


# -- 1. a commit recovered on resume is named, so a rewind undoes it ---------------------------


def test_a_commit_recovered_on_resume_is_undone_by_a_rewind(ws: Path) -> None:
    before = snapshot(ws)
    log = crash_after_decision(ws)
    resumed = Session.resume(log, model=ScriptedModel([]))
    committed = [e for e in resumed.log.events if isinstance(e, ev.Committed)]
    assert committed and committed[-1].commit_id, "the recovered commit is named"
    resumed.rewind(0)
    assert snapshot(ws) == before


def test_a_rewind_refuses_a_commit_it_cannot_name(ws: Path) -> None:
    log = crash_after_decision(ws)
    resumed = Session.resume(log, model=ScriptedModel([]))
    resumed.log.close()
    # A log whose commit event lost its id (an older version, a hand edit).
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    for line in lines:
        if line["type"] == "commit":
            line["commit_id"] = None
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    after = snapshot(ws)
    again = Session.resume(log, model=ScriptedModel([]))
    with pytest.raises(RewindError, match="cannot"):
        again.rewind(0)
    assert snapshot(ws) == after


# -- 2. step numbers survive a step dropped undecided -------------------------------------------


def test_step_numbers_after_a_stop_while_waiting_are_the_same_after_resume(ws: Path) -> None:
    model = ScriptedModel(
        [
            reply("", call("read", path="README.md")),
            reply("", call("replace_string", **ADD)),
            reply("", call("read", path="pkg/core.py")),
            reply("", call("finish", summary="done")),
        ]
    )
    session = Session("look", model=model, root=ws, policy="ask")
    session = until_decision(session)
    assert session.pending is not None and session.pending.number == 2
    session.stop("later")
    session.continue_task("go on")
    log = session.log_path
    live = until_decision(session)
    live.log.close()
    resumed = Session.resume(log, model=ScriptedModel([]))
    # The write dropped undecided keeps its number: the steps after it are numbered as live.
    assert [(s.number, s.call.name) for s in resumed.steps] == [
        (s.number, s.call.name) for s in live.steps
    ]
    proposed = [e.step for e in read_events(log) if isinstance(e, ev.ToolProposed)]
    assert proposed[:3] == [1, 2, 3], proposed


# -- 3. a reply with a lone surrogate ----------------------------------------------------------


def test_a_reply_holding_a_lone_surrogate_is_logged_and_resumes(ws: Path) -> None:
    text = "broken \ud800 text"
    model = ScriptedModel(
        [reply(text, call("read", path="README.md")), reply("", call("finish", summary="ok"))]
    )
    session = drive(Session("look", model=model, root=ws, policy="auto"), lambda s: s.approve())
    assert session.end_reason == "finished", session.log.error
    replied = [e for e in read_events(session.log_path) if isinstance(e, ev.ModelReplied)]
    assert replied[0].text == text
    Session.resume(session.log_path, model=ScriptedModel([]))


# -- 4, 5. what happens after the end is logged ---------------------------------------------------


def test_a_say_racing_the_end_is_logged(ws: Path) -> None:
    model = ScriptedModel([reply("", call("finish", summary="nothing"))])
    session = Session("explain", model=model, root=ws)
    session = until_decision(session)  # the finish is accepted without asking: it ends
    assert session.done
    session._said("said just as it ended")  # what the loop runs for a say sent from a thread
    said = [e for e in read_events(session.log_path) if isinstance(e, ev.UserMessage)]
    assert [e.text for e in said] == ["said just as it ended"]


def test_an_undo_after_the_end_is_logged_and_resume_can_still_rewind(ws: Path) -> None:
    model = ScriptedModel(
        [
            reply("", call("replace_string", **ADD)),
            reply("", call("create", **NEW)),
            reply("", call("run", command=TESTS)),
            reply("", call("finish", summary="two")),
        ]
    )
    before = snapshot(ws)
    session = drive(Session("two", model=model, root=ws), lambda s: s.approve())
    assert session.done
    assert session.undo().ok  # the create
    undone = [e for e in read_events(session.log_path) if isinstance(e, ev.Undone)]
    assert len(undone) == 1 and undone[0].ok
    resumed = Session.resume(session.log_path, model=ScriptedModel([]))
    resumed.rewind(0)
    assert snapshot(ws) == before


# -- 6. a decision made for one proposal never lands on another --------------------------------


def _second_step_waits(ws: Path) -> tuple[Session, Step | None]:
    """A session whose first write is committed and whose second waits (the same write
    comes again after a rewind to step 1)."""
    model = ScriptedModel(
        [
            reply("", call("replace_string", **ADD)),
            reply("", call("replace_string", **SUB)),
            reply("", call("replace_string", **SUB)),
        ]
    )
    session = until_decision(Session("two", model=model, root=ws))
    session.approve()
    session = until_decision(session)
    return session, session.pending


def test_a_decision_for_a_proposal_rewound_away_is_refused(ws: Path) -> None:
    session, old = _second_step_waits(ws)
    assert old is not None and old.number == 2
    session.rewind(1)
    session = until_decision(session)
    new = session.pending
    assert new is not None and new is not old
    with pytest.raises(RuntimeError, match="step 2"):
        session.decide(Approve(), step=99)
    assert old.number == new.number  # numbers repeat across branches; the step is exact
    with pytest.raises(RuntimeError, match="no longer waits"):
        session.decide(Approve(), step=old)
    session.decide(Approve(), step=new.number)  # the card it was made on: accepted
    assert not session.waiting


def test_hunks_staged_in_a_thread_across_a_rewind_do_not_land_on_the_next_proposal(
    ws: Path,
) -> None:
    session, old = _second_step_waits(ws)
    assert old is not None
    staging = threading.Event()
    go_on = threading.Event()
    real = session.runtime.select_hunks

    def slow_select(proposal, indices):  # type: ignore[no-untyped-def]
        result = real(proposal, indices)
        staging.set()
        go_on.wait(5)
        return result

    session.runtime.select_hunks = slow_select  # type: ignore[method-assign]
    errors: list[BaseException] = []

    def decide() -> None:
        try:
            session.decide(ApproveHunks([0]))
        except RuntimeError as exc:
            errors.append(exc)

    thread = threading.Thread(target=decide)
    thread.start()
    staging.wait(5)
    session.rewind(1)
    session = until_decision(session)
    go_on.set()
    thread.join(5)
    assert errors, "the decision for the rewound proposal was refused"
    assert session.waiting, "the new proposal still waits for its own decision"


# -- 7. say from many threads ---------------------------------------------------------------------


def test_say_from_many_threads_numbers_every_event_once(ws: Path) -> None:
    model = ScriptedModel([reply("", call("replace_string", **ADD))])
    session = until_decision(Session("swap", model=model, root=ws))
    barrier = threading.Barrier(8)

    def talk(n: int) -> None:
        barrier.wait()
        for i in range(25):
            session.say(f"thread {n} says {i}")

    threads = [threading.Thread(target=talk, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    events = read_events(session.log_path)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [e.seq for e in session.log.events] == [e.seq for e in events]
    said = [e.text for e in events if isinstance(e, ev.UserMessage)]
    assert len(said) == 200 and len(set(said)) == 200


# -- 8. a rewind that cannot be logged changes nothing -------------------------------------------


def test_rewinding_an_ended_session_whose_log_is_held_elsewhere_changes_nothing(ws: Path) -> None:
    model = ScriptedModel(
        [
            reply("", call("replace_string", **ADD)),
            reply("", call("run", command=TESTS)),
            reply("", call("finish", summary="one")),
        ]
    )
    first = drive(Session("one", model=model, root=ws), lambda s: s.approve())
    second = Session.resume(first.log_path, model=ScriptedModel([]))
    second.continue_task("more")  # holds the log now
    after = snapshot(ws)
    with pytest.raises(LogBusy):
        first.rewind(0)
    assert snapshot(ws) == after
    with pytest.raises(LogBusy):
        first.undo()
    assert snapshot(ws) == after


# -- 9. a crash in the middle of a rewind --------------------------------------------------------


def _rewind_crash(ws: Path, when: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.rewind_crash_child", str(ws), when],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parent.parent,
    )


def test_a_crash_at_every_durable_step_of_a_rewind_leaves_a_session_that_can_rewind(
    ws: Path, tmp_path: Path
) -> None:
    import shutil

    labels = _rewind_crash(ws, "list")
    assert labels.returncode == 0, labels.stderr
    steps = labels.stdout.split()
    assert "decided" in steps and "done" in steps
    for when in [*steps, "after"]:
        copy = tmp_path / f"ws-{when}"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(ws, copy, symlinks=True)
        before = snapshot(copy)
        crashed = _rewind_crash(copy, when)
        assert crashed.returncode == -9, (when, crashed.stdout, crashed.stderr)
        log = next((copy / ".grinta" / "sessions").glob("*.jsonl"))
        resumed = Session.resume(log, model=ScriptedModel([]))
        resumed.rewind(0)
        assert snapshot(copy) == before, when
        rewinds = [e for e in read_events(log) if isinstance(e, ev.Rewound)]
        assert len(rewinds) == 1, when


# -- 10, 11, 12. hostile logs and resume's own races -----------------------------------------------


def _finished_log(ws: Path) -> Path:
    model = ScriptedModel(
        [reply("", call("read", path="README.md")), reply("", call("finish", summary="ok"))]
    )
    session = drive(Session("look", model=model, root=ws, policy="auto"), lambda s: s.approve())
    assert session.log_path is not None
    return session.log_path


@pytest.mark.parametrize("attack", ["repeat", "swap", "foreign", "second_start"])
def test_resume_refuses_a_log_whose_lines_were_repeated_reordered_or_foreign(
    ws: Path, attack: str
) -> None:
    log = _finished_log(ws)
    lines = log.read_text().splitlines(keepends=True)
    if attack == "repeat":
        lines.insert(3, lines[2])
    elif attack == "swap":
        lines[2], lines[3] = lines[3], lines[2]
    elif attack == "foreign":
        other = json.loads(lines[2])
        other["session"] = "20990101-000000-abcdef"
        lines[2] = json.dumps(other) + "\n"
    else:
        start = json.loads(lines[0])
        start["seq"] = len(lines) + 1
        lines.append(json.dumps(start) + "\n")
    log.write_text("".join(lines))
    with pytest.raises(LogError):
        Session.resume(log, model=ScriptedModel([]))


def test_settings_of_the_wrong_type_fall_back_to_their_defaults(ws: Path) -> None:
    model = ScriptedModel([reply("", call("replace_string", **ADD))])
    crashed = until_decision(Session("swap", model=model, root=ws))
    crashed.log.close()
    log = crashed.log_path
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    lines[0]["settings"].update(
        max_steps="ten", repeat_threshold=None, keep_observations="all", budget=[1], condense=3
    )
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    later = ScriptedModel(
        [reply("", call("run", command=TESTS)), reply("", call("finish", summary="ok"))]
    )
    session = drive(Session.resume(log, model=later), lambda s: s.approve())
    assert session.end_reason == "finished"
    assert session.limits.repeat_threshold == 3 and session.limits.condense == "digest"


def test_resume_holds_the_log_from_the_first_read_to_the_last_write(ws: Path) -> None:
    model = ScriptedModel([reply("", call("replace_string", **ADD))])
    crashed = until_decision(Session("swap", model=model, root=ws))
    crashed.log.close()
    log = crashed.log_path
    resumed = Session.resume(log, model=ScriptedModel([]))
    with pytest.raises(LogBusy):  # nobody else can cut, append to or resume it meanwhile
        Session.resume(log, model=ScriptedModel([]))
    events = read_events(log)
    assert isinstance(events[-1], ev.Resumed)
    resumed.log.close()


def test_rebuild_numbers_steps_as_the_live_session_did(ws: Path) -> None:
    model = ScriptedModel(
        [
            reply("", call("read", path="README.md")),
            reply("", call("replace_string", **ADD)),
        ]
    )
    session = until_decision(Session("look", model=model, root=ws))
    session.stop()
    state = rebuild(session.log.events, root=str(ws))
    assert [s.number for s in state.steps] == [s.number for s in session.steps]
