"""Each guard fires on a trajectory built to trip it, and not on a normal one."""

from __future__ import annotations

import asyncio

import pytest

from grinta_jupyter.agent.guards import Limits
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import Session
from grinta_jupyter.samples.tasks import DEMO_FIX, copy_workspace

TESTS = "python -m pytest"


@pytest.fixture
def raft(tmp_path):
    return copy_workspace("raft_kv", tmp_path / "raft_kv")


def run(raft, turns, **kwargs) -> Session:
    session = Session("task", model=ScriptedModel(turns), root=raft, policy="auto", **kwargs)
    asyncio.run(session.run())
    return session


def fired(session: Session) -> list[tuple[str, str]]:
    return [(e.guard, e.action) for e in session.log.events if e.type == "guard_fired"]


def test_a_normal_successful_session_trips_no_guard(raft):
    session = run(
        raft,
        [
            reply("", call("run", command=TESTS)),
            reply("", call("read", symbol="RaftNode.handle_append_entries")),
            reply("", call("replace_string", **DEMO_FIX)),
            reply("", call("run", command=TESTS)),
            reply("", call("finish", summary="Fixed; the tests pass.")),
        ],
    )
    assert fired(session) == [] and session.end_reason == "finished"


def test_same_call_same_result_three_times(raft):
    read = call("read", path="raft_kv/log.py", start_line=1, end_line=3)
    session = run(
        raft,
        [
            reply("", read),
            reply("", read),
            reply("", read),
            reply("", call("finish", summary="done")),
        ],
    )
    assert fired(session) == [("stuck_repeat", "warn")]
    assert "[guard] You have made the same read call 3 times" in session.steps[2].observation.output


def test_a_b_alternation_over_six_steps(raft):
    a = call("read", path="raft_kv/log.py", start_line=1, end_line=2)
    b = call("read", path="raft_kv/node.py", start_line=1, end_line=2)
    session = run(
        raft, [reply("", x) for x in (a, b, a, b, a, b)] + [reply("", call("finish", summary="x"))]
    )
    assert ("stuck_alternation", "warn") in fired(session)


def test_repeated_warnings_stop_the_session(raft):
    read = call("read", path="raft_kv/log.py", start_line=1, end_line=3)
    session = run(raft, [reply("", read)] * 8, limits=Limits(max_stuck_warnings=1))
    assert session.end_reason == "stuck"


def test_same_failing_edit_region_twice_forces_a_fresh_read(raft):
    bad = call(
        "replace_string", path="raft_kv/log.py", old_string="class Entry:\n  pass", new_string="x"
    )
    session = run(
        raft, [reply("", bad), reply("", bad), reply("", call("finish", summary="gave up"))]
    )
    assert fired(session) == [("failed_region", "force_read")]
    output = session.steps[1].observation.output
    assert (
        "This edit failed twice on the same target" in output
        and "raft_kv/log.py (lines 1-" in output
    )


def test_circuit_breaker_on_consecutive_errors(raft):
    turns = [reply("", call("read", path=f"missing{i}.py")) for i in range(6)]
    session = run(raft, turns, limits=Limits(max_consecutive_errors=4))
    assert ("circuit_breaker", "stop") in fired(session)
    assert session.end_reason == "circuit_breaker" and len(session.steps) == 4


@pytest.mark.parametrize(
    "limits,reason",
    [
        (Limits(max_steps=1), "budget:steps"),
        (Limits(max_wall_time=0.0), "budget:wall_time"),
    ],
)
def test_budgets(raft, limits, reason):
    turns = [
        reply("", call("read", path="raft_kv/log.py", start_line=i, end_line=i))
        for i in range(1, 4)
    ]
    session = run(raft, turns, limits=limits)
    assert session.end_reason == reason
    assert any(e.type == "guard_fired" and e.guard == reason for e in session.log.events)


def test_token_and_cost_budgets(raft):
    from grinta_jupyter.agent.models import ModelReply, ToolCall, Usage

    def costly(i):
        return ModelReply(
            "",
            [
                ToolCall(
                    "", "read", f'{{"path": "raft_kv/log.py", "start_line": {i}, "end_line": {i}}}'
                )
            ],
            Usage(prompt_tokens=600, completion_tokens=10, cost=0.02),
        )

    session = run(raft, [costly(i) for i in range(1, 6)], limits=Limits(max_tokens=1500))
    assert session.end_reason == "budget:tokens" and len(session.steps) == 3
    session = run(
        copy_workspace("raft_kv", raft.parent / "again"),
        [costly(i) for i in range(1, 6)],
        limits=Limits(max_cost=0.03),
    )
    assert session.end_reason == "budget:cost"


def test_finish_after_an_edit_without_a_run_is_sent_back(raft):
    session = run(
        raft,
        [
            reply("", call("replace_string", **DEMO_FIX)),
            reply("", call("finish", summary="Fixed it.")),
            reply("", call("run", command=TESTS)),
            reply("", call("finish", summary="Fixed it; 44 passed.")),
        ],
    )
    attempts = [(e.accepted, e.reason) for e in session.log.events if e.type == "finish_attempt"]
    assert attempts[0] == (False, "files were edited but no command was run after the last edit")
    assert attempts[1][0] is True
    assert fired(session) == [("premature_finish", "reject_finish")]


def test_claiming_passing_tests_without_a_run_is_sent_back(raft):
    session = run(
        raft,
        [
            reply("", call("read", path="raft_kv/log.py", start_line=1, end_line=2)),
            reply("", call("finish", summary="All tests pass now.")),
            reply("", call("finish", summary="Nothing needed changing.")),
        ],
    )
    attempts = [e.accepted for e in session.log.events if e.type == "finish_attempt"]
    assert attempts == [False, True]


def test_a_failing_run_does_not_count_as_proof(raft):
    session = run(
        raft,
        [
            reply("", call("run", command=TESTS)),  # one test fails
            reply("", call("finish", summary="The tests pass.")),
            reply("", call("finish", summary="The tests pass.")),
            reply("", call("finish", summary="The tests pass.")),
        ],
    )
    attempts = [e.accepted for e in session.log.events if e.type == "finish_attempt"]
    assert attempts == [False, False, True], (
        "accepted after max_finish_rejections, recorded either way"
    )


def test_replies_without_tool_calls(raft):
    session = run(raft, [reply("thinking..."), reply("still thinking"), reply("hmm")])
    assert session.end_reason == "no_tool_call"
