"""How the test suite is shared between pytest-xdist's workers (``-n`` in pyproject.toml).

Each test goes to a group, and a group runs whole in one worker: a file's tests stay
together (module fixtures are built once, a notebook's cells run in order in its kernel);
the browser tests share one worker, so their JupyterLab servers start once; the
notebooks share one too, since the demos copy the same sample next to them.
"""

from __future__ import annotations

import os

import pytest

# The pytest runs the tests' own sessions make (``python -m pytest`` in a workspace, a task's
# check) start without the plugins this test environment installs: nbval imports nbformat,
# whose jsonschema imports rfc3987-syntax, which builds its grammars at import (2.7 s of CPU
# a run on the CI machine, against 0.4 s for the run itself). The product sets the same for
# the checks it runs itself (``experiment/taskdir.py``, ``samples/core.py``). A test whose
# subprocess needs the plugins (pytest on this repository) removes it from that one's
# environment (``tests/test_fresh_machine.py``).
NO_AUTOLOAD = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"


# tryfirst: pytest-xdist reads the groups in its own hook of the same name (it suffixes each
# test's id with its group) and must see them, whatever order the plugins were registered in.
@pytest.hookimpl(tryfirst=True)
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


class _GroupsKept:
    """Under ``--dist loadgroup``, stop the run when pytest-xdist's group suffix did not reach
    the test ids a worker collected (as with pytest 9.2), instead of letting a notebook's
    cells be spread over workers, each with a kernel that never ran the cells before."""

    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:
        lost = [nodeid for nodeid in ids if "@" not in nodeid]
        if lost:
            pytest.exit(
                f"pytest-xdist's groups did not reach the test ids ({lost[0]} has none): "
                "this pytest and pytest-xdist disagree (see the pin in pyproject.toml)",
                returncode=pytest.ExitCode.USAGE_ERROR,
            )


def pytest_configure(config: pytest.Config) -> None:
    # Set where the tests run (a worker, or the one process of ``-n 0``), once its own plugins
    # are loaded: xdist's workers must still load theirs when they start.
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        os.environ.setdefault(NO_AUTOLOAD, "1")
    if config.pluginmanager.hasplugin("xdist") and config.getoption("dist", "no") == "loadgroup":
        config.pluginmanager.register(_GroupsKept(), "grinta-groups-kept")
