"""Startup figures: how long until grinta answers in a fresh kernel.

Prints, each measured in fresh processes:

- ``import grinta_jupyter`` in a fresh interpreter;
- ``%load_ext grinta_jupyter`` in a fresh IPython ``InteractiveShell`` and in a real kernel;
- the time from running a ``%grinta TASK`` cell to the first card (the first
  ``StepProposed`` or ``NeedsDecision``) in a real kernel working in a 1,000-file
  workspace (a copy of ``.py`` files from site-packages), the model being a local
  scripted OpenAI-compatible server (tests/openai_server.py) whose own latency is
  about a millisecond: the figure is grinta's. It is measured right after
  ``%load_ext`` ("cold") and after a pause that lets the background warming finish
  ("paused"), for a first call that needs no symbol index (``read`` a path) and one
  that does (``read`` a symbol: the whole workspace is indexed first). It prints when
  the warming's phases ended after it started (``imports``: grinta's modules and the
  schemas; ``model``: litellm imported, and rehearsed unless a real call was already
  waiting; ``tokens``: the token encoding loaded in the kernel, the counting helper having
  counted until then): cold, as far as they got by the first card (so the card
  minus ``model`` is the first call after litellm's import); with the pause, also when
  the warming thread ended, and which client sent the first request (httpx before litellm
  is loaded, or litellm: ``--model`` picks a name litellm knows to see the latter;
  ``--model demo`` runs the demo model, whose kernel never imports litellm). With
  ``--gaps``, also a fixed number of seconds after
  ``%load_ext`` without waiting for anything, as a user who types the task after loading
  the extension: from which gap the goal is met.

Goals (issue 13): ``%load_ext`` under 50 ms; at most 1.5 s to the first card.
Run: python benchmarks/bench_startup.py [--runs N] [--files N] [--pause S] [--only cold|paused]
     [--gaps 1,2,3] [--model openai/gpt-4o-mini]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.kernels import execute, running_kernel  # noqa: E402
from tests.openai_server import OpenAIServer, tool_call, tool_reply  # noqa: E402

HEAVY = ("litellm", "libcst", "tree_sitter", "nbformat", "tiktoken", "ipywidgets")

IMPORT = """
import json, sys, time
start = time.perf_counter()
import grinta_jupyter
took = (time.perf_counter() - start) * 1000
print(took, json.dumps([m for m in HEAVY if m in sys.modules]))
"""

SHELL_LOAD = """
import json, sys, time
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
start = time.perf_counter()
shell.run_line_magic("load_ext", "grinta_jupyter")
took = (time.perf_counter() - start) * 1000
print(took, json.dumps([m for m in HEAVY if m in sys.modules]))
"""

KERNEL_LOAD = """
import time as _time
_start = _time.perf_counter()
get_ipython().run_line_magic("load_ext", "grinta_jupyter")
print((_time.perf_counter() - _start) * 1000)
"""

# How long the warming thread runs on after the load_ext cell (nothing printed without one),
# and when its phases ended after it started (an older grinta records none).
WAIT_FOR_WARMING = """
import json as _json, time as _time, grinta_jupyter as _g
_start = _time.perf_counter()
if getattr(_g, "_warming", None) is not None:
    _g._warming.join({timeout})
    print(_json.dumps([_time.perf_counter() - _start, getattr(_g, "_warming_times", {{}})]))
"""

# The first card: a second listener on the session's stream notes when it comes.
KERNEL_START = """
import json as _json, time as _time
from contextlib import aclosing as _aclosing
import grinta_jupyter
from grinta_jupyter.agent import NeedsDecision as _Needs, StepProposed as _Proposed
_start = _time.perf_counter()
get_ipython().run_line_magic("grinta", {task!r})
_cell = _time.perf_counter() - _start
async def _first_card():
    async with _aclosing(grinta_jupyter.current().updates()) as _updates:
        async for _update in _updates:
            if isinstance(_update, (_Proposed, _Needs)):
                return _time.perf_counter() - _start, type(_update).__name__
_card, _kind = await _first_card()
print(_json.dumps({{"cell": _cell, "card": _card, "kind": _kind,
                   "error": grinta_jupyter.current().steps[0].proposal.error is not None,
                   "phases": dict(getattr(grinta_jupyter, "_warming_times", {{}}))}}))
get_ipython().run_line_magic("grinta", "stop")
"""

TARGET = '''"""The function the benchmark's first call reads."""


def grinta_startup_target(value):
    return value + 1
'''

FIRST_CALLS = {
    "read a path": {"path": "grinta_startup_target.py"},
    "read a symbol": {"symbol": "grinta_startup_target"},
}


def python_files(count: int) -> list[tuple[Path, Path]]:
    """(source, relative path) of ``count`` .py files of this interpreter's site-packages."""
    site = Path(sysconfig.get_paths()["purelib"])
    found: list[tuple[Path, Path]] = []
    for folder, dirs, files in os.walk(site):
        dirs.sort()
        dirs[:] = [d for d in dirs if d != "__pycache__" and not d.endswith(".dist-info")]
        for name in sorted(files):
            path = Path(folder) / name
            if name.endswith(".py") and path.stat().st_size < 100_000:
                found.append((path, path.relative_to(site)))
                if len(found) == count:
                    return found
    return found


def make_workspace(target: Path, files: list[tuple[Path, Path]]) -> int:
    """A copy of ``files`` plus the target module under ``target``; its size in bytes.

    The copies go in ``vendored/``: at the top they would shadow the kernel's own imports.
    """
    size = 0
    for source, rel in files:
        copy = target / "vendored" / rel
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, copy)
        size += source.stat().st_size
    (target / "grinta_startup_target.py").write_text(TARGET)
    return size


def fresh(script: str) -> tuple[float, list[str]]:
    """(milliseconds, heavy modules loaded) printed by ``script`` in a fresh interpreter."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{script}"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=tempfile.gettempdir(),
    ).stdout.strip()
    took, _, heavy = out.splitlines()[-1].partition(" ")
    return float(took), json.loads(heavy)


def first_card(
    files: list[tuple[Path, Path]],
    arguments: dict[str, str],
    pause: float,
    gap: float = 0.0,
    model: str = "openai/test",
) -> dict[str, Any]:
    """One kernel: load the extension, maybe pause, then time ``%grinta`` to the first card.

    ``pause`` waits for the warming to end (at most that long); ``gap`` only sleeps that
    long after the load_ext cell, as a user typing the task does, whatever the warming's state.
    """
    with tempfile.TemporaryDirectory() as tmp, OpenAIServer() as server:
        root = Path(tmp) / "ws"
        make_workspace(root, files)
        server.queue(
            tool_reply(tool_call("read", arguments)),
            tool_reply(tool_call("finish", {"summary": "done"})),
        )
        env = {
            "PYTHONPATH": str(REPO),
            "GRINTA_MODEL": model,
            "GRINTA_API_BASE": server.url,
            "GRINTA_API_KEY": "k",
        }
        with running_kernel(root, env) as kc:
            load = float(execute(kc, KERNEL_LOAD).strip().splitlines()[-1])
            warmed, phases = None, {}
            if pause:
                started = time.monotonic()
                done = execute(kc, WAIT_FOR_WARMING.format(timeout=pause)).strip()
                if done:  # else no warming thread
                    warmed, phases = json.loads(done)
                time.sleep(max(0.0, pause - (time.monotonic() - started)))
            time.sleep(gap)
            out = execute(kc, KERNEL_START.format(task="read the target function"), timeout=120)
        result: dict[str, Any] = json.loads(
            next(line for line in out.splitlines() if line.startswith("{"))
        )
        result["load"] = load
        agent = server.requests[0].headers.get("user-agent", "") if server.requests else ""
        result["sender"] = (
            "nobody (the demo model)"
            if not server.requests
            else "httpx, before litellm"
            if agent.startswith("python-httpx")
            else "litellm"
        )
        result["warmed"] = warmed
        if pause:
            result["phases"] = phases  # else those the warming had reached at the first card
        return result


def row(label: str, values: list[float], unit: str = "ms") -> str:
    shown = ", ".join(f"{v:.0f}" if unit == "ms" else f"{v:.2f}" for v in values)
    return f"  {label:<44} median {statistics.median(values):8.2f} {unit}   ({shown})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2, help="kernels per figure")
    parser.add_argument("--files", type=int, default=1000, help="files in the workspace")
    parser.add_argument("--pause", type=float, default=20.0, help="seconds after %%load_ext")
    parser.add_argument(
        "--only", choices=("cold", "paused"), help="measure %%grinta only cold or only paused"
    )
    parser.add_argument(
        "--model",
        default="openai/test",
        help="the model the server plays: openai/test is unknown to litellm, so its first "
        "call goes out before litellm is loaded (agent/models/early.py); a name litellm "
        "knows (openai/gpt-4o-mini) waits for litellm, as every first call did before; "
        "demo: the demo model, no model configured (its kernel's warming leaves litellm out)",
    )
    parser.add_argument(
        "--gaps",
        default="",
        help="also run %%grinta these seconds after %%load_ext, comma-separated (a user "
        "typing the task), whatever the warming has reached: e.g. 1,2,3",
    )
    args = parser.parse_args()
    gaps = [float(g) for g in args.gaps.split(",") if g.strip()]
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}; repo {REPO}; {args.model}")

    imports = [fresh(IMPORT) for _ in range(5)]
    print(row("import grinta_jupyter (fresh interpreter)", [t for t, _ in imports]))
    print(f"    heavy modules after it: {imports[-1][1] or 'none'}")
    loads = [fresh(SHELL_LOAD) for _ in range(5)]
    print(row("%load_ext in a fresh InteractiveShell", [t for t, _ in loads]))
    print(f"    heavy modules right after it: {loads[-1][1] or 'none'}")

    files = python_files(args.files)
    with tempfile.TemporaryDirectory() as tmp:
        size = make_workspace(Path(tmp), files)
    print(f"workspace: {len(files) + 1} files, {size / 1e6:.1f} MB of site-packages .py")
    kernel_loads: list[float] = []
    for label, arguments in FIRST_CALLS.items():
        pauses = {"cold": (0.0,), "paused": (args.pause,)}.get(args.only or "", (0.0, args.pause))
        for pause in pauses:
            results = [
                first_card(files, arguments, pause, model=args.model) for _ in range(args.runs)
            ]
            kernel_loads += [r["load"] for r in results]
            when = "cold" if pause == 0 else f"paused {pause:g} s"
            kinds = {r["kind"] + (" (refused)" if r["error"] else "") for r in results}
            cards = [r["card"] for r in results]
            print(row(f"%grinta to first card, {label}, {when}", cards, "s"))
            print(f"    goal 1.5 s: {'met' if max(cards) <= 1.5 else 'not met'}")
            print(f"    first request sent by: {', '.join(sorted({r['sender'] for r in results}))}")
            print(
                row("    of which the %grinta cell itself", [r["cell"] for r in results], "s")
                + f"   {', '.join(sorted(kinds))}"
            )
            warmed = [r["warmed"] for r in results if r["warmed"] is not None]
            if warmed:
                print(row("    warming ended after the load_ext cell", warmed, "s"))
            for phase in ("imports", "model", "tokens"):
                ended = [r["phases"][phase] for r in results if phase in r["phases"]]
                if ended:
                    print(row(f"      its phase {phase!r} ended after it started", ended, "s"))
        for gap in gaps:
            results = [
                first_card(files, arguments, 0.0, gap, model=args.model) for _ in range(args.runs)
            ]
            kernel_loads += [r["load"] for r in results]
            cards = [r["card"] for r in results]
            print(row(f"%grinta to first card, {label}, {gap:g} s after", cards, "s"))
            print(f"    goal 1.5 s: {'met' if max(cards) <= 1.5 else 'not met'}")
    print(row("%load_ext in a real kernel", kernel_loads))


if __name__ == "__main__":
    main()
