"""Attacks on the session guards, third round: tests left out through options pytest takes
from outside its own words (``PYTEST_ADDOPTS``, ``-o addopts=``), tox and nox summaries
that say an environment ran but not that tests did, and replies that report negative
usage to buy a session more budget. Real sessions (``ScriptedModel``) run real commands on
a temp workspace."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from grinta_jupyter.agent.guards import Limits
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.models.base import ModelReply, Usage
from grinta_jupyter.agent.session import Session
from grinta_jupyter.agent.testruns import judge
from tests.calc_project import calc_project

TOX_ONLY = "py: commands[0]> flake8\npy: OK (1.20=setup[1.00]+cmd[0.20] seconds)\n  congratulations :) (1.25 seconds)\n"
NOX_ONLY = (
    "nox > Running session lint\nnox > flake8 .\nnox > Session lint was successful in 1 seconds.\n"
)
PYTEST_THEN_TOX = (
    "...                                                  [100%]\n3 passed in 0.12s\n" + TOX_ONLY
)


@pytest.mark.parametrize(
    ("command", "output"),
    [
        ("tox --notest", TOX_ONLY),
        ("tox -e lint", TOX_ONLY),
        ("nox -s lint", NOX_ONLY),
    ],
)
def test_a_tox_or_nox_run_without_a_test_summary_is_not_a_passing_run(command, output):
    """``tox --notest`` sets the environments up and prints "congratulations :)" without
    running a test; so does a lint environment."""
    verdict = judge(command, output, 0)
    assert not verdict.passed and "summary of passing tests" in verdict.reason, verdict


def test_a_tox_run_that_shows_pytests_pass_still_counts():
    """The honest run: tox starts pytest, whose own summary shows the pass."""
    assert judge("tox -e py", PYTEST_THEN_TOX, 0).passed
    assert judge("nox -s tests", "3 passed in 0.12s\n" + NOX_ONLY, 0).passed


@pytest.mark.parametrize(
    "command",
    [
        "PYTEST_ADDOPTS='--deselect test_calc.py::test_add' python -m pytest -q",
        "env PYTEST_ADDOPTS='-k \"not test_add\"' python -m pytest -q",
        "export PYTEST_ADDOPTS=--ignore=test_calc.py && python -m pytest -q",
        "python -m pytest -q -o addopts='--deselect test_calc.py::test_add'",
        "python -m pytest -q --override-ini='addopts=--ignore=test_calc.py'",
    ],
)
def test_options_added_from_outside_that_leave_tests_out_do_not_count(command):
    verdict = judge(command, "1 passed, 1 deselected in 0.05s\n", 0)
    assert not verdict.passed and "leaves tests out" in verdict.reason, verdict


@pytest.mark.parametrize(
    "command",
    [
        "PYTEST_ADDOPTS=-q python -m pytest",
        "python -m pytest -o addopts='' -q",
        "PYTEST_ADDOPTS='-p no:randomly' python -m pytest tests/test_calc.py",
    ],
)
def test_options_added_from_outside_that_select_or_quieten_still_count(command):
    assert judge(command, "2 passed in 0.05s\n", 0).passed


def test_a_deselecting_pytest_addopts_run_is_refused_end_to_end(tmp_path: Path):
    """The model leaves calc.py broken, edits another file, and runs the suite with the
    failing test deselected through the environment: pytest says "1 passed, 1 deselected"
    with exit code 0, and the finish must go back."""
    root = calc_project(tmp_path, also={"test_ok.py": "def test_ok():\n    assert True\n"})
    edit = {"path": "test_ok.py", "old_string": "assert True", "new_string": "assert 1"}
    run = "PYTEST_ADDOPTS='--deselect test_calc.py::test_add' python -m pytest -q"
    turns = [
        reply("", call("replace_string", **edit)),
        reply("", call("run", command=run)),
        reply("", call("finish", summary="Fixed; all tests pass.")),
    ]
    session = Session("fix the failing test", model=ScriptedModel(turns), root=root, policy="auto")
    asyncio.run(session.run())
    assert "1 deselected" in session.steps[1].observation.output  # the run really passed
    attempts = [(e.accepted, e.reason) for e in session.log.events if e.type == "finish_attempt"]
    assert attempts and attempts[0] == (False, attempts[0][1]), attempts
    assert "did not pass" in attempts[0][1]


def _costing(cost: float, *calls) -> ModelReply:  # type: ignore[no-untyped-def]
    turn = reply("", *calls)
    turn.usage = Usage(prompt_tokens=10, completion_tokens=10, cost=cost)
    return turn


def test_a_reply_with_negative_cost_does_not_lower_the_cost_budget(tmp_path: Path):
    """litellm prices a reply from the provider's token counts: negative counts give a
    negative price, which lowered the session's total and let it run past ``max_cost``."""
    root = calc_project(tmp_path)
    read = call("read", path="calc.py")
    turns = [
        _costing(0.6, read),
        _costing(-5.0, call("read", path="test_calc.py")),
        _costing(0.6, call("search", pattern="add")),
        _costing(0.6, call("read", path="pyproject.toml")),
        _costing(0.0, call("finish", summary="calc.add subtracts.")),
    ]
    session = Session(
        "explain calc.py",
        model=ScriptedModel(turns),
        root=root,
        policy="auto",
        limits=Limits(max_cost=1.0),
    )
    asyncio.run(session.run())
    assert session.end_reason == "budget:cost", session.end_reason
    assert len(session.steps) == 3


def test_one_reply_of_many_calls_stops_at_the_step_budget(tmp_path: Path):
    """Attack: one reply holding 29 reads under ``max_steps=5``. The budgets were checked only
    before asking the model, so all 29 ran; now the steps are checked before each step."""
    root = calc_project(tmp_path)
    reads = [call("read", path="calc.py", start_line=1 + k % 3) for k in range(29)]
    session = Session(
        "explain calc.py",
        model=ScriptedModel([reply("", *reads), reply("", call("finish", summary="done"))]),
        root=root,
        policy="auto",
        limits=Limits(max_steps=5),
    )
    asyncio.run(session.run())
    assert session.end_reason == "budget:steps", session.end_reason
    assert len(session.steps) == 5


def test_calls_of_a_reply_already_paid_for_run_when_the_token_budget_is_reached(tmp_path: Path):
    """The honest side: the token budget gates the next model call, not the steps of the
    reply whose tokens were counted (they cost nothing more)."""
    root = calc_project(tmp_path)
    reads = [call("read", path="calc.py", start_line=k) for k in (1, 2, 3)]
    paid = ModelReply("", reads, Usage(prompt_tokens=5_000, completion_tokens=10), "tool_calls")
    session = Session(
        "explain calc.py",
        model=ScriptedModel([paid, reply("", call("finish", summary="done"))]),
        root=root,
        policy="auto",
        limits=Limits(max_tokens=1_000),
    )
    asyncio.run(session.run())
    assert session.end_reason == "budget:tokens", session.end_reason
    assert len(session.steps) == 3
