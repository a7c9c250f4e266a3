"""Notebook figures: `%load_ext grinta_jupyter` time, saved-notebook size per step, and
reading and editing a 500-cell notebook as cells.

Goals (issue 5): load under 0.5 s; at most about 20 KB per ordinary step in the .ipynb.
Issue 12 asks only to note the time to read and to edit a 500-cell notebook.
Run: python benchmarks/bench_notebook.py [cells]   (``cells``: the 500-cell figures only,
without starting kernels)
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from grinta_jupyter import Runtime

REPO = Path(__file__).resolve().parent.parent

LOAD = """
import time
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
start = time.perf_counter()
shell.run_line_magic("load_ext", "grinta_jupyter")
print((time.perf_counter() - start) * 1000)
"""


def load_times(runs: int = 7) -> list[float]:
    return [
        float(
            subprocess.run([sys.executable, "-c", LOAD], capture_output=True, text=True, check=True)
            .stdout.strip()
            .splitlines()[-1]
        )
        for _ in range(runs)
    ]


def notebook_size(name: str) -> tuple[int, int, int]:
    """(bytes of the executed notebook, bytes of its outputs, steps of the session it ran).

    Widget state is not stored, as in JupyterLab's default (it saves outputs, not widget models).
    """
    with tempfile.TemporaryDirectory() as tmp:
        source = nbformat.read(REPO / "notebooks" / name, as_version=4)  # type: ignore[no-untyped-call]
        NotebookClient(
            source, timeout=300, store_widget_state=False, resources={"metadata": {"path": tmp}}
        ).execute()
        path = Path(tmp) / name
        nbformat.write(source, path)  # type: ignore[no-untyped-call]
        outputs = sum(len(json.dumps(cell.get("outputs", []))) for cell in source.cells)
        steps = 0
        for cell in source.cells:
            for output in cell.get("outputs", []):
                payload = output.get("data", {}).get("application/vnd.grinta.session+json")
                if payload and "steps" in payload:
                    steps = max(steps, len(payload["steps"]))
        return path.stat().st_size, outputs, steps


CELLS = 500
REPEATS = 15


def big_notebook(path: Path) -> None:
    """500 cells: markdown and code in turn; each code cell a function, a call, an output."""
    cells = []
    for i in range(CELLS // 2):
        cells.append(new_markdown_cell(f"## Step {i}\nWhat step {i} does.", id=f"m{i:04d}"))  # type: ignore[no-untyped-call]
        cells.append(
            new_code_cell(  # type: ignore[no-untyped-call]
                f"def step_{i}(frame):\n    frame['c{i}'] = frame['a'] * {i}\n    return frame\n\n"
                f"frame = step_{i}(frame)\nprint(len(frame))",
                id=f"c{i:04d}",
                execution_count=i + 1,
                outputs=[new_output("stream", name="stdout", text=f"{i}\n")],  # type: ignore[no-untyped-call]
            )
        )
    nbformat.write(new_notebook(cells=cells), path)  # type: ignore[no-untyped-call]


def timed(action: Callable[[int], Any], repeats: int = REPEATS) -> list[float]:
    samples = []
    for k in range(repeats):
        start = time.perf_counter()
        action(k)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def cell_figures() -> None:
    """Read and edit a 500-cell notebook through the runtime (propose + commit for writes)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        big_notebook(root / "big.ipynb")
        size = (root / "big.ipynb").stat().st_size
        rt = Runtime(root)
        rt.call("read", {"path": "big.ipynb", "outline": True})  # builds the symbol index once

        def read(k: int, args: dict[str, Any]) -> None:
            assert rt.call("read", args).ok

        def commit(tool: str, args: dict[str, Any]) -> None:
            proposal = rt.propose(tool, args)
            assert proposal.ok, proposal.error
            assert rt.commit(proposal).ok

        figures = {
            "read (first page of cells)": timed(lambda k: read(k, {"path": "big.ipynb"})),
            "read (cells 400-500)": timed(
                lambda k: read(k, {"path": "big.ipynb", "start_line": 400})
            ),
            "read outline": timed(lambda k: read(k, {"path": "big.ipynb", "outline": True})),
            "read one cell by address": timed(
                lambda k: read(k, {"symbol": f"big.ipynb::cell:c{k:04d}"})
            ),
            "replace_string propose+commit": timed(
                lambda k: commit(
                    "replace_string",
                    {
                        "path": "big.ipynb",
                        "old_string": f"frame['a'] * {100 + k}\n",
                        "new_string": f"frame['b'] * {100 + k}\n",
                    },
                )
            ),
            "edit_symbols cell insert propose+commit": timed(
                lambda k: commit(
                    "edit_symbols",
                    {
                        "edits": [
                            {
                                "symbol": f"big.ipynb::cell:c{150 + k:04d}",
                                "action": "insert_after",
                                "new_source": f"check_{k} = True",
                            }
                        ]
                    },
                )
            ),
            "edit_symbols definition replace propose+commit": timed(
                lambda k: commit(
                    "edit_symbols",
                    {
                        "edits": [
                            {
                                "symbol": f"big.ipynb::step_{200 + k}",
                                "action": "replace",
                                "new_source": f"def step_{200 + k}(frame):\n    return frame\n",
                            }
                        ]
                    },
                )
            ),
        }
        print(f"500-cell notebook ({size / 1024:.0f} KB), {REPEATS} runs each:")
        for label, samples in figures.items():
            print(
                f"  {label:<48} median {statistics.median(samples):7.1f} ms, "
                f"max {max(samples):7.1f} ms"
            )


def main() -> None:
    cell_figures()
    if sys.argv[1:] == ["cells"]:
        return
    times = load_times()
    print(
        f"%load_ext grinta_jupyter: median {statistics.median(times):.1f} ms, max {max(times):.1f} ms "
        f"over {len(times)} fresh processes (goal < 500 ms)"
    )
    for name in ("01-quickstart.ipynb", "02-step-approve-edit-veto.ipynb"):
        size, outputs, steps = notebook_size(name)
        per_step = outputs / steps if steps else float("nan")
        print(
            f"{name}: {size / 1024:.1f} KB saved, outputs {outputs / 1024:.1f} KB, "
            f"{steps} session steps, {per_step / 1024:.1f} KB of output per step (goal ~20 KB)"
        )


if __name__ == "__main__":
    main()
