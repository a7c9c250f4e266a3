"""Attacks on stuck detection and budgets: one read spelled three ways that the detector
took for three calls, ``python -m pytest`` and ``pytest`` taken for two commands, a NaN
price that switched the cost budget off for good, and token counts sent as strings that
crashed the session. Everything runs through real ``Session`` objects on a temp workspace
with the package's ``ScriptedModel``."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter.agent.guards import Limits, signature
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.models.base import ModelReply, Usage
from grinta_jupyter.agent.session import Session
from tests.calc_project import calc_project


def _run(root: Path, turns: list[ModelReply], limits: Limits | None = None) -> Session:
    turns = [*turns, reply("", call("finish", summary="x"))]
    session = Session(
        "explain calc", model=ScriptedModel(turns), root=root, policy="auto", limits=limits
    )
    asyncio.run(session.run())
    return session


def _fired(session: Session) -> list[tuple[str, str]]:
    return [(e.guard, e.detail) for e in session.log.events if e.type == "guard_fired"]


def _paid(turn: ModelReply, prompt: Any = 100, completion: Any = 10, cost: Any = 0.5) -> ModelReply:
    return dataclasses.replace(turn, usage=Usage(prompt, completion, cost))


# -- the same call, spelled another way ------------------------------------------------------


@pytest.mark.parametrize(
    "spelled",
    [
        {"path": "calc.py", "start_line": 1},
        {"path": "calc.py", "end_line": 9999},
        {"path": "ABSOLUTE"},
    ],
    ids=["start_line=1", "end_line past the end", "absolute path"],
)
def test_one_read_spelled_another_way_is_the_same_call(tmp_path, spelled):
    """Attack: read calc.py, then the same lines spelled with ``start_line=1``, an
    ``end_line`` past the end, or the absolute path, then calc.py again. Bug: the detector
    compared the arguments, so the three identical reads were three calls and no repeat was
    seen; now a read is named by the file and lines it showed."""
    root = calc_project(tmp_path)
    if spelled["path"] == "ABSOLUTE":
        spelled = {"path": str(Path(root) / "calc.py")}
    session = _run(
        root,
        [
            reply("", call("read", path="calc.py")),
            reply("", call("read", **spelled)),
            reply("", call("read", path="calc.py")),
        ],
    )
    fired = _fired(session)
    assert fired and fired[0][0] == "stuck_repeat", fired


def test_the_same_read_after_the_file_changed_is_not_a_repeat(tmp_path):
    """Guard (passes before and after): the same read with an edit in between shows new
    text, which is progress, not a loop."""
    root = calc_project(tmp_path)
    turns = []
    for op in ("+", "*", "/"):
        turns.append(reply("", call("read", path="calc.py", start_line=1)))
        source = f"def add(a, b):\n    return a {op} b\n"
        edit = {"symbol": "calc.py::add", "action": "replace", "new_source": source}
        turns.append(reply("", call("edit_symbols", edits=[edit])))
    session = _run(root, turns)
    assert [g for g, _ in _fired(session) if g.startswith("stuck")] == []
    worked = [s for s in session.steps if s.proposal.tool != "finish"]
    assert len(worked) == 6 and all(s.observation and s.observation.ok for s in worked)


def test_python_m_pytest_and_pytest_are_the_same_command():
    """Attack: run ``pytest -q``, then ``python -m pytest -q``, then ``pytest -q``: the
    same runner on the same tests. Bug: the two spellings made two calls, so the repeat
    (same call, same result) was never seen."""
    plain = signature("run", {"command": "pytest -q"})
    assert signature("run", {"command": "python -m pytest -q"}) == plain
    assert signature("run", {"command": "python3.12  -m pytest  '-q'"}) == plain
    assert signature("run", {"command": "cd . && python3 -m pytest -q"}) == signature(
        "run", {"command": "cd . && pytest -q"}
    )
    # Words that only mention the runner are not the runner.
    assert signature("run", {"command": "echo python -m pytest -q"}) != signature(
        "run", {"command": "echo pytest -q"}
    )


# -- budgets with a model that reports nonsense ---------------------------------------------


def test_a_nan_price_does_not_switch_the_cost_budget_off(tmp_path):
    """Attack: a model client reports a price of NaN once, then $0.50 a reply, under
    ``max_cost=1.0``. Bug: the NaN made the session's total cost NaN for good, so every
    later price was lost and the session ran all ten replies ($4.50); now the NaN counts
    as an unknown price and the budget ends the session after $1.00."""
    root = calc_project(tmp_path)
    turns = [_paid(reply("", call("read", path="calc.py", start_line=1, end_line=1)))]
    turns.append(_paid(turns[0], cost=float("nan")))
    turns += [_paid(turns[0]) for _ in range(8)]
    limits = Limits(max_cost=1.0, repeat_threshold=100, alternation_window=100)
    session = _run(root, turns, limits)
    assert session.end_reason == "budget:cost"
    assert session.totals.cost == 1.0 and not session.totals.cost_known
    assert len(session.steps) == 3


def test_token_counts_sent_as_strings_do_not_crash_the_session(tmp_path):
    """Attack: a model client reports ``prompt_tokens="100"``. Bug: adding it to the totals
    raised TypeError and the session died mid-task; now a count sent as text counts as the
    number it says (as the event log reads it), and the
    session goes on to its finish."""
    root = calc_project(tmp_path)
    turns = [_paid(reply("", call("read", path="calc.py")), prompt="100", completion="7")]
    session = _run(root, turns)
    assert session.end_reason == "finished"
    assert (
        session.totals.prompt_tokens == 100
        and session.totals.completion_tokens == 7
        and session.totals.cost == 0.5
    )


def test_the_same_malformed_call_forever_ends_the_session(tmp_path):
    """Guard (passes before and after): the same call with bad arguments, again and again,
    ends the session with a reason, well before the step budget."""
    root = calc_project(tmp_path)
    bad = reply("", call("read", start_line="x"))
    session = _run(root, [bad] * 30)
    assert session.end_reason in ("stuck", "circuit_breaker")
    assert len(session.steps) <= 6


@pytest.mark.parametrize("completion", [None, "ten", float("nan"), [1]])
def test_a_token_count_that_is_no_number_is_logged_as_none_spent(
    tmp_path: Path, completion: object
) -> None:
    """``Usage(completion_tokens=None)`` from a custom client: the totals coped, but the
    reply's log event was built from the raw usage and pydantic raised, ending the session
    with a ValidationError."""
    (tmp_path / "a.py").write_text("x = 1\n")
    odd = Usage(prompt_tokens=10, completion_tokens=completion, cost=float("nan"))  # type: ignore[arg-type]
    turns = [
        ModelReply("", [call("read", path="a.py")], odd),
        ModelReply("Done.", [call("finish", summary="read it")], odd),
    ]
    session = Session("look at a.py", model=ScriptedModel(turns), root=tmp_path, policy="auto")
    session.run_sync()
    assert session.end_reason == "finished"
    replies = [e for e in session.log.events if e.type == "model_reply"]
    assert [(e.prompt_tokens, e.completion_tokens, e.cost) for e in replies] == [(10, 0, None)] * 2
