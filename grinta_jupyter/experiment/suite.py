"""Running many runs: parallel processes, progress, resume, and the results table."""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from grinta_jupyter.events.metrics import SessionMetrics
from grinta_jupyter.experiment.runner import RunSpec, run_one
from grinta_jupyter.experiment.stats import Estimate, bootstrap_difference, bootstrap_mean

# Metrics compared between toolsets (docs/metrics.md); lower is better for all but pass rate.
METRICS = [
    "tool_entropy_bits",
    "redundant_calls",
    "repeated_reads",
    "edit_retries",
    "validation_failure_total",
    "recoveries",
    "context_growth_per_request",
    "time_to_first_edit",
    "steps_to_first_edit",
    "premature_finishes",
    "steps",
    "tokens",
    "cost",
]


def select_tasks(suite: str) -> list[str]:
    """Task ids for ``suite``: "all", a workspace name, or comma-separated task ids."""
    from grinta_jupyter.samples.tasks import TASKS

    if suite == "all":
        return sorted(TASKS)
    by_workspace = sorted(t for t, task in TASKS.items() if task.workspace == suite)
    if by_workspace:
        return by_workspace
    ids = [t.strip() for t in suite.split(",") if t.strip()]
    unknown = [t for t in ids if t not in TASKS]
    if unknown:
        raise ValueError(
            f"unknown task(s): {', '.join(unknown)}; known: {', '.join(sorted(TASKS))}"
        )
    return ids


def plan_runs(
    tasks: Iterable[str], toolsets: Iterable[str], model: str, runs: int, **budgets: Any
) -> list[RunSpec]:
    return [
        RunSpec(task, toolset, model, seed, **budgets)
        for seed in range(runs)
        for task in tasks
        for toolset in toolsets
    ]


def finished(out_dir: Path) -> dict[str, dict[str, Any]]:
    results = {}
    for path in sorted((out_dir / "runs").glob("*.json")):
        data = json.loads(path.read_text())
        results[data["key"]] = data
    return results


def run_suite(
    specs: list[RunSpec],
    out_dir: str | Path,
    jobs: int = 1,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Run every spec not already finished in ``out_dir`` (so an interrupted eval resumes)."""
    out = Path(out_dir)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    say = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    done = finished(out)
    todo = [s for s in specs if s.key not in done]
    say(
        f"{len(specs)} runs: {len(specs) - len(todo)} already finished, {len(todo)} to go, {jobs} at a time"
    )
    started = time.monotonic()
    count = len(specs) - len(todo)
    if jobs <= 1:
        for spec in todo:
            result = run_one(spec, out)
            count += 1
            say(_line(count, len(specs), result, started))
    else:
        context = multiprocessing.get_context("spawn")  # safe inside a Jupyter kernel, unlike fork
        with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            futures = [pool.submit(run_one, spec, out) for spec in todo]
            for future in concurrent.futures.as_completed(futures):
                count += 1
                say(_line(count, len(specs), future.result(), started))
    results = finished(out)
    return [results[s.key] for s in specs if s.key in results]


def _line(count: int, total: int, result: dict[str, Any], started: float) -> str:
    spec = result["spec"]
    bar = "#" * int(20 * count / total) + "." * (20 - int(20 * count / total))
    verdict = "passed" if result["passed"] else f"FAILED ({result['end_reason']})"
    return (
        f"[{bar}] {count}/{total} {spec['task']} {spec['toolset']} seed {spec['seed']}: {verdict} "
        f"in {result['seconds']:.1f}s (elapsed {time.monotonic() - started:.0f}s)"
    )


def _value(result: dict[str, Any], metric: str) -> float | None:
    """``metric`` of one run, read through ``SessionMetrics``; None for a crashed run or cost unknown."""
    if not result.get("metrics"):
        return None
    metrics = SessionMetrics.model_validate(result["metrics"])
    value = metrics.tokens if metric == "tokens" else getattr(metrics, metric)
    return None if value is None else float(value)


def summarize_results(results: list[dict[str, Any]], toolsets: list[str]) -> dict[str, Any]:
    """Per toolset: pass rate and each metric with bootstrap CIs; and the difference between toolsets."""
    table: dict[str, Any] = {"toolsets": {}, "difference": {}}
    groups = {t: [r for r in results if r["spec"]["toolset"] == t] for t in toolsets}
    for toolset, rows in groups.items():
        entry = {
            "runs": len(rows),
            "pass_rate": bootstrap_mean([1.0 if r["passed"] else 0.0 for r in rows]),
        }
        for metric in METRICS:
            entry[metric] = bootstrap_mean(
                [v for r in rows if (v := _value(r, metric)) is not None]
            )
        table["toolsets"][toolset] = entry
    if len(toolsets) == 2:
        a, b = (groups[t] for t in toolsets)
        diff = {
            "pass_rate": bootstrap_difference(
                [float(r["passed"]) for r in a], [float(r["passed"]) for r in b]
            )
        }
        for metric in METRICS:
            diff[metric] = bootstrap_difference(
                [v for r in a if (v := _value(r, metric)) is not None],
                [v for r in b if (v := _value(r, metric)) is not None],
            )
        table["difference"] = {"of": f"{toolsets[1]} - {toolsets[0]}", **diff}
    return table


def markdown_table(table: dict[str, Any]) -> str:
    toolsets = list(table["toolsets"])
    diff = table.get("difference") or {}
    header = ["metric", *toolsets] + ([f"difference ({diff['of']})"] if diff else [])
    rows = [header, ["---"] * len(header)]
    rows.append(
        ["runs", *[str(table["toolsets"][t]["runs"]) for t in toolsets]] + ([""] if diff else [])
    )
    for metric in ["pass_rate", *METRICS]:
        row = [_label(metric), *[str(table["toolsets"][t][metric]) for t in toolsets]]
        if diff:
            row.append(str(diff[metric]))
        rows.append(row)
    return (
        "\n".join("| " + " | ".join(r) + " |" for r in rows)
        + "\n\nCells: mean [95% bootstrap interval].\n"
    )


def _label(metric: str) -> str:
    """The metric's name, with its unit when the name does not already say it."""
    if metric not in SessionMetrics.model_fields:  # pass_rate, and tokens (named for its unit)
        return metric
    unit = SessionMetrics.unit(metric)
    return metric if unit is None or unit.split()[0] in metric else f"{metric} ({unit})"


def write_report(results: list[dict[str, Any]], toolsets: list[str], out_dir: str | Path) -> str:
    table = summarize_results(results, toolsets)
    out = Path(out_dir)

    def plain(value: Any) -> Any:
        if isinstance(value, Estimate):
            return {"mean": value.mean, "low": value.low, "high": value.high, "n": value.n}
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return value

    (out / "results.json").write_text(json.dumps(plain(table), indent=1))
    text = markdown_table(table)
    (out / "results.md").write_text(text)
    return text
