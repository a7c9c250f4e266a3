"""The experiment's command-line pieces, for cli.py to call.

- ``add_task_parsers(subparsers)`` adds ``grinta tasks build --packages
  P[,P...] --out DIR [--cache DIR] [--per-package N] [--jobs N] [--seed N]``;
  ``tasks_command(args)`` runs it and prints what was built, per package.
- ``add_eval_options(parser)`` adds ``--backend local|ray`` and ``--address A``
  to ``grinta eval``; ``eval_specs(args, ...)`` plans the runs from
  ``--tasks`` (a folder of built tasks, or bundled task names) and
  ``eval_backend(args)`` makes the backend from ``--backend``, ``--address``
  and ``--jobs``.

A mistake the user can fix raises ``ExperimentUsageError`` (a ValueError)
with the one line to show; cli.py turns it into ``grinta: error: ...``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from grinta_jupyter.experiment.backends import Backend, LocalBackend, RayBackend
from grinta_jupyter.experiment.errors import BackendError
from grinta_jupyter.experiment.runner import RunSpec
from grinta_jupyter.experiment.taskbuild import (
    DEFAULT_PACKAGES,
    DEFAULT_PER_PACKAGE,
    BuildError,
    build_tasks,
    default_cache,
)
from grinta_jupyter.experiment.taskdir import (
    LINKS_REFUSED,
    TaskDirError,
    load_task,
    refused_links,
)

BACKENDS = ("local", "ray")
# What --tasks takes, for cli.py's help text.
TASKS_HELP = (
    'a folder of built tasks (grinta tasks build), or bundled tasks: "all", a workspace '
    "(raft_kv), or task ids, comma-separated"
)


def add_task_parsers(subparsers: Any) -> None:
    """Add ``grinta tasks build`` to cli.py's subparsers."""
    tasks = subparsers.add_parser("tasks", help="build eval tasks from real packages")
    sub = tasks.add_subparsers(dest="tasks_command", required=True, metavar="{build}")
    build = sub.add_parser(
        "build",
        help="inject bugs into real packages; their own tests are the checks",
        description=(
            "Fetch each package's source distribution with pip, check its tests pass, inject "
            "one bug at a time, and keep each bug its tests catch as a task (docs/experiment.md)."
        ),
    )
    build.add_argument(
        "--packages",
        default=",".join(DEFAULT_PACKAGES),
        help="name or name==version, comma-separated (default: the pinned set in docs/experiment.md)",
    )
    build.add_argument(
        "--out", required=True, help="the task folder (new, empty, or a task folder)"
    )
    build.add_argument(
        "--cache",
        help=f"where source distributions are kept (default: $GRINTA_CACHE, else {default_cache()})",
    )
    build.add_argument(
        "--per-package",
        type=_positive,
        default=DEFAULT_PER_PACKAGE,
        help=f"tasks to build from each package, at most (default: {DEFAULT_PER_PACKAGE})",
    )
    build.add_argument("--jobs", type=_positive, default=2, help="test runs in parallel")
    build.add_argument("--seed", type=int, default=0, help="which mutations are tried first")


def tasks_command(args: argparse.Namespace) -> int:
    """Run ``grinta tasks build``; print a line per package. 0 when any task was built."""
    packages = [p.strip() for p in args.packages.split(",") if p.strip()]
    if not packages:
        raise BuildError("--packages names no package")
    reports = build_tasks(
        packages,
        args.out,
        cache=Path(args.cache).expanduser() if args.cache else None,
        per_package=args.per_package,
        jobs=args.jobs,
        seed=args.seed,
    )
    total = 0
    for report in reports:
        if report.refused:
            print(f"{report.requirement}: refused: {report.refused}")
            continue
        total += report.kept
        operators = ", ".join(f"{k} {v}" for k, v in sorted(report.operators.items()))
        print(
            f"{report.workspace}: {report.kept} tasks ({operators}) from {report.tried} mutations "
            f"tried of {report.sites}; {report.tests} tests, {report.baseline_seconds:.1f}s a run; "
            f"built in {report.seconds:.0f}s"
        )
    print(f"{total} tasks in {args.out}; run them with: grinta eval --tasks {args.out}")
    if total == 0:
        print("grinta: error: no task was built", file=sys.stderr)
        return 2
    return 0


def add_eval_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--backend`` and ``--address`` to ``grinta eval``'s parser."""
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="local",
        help="local processes (default), or one Ray task per run",
    )
    parser.add_argument(
        "--address",
        help='with --backend ray: the Ray cluster to use ("auto", or ray://HOST:10001); '
        "default: a local Ray started for this eval with --jobs CPUs",
    )


def eval_specs(
    args: argparse.Namespace, model: str, toolsets: list[str], **budgets: Any
) -> list[RunSpec]:
    """The runs ``grinta eval`` plans: ``--tasks`` x toolsets x ``--runs`` seeds, with budgets.

    Raises ValueError naming the problem when ``--tasks`` selects nothing known.
    """
    from grinta_jupyter.experiment.suite import plan_runs, resolve_tasks

    selection = resolve_tasks(args.tasks)
    if not selection.ids:
        raise TaskDirError(f"--tasks {args.tasks} selects no task")
    if selection.tasks_dir is not None:
        packages = set()
        for task_id in selection.ids:  # a task that cannot be read is said now, before any run
            packages.add(load_task(selection.tasks_dir, task_id).source)
        for package in sorted(packages):
            refused = refused_links(package)
            if refused:
                raise TaskDirError(f"{package}: {LINKS_REFUSED}: {', '.join(refused)}")
    return plan_runs(
        selection.ids, toolsets, model, args.runs, tasks_dir=selection.tasks_dir, **budgets
    )


def eval_backend(args: argparse.Namespace) -> Backend:
    """The backend ``--backend``/``--address``/``--jobs`` ask for; BackendError when it cannot work."""
    backend = getattr(args, "backend", "local") or "local"
    address = getattr(args, "address", None)
    jobs = getattr(args, "jobs", 1) or 1
    if backend not in BACKENDS:
        raise BackendError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    if backend == "local":
        if address:
            raise BackendError("--address needs --backend ray")
        return LocalBackend(jobs)
    try:
        import ray  # noqa: F401 - only to say early that it is missing
    except ImportError:
        raise BackendError(
            "--backend ray needs Ray: pip install 'grinta-jupyter[ray]' (or pip install ray)"
        ) from None
    return RayBackend(address=address or None, jobs=max(1, jobs))


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value
