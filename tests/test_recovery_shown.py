"""A commit a crash interrupted is finished or undone when a session opens the workspace,
and the person is told, naming the files (before stop 33 ``Runtime.recovered`` went
nowhere: a session started on files a crash had just rolled back, or had left with a
journal to look at, said nothing)."""

from __future__ import annotations

import asyncio
import json

from grinta_jupyter.agent import Session
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.cli import _show_rules
from grinta_jupyter.events import models as ev
from grinta_jupyter.jupyter.mime import trace_bundle
from grinta_jupyter.jupyter.timeline import marks
from tests.test_crash import EDITS, make_files, run_child


def crashed(root, when: str):
    """A workspace whose three-file multiedit was SIGKILLed ``before`` or ``after`` its
    decision point."""
    make_files(root)
    steps = json.loads(run_child(root.parent / "ref", "multiedit", 0, EDITS).stdout)
    kill_at = steps.index("decided") + (2 if when == "after" else 0)
    assert run_child(root, "multiedit", kill_at, EDITS).returncode == -9
    return root


def run_one(root) -> Session:
    model = ScriptedModel([reply("", call("finish", summary="nothing to do"))])
    session = Session("look", model=model, root=root, policy="auto")

    async def go() -> None:
        async for _ in session.updates():
            pass

    asyncio.run(go())
    return session


def test_a_rolled_back_commit_is_said_in_the_log_the_trace_and_the_cli(tmp_path, capsys):
    (tmp_path / "ref").mkdir()
    make_files(tmp_path / "ref")
    root = crashed(tmp_path / "ws", "before")
    session = run_one(root)
    start = next(e for e in session.log.events if isinstance(e, ev.SessionStart))
    assert len(start.recovery) == 1
    assert start.recovery[0].startswith("rolled back ")
    assert "a.py, b.py, c.py as before it" in start.recovery[0]
    assert (root / "a.py").read_text().endswith("'a-old'\n")
    (mark,) = [m for m in marks(session) if m.kind == "recovery"]
    assert mark.title == "Recovered 1 interrupted commit" and "a.py, b.py, c.py" in mark.text
    bundle = trace_bundle(session)
    assert "Recovered 1 interrupted commit" in bundle["text/html"]
    assert "a.py, b.py, c.py as before it" in bundle["text/plain"]
    payload_marks = bundle["application/vnd.grinta.session+json"]["marks"]
    assert [m["kind"] for m in payload_marks][:1] == ["recovery"]
    _show_rules(session)
    assert "recovered an interrupted commit: rolled back" in capsys.readouterr().out


def test_a_commit_finished_on_opening_is_said_and_a_clean_workspace_says_nothing(tmp_path):
    (tmp_path / "ref").mkdir()
    make_files(tmp_path / "ref")
    root = crashed(tmp_path / "ws", "after")
    session = run_one(root)
    (mark,) = [m for m in marks(session) if m.kind == "recovery"]
    assert "completed " in mark.text and "a.py, b.py, c.py as it decided" in mark.text
    assert (root / "c.py").read_text().endswith("'c-new'\n")
    again = run_one(root)  # nothing left to recover
    assert not [m for m in marks(again) if m.kind == "recovery"]
    start = next(e for e in again.log.events if isinstance(e, ev.SessionStart))
    assert start.recovery == []


def test_a_resumed_session_says_what_recovery_did_before_its_resume_mark(tmp_path):
    (tmp_path / "ref").mkdir()
    make_files(tmp_path / "ref")
    root = tmp_path / "ws"
    make_files(root)
    model = ScriptedModel([reply("", call("read", path="a.py"))])
    first = Session("look", model=model, root=root)

    async def until_pending() -> None:
        async for _ in first.updates():
            pass

    asyncio.run(until_pending())  # the read ran; the script ran out: the session waits
    log = first.log_path
    assert log is not None
    first.log.close()
    steps = json.loads(run_child(tmp_path / "ref", "multiedit", 0, EDITS).stdout)
    assert run_child(root, "multiedit", steps.index("decided"), EDITS).returncode == -9
    resumed = Session.resume(log, model=ScriptedModel([reply("", call("finish", summary="ok"))]))
    kinds = [m.kind for m in marks(resumed)]
    assert "recovery" in kinds and kinds.index("recovery") + 1 == kinds.index("resumed")
    (event,) = [e for e in resumed.log.events if isinstance(e, ev.Resumed)]
    assert event.recovery and event.recovery[0].startswith("rolled back ")
