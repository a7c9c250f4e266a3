"""Notebook figures: `%load_ext grinta_jupyter` time, and saved-notebook size per step.

Goals (issue 5): load under 0.5 s; at most about 20 KB per ordinary step in the .ipynb.
Run: python benchmarks/bench_notebook.py
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

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
        source = nbformat.read(REPO / "notebooks" / name, as_version=4)
        NotebookClient(
            source, timeout=300, store_widget_state=False, resources={"metadata": {"path": tmp}}
        ).execute()
        path = Path(tmp) / name
        nbformat.write(source, path)
        outputs = sum(len(json.dumps(cell.get("outputs", []))) for cell in source.cells)
        steps = 0
        for cell in source.cells:
            for output in cell.get("outputs", []):
                payload = output.get("data", {}).get("application/vnd.grinta.session+json")
                if payload and "steps" in payload:
                    steps = max(steps, len(payload["steps"]))
        return path.stat().st_size, outputs, steps


def main() -> None:
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
