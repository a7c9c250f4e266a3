"""Attacks on the wall-time budget's cut (commit 1b86f97, ``Session._wall_time_out``).

Real sessions, real processes, the real local OpenAI-compatible server: the budget running
out in each state the session can be in, odd budgets, odd ways of driving, and what the
event log holds afterwards.
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
import time
from pathlib import Path

import pytest

from grinta_jupyter.agent import Session
from grinta_jupyter.agent.guards import Limits
from grinta_jupyter.agent.models.litellm_model import LiteLLMModel
from grinta_jupyter.agent.models.scripted import ScriptedModel, call, reply
from grinta_jupyter.agent.replay import replay
from grinta_jupyter.events import models as ev
from grinta_jupyter.events.log import read_log
from grinta_jupyter.tools.kernel import DictNamespace, kernel_toolset
from tests.openai_server import OpenAIServer, stall_reply, tool_call, tool_reply

LONG = 40  # far beyond any budget here: still running then means not cut


def _limits(wall: float | None) -> Limits:
    return Limits(max_steps=None, max_tokens=None, max_cost=None, max_wall_time=wall)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _wait_gone(pids: list[int], seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [p for p in pids if _alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _check_log(session: Session, reason: str = "budget:wall_time") -> list[ev.Event]:
    """The log on disk: one budget firing, one end with ``reason``, nothing after it."""
    assert session.log_path is not None
    events = read_log(session.log_path)
    fired = [e for e in events if isinstance(e, ev.GuardFired) and e.guard == "budget:wall_time"]
    ends = [e for e in events if isinstance(e, ev.SessionEnd)]
    assert len(fired) == (1 if reason == "budget:wall_time" else len(fired))
    assert [e.reason for e in ends] == [reason], [e.type for e in events]
    assert events[-1] is ends[-1] or isinstance(events[-1], ev.SessionEnd), [e.type for e in events]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    return events


# -- the budget running out in each state -------------------------------------------------


def test_a_command_approved_after_the_budget_ran_out_runs_then_the_session_ends(
    tmp_path: Path,
) -> None:
    """The timer fired while a person was deciding, and left them be (decided: a person's
    decision is not taken from them). The command they then approve runs as approved (it
    was found running its whole timeout, first seen as a defect: that is the decision),
    and the session ends at once after it, the model not asked again."""
    script = "sleep 1; echo finished > done.txt"
    model = ScriptedModel(
        [
            reply("", call("run", command=script, timeout=30)),
            reply("Done.", call("finish", summary="ran it")),
        ]
    )
    session = Session("run it", model=model, root=tmp_path, policy="ask", limits=_limits(1.0))

    async def scenario() -> None:
        updates = session.updates()
        async for _update in updates:
            if session.waiting:
                break
        await asyncio.sleep(1.5)  # the budget runs out while the person decides
        assert not session.done and session.waiting
        session.approve()
        async for _update in updates:
            pass

    asyncio.run(scenario())
    assert (tmp_path / "done.txt").read_text() == "finished\n"
    assert session.end_reason == "budget:wall_time"
    assert len(model.requests) == 1
    _check_log(session)


def test_an_approval_given_before_the_budget_ran_out_is_not_dropped(tmp_path: Path) -> None:
    """The person approved while the budget still had time; the driver had not yet acted on
    it when the timer fired. The timer's 'waiting for a person' check only spares a
    proposal with no decision: this one is ended with the approval silently thrown away (no
    user_decision in the log, the approved edit never lands)."""
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
            if session.waiting:
                break
        session.approve()  # within the budget
        await asyncio.sleep(1.5)  # the front end is slow to resume its iterator
        async for _update in updates:
            pass

    asyncio.run(scenario())
    events = read_log(session.log_path)  # type: ignore[arg-type]
    decisions = [e for e in events if isinstance(e, ev.UserDecision)]
    assert decisions, "the person's approval left no trace in the log"
    assert (tmp_path / "a.py").read_text() == "x = 2\n", "the approved edit never landed"


def test_a_running_execute_is_interrupted_and_the_session_ends(tmp_path: Path) -> None:
    space = DictNamespace()
    code = "import time\nfor i in range(4000):\n    marker = i\n    time.sleep(0.01)\ndone = True\n"
    model = ScriptedModel(
        [
            reply("", call("execute", code=code, timeout=LONG)),
            reply("Done.", call("finish", summary="ran it")),
        ]
    )
    session = Session(
        "run it",
        model=model,
        root=tmp_path,
        toolset=kernel_toolset(space),
        policy="auto",
        limits=_limits(1.0),
    )
    started = time.monotonic()
    session.run_sync()
    took = time.monotonic() - started
    assert session.end_reason == "budget:wall_time"
    assert took < 6, f"the executed code ran on for {took:.1f}s"
    assert "done" not in space.values
    assert len(model.requests) == 1
    _check_log(session)


def test_a_slow_search_staging_is_cut_and_run_sync_returns(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    for i in range(20):
        d = tree / f"d{i}"
        d.mkdir(parents=True)
        for j in range(5):
            (d / f"f{j}.txt").write_text(("a" * 24 + "b\n") * 20)
    # Catastrophic backtracking on every line: staging takes far longer than the budget.
    model = ScriptedModel(
        [
            reply("", call("search", query="(a|aa)+$", regex=True, path="tree")),
            reply("Done.", call("finish", summary="searched")),
        ]
    )
    session = Session("search", model=model, root=tmp_path, policy="auto", limits=_limits(1.0))
    started = time.monotonic()
    session.run_sync()
    took = time.monotonic() - started
    assert session.end_reason == "budget:wall_time"
    assert took < 6, f"run_sync returned {took:.1f}s later"
    _check_log(session)


def test_background_children_and_sigterm_ignorers_are_gone(tmp_path: Path) -> None:
    script = (
        "(trap '' TERM; sleep 41) & echo $! >> pids.txt; "
        "(sleep 42 &) ; "
        "setsid sleep 43 & echo $! >> pids.txt; "
        "trap '' TERM; echo $$ >> pids.txt; sleep 44"
    )
    model = ScriptedModel(
        [
            reply("", call("run", command=script, timeout=LONG * 2)),
            reply("Done.", call("finish", summary="ran it")),
        ]
    )
    session = Session("run it", model=model, root=tmp_path, policy="auto", limits=_limits(1.5))
    started = time.monotonic()
    session.run_sync()
    assert time.monotonic() - started < 15
    assert session.end_reason == "budget:wall_time"
    pids = [int(p) for p in (tmp_path / "pids.txt").read_text().split()]
    assert len(pids) == 3
    assert _wait_gone(pids) == [], "processes outlived the session"
    _check_log(session)


def test_a_write_committed_as_the_budget_runs_out_lands_whole(tmp_path: Path) -> None:
    """Many writes in one reply, approved automatically, the budget spent mid-way: each file
    is all old or all new, and every committed write is in the log."""
    body = "".join(f"line_{i} = {i}\n" for i in range(3000))
    calls = [call("create", path=f"m{i}.py", content=body) for i in range(400)]
    model = ScriptedModel([reply("", *calls), reply("Done.", call("finish", summary="made"))])
    # 3 s: a loaded machine commits some of them first (400 take about 12 s).
    session = Session("make", model=model, root=tmp_path, policy="auto", limits=_limits(3.0))
    session.run_sync()
    assert session.end_reason == "budget:wall_time"
    events = _check_log(session)
    committed = {p for e in events if isinstance(e, ev.Committed) and e.ok for p in e.paths}
    on_disk = {p.name for p in tmp_path.glob("m*.py")}
    assert on_disk == committed, (sorted(on_disk - committed), sorted(committed - on_disk))
    for name in on_disk:
        assert (tmp_path / name).read_text() == body
    assert 0 < len(on_disk) < 400


# -- odd budgets --------------------------------------------------------------------------


@pytest.mark.parametrize("wall", [0.0, -1.0, 0.001])
def test_a_budget_spent_at_once_ends_before_the_model_is_asked(tmp_path: Path, wall: float) -> None:
    model = ScriptedModel([reply("Done.", call("finish", summary="nothing"))])
    session = Session("x", model=model, root=tmp_path, policy="auto", limits=_limits(wall))
    time.sleep(0.01)
    session.run_sync()
    assert session.end_reason == "budget:wall_time"
    assert model.requests == []
    _check_log(session)


def test_a_nan_budget_does_not_spin_the_event_loop(tmp_path: Path) -> None:
    """NaN: ``max(0.0, nan)`` arms the timer at 0; ``elapsed >= nan`` is never true, so it is
    'woken early' and re-armed at 0, again and again: the event loop spins at full CPU
    for as long as the session runs (or NaN must be refused up front)."""
    model = ScriptedModel(
        [
            reply("", call("run", command="sleep 2", timeout=30)),
            reply("Done.", call("finish", summary="slept")),
        ]
    )
    try:
        session = Session(
            "sleep", model=model, root=tmp_path, policy="auto", limits=_limits(math.nan)
        )
    except ValueError:
        return  # refused up front: fine
    cpu = time.process_time()
    session.run_sync()
    spent = time.process_time() - cpu
    assert spent < 1.0, f"{spent:.1f}s of CPU while a 2 s command ran"


def test_an_infinite_budget_runs_normally_and_the_log_resumes(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            reply("", call("run", command="echo ok", timeout=30)),
            reply("Done.", call("finish", summary="ran")),
        ]
    )
    session = Session("x", model=model, root=tmp_path, policy="auto", limits=_limits(math.inf))
    session.run_sync()
    assert session.end_reason != "budget:wall_time"
    again = Session.resume(session.log_path, model=ScriptedModel([]))  # type: ignore[arg-type]
    assert again.done


# -- the log and what follows a wall-time end -----------------------------------------------


def test_after_a_wall_time_end_the_log_replays_resumes_and_the_next_task_has_a_full_budget(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    openai_server.queue(stall_reply(LONG))
    model = LiteLLMModel("openai/x", api_base=openai_server.url, api_key="k", timeout=LONG * 2)
    session = Session("first", model=model, root=tmp_path, policy="auto", limits=_limits(1.0))
    session.run_sync()
    assert session.end_reason == "budget:wall_time"
    _check_log(session)
    replay(session.log_path, root=tmp_path)  # type: ignore[arg-type]
    # Resumed in another object: done, and its next task gets the whole budget.
    path = session.log_path
    session.log.close()
    resumed = Session.resume(path, model=model, policy="auto")  # type: ignore[arg-type]
    assert resumed.done and resumed.end_reason == "budget:wall_time"
    openai_server.queue(
        tool_reply(tool_call("run", {"command": "sleep 0.6", "timeout": 30}), text=""),
        tool_reply(tool_call("run", {"command": "sleep 0.6", "timeout": 30}, id="c2"), text=""),
        stall_reply(LONG),
    )
    resumed.continue_task("second")
    started = time.monotonic()
    resumed.run_sync()
    took = time.monotonic() - started
    assert resumed.end_reason == "budget:wall_time"
    assert 0.9 < took < 5, took
    events = read_log(path)  # type: ignore[arg-type]
    ends = [e.reason for e in events if isinstance(e, ev.SessionEnd)]
    assert ends == ["budget:wall_time", "budget:wall_time"]
    fired = [e for e in events if isinstance(e, ev.GuardFired)]
    assert [e.guard for e in fired] == ["budget:wall_time", "budget:wall_time"]


def test_an_abandoned_iterator_then_run_sync_on_a_new_loop_keeps_the_task_budget(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    """The first loop (and its timer) is gone; the second drive arms a timer for what is
    left of the task's budget, not a fresh one, and not none."""
    openai_server.queue(stall_reply(LONG), stall_reply(LONG))
    model = LiteLLMModel("openai/x", api_base=openai_server.url, api_key="k", timeout=LONG * 2)
    session = Session("x", model=model, root=tmp_path, policy="auto", limits=_limits(2.0))

    async def a_little() -> None:
        updates = session.updates()
        first = await anext(updates)  # noqa: F841 - the drive has begun
        await asyncio.sleep(0.5)
        await updates.aclose()

    asyncio.run(a_little())
    assert not session.done
    started = time.monotonic()
    session.run_sync()
    took = time.monotonic() - started
    assert session.end_reason == "budget:wall_time"
    assert took < 2.5, took
    _check_log(session)


def test_stop_during_a_command_then_the_timer_log_agrees_with_the_end(tmp_path: Path) -> None:
    """Stop pressed while executed code runs (one C call: it ends only after the interrupt's
    grace, and the session ends once its outcome is recorded); the budget's timer fires
    meanwhile. The log then says the budget stopped the session (guard_fired, action stop)
    while the session ends for the user's stop."""
    space = DictNamespace()
    model = ScriptedModel(
        [
            reply("", call("execute", code="import time\ntime.sleep(2.5)\n", timeout=30)),
            reply("Done.", call("finish", summary="ran")),
        ]
    )
    session = Session(
        "x",
        model=model,
        root=tmp_path,
        toolset=kernel_toolset(space),
        policy="auto",
        limits=_limits(1.0),
    )

    def press_stop() -> None:
        deadline = time.monotonic() + 10
        while not session._committing and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        session.stop("stopped by the user")

    presser = threading.Thread(target=press_stop)
    presser.start()
    session.run_sync()
    presser.join()
    events = read_log(session.log_path)  # type: ignore[arg-type]
    fired = [e.guard for e in events if isinstance(e, ev.GuardFired)]
    ends = [e.reason for e in events if isinstance(e, ev.SessionEnd)]
    assert len(ends) == 1
    assert isinstance(events[-1], ev.SessionEnd)
    if "budget:wall_time" in fired:
        assert ends == ["budget:wall_time"], (fired, ends)


def test_a_model_condensation_running_when_the_budget_runs_out_is_cancelled(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    for i in range(6):
        (tmp_path / f"big{i}.txt").write_text(f"row {i} " * 1500)
    for i in range(5):  # the sixth request is the condensation's: it stalls
        openai_server.queue(tool_reply(tool_call("read", {"path": f"big{i}.txt"}, id=f"r{i}")))
    for _ in range(4):
        openai_server.queue(stall_reply(LONG))
    model = LiteLLMModel("openai/x", api_base=openai_server.url, api_key="k", timeout=LONG * 2)
    limits = Limits(
        max_steps=None,
        max_tokens=None,
        max_cost=None,
        max_wall_time=4.0,
        context_budget=6_000,
        condense="model",
    )
    session = Session("read them", model=model, root=tmp_path, policy="auto", limits=limits)
    started = time.monotonic()
    session.run_sync()
    took = time.monotonic() - started
    assert session.end_reason == "budget:wall_time"
    assert took < 8, took
    events = _check_log(session)
    assert not any(isinstance(e, ev.Condensed) for e in events)
    assert len(openai_server.requests) == 6, len(openai_server.requests)
    last = openai_server.requests[-1].body
    # The request that was cut was the condensation's (no tools offered to a summary).
    assert "tools" not in last or not last["tools"], sorted(last)
