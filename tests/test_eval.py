"""The experiment runner end to end, offline, with scripted models."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from grinta_jupyter.events.metrics import SessionMetrics, measure
from grinta_jupyter.experiment.runner import RunSpec, run_one
from grinta_jupyter.experiment.suite import (
    METRICS,
    plan_runs,
    run_suite,
    select_tasks,
    summarize_results,
    write_report,
)
from grinta_jupyter.samples.tasks import TASKS

REPO = Path(__file__).resolve().parent.parent


def in_background(command: list[str]) -> subprocess.Popen[bytes]:
    """``command`` started from the checkout in a session of its own, its output dropped."""
    return subprocess.Popen(
        command,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def test_one_run_is_a_function_of_its_spec(tmp_path):
    spec = RunSpec("raft_kv/fix-failing-test", "intent", "scripted", seed=1)
    first = run_one(spec, tmp_path / "a")
    second = run_one(spec, tmp_path / "b")
    assert first["passed"] and second["passed"], first["detail"]
    calls = [
        [
            (e["tool"], e["arguments"])
            for e in map(json.loads, (d / "logs" / f"{spec.key}.jsonl").read_text().splitlines())
            if e["type"] == "tool_proposed"
        ]
        for d in (tmp_path / "a", tmp_path / "b")
    ]
    assert calls[0] == calls[1] and calls[0]
    assert first["metrics"]["steps"] == second["metrics"]["steps"]


def test_a_task_not_done_is_scored_as_failing(tmp_path):
    result = run_one(
        RunSpec("raft_kv/fix-failing-test", "broad", "scripted:noop", seed=0), tmp_path
    )
    assert result["passed"] is False and result["end_reason"] == "finished"
    assert "fail" in result["detail"].lower()


def test_both_toolsets_solve_every_task_with_scripted_models(tmp_path):
    specs = plan_runs(select_tasks("all"), ["intent", "broad"], "scripted", runs=1)
    results = run_suite(specs, tmp_path, jobs=2, progress=lambda _line: None)
    failed = [(r["key"], r["detail"][:300]) for r in results if not r["passed"]]
    assert not failed
    assert len(results) == 2 * len(TASKS)
    broad_tools = {
        t for r in results if r["spec"]["toolset"] == "broad" for t in r["metrics"]["tool_calls"]
    }
    assert broad_tools & {
        "str_replace",
        "apply_patch",
        "write_file",
        "xml_edit",
        "shell_write",
        "replace_lines",
        "ast_replace_symbol",
        "ast_insert_symbol",
        "ast_delete_symbol",
    }
    table = write_report(results, ["intent", "broad"], tmp_path)
    assert "| pass_rate | 1 [1, 1] | 1 [1, 1] | 0 [0, 0] |" in table
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["difference"]["of"] == "broad - intent"


def test_summary_separates_toolsets():
    def row(toolset, passed, entropy):
        metrics = measure([]).model_copy(
            update={"tool_entropy_bits": entropy, "prompt_tokens": 10, "completion_tokens": 5}
        )
        return {"spec": {"toolset": toolset}, "passed": passed, "metrics": metrics.to_json()}

    results = [row("intent", True, 1.0)] * 6 + [row("broad", False, 2.5)] * 6
    table = summarize_results(results, ["intent", "broad"])
    assert table["toolsets"]["intent"]["pass_rate"].mean == 1.0
    assert table["toolsets"]["broad"]["tool_entropy_bits"].mean == 2.5
    assert table["toolsets"]["broad"]["tokens"].mean == 15.0
    assert table["difference"]["pass_rate"].mean == -1.0 and table["difference"]["tokens"].mean == 0


def test_a_run_result_holds_the_metrics_model_in_its_json_form(tmp_path):
    result = run_one(RunSpec("raft_kv/fix-failing-test", "intent", "scripted", seed=2), tmp_path)
    metrics = SessionMetrics.model_validate(result["metrics"])
    assert metrics.steps == result["metrics"]["steps"] > 0 and metrics.finished
    assert list(result["metrics"]) == list(SessionMetrics.model_fields)  # the keys results hold


def test_results_json_keeps_its_keys_and_the_table_names_units(tmp_path):
    specs = plan_runs(["raft_kv/fix-failing-test"], ["intent", "broad"], "scripted", runs=1)
    results = run_suite(specs, tmp_path, progress=lambda _line: None)
    text = write_report(results, ["intent", "broad"], tmp_path)
    data = json.loads((tmp_path / "results.json").read_text())
    keys = ["runs", "pass_rate", *METRICS]
    assert list(data["toolsets"]["intent"]) == keys
    assert list(data["difference"]) == ["of", "pass_rate", *METRICS]
    assert set(data["toolsets"]["intent"]["cost"]) == {"mean", "low", "high", "n"}
    assert "| time_to_first_edit (seconds) |" in text and "| cost (dollars) |" in text
    assert "| tokens |" in text


def test_an_interrupted_eval_resumes_without_redoing_finished_runs(tmp_path):
    out = tmp_path / "eval"
    command = [
        sys.executable,
        "-m",
        "grinta_jupyter.cli",
        "eval",
        "--tasks",
        "raft_kv/fix-failing-test",
        "--toolsets",
        "intent,broad",
        "--model",
        "scripted",
        "--runs",
        "3",
        "--jobs",
        "1",
        "--out",
        str(out),
    ]
    child = in_background(command)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list((out / "runs").glob("*.json"))) < 2:
        time.sleep(0.05)
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    before = {p.name: p.stat().st_mtime_ns for p in (out / "runs").glob("*.json")}
    assert 2 <= len(before) < 6, "killed part-way"
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"{len(before)} already finished, {6 - len(before)} to go" in done.stderr
    after = {p.name: p.stat().st_mtime_ns for p in (out / "runs").glob("*.json")}
    assert len(after) == 6 and all(after[name] == mtime for name, mtime in before.items())
    assert not list((out / "runs").glob(".*.tmp"))
    assert "| runs | 3 | 3 |" in done.stdout


def test_a_run_with_a_real_model_over_litellm(openai_server, tmp_path, monkeypatch):
    from tests.openai_server import tool_call, tool_reply

    monkeypatch.setenv("GRINTA_API_BASE", openai_server.url)
    monkeypatch.setenv("GRINTA_API_KEY", "sk-local")
    fix = TASKS["raft_kv/fix-failing-test"].solution
    openai_server.queue(*[tool_reply(tool_call(name, args)) for name, args in fix])
    result = run_one(
        RunSpec("raft_kv/fix-failing-test", "intent", "openai/local-model", seed=3), tmp_path
    )
    assert result["passed"], result["detail"]
    assert result["metrics"]["prompt_tokens"] > 0
    assert openai_server.requests[0].body["seed"] == 3


def test_eval_runs_take_the_configured_context_budget_and_condensation(tmp_path):
    """``GRINTA_CONTEXT_BUDGET`` and ``GRINTA_CONDENSE`` bound an eval's runs as they bound
    a session, travel in each run's spec, and count among the settings a resumed --out must
    share; a result written before the spec held them was made with their defaults."""
    out = tmp_path / "eval"
    command = [sys.executable, "-m", "grinta_jupyter.cli", "eval"]
    command += ["--tasks", "raft_kv/fix-failing-test", "--toolsets", "intent"]
    command += ["--model", "scripted", "--runs", "1", "--out", str(out)]
    env = {**os.environ, "GRINTA_CONTEXT_BUDGET": "3000", "GRINTA_CONDENSE": "model"}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (result,) = [json.loads(p.read_text()) for p in (out / "runs").glob("*.json")]
    assert result["spec"]["context_budget"] == 3000 and result["spec"]["condense"] == "model"
    (log,) = (out / "logs").glob("*.jsonl")
    started = json.loads(log.read_text().splitlines()[0])
    assert started["settings"]["context_budget"] == 3000, started
    assert started["settings"]["condense"] == "model", started

    env["GRINTA_CONTEXT_BUDGET"] = "4000"
    again = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 2 and "context_budget 3000, not 4000" in again.stderr

    # An older result, without the two keys, resumes under the defaults and is not redone.
    (path,) = (out / "runs").glob("*.json")
    for key in ("context_budget", "condense"):
        del result["spec"][key]
    path.write_text(json.dumps(result))
    mtime = path.stat().st_mtime_ns
    plain = {k: v for k, v in env.items() if k not in ("GRINTA_CONTEXT_BUDGET", "GRINTA_CONDENSE")}
    resumed = subprocess.run(
        command, cwd=REPO, env=plain, capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "1 already finished, 0 to go" in resumed.stderr
    assert path.stat().st_mtime_ns == mtime
