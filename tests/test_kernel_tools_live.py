"""A real kernel drives ``inspect`` and ``execute`` through a scripted model: the session runs as
a background task in the kernel, the reads run by themselves, the execute waits for an approval
given through the Python API, and the kernel keeps answering cells while the code runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.kernels import execute, messages, running_kernel, wait_for

pytest.importorskip("pandas")


SETUP = """
import asyncio, json, threading
import pandas as pd
from grinta_jupyter.agent import Approve, NeedsDecision, Session
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.jupyter.kernel import current_namespace
from grinta_jupyter.tools.kernel import kernel_toolset

sales = pd.DataFrame({"region": ["north", "south", "north", "east"],
                      "amount": [10.0, 20.0, None, 10.0]})
started, gate = threading.Event(), threading.Event()
CODE = '''started.set()
gate.wait(30)
import matplotlib.pyplot as plt
total = sales["amount"].sum()
print("total", total)
plt.plot(sales["amount"])
total * 2'''
model = ScriptedModel([
    reply("What is there?", call("inspect")),
    reply("", call("inspect", name="sales")),
    reply("", call("execute", code=CODE)),
    reply("", call("finish", summary="the total is 40")),
])
session = Session("check the total", model=model, root=ROOT,
                  toolset=kernel_toolset(current_namespace()))
needed = []

async def drive():
    async for update in session.updates():
        if isinstance(update, NeedsDecision):
            needed.append(update.step.call.name)
            session.decide(Approve())

task = asyncio.ensure_future(drive())
"""


@pytest.fixture
def kernel(tmp_path: Path):
    with running_kernel(tmp_path) as kc:
        yield kc


def run(kc, code: str) -> str:
    return execute(kc, code)


def test_a_scripted_session_inspects_and_executes_in_a_real_kernel(kernel, tmp_path: Path):
    kc = kernel
    run(kc, f"ROOT = {str(tmp_path)!r}\n" + SETUP)

    # The code runs in a worker thread and waits on the gate: this kernel still runs cells,
    # and only a cell can open the gate.
    wait_for(kc, "started.is_set()")
    assert run(kc, "print(session.done, needed)").strip() == "False ['execute']"
    # One cell opens the gate and waits for the end: a cell that ends meanwhile would let the
    # inline backend show and close the code's figure first (docs/notebook.md, execute).
    run(kc, "import asyncio\ngate.set()\nwhile not session.done:\n    await asyncio.sleep(0.05)")

    steps = json.loads(
        run(
            kc,
            "print(json.dumps([[s.call.name, s.decision, s.observation.ok, s.observation.output]"
            " for s in session.steps] + [session.end_reason]))",
        ).strip()
    )
    *steps, end_reason = steps
    assert end_reason == "finished"
    assert [(name, decision, ok) for name, decision, ok, _ in steps] == [
        ("inspect", "auto", True),  # reads run without asking under "ask"
        ("inspect", "auto", True),
        ("execute", "approve", True),
        ("finish", None, True),
    ]
    listing, detail, executed = steps[0][3], steps[1][3], steps[2][3]
    assert "sales (pandas.DataFrame): 4 rows x 2 columns" in listing
    for kernel_name in ("In ", "Out ", "get_ipython", "exit", "quit", "pd ", "asyncio "):
        assert f"\n{kernel_name}" not in listing
    assert "  amount: float64, 1 null" in detail and "head(5):" in detail
    assert "[stdout]\ntotal 40.0" in executed
    assert "[value]\nnp.float64(80.0)" in executed
    assert "[figure 1: image/png" in executed

    # The code ran in the user's namespace; its figure went to the card, not the next cell.
    kinds = [m["msg_type"] for m in messages(kc, "print(total)")]
    assert kinds == ["stream"]
    assert run(kc, "print(total)").strip() == "40.0"
