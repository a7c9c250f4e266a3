"""The wall-time budget cuts short what runs when it is spent (``Session._wall_time_out``).

Before, the budget was checked only between steps: a model call that took minutes, or a
command under its own longer timeout, ran on past it and the session ended afterwards.
Now, when ``max_wall_time`` runs out, a model call is cancelled and a running command is
told to stop (its process tree ends, as with Stop); the session ends ``budget:wall_time``.
A session waiting for a person's decision is left waiting: the budget ends it before the
next step. Each new task gets its budget afresh.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from grinta_jupyter.agent import Session
from grinta_jupyter.agent.guards import Limits
from grinta_jupyter.agent.models.litellm_model import LiteLLMModel
from grinta_jupyter.agent.models.scripted import ScriptedModel, call, reply
from tests.openai_server import OpenAIServer, stall_reply, text_reply, tool_call, tool_reply

BUDGET = 2.0
# Far beyond the budget: a session still running then was not cut.
LONG = 60


def _limits(wall: float | None = BUDGET) -> Limits:
    return Limits(max_steps=None, max_tokens=None, max_cost=None, max_wall_time=wall)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def test_a_command_running_when_the_budget_runs_out_is_stopped(tmp_path: Path) -> None:
    script = f"echo $$ > pid.txt; sleep {LONG}; echo finished > done.txt"
    model = ScriptedModel(
        [
            reply("", call("run", command=script, timeout=LONG * 2)),
            reply("Done.", call("finish", summary="ran it")),
        ]
    )
    session = Session("run it", model=model, root=tmp_path, policy="auto", limits=_limits())
    started = time.monotonic()
    session.run_sync()
    took = time.monotonic() - started
    assert session.end_reason == "budget:wall_time"
    assert took < LONG / 2, f"the command ran on for {took:.0f}s"
    assert not (tmp_path / "done.txt").exists()
    pid = int((tmp_path / "pid.txt").read_text())
    assert not _alive(pid), "the command's process outlived the session"
    step = session.steps[0]
    assert step.observation is not None and not step.observation.ok
    assert "did not finish" in step.observation.output
    fired = [e for e in session.log.events if e.type == "guard_fired"]
    assert [e.guard for e in fired] == ["budget:wall_time"]  # type: ignore[attr-defined]
    # The model was not asked again after the command was cut.
    assert len(model.requests) == 1


def test_a_model_call_running_when_the_budget_runs_out_is_cancelled(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    openai_server.queue(stall_reply(LONG))
    model = LiteLLMModel("openai/x", api_base=openai_server.url, api_key="k", timeout=LONG * 2)
    session = Session("say hi", model=model, root=tmp_path, policy="auto", limits=_limits())
    started = time.monotonic()
    session.run_sync()
    took = time.monotonic() - started
    assert session.end_reason == "budget:wall_time"
    assert took < LONG / 2, f"the model call ran on for {took:.0f}s"
    assert len(openai_server.requests) == 1
    assert [e.type for e in session.log.events][-2:] == ["guard_fired", "session_end"]


def test_a_session_waiting_for_a_person_is_not_ended_under_them(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    model = ScriptedModel(
        [
            reply("", call("replace_string", path="a.py", old_string="x = 1", new_string="x = 2")),
            reply("Done.", call("finish", summary="changed x")),
        ]
    )
    session = Session("change x", model=model, root=tmp_path, policy="ask", limits=_limits(1.0))

    async def scenario() -> None:
        updates = session.updates()
        async for _update in updates:
            if session.pending is not None:
                break
        await asyncio.sleep(2.0)  # past the budget, a person still deciding
        assert not session.done and session.pending is not None
        session.approve()
        async for _update in updates:
            pass

    asyncio.run(scenario())
    # The approved edit landed; the budget then ended the session before the next step.
    assert (tmp_path / "a.py").read_text() == "x = 2\n"
    assert session.end_reason == "budget:wall_time"
    assert len(model.requests) == 1


def test_each_task_gets_the_budget_afresh(tmp_path: Path, openai_server: OpenAIServer) -> None:
    openai_server.queue(stall_reply(LONG))
    model = LiteLLMModel("openai/x", api_base=openai_server.url, api_key="k", timeout=LONG * 2)
    session = Session("first", model=model, root=tmp_path, policy="auto", limits=_limits())
    session.run_sync()
    assert session.end_reason == "budget:wall_time"
    # The next task starts with the whole budget: its calls are not cut at once.
    openai_server.queue(
        tool_reply(tool_call("finish", {"summary": "nothing to do"}), text="Done."),
        text_reply("Nothing ran, so nothing was tested."),
        tool_reply(tool_call("finish", {"summary": "nothing to do"}), text="Done."),
    )
    session.continue_task("second")
    session.run_sync()
    assert session.end_reason != "budget:wall_time"
    assert session.summary is not None or session.end_reason == "finished"


@pytest.mark.parametrize("wall", [None, float(LONG * 10)])
def test_without_a_spent_budget_nothing_is_cut(tmp_path: Path, wall: float | None) -> None:
    model = ScriptedModel(
        [
            reply("", call("run", command="sleep 3; echo ok > done.txt", timeout=30)),
            reply("Done.", call("finish", summary="ran it")),
        ]
    )
    session = Session("run it", model=model, root=tmp_path, policy="auto", limits=_limits(wall))
    session.run_sync()
    assert (tmp_path / "done.txt").read_text() == "ok\n"
    assert session.end_reason != "budget:wall_time"
    assert session.steps[0].observation is not None and session.steps[0].observation.ok
