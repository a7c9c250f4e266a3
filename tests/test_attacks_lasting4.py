"""A fourth round of attacks on sessions that last: log lines moved to another branch, a
hand-edited clock, a next task given to a session whose log cannot be written, and hostile
log bytes (CRLF, BOM, NUL, wrong field types, symlinks, FIFOs). Each bug test failed before
its fix in events/log.py or agent/history.py; the others record what held."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import Session
from grinta_jupyter.events import models as ev
from grinta_jupyter.events.log import LogError, read_events
from tests.conftest import drive, snapshot
from tests.test_lasting import ADD, with_a_test
from tests.test_lasting_attacks import _finished_log


@pytest.fixture
def ws(ws: Path) -> Path:
    return with_a_test(ws)


def _lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def _write(log: Path, lines: list[dict[str, Any]]) -> None:
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _committed_log(ws: Path) -> Path:
    """The log of an ended session that committed one edit."""
    finishes = [reply("", call("finish", summary="done"))] * 3
    model = ScriptedModel([reply("", call("replace_string", **ADD)), *finishes])
    session = drive(Session("swap", model=model, root=ws, policy="auto"), lambda s: s.approve())
    session.log.close()
    assert session.log_path is not None
    return session.log_path


# -- 1. a line moved to a branch the session was not on ---------------------------------------


@pytest.mark.parametrize("branch", [7, -1])
def test_a_commit_moved_to_another_branch_is_refused_not_left_by_a_rewind(
    ws: Path, branch: int
) -> None:
    """Attack: the commit line of an ended session edited to branch 7 (no rewind made it).
    Resume took the log; the commit was off branch 0's path, so ``rewind(0)`` said it had
    rewound (a ``rewind`` event, nothing undone) while the edit stayed on disk. Fixed in
    agent/history.py (``check_sequence``): every line must be on the session's branch."""
    log = _committed_log(ws)
    lines = _lines(log)
    for line in lines:
        if line["type"] == "commit":
            line["branch"] = branch
    _write(log, lines)
    before = log.read_bytes()
    with pytest.raises(LogError, match=f"on branch {branch} while the session was on branch 0"):
        Session.resume(log, model=ScriptedModel([]))
    assert log.read_bytes() == before


def test_a_rewind_from_a_branch_the_session_was_not_on_is_refused(ws: Path) -> None:
    """The same for a rewind line: a real rewound log resumes; its rewind edited to grow from
    branch 0 once the session was on branch 1 (a sibling the live session never wrote) is
    refused."""
    log = _committed_log(ws)
    resumed = Session.resume(log, model=ScriptedModel([]))
    resumed.rewind(1)
    resumed.rewind(0)
    resumed.log.close()
    Session.resume(log, model=ScriptedModel([])).log.close()  # a real rewound log resumes
    lines = _lines(log)
    rewinds = [line for line in lines if line["type"] == "rewind"]
    assert [(r["parent"], r["branch"]) for r in rewinds] == [(0, 1), (1, 2)]
    rewinds[1]["parent"] = 0
    _write(log, lines)
    with pytest.raises(LogError, match="on branch 2 while the session was on branch 1"):
        Session.resume(log, model=ScriptedModel([]))


# -- 2. a clock that is not a number --------------------------------------------------------------


@pytest.mark.parametrize("clock", ["NaN", "Infinity", "-Infinity"])
def test_a_non_finite_clock_in_a_log_is_not_carried_into_its_new_lines(
    ws: Path, clock: str
) -> None:
    """Attack: the last line's ``t`` edited to NaN (Python's json reads it). Every line the
    resumed session wrote carried ``"t": NaN`` too, which is not JSON (jq, a browser, any
    strict reader refuse the log). Fixed in events/log.py: such a clock starts again at 0."""
    log = _finished_log(ws)
    raw = log.read_bytes().splitlines(keepends=True)
    last = json.loads(raw[-1])
    raw[-1] = json.dumps(last).replace(f'"t": {json.dumps(last["t"])}', f'"t": {clock}').encode()
    raw[-1] += b"\n"
    log.write_bytes(b"".join(raw))
    resumed = Session.resume(log, model=ScriptedModel([]))
    resumed.continue_task("and again")
    resumed.log.close()
    new = log.read_bytes().splitlines()[len(raw) :]
    assert len(new) == 2  # resume, task_start
    for line in new:
        assert b"NaN" not in line and b"Infinity" not in line, line
        json.loads(line)


# -- 3. a next task for a session whose log cannot be written -----------------------------------


def test_continue_on_a_session_whose_log_failed_is_refused_and_changes_nothing(
    ws: Path, tmp_path: Path
) -> None:
    """Attack: ``continue_task`` on a session that ended because its log could not be
    written. It was taken: the next task was recorded in memory only, the session said it was
    thinking again, and it ended at once with ``log_write_failed`` when driven. What cannot be
    recorded is not done (as ``say``, ``undo`` and ``rewind`` already refused): it now raises
    ``LogError`` and the session stays as it ended. Fixed in events/log.py (``reopen``)."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the log folder should be")
    model = ScriptedModel([reply("", call("finish", summary="x"))])
    session = Session("explain", model=model, root=ws, log_dir=blocker / "logs")
    drive(session, lambda s: s.approve())
    assert session.end_reason == "log_write_failed"
    events = len(session.log.events)
    with pytest.raises(LogError, match="nothing was done"):
        session.continue_task("next")
    assert session.done and session.end_reason == "log_write_failed"
    assert session.tasks == ["explain"] and len(session.log.events) == events


# -- what held ------------------------------------------------------------------------------------


def _mangle(log: Path, how: str) -> None:
    data = log.read_bytes()
    lines = _lines(log)
    if how == "bom":
        log.write_bytes(b"\xef\xbb\xbf" + data)
    elif how == "nul":
        log.write_bytes(data[:5] + b"\x00" + data[5:])
    elif how == "invalid_utf8":
        log.write_bytes(data.replace(b'"look"', b'"lo\xffok"', 1))
    elif how == "unknown_type":
        lines.insert(3, {"type": "wat", "seq": 4, "session": lines[0]["session"]})
        _write(log, [{**line, "seq": i} for i, line in enumerate(lines, 1)])
    elif how == "extra_field":
        lines[4]["extra"] = 1
        _write(log, lines)
    elif how == "seq_back":
        lines[-1]["seq"] = 2
        _write(log, lines)
    elif how == "seq_as_float":
        lines[4]["seq"] = 5.5
        _write(log, lines)
    elif how == "tool_calls_as_text":
        lines[2]["tool_calls"] = "read"
        _write(log, lines)
    elif how == "deep_json":
        log.write_bytes(data + b'{"a":' * 100_000 + b"\n")
    elif how == "array_line":
        log.write_bytes(data + b"[1, 2]\n")


@pytest.mark.parametrize(
    "how",
    [
        "bom",
        "nul",
        "invalid_utf8",
        "unknown_type",
        "extra_field",
        "seq_back",
        "seq_as_float",
        "tool_calls_as_text",
        "deep_json",
        "array_line",
    ],
)
def test_a_bad_log_is_refused_in_one_line_and_left_as_it_was(ws: Path, how: str) -> None:
    log = _finished_log(ws)
    _mangle(log, how)
    before = log.read_bytes()
    with pytest.raises(LogError) as refused:
        Session.resume(log, model=ScriptedModel([]))
    assert "\n" not in str(refused.value)
    assert log.read_bytes() == before


def test_crlf_line_ends_and_blank_lines_resume_as_the_same_session(ws: Path) -> None:
    log = _finished_log(ws)
    expected = [e.type for e in read_events(log)]
    log.write_bytes(log.read_bytes().replace(b"\n", b"\r\n\n"))
    resumed = Session.resume(log, model=ScriptedModel([]))
    resumed.log.close()
    assert resumed.done and resumed.end_reason == "finished"
    assert [e.type for e in read_events(log)] == [*expected, "resume"]


@pytest.mark.parametrize("kind", ["symlink", "fifo", "folder"])
def test_a_log_that_is_a_symlink_fifo_or_folder_is_refused(ws: Path, kind: str) -> None:
    log = _finished_log(ws)
    odd = log.parent / f"odd-{kind}.jsonl"
    if kind == "symlink":
        odd.symlink_to(log)
    elif kind == "fifo":
        os.mkfifo(odd)
    else:
        odd.mkdir()
    with pytest.raises(LogError):
        Session.resume(odd, model=ScriptedModel([]))
    assert odd.is_symlink() == (kind == "symlink")


def test_rewinds_to_now_twice_and_after_a_continue_resume_as_they_were(ws: Path) -> None:
    before = snapshot(ws)
    log = _committed_log(ws)
    session = Session.resume(log, model=ScriptedModel([]))
    now = len(session.steps)
    session.rewind(now)
    session.rewind(now)
    with pytest.raises(RuntimeError):  # the rewind made it work on its task again
        session.continue_task("next")
    session.say("hello")
    session.rewind(0)
    assert snapshot(ws) == before
    session.log.close()
    resumed = Session.resume(log, model=ScriptedModel([]))
    resumed.log.close()
    assert resumed.branch == session.branch == 3
    assert len(resumed.steps) == 0 and resumed.tasks == session.tasks
    rewinds = [e for e in read_events(log) if isinstance(e, ev.Rewound)]
    assert [r.to_step for r in rewinds] == [now, now, 0]
