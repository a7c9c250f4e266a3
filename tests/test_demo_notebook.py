"""The demo model's sales scenario: a wrong total in a notebook, found in the kernel, fixed in
a cell, checked by executing it.

End to end in a real kernel through the magics (as notebook 06 runs it), then headless on a
temporary copy for the paths a kernel does not take: no kernel tools, no data in the kernel,
the kernel tools missing although the model asked for them, vetoes and a refused edit.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter.agent import Approve, NeedsDecision, Session, Veto
from grinta_jupyter.agent.models import DemoModel
from grinta_jupyter.agent.models.demo import (
    SALES_CELL,
    SALES_FIXED_SOURCE,
    SALES_NOTEBOOK,
    demo_sample,
)
from grinta_jupyter.samples.tasks import copy_workspace, run_suite, sample_path
from grinta_jupyter.tools.base import Settings
from grinta_jupyter.tools.kernel import DictNamespace, kernel_toolset
from tests import kernels
from tests.kernels import running_kernel

pytest.importorskip("pandas")  # the sample's analysis is pandas code

TASK = "fix the wrong total in the sales notebook"
TIMEOUT = 120
RIGHT = "607.65"  # the sum of the orders
WRONG = "725.40"  # customer 102's orders counted twice


def cell_span(text: str, cell_id: str) -> tuple[int, int]:
    """Where the cell object with ``cell_id`` sits in a notebook's JSON text (nbformat's indent 1)."""
    at = text.index(f'"id": "{cell_id}"')
    return text.rindex("\n  {", 0, at), text.index("\n  }", at)


def assert_only_the_cell_changed(before: str, after: str, cell_id: str) -> None:
    """Every byte outside the cell ``cell_id`` is as it was."""
    start, end = cell_span(before, cell_id)
    prefix = len(os.path.commonprefix([before, after]))
    suffix = len(os.path.commonprefix([before[::-1], after[::-1]]))
    assert prefix >= start and len(before) - suffix <= end, "a byte outside the cell changed"


def cell_source(path: Path, cell_id: str) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    (cell,) = [c for c in cells if c["id"] == cell_id]
    return "".join(cell["source"])


def notebook_variables(path: Path) -> dict[str, Any]:
    """What the notebook's code cells leave behind, run as plain Python (they hold no magics)."""
    namespace: dict[str, Any] = {}
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "code":
            exec("".join(cell["source"]), namespace)
    return namespace


def files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".grinta" not in p.parts and "__pycache__" not in p.parts
    }


def test_the_task_picks_the_scenario():
    assert demo_sample(TASK) == "sales"
    assert demo_sample("why is the total in analysis.ipynb wrong?") == "sales"
    assert demo_sample("fix the failing test in raft_kv") == "raft_kv"
    assert demo_sample("fix the failing test") == "raft_kv"
    assert demo_sample("fix my code") == "raft_kv"


def test_the_pristine_sample_is_wrong_and_the_fix_makes_its_test_pass(tmp_path: Path):
    root = copy_workspace("sales", tmp_path / "sales")
    notebook = root / SALES_NOTEBOOK
    wrong = notebook_variables(notebook)
    assert f"{wrong['total']:.2f}" == WRONG and f"{wrong['orders']['amount'].sum():.2f}" == RIGHT
    assert run_suite(root).failures == [
        "tests/test_analysis.py::test_every_order_is_counted_once",
        "tests/test_analysis.py::test_the_regional_totals_add_up_to_the_orders",
    ]
    from grinta_jupyter import Runtime

    before = notebook.read_text(encoding="utf-8")
    edit = {"symbol": SALES_CELL, "action": "replace", "new_source": SALES_FIXED_SOURCE}
    assert Runtime(root).call("edit_symbols", {"edits": [edit]}).ok
    assert_only_the_cell_changed(before, notebook.read_text(encoding="utf-8"), "by-region")
    assert f"{notebook_variables(notebook)['total']:.2f}" == RIGHT
    run = run_suite(root)
    assert run.exit_code == 0 and run.failures == []


# -- in a real kernel, through the magics --------------------------------------------------------


@pytest.fixture
def kernel(tmp_path: Path):
    with running_kernel(tmp_path) as kc:
        yield kc


def execute(kc: Any, code: str) -> str:
    return kernels.execute(kc, code, timeout=TIMEOUT)


def wait_for(kc: Any, expression: str) -> None:
    kernels.wait_for(kc, expression, TIMEOUT)


def start_in_kernel(kc: Any, options: str) -> str:
    """Load the pristine notebook's data into the kernel (as notebook 06 does) and start the demo."""
    pristine = sample_path("sales") / SALES_NOTEBOOK
    execute(kc, "import grinta_jupyter\n%load_ext grinta_jupyter")
    loaded = execute(kc, f"%run {pristine}")
    assert f"difference: {float(WRONG) - float(RIGHT):.2f}" in loaded
    out = execute(kc, f"%grinta {options} {TASK}\nsession = grinta_jupyter.current()")
    assert "demo model on a copy of the sales sample" in out
    return out


def steps(kc: Any) -> list[dict[str, Any]]:
    code = """
import json as _json
print(_json.dumps([
    {"tool": s.call.name, "decision": s.decision,
     "output": s.observation.output if s.observation else None}
    for s in session.steps
]))
"""
    return list(json.loads(execute(kc, code).strip().splitlines()[-1]))


def test_the_demo_finds_fixes_and_checks_the_total_in_a_real_kernel(kernel, tmp_path: Path):
    kc = kernel
    pristine = (sample_path("sales") / SALES_NOTEBOOK).read_text(encoding="utf-8")
    start_in_kernel(kc, "--auto")
    wait_for(kc, "session.done")
    assert execute(kc, "print(session.end_reason)").strip() == "finished"

    taken = steps(kc)
    assert [s["tool"] for s in taken] == [
        "inspect",
        "inspect",
        "read",
        "edit_symbols",
        "execute",
        "run",
        "finish",
    ]
    listing, customers = taken[0]["output"], taken[1]["output"]
    assert "sales (pandas.DataFrame): 8 rows" in listing
    assert "orders (pandas.DataFrame): 6 rows" in listing
    assert customers.count(" 102 ") == 2, "the duplicate customer is in what inspect showed"
    # The execute step ran the fixed cell in the kernel: the regions add up to the orders.
    assert f"total sales: {RIGHT}" in taken[4]["output"]
    assert f"regions: {RIGHT}, difference: 0.00" in taken[4]["output"]
    assert "2 passed" in taken[5]["output"]
    summary = execute(kc, "print(session.summary)")
    assert "customer 102 is listed twice" in summary and RIGHT in summary and WRONG in summary
    # ... and left the right values in the user's namespace, as re-running the cell would.
    assert execute(kc, "print(f'{total:.2f}', len(sales))").split() == [RIGHT, "6"]

    # On disk: the one cell is fixed in the copy, every other byte is as it was.
    notebook = tmp_path / "sales" / SALES_NOTEBOOK
    after = notebook.read_text(encoding="utf-8")
    assert_only_the_cell_changed(pristine, after, "by-region")
    assert cell_source(notebook, "by-region") == SALES_FIXED_SOURCE
    assert (sample_path("sales") / SALES_NOTEBOOK).read_text(encoding="utf-8") == pristine


def test_a_veto_of_the_fix_ends_the_demo_with_no_file_changed(kernel, tmp_path: Path):
    kc = kernel
    start_in_kernel(kc, "")
    root = tmp_path / "sales"
    before = files(root)
    # The reads (two inspects, the notebook) run by themselves; the cell edit waits.
    wait_for(kc, "session.waiting")
    assert execute(kc, "print(session.pending.call.name)").strip() == "edit_symbols"
    execute(kc, "%grinta veto leave my notebook alone")
    wait_for(kc, "session.done")
    assert execute(kc, "print(session.end_reason)").strip() == "finished"
    assert "no files were changed" in execute(kc, "print(session.summary)")
    assert [s["tool"] for s in steps(kc)] == [
        "inspect",
        "inspect",
        "read",
        "edit_symbols",
        "finish",
    ]
    assert files(root) == before
    assert execute(kc, "print(f'{total:.2f}')").strip() == WRONG, "nothing ran in the kernel"


# -- headless: the paths a kernel with the data does not take -------------------------------------


def play(root: Path, toolset: Any, decide: Any = None, **options: Any) -> Session:
    """Run the demo on ``root``; ``decide(session, step)`` answers each proposal (default approve)."""
    session = Session(
        TASK, model=DemoModel(), root=root, toolset=toolset, sample="sales", **options
    )

    async def go() -> None:
        async for update in session.updates():
            if isinstance(update, NeedsDecision):
                session.decide(decide(session, update.step) if decide else Approve())

    asyncio.run(go())
    return session


def tools_of(session: Session) -> list[str]:
    return [step.call.name for step in session.steps]


@pytest.fixture
def sales(tmp_path: Path) -> Path:
    return copy_workspace("sales", tmp_path / "sales")


@pytest.fixture
def loaded(sales: Path) -> dict[str, Any]:
    """The user's namespace after running the pristine notebook."""
    return notebook_variables(sales / SALES_NOTEBOOK)


def test_outside_a_kernel_it_reads_fixes_and_runs_the_test(sales: Path):
    session = play(sales, "intent")
    assert tools_of(session) == ["read", "edit_symbols", "run", "finish"]
    assert session.end_reason == "finished" and "2 passed" in (session.summary or "")
    # It saw the duplicate in the notebook's own text, not in a kernel.
    assert "customer 102 is listed twice" in (session.summary or "")
    assert cell_source(sales / SALES_NOTEBOOK, "by-region") == SALES_FIXED_SOURCE


def test_a_kernel_without_the_notebooks_data_skips_execute(sales: Path):
    session = play(sales, kernel_toolset(DictNamespace()))
    assert tools_of(session) == ["inspect", "read", "edit_symbols", "run", "finish"]
    assert "does not hold the notebook's data" in session.steps[1].text
    assert session.end_reason == "finished"


def test_an_unknown_inspect_tool_sends_it_to_the_notebook(sales: Path):
    class Unsure(DemoModel):
        """Believes the kernel tools are there; the session (intent toolset) has none."""

        async def complete(self, messages, tools, on_text=None):  # type: ignore[no-untyped-def]
            believed = [*tools, {"type": "function", "function": {"name": "inspect"}}]
            return await super().complete(messages, believed, on_text)

    session = Session(TASK, model=Unsure(), root=sales, policy="auto", sample="sales")
    asyncio.run(session.run())
    assert tools_of(session) == ["inspect", "read", "edit_symbols", "run", "finish"]
    assert session.steps[0].observation.error.code == "UNKNOWN_TOOL"
    assert session.end_reason == "finished" and "2 passed" in (session.summary or "")


def test_a_vetoed_execute_is_checked_by_the_test_instead(sales: Path, loaded: dict[str, Any]):
    def decide(session: Session, step: Any) -> Approve | Veto:
        return Veto("not in my kernel") if step.call.name == "execute" else Approve()

    session = play(sales, kernel_toolset(DictNamespace(loaded)), decide)
    assert tools_of(session)[-3:] == ["execute", "run", "finish"]
    assert f"{loaded['total']:.2f}" == WRONG, "the vetoed code never ran"
    assert session.end_reason == "finished" and "2 passed" in (session.summary or "")
    assert "in the kernel" not in (session.summary or "")


def test_vetoed_test_runs_end_with_an_unverified_fix(sales: Path, loaded: dict[str, Any]):
    def decide(session: Session, step: Any) -> Approve | Veto:
        return Veto("later") if step.call.name == "run" else Approve()

    session = play(sales, kernel_toolset(DictNamespace(loaded)), decide)
    assert session.end_reason == "finished"
    assert "unverified" in (session.summary or "")
    assert f"the regions now add up to the orders' {RIGHT}" in (session.summary or "")
    assert cell_source(sales / SALES_NOTEBOOK, "by-region") == SALES_FIXED_SOURCE
    assert len(session.steps) <= 12


def test_a_refused_edit_stops_without_guessing(sales: Path, loaded: dict[str, Any]):
    before = files(sales)
    settings = Settings(protected_cells=(SALES_CELL,))
    session = play(sales, kernel_toolset(DictNamespace(loaded)), settings=settings)
    assert session.end_reason == "finished"
    assert (session.summary or "").startswith("Could not apply the fix: ERROR CELL_PROTECTED")
    assert "execute" not in tools_of(session) and "run" not in tools_of(session)
    assert files(sales) == before
