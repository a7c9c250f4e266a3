"""A sixth round of attacks on sessions that last: the same edit typed by hand while its commit
was interrupted, a log edited to name another session's commit, a session rewound a thousand
times, and rewinds refused over files deleted or replaced. Each test failed before its fix in
agent/session.py or agent/history.py, unless it says it is a guard."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.agent.history import KEPT_CHANGE
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import RewindError, Session
from grinta_jupyter.events import models as ev
from grinta_jupyter.events.log import read_events
from tests.conftest import drive, snapshot, until_decision
from tests.test_lasting import ADD, NEW, crash_after_decision, with_a_test

FINISH = reply("", call("finish", summary="done"))


@pytest.fixture
def ws(ws: Path) -> Path:
    return with_a_test(ws)


def _typed_by_hand_after_an_interrupted_commit(ws: Path) -> Path:
    """The user approved ADD; the commit was interrupted and rolled back (the journal keeps
    no record of it); then the user typed the very same fix by hand. The session's log."""
    log = crash_after_decision(ws)
    assert Runtime(ws).undo().ok  # as the journal's recovery of an interrupted commit leaves it
    core = ws / "pkg" / "core.py"
    core.write_text(core.read_text().replace("return a + b", "return b + a"))
    return log


def _rewrite(log: Path, change: dict[str, dict[str, object]]) -> None:
    """Set fields on every event of the given types (a hand edit, or an older version's log)."""
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    for line in lines:
        line.update(change.get(line["type"], {}))
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))


# -- 1. the same edit typed by hand while its commit was interrupted ------------------------------


def test_a_change_typed_by_hand_equal_to_an_approved_proposal_is_not_recorded_as_a_commit(
    ws: Path,
) -> None:
    """Attack: the commit of an approved proposal is interrupted (rolled back), and the user
    types the same fix by hand. Resume recorded it as committed, without a commit id, and a
    rewind past it was refused blaming "an older version or an edited log". Now the record
    says the change was found in place and not written by the session (no ``commit`` event),
    and a rewind leaves those bytes as they are and says so, to the user and the model."""
    log = _typed_by_hand_after_an_interrupted_commit(ws)
    by_hand = snapshot(ws)
    resumed = Session.resume(log, model=ScriptedModel([]))
    assert not any(isinstance(e, ev.Committed) for e in resumed.log.events), "no commit made it"
    step = resumed.steps[-1]
    assert step.observation is not None and step.observation.ok
    assert "no commit of this session the workspace keeps" in step.observation.output
    assert [e.recovered for e in resumed.log.events if isinstance(e, ev.Resumed)] == [[]]
    rewound = resumed.rewind(0)
    assert snapshot(ws) == by_hand, "bytes the session did not write are left alone"
    assert rewound.undone == ()
    assert len(rewound.not_undone) == 1 and "pkg/core.py" in rewound.not_undone[0]
    assert KEPT_CHANGE in rewound.not_undone[0]
    told = resumed.context.history[-1]["content"]
    assert "did not write were left as they are" in told and "pkg/core.py" in told
    assert "the files are as they were" not in told
    # Resumed again, the rebuilt context is the live one.
    resumed.log.close()
    again = Session.resume(log, model=ScriptedModel([]))
    assert again.context.history == resumed.context.history


def test_a_rewind_past_a_change_found_in_place_still_undoes_the_sessions_own_commits(
    ws: Path,
) -> None:
    """After the change found in place, the resumed session commits a new file; a rewind to 0
    removes that file (the session wrote it) and keeps the hand-typed fix."""
    log = _typed_by_hand_after_an_interrupted_commit(ws)
    by_hand = snapshot(ws)
    model = ScriptedModel([reply("", call("create", **NEW)), *[FINISH] * 3])
    resumed = drive(Session.resume(log, model=model, policy="auto"), lambda s: s.approve())
    assert (ws / "pkg" / "extra.py").is_file()
    rewound = resumed.rewind(0)
    assert snapshot(ws) == by_hand
    assert len(rewound.undone) == 1 and len(rewound.not_undone) == 1


def test_an_older_logs_nameless_recovered_commit_says_what_happened(ws: Path) -> None:
    """A log an older version wrote for that case (a ``commit`` without an id, observed as
    "committed before the interruption"): the rewind is refused, every byte as it was, and
    says what the record means and what to do, not "an older version or an edited log"."""
    log = _typed_by_hand_after_an_interrupted_commit(ws)
    Session.resume(log, model=ScriptedModel([])).log.close()
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    at = next(i for i, x in enumerate(lines) if x["type"] == "observation")
    common = ("ts", "t", "session", "step", "branch", "call_id")
    commit = {key: lines[at][key] for key in common if key in lines[at]}
    commit.update(type="commit", ok=True, commit_id=None, paths=["pkg/core.py"])
    lines[at]["summary"] = "replace_string -> committed before the interruption"
    lines.insert(at, commit)
    for number, line in enumerate(lines, 1):
        line["seq"] = number
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    before = snapshot(ws)
    old = Session.resume(log, model=ScriptedModel([]))
    with pytest.raises(RewindError, match="typed by hand") as refused:
        old.rewind(0)
    assert "put pkg/core.py back by hand" in str(refused.value)
    assert snapshot(ws) == before


# -- 2. a log edited to name another session's commit -----------------------------------------------


def test_a_rewind_refuses_a_logged_commit_id_that_another_session_made(ws: Path) -> None:
    """Attack: session A's log is edited so that its commit names session B's commit (of
    another file). A rewind of A restored B's file, losing B's work. Now the commit's undo
    record must name this session's call as its maker: refused, every byte as it was."""
    first = Session("a", model=ScriptedModel([reply("", call("replace_string", **ADD))]), root=ws)
    a = drive(first, lambda s: s.approve())
    a.stop()
    b_model = ScriptedModel([reply("", call("create", **NEW)), *[FINISH] * 3])
    b = drive(Session("b", model=b_model, root=ws, policy="auto"), lambda s: s.approve())
    theirs = next(e.commit_id for e in b.log.events if isinstance(e, ev.Committed))
    assert a.log_path is not None
    _rewrite(a.log_path, {"commit": {"commit_id": theirs}})
    before = snapshot(ws)
    resumed = Session.resume(a.log_path, model=ScriptedModel([]))
    with pytest.raises(RewindError, match="made by session") as refused:
        resumed.rewind(0)
    assert "by hand" in str(refused.value)
    assert snapshot(ws) == before and (ws / "pkg" / "extra.py").is_file()


def test_a_rewind_of_the_sessions_own_commit_is_not_refused_as_another_sessions(ws: Path) -> None:
    """Guard (passes before and after): the owner check takes the session's own commits."""
    model = ScriptedModel([reply("", call("replace_string", **ADD)), *[FINISH] * 3])
    before = snapshot(ws)
    session = drive(Session("a", model=model, root=ws, policy="auto"), lambda s: s.approve())
    assert session.log_path is not None
    resumed = Session.resume(session.log_path, model=ScriptedModel([]))
    assert len(resumed.rewind(0).undone) == 1
    assert snapshot(ws) == before


# -- 3. very long sessions: a thousand rewinds ------------------------------------------------------


def test_a_session_rewound_a_thousand_times_resumes_and_rewinds_again(ws: Path) -> None:
    """Attack: a long session rewound 1,200 times (each rewind a branch grown from the one
    before). Resume raised RecursionError (``branch_events`` recursed once per branch), and
    each rewind cost a pass over the log per branch. Now one pass per branch."""
    session = until_decision(
        Session("look", model=ScriptedModel([reply("", call("read", path="README.md"))]), root=ws)
    )
    session.stop()
    log = session.log_path
    assert log is not None
    last = read_events(log)[-1]
    template = {"ts": last.ts, "t": last.t, "session": last.session, "step": 0, "type": "rewind"}
    with log.open("a") as handle:
        for branch in range(1, 1201):
            line = dict(template, seq=last.seq + branch, branch=branch, parent=branch - 1)
            handle.write(json.dumps(dict(line, to_step=0)) + "\n")
    resumed = Session.resume(log, model=ScriptedModel([]))
    assert resumed.branch == 1200 and resumed.steps == []
    assert resumed.rewind(0).branch == 1201


# -- 4. rewinds refused over files deleted or replaced -----------------------------------------------


@pytest.mark.parametrize("how", ["deleted", "a folder", "a link out"])
def test_a_rewind_over_a_file_deleted_or_replaced_is_refused_and_says_what_to_do(
    ws: Path, how: str
) -> None:
    """Guard for the bytes (they were left before too), and the refusal now says what to do."""
    model = ScriptedModel([reply("", call("replace_string", **ADD)), *[FINISH] * 3])
    session = drive(Session("a", model=model, root=ws, policy="auto"), lambda s: s.approve())
    core = ws / "pkg" / "core.py"
    outside = ws.parent / "outside.py"
    outside.write_text("secret = 1\n")
    core.unlink()
    if how == "a folder":
        core.mkdir()
        (core / "kept.txt").write_text("mine")
    elif how == "a link out":
        core.symlink_to(outside)
    before = snapshot(ws)
    with pytest.raises(RewindError, match="put the file back as the session left it"):
        session.rewind(0)
    assert snapshot(ws) == before and outside.read_text() == "secret = 1\n"
    assert how != "a link out" or os.readlink(core) == str(outside)


def test_a_waiting_write_whose_file_was_deleted_names_it_as_stale(ws: Path) -> None:
    """The kernel dies while a write waits; the user deletes its file. Resumed, the call no
    longer stages: it was called stale with "the target changed"; now it names the file.
    Nothing is written (the file stays deleted)."""
    session = until_decision(
        Session("a", model=ScriptedModel([reply("", call("replace_string", **ADD))]), root=ws)
    )
    session.log.close()
    (ws / "pkg" / "core.py").unlink()
    assert session.log_path is not None
    resumed = drive(
        Session.resume(session.log_path, model=ScriptedModel([FINISH] * 3), policy="auto"),
        lambda s: s.approve(),
    )
    first = resumed.steps[0]
    assert first.stale is not None and first.stale.startswith("pkg/core.py changed"), first.stale
    assert not (ws / "pkg" / "core.py").exists()


def test_the_rewind_line_and_timeline_tell_a_change_left_as_found_from_a_command_that_ran() -> None:
    """A change found in place and left by a rewind is not a command that ran: the notebook's
    rewind line and the timeline said "(not undone, they ran: ...)" / "it ran, it cannot be
    undone" of both."""
    from grinta_jupyter.agent.history import KEPT_CHANGE
    from grinta_jupyter.agent.updates import Rewound as RewoundUpdate
    from grinta_jupyter.events import models as ev
    from grinta_jupyter.jupyter.controller import rewind_line
    from grinta_jupyter.jupyter.timeline import rewind_text

    kept = f"step 3: calc.py ({KEPT_CHANGE}): left as it is"
    ran = "step 4: `python -m pytest`"
    line = rewind_line(RewoundUpdate(2, 1, ("c1",), (kept, ran)))
    assert f"(not undone, they ran: {ran})" in line and f"(left as found: {kept})" in line
    text = rewind_text(ev.Rewound(to_step=2, parent=0, undone=["c1"], not_undone=[kept, ran]))
    assert f"it cannot be undone): {ran}" in text and f"left as found: {kept}" in text
    assert "it cannot be undone): " + kept not in text
