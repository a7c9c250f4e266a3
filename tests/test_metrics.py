"""Metrics on small hand-computed logs, replay, and the CLI around them."""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
from pathlib import Path

from grinta_jupyter.agent import Approve, Veto
from grinta_jupyter.agent.models import DemoModel, ScriptedModel, call, reply
from grinta_jupyter.agent.replay import replay
from grinta_jupyter.agent.session import Session
from grinta_jupyter.cli import main
from grinta_jupyter.events import models as ev
from grinta_jupyter.events.metrics import SessionMetrics, measure, summarize
from grinta_jupyter.samples.tasks import copy_workspace
from tests.conftest import drive


def log(*events: ev.Event) -> list[ev.Event]:
    for seq, event in enumerate(events, 1):
        event.seq = seq
        event.t = float(seq)
    return list(events)


def proposed(step, tool, args, kind="read", call_id=None):
    return ev.ToolProposed(
        step=step, call_id=call_id or f"c{step}", tool=tool, arguments=json.dumps(args), kind=kind
    )


def observed(step, tool, ok, target=None, code=None, call_id=None):
    return ev.Observed(
        step=step,
        call_id=call_id or f"c{step}",
        tool=tool,
        ok=ok,
        output="",
        target=target,
        code=code,
    )


def hand_log() -> list[ev.Event]:
    """A session with one of everything, each metric computed by hand below."""
    return log(
        ev.SessionStart(task="t", model="m", toolset="intent", root="/r", policy="ask"),
        ev.ModelRequest(messages=2, digest="d", tokens=100),
        ev.ModelReplied(text="", tool_calls=[], prompt_tokens=100, completion_tokens=10, cost=0.01),
        proposed(1, "read", {"path": "a.py"}),
        observed(1, "read", True, "a.py"),
        ev.ModelRequest(messages=4, digest="d", tokens=200),
        ev.ModelReplied(text="", tool_calls=[], prompt_tokens=200, completion_tokens=10, cost=0.02),
        proposed(2, "read", {"path": "a.py"}),  # repeated read, redundant call
        observed(2, "read", True, "a.py"),
        proposed(
            3, "replace_string", {"path": "a.py", "old_string": "x", "new_string": "y"}, "write"
        ),
        ev.Validated(step=3, call_id="c3", ok=False, code="NOT_FOUND", target="a.py"),
        observed(3, "replace_string", False, "a.py", "NOT_FOUND"),
        ev.ModelRequest(messages=6, digest="d", tokens=330),
        proposed(
            4, "replace_string", {"path": "a.py", "old_string": "z", "new_string": "y"}, "write"
        ),
        ev.Validated(step=4, call_id="c4", ok=True, target="a.py"),
        ev.UserDecision(step=4, call_id="c4", decision="approve"),
        ev.Committed(step=4, call_id="c4", ok=True, paths=["a.py"]),
        observed(4, "replace_string", True, "a.py"),  # a retry, and a recovery
        proposed(5, "read", {"path": "a.py"}),  # after a commit: not a repeated read
        observed(5, "read", True, "a.py"),
        proposed(6, "finish", {"summary": "s"}, "finish"),
        ev.FinishAttempt(step=6, call_id="c6", summary="s", accepted=False, reason="no run"),
        proposed(7, "run", {"command": "pytest"}, "command"),
        ev.UserDecision(step=7, call_id="c7", decision="veto", reason="no"),
        observed(7, "run", False, None, "VETO"),
        ev.SessionEnd(reason="stopped", steps=7),
    )


def test_hand_computed_log():
    events = hand_log()
    m = summarize(events)
    assert m["steps"] == 7
    assert m["tool_calls"] == {"read": 3, "replace_string": 2, "finish": 1, "run": 1}
    p = [3 / 7, 2 / 7, 1 / 7, 1 / 7]
    assert math.isclose(m["tool_entropy_bits"], -sum(x * math.log2(x) for x in p), abs_tol=1e-4)
    assert m["redundant_calls"] == 2  # read a.py three times: two repeats
    assert m["repeated_reads"] == 1
    assert m["edit_retries"] == 1
    assert m["validation_failures"] == {"NOT_FOUND": 1}
    assert m["recoveries"] == 1
    assert m["context_tokens"] == [100, 200, 330]
    assert m["context_growth_per_request"] == 115.0
    assert m["time_to_first_edit"] == 17.0 and m["steps_to_first_edit"] == 4
    assert m["premature_finishes"] == 1 and m["finished"] is False
    assert m["vetoes"] == 1 and m["user_edits"] == 0
    assert m["prompt_tokens"] == 300 and m["completion_tokens"] == 20 and m["cost"] == 0.03
    assert m["end_reason"] == "stopped"


def test_every_measure_has_its_unit_and_the_table_shows_them():
    m = measure(hand_log())
    assert isinstance(m, SessionMetrics) and m.tokens == 320 and m.cost == 0.03
    units = {name: SessionMetrics.unit(name) for name in SessionMetrics.model_fields}
    assert units["duration"] == units["time_to_first_edit"] == "seconds"
    assert units["prompt_tokens"] == units["completion_tokens"] == "tokens"
    assert units["cost"] == "dollars" and units["task"] is None
    rows = {line[:28].strip(): line[28:].split() for line in m.table().splitlines()[7:]}
    assert rows["cost"] == ["0.030000", "dollars"]
    assert rows["time_to_first_edit"] == ["17.00", "seconds"]
    assert rows["prompt_tokens"] == ["300", "tokens"]
    assert rows["context_tokens"] == ["100", "->", "330", "tokens", "(3", "requests)"]
    assert rows["tool_calls"] == [
        "finish",
        "1,",
        "read",
        "3,",
        "replace_string",
        "2,",
        "run",
        "1",
        "(calls)",
    ]
    assert m.to_json() == summarize(hand_log()), "summarize is the model's JSON form"


def test_an_unknown_cost_is_unknown_not_zero():
    events = hand_log()
    replied = next(e for e in events if isinstance(e, ev.ModelReplied))
    replied.cost = None
    m = measure(events)
    assert m.cost is None and m.to_json()["cost"] is None
    assert "cost                              unknown  dollars" in m.table()


def test_the_table_fits_80_columns_and_shows_log_text_visibly():
    start = ev.SessionStart(
        task="fix \x1b[2Jit " + "and more " * 20,
        model="m",
        toolset="intent",
        root="/r",
        policy="ask",
    )
    table = measure(log(start)).table()
    assert all(len(line) <= 80 for line in table.splitlines())
    assert "\x1b" not in table and "\\x1b[2Jit" in table and table.splitlines()[1].endswith("...")


def test_empty_session_metrics():
    m = summarize(
        log(ev.SessionStart(task="t", model="m", toolset="intent", root="/r", policy="ask"))
    )
    assert m["steps"] == 0 and m["tool_entropy_bits"] == 0.0 and m["time_to_first_edit"] is None


def demo_session(tmp_path) -> Session:
    root = copy_workspace("raft_kv", tmp_path / "raft_kv")
    session = Session(
        "fix the failing test in raft_kv",
        model=DemoModel(),
        root=root,
        policy="auto",
        sample="raft_kv",
    )
    asyncio.run(session.run())
    return session


def test_demo_session_metrics_and_replay_reproduces_every_proposal(tmp_path):
    session = demo_session(tmp_path)
    assert session.end_reason == "finished"
    m = summarize(session.log_path)
    assert m["steps"] == 5 and m["commits"] == 1 and m["finished"] and m["steps_to_first_edit"] == 3
    report = replay(session.log_path)
    assert report.identical, report.differences
    assert report.steps == 5


def test_replay_reports_a_step_whose_proposal_differs(tmp_path):
    session = demo_session(tmp_path)
    other = copy_workspace("raft_kv", tmp_path / "changed")
    node = other / "raft_kv/node.py"
    node.write_text(
        node.read_text().replace("        # Point the leader", "        # Tell the leader")
    )
    report = replay(session.log_path, other)
    assert not report.identical
    assert any(d.startswith("step 3: differs in diff") for d in report.differences), (
        report.differences
    )


def test_replay_with_decisions(tmp_path):
    root = copy_workspace("raft_kv", tmp_path / "a")
    model = ScriptedModel(
        [
            reply("", call("create", path="x.txt", content="1\n")),
            reply("", call("create", path="y.txt", content="2\n")),
            reply("", call("finish", summary="one file")),
        ]
    )
    session = Session("t", model=model, root=root)

    decisions = iter([Approve(), Veto("no")])
    drive(session, lambda s: s.decide(next(decisions)))
    report = replay(session.log_path, copy_workspace("raft_kv", tmp_path / "b"))
    assert (
        report.identical
        and (tmp_path / "b" / "x.txt").exists()
        and not (tmp_path / "b" / "y.txt").exists()
    )


def test_cli_demo_metrics_and_replay(tmp_path, capsys):
    root = tmp_path / "demo"
    assert main(["demo", "--auto", "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert "demo model" in out and "session ended: finished after 5 steps, 1 commits" in out
    log_path = next((root / ".grinta" / "sessions").glob("*.jsonl"))
    assert main(["metrics", str(log_path), "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics["commits"] == 1
    assert main(["replay", str(log_path)]) == 0
    assert "every proposal identical" in capsys.readouterr().out


def test_cli_run_without_a_model_explains_instead_of_running_the_demo(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.delenv("GRINTA_MODEL", raising=False)
    assert main(["run", "fix my code", "--root", str(tmp_path)]) == 2
    assert "Set GRINTA_MODEL" in capsys.readouterr().err


# -- `grinta metrics` through the installed entry point, on a real session log ----------------

GRINTA = Path(sys.executable).parent / "grinta"


def grinta(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRINTA_")}
    return subprocess.run(
        [str(GRINTA), *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_grinta_metrics_prints_a_table_with_units_and_json_for_programs(tmp_path):
    assert grinta("demo", "--auto", "--root", str(tmp_path / "demo")).returncode == 0
    log_path = next((tmp_path / "demo" / ".grinta" / "sessions").glob("*.jsonl"))

    table = grinta("metrics", str(log_path))
    assert table.returncode == 0 and table.stderr == ""
    lines = table.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    assert (
        lines[1] == "task     fix the failing test in raft_kv" and lines[4] == "ended    finished"
    )
    rows = {line[:28].strip(): line[28:].split() for line in lines[7:]}
    assert rows["steps"] == ["5", "calls"] and rows["commits"] == ["1", "commits"]
    assert rows["duration"][1] == "seconds" and float(rows["duration"][0]) > 0
    assert rows["prompt_tokens"] == ["0", "tokens"]  # the demo model counts no tokens
    assert rows["cost"] == ["unknown", "dollars"]  # and has no price

    data = grinta("metrics", str(log_path), "--json")
    assert data.returncode == 0
    parsed = json.loads(data.stdout)
    assert list(parsed) == list(SessionMetrics.model_fields)
    assert parsed == measure(log_path).to_json() and parsed["cost"] is None


def test_grinta_metrics_on_something_that_is_not_a_log_is_one_line(tmp_path):
    (tmp_path / "notes.jsonl").write_text("hello\n")
    done = grinta("metrics", str(tmp_path / "notes.jsonl"))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("grinta: error: ") and len(done.stderr.splitlines()) == 1
