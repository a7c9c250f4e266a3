"""How the test suite is shared between pytest-xdist's workers (``-n`` in pyproject.toml).

Each test goes to a group, and a group runs whole in one worker: a file's tests stay
together (module fixtures are built once, a notebook's cells run in order in its kernel);
the browser tests share one worker, so their JupyterLab servers start once; the
notebooks share one too, since the demos copy the same sample next to them.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = item.path.parts
        if "browser" in parts:
            group = "browser"
        elif item.path.suffix == ".ipynb":
            group = "notebooks"
        else:
            group = str(item.path)
        item.add_marker(pytest.mark.xdist_group(group))
