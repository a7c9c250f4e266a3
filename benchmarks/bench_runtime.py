"""propose+commit latency of every edit tool on real files of several sizes.

Run: ``python benchmarks/bench_runtime.py [--repeats N] [--pause S] [--files LABEL]
[--tools NAME]`` (not a test; prints figures; ``--files py 2896`` or ``--tools create``
keep the rows whose label or name contains the text). ``--pause 0.1`` leaves a tenth of a second between calls, as the
model's turn does in a session: a commit re-indexes the file it wrote in a thread,
which then has time to finish; back to back (the default), the next call shares the
machine with it.

Files are copies of this interpreter's standard-library modules (about 300,
1,500, 3,000 and 6,400 lines) and one TypeScript file of this repository, so the
edits land in real code with real decorators, docstrings and nesting. Each
tool and file gets a fresh workspace whose symbol index is built first (as in
a session, where ``search`` and ``read`` build it, so every commit pays for
keeping it current); one warm-up call precedes the timed ones. A sample is
``propose`` plus ``commit``: its wall time (p50, p95), and the CPU time of the
calling thread (``cpu p50``), which other processes on the machine inflate much
less; the load average is printed at the start and the end.

The edits:

- ``replace_string``: a comment appended to one function's definition line;
- ``multiedit``: the same on two functions of the file, in one call;
- ``edit_symbols`` ``replace``: a function re-sent with a comment on its first line;
  ``insert_after``: a small new function after one; ``delete``: a function removed;
- ``create``: a new file holding the whole module.

``--no-halves`` compiles large texts whole in this process, as releases before the helper
process did (``runtime/halves.py``), to see what it saves. ``--no-ahead`` sends the helper
its half only when the syntax check asks, after the diff and the content guards, as
releases before stop 38 did (``halves.ahead``), to see what starting it first saves.

Goals (issue 13): edit_symbols p95 within 2x of replace_string's on the same
file, and every tool's p95 at most 25 ms on files up to 3,000 lines.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from grinta_jupyter import Runtime  # noqa: E402
from grinta_jupyter.code.symbols import Symbol, extract_symbols  # noqa: E402

try:
    from grinta_jupyter.runtime import halves
except ImportError:  # a release before the helper process (run against a worktree of it)
    halves = None  # type: ignore[assignment]

STDLIB = Path(sysconfig.get_paths()["stdlib"])
# (label, source file, name in the workspace)
FILES = [
    ("py 326", STDLIB / "queue.py", "queue_copy.py"),
    ("py 1501", STDLIB / "dataclasses.py", "dataclasses_copy.py"),
    ("py 2896", STDLIB / "tarfile.py", "tarfile_copy.py"),
    ("py 6425", STDLIB / "_pydecimal.py", "pydecimal_copy.py"),
    ("ts 353", REPO / "labextension" / "src" / "schema.ts", "schema_copy.ts"),
]
GOAL_MAX_LINES = 3_000
GOAL_P95_MS = 25.0
GOAL_RATIO = 2.0

Call = tuple[str, dict[str, Any]]


class Workspace:
    """One file copied into a temp folder, with a runtime over it."""

    def __init__(self, source: Path, name: str) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="bench-runtime-")
        self.root = Path(self.tmp.name)
        self.name = name
        self.source = source
        shutil.copyfile(source, self.root / name)
        self.runtime = Runtime(self.root)
        outline = self.runtime.call("read", {"path": name, "outline": True})
        assert outline.ok, outline.output
        self.used: set[str] = set()  # qualified names already edited (deletes need fresh ones)

    def text(self) -> str:
        return (self.root / self.name).read_text()

    def functions(self) -> list[Symbol]:
        """Functions and methods with a unique qualified name."""
        symbols = extract_symbols(self.name, self.text().encode())
        names = collections.Counter(s.qualname for s in symbols)
        return [s for s in symbols if s.kind in ("function", "method") and names[s.qualname] == 1]

    def pick(self, k: int, fresh: bool = False) -> Symbol:
        choices = self.functions()
        if not choices:  # deleted them all (a small file, many repeats): start it over
            shutil.copyfile(self.source, self.root / self.name)
            self.runtime.symbols.refresh([self.name])
            self.used.clear()
            choices = self.functions()
        unused = [s for s in choices if s.qualname not in self.used]
        if fresh and unused:  # a small file runs out of fresh ones: any that is still there
            choices = unused
        symbol = choices[(k * 7) % len(choices)]
        self.used.add(symbol.qualname)
        return symbol

    def close(self) -> None:
        self.tmp.cleanup()


def _comment(path: str) -> str:
    return "  #" if path.endswith(".py") else "  //"


def _marked(ws: Workspace, symbol: Symbol, mark: str) -> dict[str, Any]:
    """A replace_string edit appending a comment to ``symbol``'s definition line.

    The old string runs from that line over as many lines as make it unique.
    """
    text = ws.text()
    lines = text.split("\n")
    first = symbol.def_line - 1
    end = first + 1
    while text.count("\n".join(lines[first:end])) > 1:
        end += 1
    old = "\n".join(lines[first:end])
    new = "\n".join([lines[first] + f"{_comment(ws.name)} {mark}", *lines[first + 1 : end]])
    return {"path": ws.name, "old_string": old, "new_string": new}


def replace_string(ws: Workspace, k: int) -> Call:
    return "replace_string", _marked(ws, ws.pick(k), f"edit {k}")


def multiedit(ws: Workspace, k: int) -> Call:
    first, second = ws.pick(k), ws.pick(k + 1)
    if second == first:
        second = ws.pick(k + 2)
    return "multiedit", {"edits": [_marked(ws, s, f"m{k}") for s in (first, second)]}


def symbol_replace(ws: Workspace, k: int) -> Call:
    symbol = ws.pick(k)
    text = ws.text()
    lines = text.split("\n")[symbol.start_line - 1 : symbol.end_line]
    lines[0] += f"{_comment(ws.name)} replaced {k}"
    return "edit_symbols", {
        "edits": [
            {
                "symbol": f"{ws.name}::{symbol.qualname}",
                "action": "replace",
                "new_source": "\n".join(lines),
            }
        ]
    }


def symbol_insert_after(ws: Workspace, k: int) -> Call:
    symbol = ws.pick(k)
    if ws.name.endswith(".py"):
        new = f"def bench_added_{k}(self=None):\n    return {k}\n"
    elif symbol.kind == "method":
        new = f"benchAdded{k}(): number {{\n  return {k};\n}}\n"
    else:
        new = f"function benchAdded{k}(): number {{\n  return {k};\n}}\n"
    return "edit_symbols", {
        "edits": [
            {"symbol": f"{ws.name}::{symbol.qualname}", "action": "insert_after", "new_source": new}
        ]
    }


def symbol_delete(ws: Workspace, k: int) -> Call:
    symbol = ws.pick(k, fresh=True)
    return "edit_symbols", {
        "edits": [{"symbol": f"{ws.name}::{symbol.qualname}", "action": "delete"}]
    }


def create(ws: Workspace, k: int) -> Call:
    suffix = Path(ws.name).suffix
    return "create", {"path": f"created_{k}{suffix}", "content": ws.text()}


TOOLS: list[tuple[str, Callable[[Workspace, int], Call]]] = [
    ("replace_string", replace_string),
    ("multiedit", multiedit),
    ("edit_symbols replace", symbol_replace),
    ("edit_symbols insert_after", symbol_insert_after),
    ("edit_symbols delete", symbol_delete),
    ("create", create),
]


def measure(
    source: Path,
    name: str,
    make_call: Callable[[Workspace, int], Call],
    repeats: int,
    pause: float = 0.0,
) -> tuple[list[float], list[float]]:
    """Milliseconds per propose+commit (wall, and the calling thread's CPU), after one warm-up
    call; ``pause`` seconds between calls (untimed) stand for the model's turn that separates
    two edits in a session."""
    ws = Workspace(source, name)
    try:
        samples: list[float] = []
        cpu_samples: list[float] = []  # this thread's CPU time: what other processes do not inflate
        for k in range(repeats + 1):
            time.sleep(pause)
            tool, args = make_call(ws, k)  # built outside the timed region
            start, start_cpu = time.perf_counter(), time.thread_time()
            proposal = ws.runtime.propose(tool, args)
            observation = ws.runtime.commit(proposal)
            elapsed = (time.perf_counter() - start) * 1000
            cpu = (time.thread_time() - start_cpu) * 1000
            assert observation.ok, f"{tool} on {name}: {observation.output}"
            if k:  # k == 0 is the warm-up
                samples.append(elapsed)
                cpu_samples.append(cpu)
        return samples, cpu_samples
    finally:
        ws.close()


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20, method="inclusive")[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=20, help="timed calls per tool and file")
    parser.add_argument(
        "--pause",
        type=float,
        default=0.0,
        help="seconds between calls (a model turn: what a commit leaves to a background "
        "thread, re-indexing the written file, is done by then); 0: back to back",
    )
    parser.add_argument("--files", default="", help="only files whose label contains this")
    parser.add_argument("--tools", default="", help="only tools whose name contains this")
    parser.add_argument(
        "--no-halves",
        action="store_true",
        help="compile large texts whole, never in two halves with the helper process "
        "(runtime/halves.py): what that saves",
    )
    parser.add_argument(
        "--no-ahead",
        action="store_true",
        help="send the helper its half only when the syntax check asks (after the diff and "
        "the content guards), not before them: what starting it first saves",
    )
    options = parser.parse_args()
    repeats, pause = options.repeats, options.pause
    if options.no_ahead:
        from grinta_jupyter.tools import facade

        facade.compiling_ahead = lambda changes: contextlib.nullcontext()  # type: ignore[assignment]
        print("the helper's half: sent when the syntax check asks (--no-ahead)")
    if options.no_halves and halves is not None:
        halves.compiles = lambda text: False
        print("whole-file compiles: in this process only (--no-halves)")
    print(f"pause between calls: {pause} s; load average {os.getloadavg()[0]:.2f}")
    print(f"{'file':<10} {'tool':<26} {'p50 ms':>8} {'p95 ms':>8} {'cpu p50':>8}")
    results: dict[tuple[str, str], tuple[float, float]] = {}
    for label, source, name in FILES:
        for tool, make_call in TOOLS:
            if options.files not in label or options.tools not in tool:
                continue
            samples, cpu = measure(source, name, make_call, repeats, pause)
            results[label, tool] = statistics.median(samples), p95(samples)
            print(
                f"{label:<10} {tool:<26} {results[label, tool][0]:8.1f} {p95(samples):8.1f} "
                f"{statistics.median(cpu):8.1f}"
            )
            sys.stdout.flush()
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    report_goals(results)


def report_goals(results: dict[tuple[str, str], tuple[float, float]]) -> None:
    print()
    for label, source, _ in FILES:
        if (label, "replace_string") not in results:
            continue
        lines = source.read_text().count("\n")
        base = results[label, "replace_string"][1]
        for tool, _ in TOOLS:
            if (label, tool) not in results:
                continue
            tool_p95 = results[label, tool][1]
            if tool.startswith("edit_symbols"):
                ok = tool_p95 <= GOAL_RATIO * base
                print(
                    f"goal {label:<8} {tool:<26} p95 {tool_p95:6.1f} <= {GOAL_RATIO:.0f}x "
                    f"replace_string ({base:.1f}): {'met' if ok else 'NOT met'}"
                )
            if lines <= GOAL_MAX_LINES:
                ok = tool_p95 <= GOAL_P95_MS
                print(
                    f"goal {label:<8} {tool:<26} p95 {tool_p95:6.1f} <= {GOAL_P95_MS:.0f} ms: "
                    f"{'met' if ok else 'NOT met'}"
                )


if __name__ == "__main__":
    main()
