"""Metrics attacked: real sessions through resume and reused call ids, and hand-made logs
with oddities (NaN costs, bad times, lines moved, huge numbers), each figure counted by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grinta_jupyter.agent import Approve, Veto
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.models.base import ModelError, ToolCall
from grinta_jupyter.agent.session import Session
from grinta_jupyter.cli import main
from grinta_jupyter.events import models as ev
from grinta_jupyter.events.metrics import measure
from tests.conftest import drive, until_decision

# Figures that depend on the clock, the session id or the exact request text, not on what
# the session did.
_CLOCK = {"session", "duration", "time_to_first_edit", "context_tokens", "largest_request"}
_CLOCK |= {"context_growth_per_request"}


def behaviour(figures: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in figures.items() if k not in _CLOCK}


def workspace(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    return root


EDIT_2 = {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}
EDIT_3 = {"path": "a.py", "old_string": "x = 1", "new_string": "x = 3"}


def with_id(name: str, call_id: str, **args: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=json.dumps(args))


def test_a_model_that_reuses_call_ids_is_measured_like_one_that_does_not(tmp_path):
    """Local servers send `call_0` every time: each call keeps its own kind (a vetoed write
    then an approved write on the same file is one edit retry, whatever came after)."""

    def run(name: str, ids: list[str]) -> dict[str, Any]:
        model = ScriptedModel(
            [
                reply("", with_id("replace_string", ids[0], **EDIT_2)),
                reply("", with_id("read", ids[1], path="a.py")),
                reply("", with_id("replace_string", ids[2], **EDIT_3)),
                reply("", with_id("finish", ids[3], summary="done")),
            ]
        )
        session = Session("t", model=model, root=workspace(tmp_path, name))
        decisions = iter([Veto("no"), Approve()])
        drive(session, lambda s: s.decide(next(decisions)))
        return measure(session.log_path).to_json()

    reused = run("reused", ["call_0"] * 4)
    unique = run("unique", ["c1", "c2", "c3", "c4"])
    assert unique["edit_retries"] == 1 and unique["vetoes"] == 1 and unique["commits"] == 1
    assert behaviour(reused) == behaviour(unique)


def test_a_failed_read_then_a_write_on_the_file_is_no_recovery_with_reused_ids(tmp_path):
    root = workspace(tmp_path, "w")
    model = ScriptedModel(
        [
            reply("", with_id("read", "call_0", path="a.py", symbol="nowhere")),
            reply("", with_id("replace_string", "call_0", **EDIT_2)),
        ]
    )
    session = drive(Session("t", model=model, root=root, policy="auto"), lambda s: s.approve())
    observed = [e for e in session.log.events if isinstance(e, ev.Observed)]
    assert [(o.tool, o.ok, o.target) for o in observed] == [
        ("read", False, "a.py"),
        ("replace_string", True, "a.py"),
    ]
    # A read failed, then a write on a.py succeeded: another kind of call, no recovery.
    assert measure(session.log_path).recoveries == 0


def crash_while_waiting(root: Path) -> Path:
    """A session killed while its write waits for a decision; its log."""
    model = ScriptedModel([reply("", call("read", path="a.py"), call("replace_string", **EDIT_2))])
    crashed = until_decision(Session("t", model=model, root=root))
    assert crashed.waiting
    crashed.log.close()  # the kernel died: nothing ended the session
    assert crashed.log_path is not None
    return crashed.log_path


def test_a_call_asked_again_after_a_resume_counts_once(tmp_path):
    straight = drive(
        Session(
            "t",
            model=ScriptedModel(
                [
                    reply("", call("read", path="a.py"), call("replace_string", **EDIT_2)),
                    reply("", call("read", path="a.py")),
                ]
            ),
            root=workspace(tmp_path, "straight"),
        ),
        lambda s: s.approve(),
    )
    expected = measure(straight.log_path).to_json()
    assert expected["steps"] == 3 and expected["redundant_calls"] == 1  # a.py read twice
    assert expected["repeated_reads"] == 0  # a commit between the reads
    assert expected["tool_calls"] == {"read": 2, "replace_string": 1}

    log = crash_while_waiting(workspace(tmp_path, "crashed"))
    # Killed again while the call asked again waits: still one call.
    again = until_decision(Session.resume(log, model=ScriptedModel([])))
    assert again.pending is not None and again.pending.restaged
    again.log.close()
    resumed = Session.resume(log, model=ScriptedModel([reply("", call("read", path="a.py"))]))
    drive(resumed, lambda s: s.approve())
    restaged = [e for e in read_all(log) if isinstance(e, ev.ToolProposed) and e.restaged]
    assert len(restaged) == 2, "the scenario: the write was proposed three times"
    figures = measure(log).to_json()
    assert behaviour(figures) == behaviour(expected)
    # The notebook's `%grinta metrics` measures the live events: the same figures.
    assert measure(resumed.log.events).to_json() == figures


def read_all(log: Path) -> list[ev.Event]:
    return [ev.parse_event(json.loads(line)) for line in log.read_text().splitlines()]


def test_a_veto_logged_before_the_crash_and_made_again_is_one_veto(tmp_path):
    log = crash_while_waiting(workspace(tmp_path, "w"))
    lines = log.read_text().splitlines(keepends=True)
    decision = ev.UserDecision(
        seq=len(lines) + 1,
        session=log.stem,
        step=2,
        call_id="call_0_1",
        decision="veto",
        reason="no",
        t=ev.parse_event(json.loads(lines[-1])).t,
    )
    # The kernel died between the veto and its observation.
    log.write_text("".join(lines) + decision.model_dump_json() + "\n")
    resumed = until_decision(Session.resume(log, model=ScriptedModel([])))
    assert resumed.pending is not None and resumed.pending.restaged
    resumed.veto("no")
    drive(resumed, lambda s: s.approve())
    figures = measure(log)
    assert figures.vetoes == 1 and figures.steps == 2
    assert figures.tool_calls == {"read": 1, "replace_string": 1}


# -- hand-made logs --------------------------------------------------------------------------


def start(**fields: Any) -> ev.SessionStart:
    return ev.SessionStart(task="t", model="m", toolset="intent", root="/r", policy="ask", **fields)


def numbered(*events: ev.Event) -> list[ev.Event]:
    for seq, event in enumerate(events, 1):
        event.seq = seq
    return list(events)


def answered(cost: float | None, t: float = 1.0) -> ev.ModelReplied:
    return ev.ModelReplied(text="", tool_calls=[], prompt_tokens=10, cost=cost, t=t)


def test_a_cost_that_is_no_price_is_unknown_not_a_number(tmp_path):
    for bad in (float("nan"), float("inf"), -0.5):
        m = measure(numbered(start(), answered(0.25), answered(bad, 2.0)))
        assert m.cost is None, bad
        assert "cost                              unknown  dollars" in m.table()
    # Two prices that add up past the largest float: not a number either.
    assert measure(numbered(start(), answered(1e308), answered(1e308))).cost is None
    # Through the CLI, on a log written with a NaN (Python's json writes and reads it).
    path = tmp_path / "nan.jsonl"
    lines = [e.model_dump(mode="python") for e in numbered(start(), answered(float("nan")))]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert "NaN" in path.read_text()
    assert main(["metrics", str(path), "--json"]) == 0


def test_cli_json_is_strict_json_for_a_nan_cost(tmp_path, capsys):
    path = tmp_path / "nan.jsonl"
    lines = [e.model_dump(mode="python") for e in numbered(start(), answered(float("nan")))]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main(["metrics", str(path), "--json"]) == 0

    def refuse(constant: str) -> None:
        raise AssertionError(f"not JSON: {constant}")

    parsed = json.loads(capsys.readouterr().out, parse_constant=refuse)
    assert parsed["cost"] is None


def test_times_that_are_not_times_are_not_measured_and_moved_lines_are_put_back():
    events = numbered(
        start(),
        ev.ModelRequest(messages=1, digest="d", tokens=10, t=2.0),
        answered(0.1, t=3.0),
        ev.Committed(call_id="c", ok=True, t=float("nan"), step=1),
        ev.SessionEnd(reason="stopped", steps=1, t=-4.0),
        ev.SessionEnd(reason="finished", steps=1, t=5.0),
    )
    m = measure(events)
    assert m.duration == 5.0 and m.end_reason == "finished"
    assert m.time_to_first_edit is None and m.steps_to_first_edit == 1 and m.commits == 1
    # The same lines out of order: the same figures (events are measured by number).
    moved = [events[0], events[5], events[2], events[1], events[4], events[3]]
    assert measure(moved) == m
    only_bad = numbered(start(), ev.ModelRequest(messages=1, digest="d", tokens=1, t=-3.0))
    only_bad[0].t = float("inf")
    assert measure(only_bad).duration == 0.0


def test_huge_numbers_keep_the_table_80_columns_wide():
    events = numbered(
        start(),
        ev.ModelRequest(messages=1, digest="d", tokens=10**30, t=1e300),
        ev.ModelRequest(messages=1, digest="d", tokens=7, t=2.0),
        ev.ModelReplied(
            text="", tool_calls=[], prompt_tokens=10**400, completion_tokens=1, cost=1e300
        ),
        ev.Condensed(upto=1, text="", tokens_before=10**200, tokens_after=0, budget=1),
    )
    m = measure(events)
    assert m.prompt_tokens == 10**400 and m.cost == 1e300 and m.duration == 1e300
    table = m.table()
    assert all(len(line) <= 80 for line in table.splitlines()), max(table.splitlines(), key=len)
    rows = {line[:28].strip(): line[28:].split() for line in table.splitlines()[7:]}
    assert rows["prompt_tokens"] == ["1.0000e+400", "tokens"]
    assert rows["cost"] == ["1.0000e+300", "dollars"]
    assert rows["context_tokens"][:3] == ["1.0000e+30", "->", "7"]
    json.dumps(m.to_json(), allow_nan=False)  # still plain JSON


def out(messages: list[dict[str, Any]]) -> Any:
    """A turn that ends the session (the model fails), leaving the script's next turns."""
    raise ModelError("BAD_RESPONSE", "the model stopped here")


def test_a_read_after_a_rewind_before_it_is_not_a_repeated_read(tmp_path):
    root = workspace(tmp_path, "w")
    read = call("read", path="a.py")
    model = ScriptedModel([reply("", read), reply("", read), out, reply("", read), out])
    session = drive(Session("t", model=model, root=root, policy="auto"), lambda s: s.approve())
    assert measure(session.log_path).repeated_reads == 1  # step 2 read it again
    session.rewind(0)  # the model's context goes back to before any read
    drive(session, lambda s: s.approve())
    rewound = measure(session.log_path)
    # Branch 1 read a.py once: its line of steps never read it before.
    assert rewound.rewinds == 1 and rewound.tool_calls == {"read": 3}
    assert rewound.repeated_reads == 1
