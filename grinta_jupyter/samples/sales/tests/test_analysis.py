"""analysis.ipynb run top to bottom as plain Python, as "Run All" would: its totals must add up."""

import json
from pathlib import Path
from typing import Any

NOTEBOOK = Path(__file__).resolve().parent.parent / "analysis.ipynb"


def run_notebook() -> dict[str, Any]:
    """The variables the notebook's code cells leave behind (they hold no magics)."""
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    namespace: dict[str, Any] = {}
    for cell in cells:
        if cell["cell_type"] == "code":
            source = cell["source"]
            text = "".join(source) if isinstance(source, list) else source
            exec(compile(text, f"{NOTEBOOK.name}::cell:{cell['id']}", "exec"), namespace)
    return namespace


def test_every_order_is_counted_once() -> None:
    variables = run_notebook()
    assert len(variables["sales"]) == len(variables["orders"])


def test_the_regional_totals_add_up_to_the_orders() -> None:
    variables = run_notebook()
    assert round(variables["total"], 2) == round(variables["orders"]["amount"].sum(), 2)
