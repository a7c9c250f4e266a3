"""A fifth round of attacks on sessions that last: a kernel restart after the user edited the
waiting proposal, a resumed call dropped by a stop or a rewind whose id a later call reuses,
and ``%grinta resume`` in a workspace where another kernel's session is still running. Each
test failed before its fix in agent/session.py, agent/history.py or events/log.py."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from grinta_jupyter.agent.history import latest_unfinished
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.models.base import ToolCall
from grinta_jupyter.agent.session import Session
from grinta_jupyter.events.log import held_elsewhere
from tests.conftest import drive, until_decision
from tests.test_lasting import ADD, SUB, with_a_test


@pytest.fixture
def ws(ws: Path) -> Path:
    return with_a_test(ws)


def _as(call_id: str, tool_call: ToolCall) -> ToolCall:
    """The call with the id a local model gives every first call of its replies."""
    return ToolCall(call_id, tool_call.name, tool_call.arguments)


def _finishing() -> ScriptedModel:
    return ScriptedModel([reply("", call("finish", summary="done"))] * 3)


# -- 1. the user's edit of the waiting proposal, then the kernel dies -----------------------------


def test_a_proposal_the_user_edited_is_asked_again_as_edited_after_a_resume(ws: Path) -> None:
    """Attack: the user edits the waiting proposal, the kernel dies before the approval.
    Resume staged the model's original arguments again (the edit was lost) and called it
    stale ("pkg/core.py changed since this call was first staged", though no file changed);
    approving it wrote what the user had edited away. Fixed in agent/history.py (the call is
    queued again as last proposed)."""
    model = ScriptedModel([reply("", call("replace_string", **ADD))])
    session = until_decision(Session("swap", model=model, root=ws))
    session.edit(dict(ADD, new_string="return a + b  # kept as is"))
    session.log.close()  # the kernel dies
    assert session.log_path is not None
    resumed = Session.resume(session.log_path, model=_finishing())
    asked: list[tuple[str, str | None]] = []

    def approve(s: Session) -> None:
        assert s.pending is not None
        asked.append((s.pending.call.arguments, s.pending.stale))
        s.approve()

    drive(resumed, approve)
    assert len(asked) == 1
    assert "kept as is" in asked[0][0] and asked[0][1] is None
    assert "return a + b  # kept as is" in (ws / "pkg" / "core.py").read_text()


@pytest.mark.parametrize("policy", ["ask", "auto"])
def test_an_edit_that_does_not_validate_still_waits_after_a_resume(ws: Path, policy: str) -> None:
    """Live, an edit that does not validate waits for the user to edit again, and an edit
    waits for its approval whatever the policy; resumed, it is the same (it is not handed to
    the model as its own failed call, nor committed by ``policy="auto"``)."""
    model = ScriptedModel([reply("", call("replace_string", **ADD))])
    session = until_decision(Session("swap", model=model, root=ws))
    session.edit(dict(ADD, old_string="no such text"))
    assert session.waiting
    session.log.close()
    assert session.log_path is not None
    resumed = until_decision(
        Session.resume(session.log_path, model=_finishing(), policy=policy)  # type: ignore[arg-type]
    )
    assert resumed.waiting and resumed.pending is not None
    assert "no such text" in resumed.pending.call.arguments
    assert resumed.pending.proposal.error is not None
    resumed.stop()


def test_an_edit_valid_after_a_resume_waits_for_a_person_even_under_auto(ws: Path) -> None:
    """An edit is asked again as edited under ``policy="auto"`` too: the user had not
    approved it yet, and live an edit waits for its approval whatever the policy."""
    model = ScriptedModel([reply("", call("replace_string", **ADD))])
    session = until_decision(Session("swap", model=model, root=ws))
    session.edit(dict(ADD, new_string="return a + b  # mine"))
    session.log.close()
    assert session.log_path is not None
    before = (ws / "pkg" / "core.py").read_bytes()
    resumed = until_decision(Session.resume(session.log_path, model=_finishing(), policy="auto"))
    assert resumed.waiting and resumed.pending is not None
    assert "# mine" in resumed.pending.call.arguments  # the edit, waiting for its approval
    assert (ws / "pkg" / "core.py").read_bytes() == before
    resumed.stop()


# -- 2. a resumed call dropped by a stop or a rewind, its id reused by the next call -------------


@pytest.mark.parametrize("how", ["stop", "rewind"])
def test_a_new_call_reusing_a_dropped_resumed_calls_id_is_neither_restaged_nor_stale(
    ws: Path, how: str
) -> None:
    """Attack: a session resumed with a waiting call ``call_0`` is stopped (then given a next
    task) or rewound before the call is staged again; the model's next call, ``call_0`` again
    (local models number every reply's calls from 0), showed as restaged and stale ("changed
    since this call was first staged") and waited for a person under ``policy="auto"``. Fixed
    in agent/session.py (``_reopen`` forgets the dropped calls with the queue)."""
    first = ScriptedModel([reply("", _as("call_0", call("replace_string", **ADD)))])
    session = until_decision(Session("swap", model=first, root=ws))
    session.log.close()
    assert session.log_path is not None
    finish = reply("", call("finish", summary="done"))
    model = ScriptedModel([reply("", _as("call_0", call("replace_string", **SUB))), *[finish] * 3])
    resumed = Session.resume(session.log_path, model=model, policy="auto")
    assert [c.id for c, _ in resumed.queue] == ["call_0"]
    if how == "stop":
        resumed.stop()
        resumed.continue_task("negate sub instead")
    else:
        resumed.rewind(0)
    asked: list[int] = []
    drive(resumed, lambda s: (asked.append(s.pending.number), s.approve()))  # type: ignore[union-attr]
    sub = next(s for s in resumed.steps if s.call.name == "replace_string")
    assert not sub.restaged and sub.stale is None and sub.decision == "auto", asked
    assert "return -(b - a)" in (ws / "pkg" / "core.py").read_text()


# -- 3. %grinta resume while another kernel's session runs in the workspace ----------------------


_RUNNING = """
import sys, time
from pathlib import Path
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import Session
from tests.conftest import until_decision
edit = {"path": "pkg/core.py", "old_string": "return a - b", "new_string": "return -(b - a)"}
model = ScriptedModel([reply("", call("replace_string", **edit))])
session = until_decision(Session("new", model=model, root=Path(sys.argv[1])))
print(session.log_path, flush=True)
time.sleep(60)
"""


def test_the_latest_unfinished_session_is_not_one_still_running_elsewhere(ws: Path) -> None:
    """Attack: a session crashed; later another kernel started a session in the same workspace
    and it still runs. ``latest_unfinished`` (``%grinta resume``, ``grinta resume`` without a
    log) picked the running one, so resume refused (``LogBusy``) and the crashed one could not
    be found. Fixed in agent/history.py with ``events.log.held_elsewhere``. A session running
    in this process is still found (the notebook says it runs here and needs no resume)."""
    crashed = until_decision(
        Session("old", model=ScriptedModel([reply("", call("replace_string", **ADD))]), root=ws)
    )
    assert crashed.log_path is not None
    assert latest_unfinished(ws) == crashed.log_path  # running here: found
    crashed.log.close()  # its kernel died
    time.sleep(0.02)  # the other kernel's log is the newer
    other = subprocess.Popen(
        [sys.executable, "-c", _RUNNING, str(ws)],
        cwd=Path(__file__).parent.parent,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert other.stdout is not None
        running = Path(other.stdout.readline().strip())
        assert running.is_file() and held_elsewhere(running)
        assert not held_elsewhere(crashed.log_path)
        assert latest_unfinished(ws) == crashed.log_path
        Session.resume(crashed.log_path, model=_finishing()).log.close()
    finally:
        other.kill()
        other.wait(timeout=30)
    assert not held_elsewhere(running)  # its process is gone: it can be resumed now
