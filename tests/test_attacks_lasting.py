"""Sessions that last, attacked: what a rebuild from the log must agree on with the live
session, after the turns a person interrupts."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from grinta_jupyter.agent.guards import Limits
from grinta_jupyter.agent.history import branch_events, rebuild
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import RewindError, Session
from grinta_jupyter.agent.updates import ModelText
from grinta_jupyter.events import models as ev
from grinta_jupyter.events.log import LogError, read_events, read_log
from grinta_jupyter.events.snapshots import clean

OLD = "x = 1\n" * 200
NEW = "x = 2\n" * 200
# A message over the carried bound (6,000 characters): a condensation quotes it cut, so
# condensing it alone pays, and the cut that does so falls just after it.
LONG = "please be brief. " + "word " * 3000


def said_during_a_cancelled_turn(ws: Path, message: str, budget: int | None = None) -> Session:
    """A session whose first model turn is cancelled (the panel's iterator went away) just
    after the user said ``message``; then driven to its end: two reads, an edit, a finish."""
    (ws / "a.py").write_text(OLD)
    model = ScriptedModel(
        [
            reply("let me think about this for a while", call("read", path="a.py")),
            reply("reading", call("read", path="a.py")),
            reply("reading on", call("read", path="a.py", start_line=5)),
            reply("editing", call("replace_string", path="a.py", old_string=OLD, new_string=NEW)),
            *[reply("", call("finish", summary="done")) for _ in range(3)],
        ]
    )
    limits = Limits(context_budget=budget) if budget else Limits()
    session = Session("look at a.py", model=model, root=ws, policy="auto", limits=limits)

    async def interrupted() -> None:
        updates = session.updates()
        async for update in updates:
            if isinstance(update, ModelText):  # the model is answering: say, then leave
                session.say(message)
                break
        await updates.aclose()

    async def to_the_end() -> None:
        async for _ in session.updates():
            pass

    asyncio.run(interrupted())
    asyncio.run(to_the_end())
    return session


def test_a_message_said_during_a_cancelled_turn_is_rebuilt_where_the_model_read_it(
    ws: Path,
) -> None:
    session = said_during_a_cancelled_turn(ws, "please be brief")
    events = read_events(session.log.path)
    rebuilt = rebuild(
        branch_events(events, 0),
        root=str(ws),
        boundary=session.context.boundary,
        rules=session._rules_text,
        secrets=session.secrets,
    )
    # Before: the rebuild put the message after the next reply and its result.
    assert rebuilt.context.request().messages == session.context.request().messages
    assert rebuilt.context.request().digest == session.context.request().digest


def test_a_condensation_after_a_cancelled_turn_resumes(ws: Path) -> None:
    session = said_during_a_cancelled_turn(ws, LONG, budget=4000)
    events = read_events(session.log.path)
    assert any(isinstance(e, ev.Condensed) and e.upto == 1 for e in events)
    # Before: resume raised "cannot condense up to message 1: it splits calls from results".
    resumed = Session.resume(session.log.path, model=ScriptedModel([]))
    fences = resumed.context.boundary, session.context.boundary  # each process draws its own
    again = json.dumps(resumed.context.request().messages).replace(*fences)
    assert again == json.dumps(session.context.request().messages)
    (commit,) = [e for e in events if isinstance(e, ev.Committed)]
    resumed.rewind(commit.step - 1)
    assert (ws / "a.py").read_text() == OLD


def test_a_rewind_past_a_condensation_after_a_cancelled_turn_is_recorded(ws: Path) -> None:
    session = said_during_a_cancelled_turn(ws, LONG, budget=4000)
    (commit,) = [e for e in session.log.events if isinstance(e, ev.Committed)]
    assert (ws / "a.py").read_text() == NEW
    # Before: the rewind restored a.py, then raised the same ValueError, and the log never
    # said so (a resume took the undone commit for one that stands).
    session.rewind(commit.step - 1)
    assert (ws / "a.py").read_text() == OLD
    assert isinstance(read_events(session.log.path)[-1], ev.Rewound)


def test_a_rewind_over_a_history_that_cannot_be_rebuilt_changes_no_file(ws: Path) -> None:
    session = said_during_a_cancelled_turn(ws, LONG, budget=4000)
    (commit,) = [e for e in session.log.events if isinstance(e, ev.Committed)]
    events = session.log.events
    at = next(i for i, e in enumerate(events) if isinstance(e, ev.Condensed))
    events[at] = events[at].model_copy(update={"upto": 10**6})  # no such message
    # Before: the files were restored first, then the rebuild failed: restored files and
    # no rewind in the log. Now the rebuild comes first, and a refusal changes nothing.
    with pytest.raises(RewindError, match="nothing was rewound"):
        session.rewind(commit.step - 1)
    assert (ws / "a.py").read_text() == NEW
    assert not any(isinstance(e, ev.Rewound) for e in read_events(session.log.path))


def _rewrite(log: Path, kind: str, **fields: object) -> bytes:
    """Set ``fields`` on the first event of type ``kind`` in ``log`` (a hand edit, or a
    newer grinta's line); the log's new bytes."""
    lines = log.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if json.loads(line)["type"] == kind)
    lines[at] = json.dumps({**json.loads(lines[at]), **fields})
    log.write_text("\n".join(lines) + "\n")
    return log.read_bytes()


def _waiting_log(ws: Path) -> Path:
    """The log of a session that stopped listening while its write waited."""
    (ws / "a.py").write_text(OLD)
    edit = call("replace_string", path="a.py", old_string=OLD, new_string=NEW)
    session = Session("edit a.py", model=ScriptedModel([reply("", edit)]), root=ws)

    async def until_it_waits() -> None:
        async for _ in session.updates():
            if session.waiting:
                return

    asyncio.run(until_it_waits())
    session.log.close()
    assert session.log.path is not None
    return session.log.path


def test_a_log_from_a_newer_grinta_is_refused_saying_so(ws: Path) -> None:
    log = _waiting_log(ws)
    before = _rewrite(log, "session_start", version=2)
    # Before: resumed as if this version wrote it, whatever its events now mean.
    with pytest.raises(LogError, match="newer grinta.*format 2"):
        Session.resume(log, model=ScriptedModel([]))
    assert log.read_bytes() == before
    # A new field in it: before, "line 1 is not a grinta event", which misleads.
    before = _rewrite(log, "session_start", version=2, workspace_id="w-1")
    with pytest.raises(LogError, match="newer grinta"):
        read_log(log)
    with pytest.raises(LogError, match="newer grinta"):
        Session.resume(log, model=ScriptedModel([]))
    assert log.read_bytes() == before


@pytest.mark.parametrize("toolset", ["", "intent2"])
def test_a_log_naming_a_toolset_this_grinta_lacks_is_refused_in_one_line(
    ws: Path, toolset: object
) -> None:
    log = _waiting_log(ws)
    before = _rewrite(log, "session_start", toolset=toolset)
    # Before: a bare ValueError from the session's constructor (a traceback in `grinta resume`).
    with pytest.raises(LogError):
        Session.resume(log, model=ScriptedModel([]))
    assert log.read_bytes() == before


def test_a_condensation_edited_out_of_its_history_is_refused_in_one_line(ws: Path) -> None:
    session = said_during_a_cancelled_turn(ws, LONG, budget=4000)
    assert session.log.path is not None
    for upto in (0, 10**6):
        before = _rewrite(session.log.path, "condensed", upto=upto)
        # Before: a bare ValueError from the context (a traceback in `grinta resume`).
        with pytest.raises(LogError, match="condensed"):
            Session.resume(session.log.path, model=ScriptedModel([]))
        assert session.log.path.read_bytes() == before


def test_clean_reads_past_a_log_line_nested_beyond_any_event(tmp_path: Path) -> None:
    sessions = tmp_path / ".grinta" / "sessions"
    sessions.mkdir(parents=True)
    nested = "[" * 100_000 + "]" * 100_000
    (sessions / "x.jsonl").write_text('{"type": "snapshot", "x": ' + nested + "}\n")
    # Before: a RecursionError escaped clean (a traceback from `grinta clean`).
    assert clean(tmp_path, keep=0, dry_run=True).logs == [sessions / "x.jsonl"]
