"""Tasks built once per test session from a real package, for the task-building and Ray tests.

The package's source distribution is fetched with pip from the package index
into a temporary cache (the only network the tests use), and a few tasks are
built from it, as ``grinta tasks build`` does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grinta_jupyter.experiment.taskbuild import PackageReport, build_tasks

# Small, pure Python, 455 tests in about a second, no dependencies.
PACKAGE = "inflection==0.5.1"
TASKS = 3

_built: dict[str, tuple[Path, PackageReport]] = {}


def built_tasks(factory: pytest.TempPathFactory) -> tuple[Path, PackageReport]:
    """The task folder (built once per session) and the build's report of the package."""
    if "tasks" not in _built:
        root = factory.mktemp("built-tasks")
        (report,) = build_tasks(
            [PACKAGE], root / "tasks", cache=root / "cache", per_package=TASKS, jobs=2, say=print
        )
        assert report.refused is None, report.refused
        _built["tasks"] = (root / "tasks", report)
    return _built["tasks"]
