"""nbval runs these notebooks headless, top to bottom, as Run All would.

The quickstart leaves the session's first decision to the reader, and its
optional cell approves only the steps after it. Headless, nobody is there to
click, so right after the cell that starts the session this file plays the
reader's first click: it runs ``READER`` in the notebook's kernel, outside the
notebook's cells (its output is not part of any cell's).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

# The demo copies its sample (raft_kv, or sales for a task about the sales notebook) next to
# the notebooks; the copy's own tests and notebook hold the planted bug and are not ours.
collect_ignore_glob = ["raft_kv*", "sales*", "make_notebooks.py"]

QUICKSTART = "01-quickstart.ipynb"
STARTS_THE_SESSION = "%grinta fix the failing test in raft_kv"

# The reader approves the first proposal that waits, in the card, and leaves.
READER = """
import asyncio as _asyncio
from contextlib import aclosing as _aclosing

import grinta_jupyter as _grinta
from grinta_jupyter.agent import Approve as _Approve, NeedsDecision as _NeedsDecision


async def _first_click(session):
    async with _aclosing(session.updates()) as updates:
        async for update in updates:
            if isinstance(update, _NeedsDecision):
                session.decide(_Approve())
                return


_reader = _asyncio.ensure_future(_first_click(_grinta.current()))
"""


_clicked: set[str] = set()  # notebooks whose kernel runs READER


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: Any) -> Generator[None, None, None]:
    cell = getattr(item, "cell", None)
    quickstart = item.path.name == QUICKSTART and cell is not None
    if quickstart and "session.updates()" in cell.source and str(item.path) not in _clicked:
        # The optional cell would wait for a click forever: fail now instead.
        pytest.fail(f"no cell of {QUICKSTART} is {STARTS_THE_SESSION!r}; update conftest.py")
    yield
    if quickstart and cell.source == STARTS_THE_SESSION:
        kernel = item.parent.kernel
        kernel.await_reply(kernel.execute_cell_input(READER), timeout=60)
        _clicked.add(str(item.path))
