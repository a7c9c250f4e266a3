"""Running many runs: which tasks, on which backend, progress, resume, and the results.

``run_suite`` runs every spec that has no result in the output folder yet (so
an interrupted eval resumes, and a finished run is never redone), on a backend
(``backends``: local processes or Ray), with a progress bar. It refuses a
folder another eval is running in, or whose results were made with other
settings (budgets, model); a result file it cannot read is a run to do again. ``write_report``
writes the summary as results.json, results.md and report.html; the numbers
come from the run results alone, so they are the same whichever backend ran
them, and ``load_results`` reads a results folder back (notebook 05).
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import MISSING, asdict, dataclass, fields
from pathlib import Path
from typing import Any

from grinta_jupyter.events.metrics import SessionMetrics
from grinta_jupyter.experiment.backends import Backend, LocalBackend
from grinta_jupyter.experiment.errors import ExperimentUsageError
from grinta_jupyter.experiment.progress import make_progress
from grinta_jupyter.experiment.runner import RunSpec, write_atomically
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
# A result file is a few kilobytes; one much larger is not grinta's, and is not read whole.
MAX_RESULT_BYTES = 1_000_000


@dataclass(frozen=True)
class TaskSelection:
    """Task ids, and the folder of built tasks they come from (None: the bundled tasks)."""

    ids: list[str]
    tasks_dir: str | None = None


def resolve_tasks(text: str) -> TaskSelection:
    """``--tasks``: a folder of built tasks (grinta tasks build), or what ``select_tasks`` takes.

    Raises ValueError (a ``TaskDirError`` for a folder) naming what is wrong.
    """
    from grinta_jupyter.experiment.taskdir import TaskDirError, is_task_dir, task_ids

    path = Path(text).expanduser()
    if path.is_dir():
        if not is_task_dir(path):
            raise TaskDirError(f"{text} is a folder but not a task folder (see grinta tasks build)")
        return TaskSelection(task_ids(path), str(path.resolve()))
    return TaskSelection(select_tasks(text))


def select_tasks(suite: str) -> list[str]:
    """Bundled task ids for ``suite``: "all", a workspace name, or comma-separated task ids."""
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
            f"unknown task(s): {', '.join(unknown)}; known: {', '.join(sorted(TASKS))} "
            "(or give a folder of built tasks)"
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
    """The results in ``out_dir``, by run key: the runs an eval there does not do again."""
    return read_results(out_dir)[0]


def read_results(out_dir: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The whole results in ``out_dir`` by run key, and the names of the files in runs/ that
    are not (cut short, edited by hand, not grinta's): counted, they would make a figure wrong
    (a "passed" of "false" is a truthy string), or stop the report after every run was done."""
    results, broken = {}, []
    for path in sorted((out_dir / "runs").glob("*.json")):
        data = _read_result_file(path)
        if _whole_result(data) and data["key"] == path.stem:
            results[data["key"]] = data
        else:
            broken.append(path.name)
    return results, broken


def _read_result_file(path: Path) -> Any:
    """The JSON in ``path``, or None when it is not a result file grinta could have written:
    not a regular file (a folder, a link, a named pipe, whose read would wait for ever), larger
    than any result (``MAX_RESULT_BYTES``), not UTF-8, or not JSON."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_RESULT_BYTES:
            return None
        with os.fdopen(os.dup(handle), "rb") as file:
            return json.loads(file.read(MAX_RESULT_BYTES + 1).decode("utf-8"))
    except (OSError, ValueError):  # cut short, or not text
        return None
    finally:
        os.close(handle)


def _whole_result(data: Any) -> bool:
    """Whether ``data`` has what the summary reads of a result, each of its type."""
    if not (
        isinstance(data, dict)
        and isinstance(data.get("key"), str)
        and isinstance(data.get("spec"), dict)
        and isinstance(data.get("spec", {}).get("toolset"), str)
        and isinstance(data.get("passed"), bool)
        and isinstance(data.get("end_reason"), str)
        and isinstance(data.get("seconds"), int | float)
    ):
        return False
    metrics = data.get("metrics")
    if metrics is None:
        return True  # a crashed run: a failure with no metrics
    try:
        SessionMetrics.model_validate(metrics)
    except ValueError:  # pydantic's ValidationError: a field missing, renamed or of another type
        return False
    # NaN passes pydantic's float; one NaN makes a whole column's mean n/a.
    return all(not isinstance(v, float) or math.isfinite(v) for v in metrics.values())


def load_results(out_dir: str | Path) -> list[dict[str, Any]]:
    """Every run result in a results folder, whichever backend wrote it, in key order.

    Raises ``ExperimentUsageError`` when a file in runs/ is not a whole result: figures
    computed without it would be silently wrong; an eval in the folder redoes such runs.
    """
    results, broken = read_results(Path(out_dir))
    if broken:
        raise ExperimentUsageError(
            f"{Path(out_dir) / 'runs'} holds files that are not whole results: "
            f"{', '.join(broken[:5])}{' ...' if len(broken) > 5 else ''} "
            "(run the same eval there again to redo them, or move them away)"
        )
    return list(results.values())


def run_suite(
    specs: list[RunSpec],
    out_dir: str | Path,
    jobs: int = 1,
    progress: Callable[[str], None] | None = None,
    backend: Backend | None = None,
) -> list[dict[str, Any]]:
    """Run every spec not already finished in ``out_dir`` (so an interrupted eval resumes).

    ``backend`` defaults to local processes, ``jobs`` at a time. ``progress``
    gets one line per finished run; without it a progress bar goes to stderr.
    Returns the results of ``specs`` found in ``out_dir`` afterwards.
    """
    out = Path(out_dir)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    specs = list(dict.fromkeys(specs))  # a run asked for twice is run, and counted, once
    backend = backend or LocalBackend(jobs)
    with _only_eval_in(out):
        done, broken = read_results(out)
        _check_same_settings(specs, done, out)
        todo = [s for s in specs if s.key not in done]
        announce = progress or (lambda line: print(line, file=sys.stderr, flush=True))
        if broken:
            announce(
                f"{len(broken)} files in {out / 'runs'} are not whole results (cut short or "
                f"edited: {', '.join(broken[:5])}{' ...' if len(broken) > 5 else ''}); "
                "their runs are done again"
            )
        announce(
            f"{len(specs)} runs: {len(specs) - len(todo)} already finished, {len(todo)} to go, "
            f"{backend.describe()}"
        )
        bar = make_progress(progress, len(specs), [done[s.key] for s in specs if s.key in done])
        try:
            lost = backend.run(todo, out, bar.update)
        finally:
            bar.close()
        if lost:
            announce(
                f"{len(lost)} runs were lost (their workers died on every attempt); "
                "run the same eval again to redo them"
            )
        results = finished(out)
        return [results[s.key] for s in specs if s.key in results]


@contextmanager
def _only_eval_in(out: Path) -> Iterator[None]:
    """Hold ``out``'s lock: two evals in one folder would do the same runs at once, each
    deleting the other's log. The lock goes with the file, when this process ends or dies.
    Opened to append, never truncated: a ``.lock`` that is a link (a results folder from
    elsewhere) leaves the file it leads to as it was."""
    with _locked(out / ".lock", wait=False):
        yield


@contextmanager
def _locked(path: Path, wait: bool) -> Iterator[None]:
    """Hold the lock file ``path`` (made if missing, never truncated); ``wait`` for it, or
    raise ``ExperimentUsageError`` at once when another process holds it. A ``path`` that is not
    a file (a named pipe, whose opening would wait for a reader for ever) is refused."""
    try:
        handle = os.open(
            path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o666
        )
    except OSError as exc:
        raise ExperimentUsageError(
            f"cannot use {path} as a lock ({exc.strerror}); move it away"
        ) from None
    with os.fdopen(handle, "ab") as lock:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            raise ExperimentUsageError(f"{path} is not a lock file; move it away")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ExperimentUsageError(
                f"another eval is running in {path.parent}; wait for it to end, or give another --out"
            ) from None
        yield


_SPEC_DEFAULTS = {f.name: f.default for f in fields(RunSpec) if f.default is not MISSING}


def _check_same_settings(specs: list[RunSpec], done: dict[str, dict[str, Any]], out: Path) -> None:
    """Raise when ``out`` holds a result of one of ``specs`` made with other settings (other
    budgets, or another model with the same key), or when two specs share a key: resuming
    would count another experiment's runs as this one's. ``tasks_dir`` may differ (it moves).
    """
    keys: dict[str, RunSpec] = {}
    for spec in specs:
        planned = {k: v for k, v in asdict(spec).items() if k != "tasks_dir"}
        other = keys.setdefault(spec.key, spec)
        if other != spec:
            raise ExperimentUsageError(
                f"two different runs share the key {spec.key}: {other}, {spec}"
            )
        found = done[spec.key]["spec"] if spec.key in done else planned
        # A result older than a setting was made with that setting's default.
        found = {**{k: v for k, v in _SPEC_DEFAULTS.items() if k not in found}, **found}
        changed = sorted(k for k, v in planned.items() if found.get(k) != v)
        if changed:
            was = ", ".join(f"{k} {found.get(k)!r}, not {planned[k]!r}" for k in changed)
            raise ExperimentUsageError(
                f"{out} holds a result of {spec.key} with other settings ({was}); "
                "give another --out, or the same settings to resume"
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
    # "intent,intent" is one toolset, not a difference of 0 between two.
    toolsets = list(dict.fromkeys(toolsets))
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
    """Write results.json, results.md and report.html (readable without Jupyter); return the table."""
    from grinta_jupyter.experiment.report import html_report

    toolsets = list(dict.fromkeys(toolsets))
    table = summarize_results(results, toolsets)
    out = Path(out_dir)

    def plain(value: Any) -> Any:
        if isinstance(value, Estimate):  # no value (no run, a cost unknown): null, as JSON has it
            bounds = {"mean": value.mean, "low": value.low, "high": value.high}
            return {k: v if math.isfinite(v) else None for k, v in bounds.items()} | {"n": value.n}
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return value

    # allow_nan=False: Python would write NaN, which no other JSON reader takes.
    text = markdown_table(table)
    files = {
        "results.json": json.dumps(plain(table), indent=1, allow_nan=False),
        "results.md": text,
        "report.html": html_report(results, toolsets, table),
    }
    # All three made before any is written, each written whole (a crash leaves the old one),
    # and the three under a lock of their own: two evals ending together in one folder leave
    # one eval's report, not a mix. Not under .lock: that waits for another eval's every run.
    out.mkdir(parents=True, exist_ok=True)
    with _locked(out / ".report.lock", wait=True):
        for name, content in files.items():
            write_atomically(out / name, content.encode("utf-8"))
    return text
