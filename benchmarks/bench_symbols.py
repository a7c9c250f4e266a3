"""Symbol index figures: cold index vs universal-ctags, incremental refresh, resolve latency.

Run: ``python benchmarks/bench_symbols.py [--runs N] [--node DIR] [--throughput]`` (not a test;
prints figures).

Session figures (always): on a 10,000-file Python tree (site-packages copies), the
index as the runtime builds it (``SymbolIndex(root, list_files=Workspace(root).files)``):
the first resolution of a cold session next to ``ctags -R`` over the same tree, how long
a second session takes to be ready (the persisted index under ``.grinta/``), and what
the freshness check costs per symbol call on an unchanged tree, plus a check that an
outside same-size edit between two calls is seen. Then second sessions alone, ``--runs``
times each (min and median: a shared machine is noisy): ``refresh()`` first, ``resolve``
first (as a symbol tool call starts a session), and after an outside edit since the
store was written.

Throughput figures (``--throughput``):

Trees:
- Python: every ``.py`` file of this interpreter's site-packages, copied to a
  temp dir (the incremental phase edits a file; the venv is never touched).
- JS/TS: ``.js/.mjs/.cjs/.ts/.tsx`` under ``--node`` (default /tmp/bench-node,
  filled with ``npm install rxjs zod date-fns three @types/node lodash-es
  typeorm @angular/core``).

Each measurement runs in a fresh subprocess so its peak RSS (``VmHWM``) is its
own; the index's worker processes are reported separately (children, ``ru_maxrss``).
ctags' peak is ``ru_maxrss`` from ``wait4``, which Linux keeps across exec: it is at least
the peak of the Python process that started it, an upper bound.
Files larger than the index's MAX_FILE_BYTES are left out of both tools.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from grinta_jupyter.code.index import MAX_FILE_BYTES, SymbolIndex  # noqa: E402
from grinta_jupyter.runtime.workspace import Workspace  # noqa: E402

PY_SUFFIXES = (".py",)
JS_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".tsx")


def list_tree(root: Path, suffixes: tuple[str, ...]) -> list[str]:
    files = []
    for directory, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            if name.endswith(suffixes):
                path = Path(directory, name)
                if path.is_file() and path.stat().st_size <= MAX_FILE_BYTES:
                    files.append(path.relative_to(root).as_posix())
    return files


def tree_bytes(root: Path, files: list[str]) -> int:
    return sum((root / f).stat().st_size for f in files)


def warm(root: Path, files: list[str]) -> None:
    for f in files:
        (root / f).read_bytes()


# --- phases (each runs in its own process) ------------------------------------------


def own_peak_mb() -> float:
    """This process's peak resident memory (VmHWM). Not ``ru_maxrss``: Linux carries the peak
    of the process that started this one across exec, and the benchmark's own can be larger."""
    try:
        status = Path("/proc/self/status").read_text()
        return int(status.split("VmHWM:")[1].split()[0]) / 1024
    except (OSError, IndexError, ValueError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def phase_index(root: Path, suffixes: tuple[str, ...], workers: int) -> dict:
    files = list_tree(root, suffixes)
    index = SymbolIndex(root, list_files=lambda: files, workers=workers)
    started = time.perf_counter()
    parsed = index.refresh()
    cold = time.perf_counter() - started
    symbols = index.symbols()
    figures = {
        "files": parsed,
        "symbols": len(symbols),
        "seconds": cold,
        "rss_mb": own_peak_mb(),
        "children_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    }
    # Incremental: edit one mid-sized file, refresh just it, then the whole tree.
    target = sorted(files, key=lambda f: (root / f).stat().st_size)[len(files) // 2]
    path = root / target
    original = path.read_bytes()
    try:
        path.write_bytes(original + b"\n\n" + _new_definition(target))
        started = time.perf_counter()
        one = index.refresh([target])
        figures["refresh_one_ms"] = (time.perf_counter() - started) * 1000
        path.write_bytes(original + b"\n\n" + _new_definition(target, "again"))
        started = time.perf_counter()
        full = index.refresh()
        figures["refresh_full_ms"] = (time.perf_counter() - started) * 1000
        figures["refreshed_files"] = [one, full]
    finally:
        path.write_bytes(original)
        index.refresh([target])
    figures.update(_resolve_latency(index, symbols))
    return figures


def _new_definition(path: str, suffix: str = "") -> bytes:
    if path.endswith(".py"):
        return f"def bench_added{suffix}():\n    return 1\n".encode()
    return f"export function benchAdded{suffix}() {{\n  return 1;\n}}\n".encode()


def _resolve_latency(index: SymbolIndex, symbols: list) -> dict:
    rng = random.Random(7)
    picks = rng.sample(symbols, min(2000, len(symbols)))
    addresses = []
    for i, s in enumerate(picks):
        addresses.append(
            (s.qualname, s.name, f"{s.path}::{s.qualname}", s.qualname.rpartition(".")[2] + "x")[
                i % 4
            ]
        )
    times = []
    for address in addresses:
        started = time.perf_counter()
        index.resolve(address)
        times.append((time.perf_counter() - started) * 1000)
    found = sorted(t for t, a in zip(times, addresses, strict=True) if not a.endswith("x"))
    missing = sorted(t for t, a in zip(times, addresses, strict=True) if a.endswith("x"))

    def pct(values: list[float], q: float) -> float:
        return values[min(len(values) - 1, int(len(values) * q))] if values else 0.0

    return {
        "resolve_p50_ms": pct(found, 0.5),
        "resolve_p95_ms": pct(found, 0.95),
        "resolve_max_ms": found[-1] if found else 0.0,
        "resolve_not_found_p50_ms": pct(missing, 0.5),
        "resolve_not_found_p95_ms": pct(missing, 0.95),
        "resolve_samples": len(times),
    }


def phase_ctags(root: Path, suffixes: tuple[str, ...]) -> dict:
    files = list_tree(root, suffixes)
    languages = "Python" if suffixes == PY_SUFFIXES else "JavaScript,TypeScript"
    with tempfile.TemporaryDirectory() as tmp:
        listing = Path(tmp, "files.txt")
        listing.write_text("\n".join(files) + "\n")
        tags = Path(tmp, "tags")
        started = time.perf_counter()
        proc = subprocess.Popen(
            [
                "ctags",
                f"--languages={languages}",
                "--fields=+nK",
                "-L",
                str(listing),
                "-f",
                str(tags),
            ],
            cwd=root,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        lines = sum(1 for line in tags.open(errors="replace") if not line.startswith("!_"))
    return {
        "files": len(files),
        "tags": lines,
        "seconds": seconds,
        "rss_mb": usage.ru_maxrss / 1024,
        "status": status,
    }


def phase_agreement(root: Path) -> dict:
    sys.path.insert(0, str(REPO / "tests" / "code"))
    from test_code_python_agreement import agreement  # type: ignore[import-not-found]

    files = [root / f for f in list_tree(root, PY_SUFFIXES)]
    started = time.perf_counter()
    figures = agreement(root, files)
    figures["seconds"] = time.perf_counter() - started
    return figures


# --- session figures (each phase in its own process) -----------------------------

SESSION_FILES = 10_000
# Looked up first in a cold session: a class defined once, named in 33 of the files.
COLD_NAME = "ClientSession"
# Then the worst case: a name in most files (and the one the edit check renames).
COMMON_NAME = "__init__"


def session_index(root: Path) -> SymbolIndex:
    """The index as the runtime makes it (persisted where this version can persist it)."""
    options = {"persist": True} if "persist" in inspect.signature(SymbolIndex).parameters else {}
    return SymbolIndex(root, list_files=Workspace(root).files, **options)


def phase_session_cold(root: Path) -> dict:
    """A cold session: the first resolution, then the time until the whole index is ready."""
    started = time.perf_counter()
    index = session_index(root)
    resolution = index.resolve(COLD_NAME)
    first = time.perf_counter() - started
    common = index.resolve(COMMON_NAME)
    second = time.perf_counter() - started
    index.refresh()  # waits for a background build, if any
    ready = time.perf_counter() - started
    close = getattr(index, "close", None)
    if close is not None:
        close()  # writes the persisted index, if the index keeps one
    return {
        "first_s": first,
        "common_s": second - first,
        "common_matches": len(common.matches),
        "ready_s": ready,
        "matches": len(resolution.matches),
    }


def phase_session_warm(root: Path) -> dict:
    """A second session: ready (built and checked fresh) and its first resolution."""
    started = time.perf_counter()
    index = session_index(root)
    parsed = index.refresh()
    ready = time.perf_counter() - started
    resolution = index.resolve(COLD_NAME)
    first = time.perf_counter() - started
    figures: dict = {
        "ready_s": ready,
        "first_s": first,
        "parsed": parsed,
        "matches": len(resolution.matches),
    }
    figures.update(_freshness(root, index))
    return figures


def phase_session_ready(root: Path, first: str) -> dict:
    """A second session's start alone: ``refresh()`` first (the index ready and checked
    fresh), or ``resolve`` first, as a symbol tool call makes it."""
    started = time.perf_counter()
    index = session_index(root)
    got = index.refresh() if first == "refresh" else len(index.resolve(COLD_NAME).matches)
    return {"seconds": time.perf_counter() - started, "parsed_or_matches": got}


def _freshness(root: Path, index: SymbolIndex) -> dict:
    """Per-call cost on an unchanged tree (``refresh()`` then ``resolve``, as a tool call
    does), and whether a same-size outside edit between two calls is seen."""
    times, resolves = [], []
    for _ in range(50):
        started = time.perf_counter()
        index.refresh()
        between = time.perf_counter()
        index.resolve(COLD_NAME)
        times.append((between - started) * 1000)
        resolves.append((time.perf_counter() - between) * 1000)
    times.sort()
    resolves.sort()
    target = next(s.path for s in index.resolve(COMMON_NAME).matches)
    path = root / target
    original = path.read_bytes()
    renamed = original.replace(b"__init__", b"__tini__", 1)  # same size, same mtime tick
    try:
        path.write_bytes(renamed)
        started = time.perf_counter()
        index.refresh()
        seen = all(s.path != target for s in index.resolve(COMMON_NAME).matches) or (
            original.count(b"def __init__") > 1
        )
        seen = seen and any(s.path == target for s in index.resolve("__tini__").matches)
        after_edit = (time.perf_counter() - started) * 1000
    finally:
        path.write_bytes(original)
    return {
        "check_p50_ms": times[len(times) // 2],
        "check_max_ms": times[-1],
        "resolve_p50_ms": resolves[len(resolves) // 2],
        "edit_seen": seen,
        "after_edit_ms": after_edit,
    }


def phase_ctags_r(root: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        tags = Path(tmp, "tags")
        started = time.perf_counter()
        subprocess.run(
            ["ctags", "-R", "--languages=Python", "--exclude=.grinta", "-f", str(tags), "."],
            cwd=root,
            check=True,
        )
        return {"seconds": time.perf_counter() - started}


def build_session_tree(site: Path, dest: Path) -> int:
    """Copy the first SESSION_FILES ``.py`` files of ``site`` (path order) to ``dest``."""
    files = list_tree(site, PY_SUFFIXES)[:SESSION_FILES]
    for f in files:
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(site / f, dest / f)
    return len(files)


def _spread(values: list[float]) -> str:
    values = sorted(values)
    return f"min {values[0]:.3f} s, median {values[len(values) // 2]:.3f} s"


def report_warm_starts(root: Path, attempt: int, runs: int) -> None:
    """Second sessions again, ``runs`` times each (a shared machine is noisy): refresh
    first, resolve first, and after an outside edit since the store was written."""
    ready = [run_phase("session-ready", str(root), "refresh")["seconds"] for _ in range(runs)]
    first = [run_phase("session-ready", str(root), "resolve")["seconds"] for _ in range(runs)]
    target = root / sorted(p for p in os.listdir(root) if p.endswith(".py"))[0]
    edited = []
    original = target.read_bytes()
    try:
        for i in range(runs):
            target.write_bytes(original + f"\n\ndef bench_edit_{i}():\n    pass\n".encode())
            edited.append(run_phase("session-ready", str(root), "refresh")["seconds"])
    finally:
        target.write_bytes(original)
    print(
        f"[{attempt}] second session x{runs} (load {os.getloadavg()[0]:.2f}): "
        f"ready {_spread(ready)}; resolve first {_spread(first)}; "
        f"after an outside edit ready {_spread(edited)}"
    )


def report_session(root: Path, count: int, runs: int = 1) -> None:
    print(f"\n== session figures: {count} .py files ({root}); load {os.getloadavg()[0]:.2f}")
    for attempt in (1, 2):
        shutil.rmtree(root / ".grinta", ignore_errors=True)
        cold = run_phase("session-cold", str(root))
        line = (
            f"[{attempt}] cold session: first resolution of {COLD_NAME!r} "
            f"{cold['first_s']:.2f} s ({cold['matches']} matches), then {COMMON_NAME!r} "
            f"{cold['common_s']:.2f} s ({cold['common_matches']} matches), whole index ready "
            f"{cold['ready_s']:.2f} s"
        )
        if ctags_available():
            c = run_phase("ctags-r", str(root))
            line += f"; ctags -R {c['seconds']:.2f} s (first/ctags {cold['first_s'] / c['seconds']:.2f}x)"
        print(line)
        warm = run_phase("session-warm", str(root))
        print(
            f"[{attempt}] second session: ready {warm['ready_s']:.3f} s "
            f"(re-parsed {warm['parsed']} files), first resolution {warm['first_s']:.3f} s"
        )
        print(
            f"[{attempt}] freshness check per call, unchanged tree (refresh()): "
            f"p50 {warm['check_p50_ms']:.2f} ms, max {warm['check_max_ms']:.2f} ms "
            f"(then resolve {COLD_NAME!r}: p50 {warm['resolve_p50_ms']:.1f} ms); "
            f"outside same-size edit seen: {warm['edit_seen']} ({warm['after_edit_ms']:.1f} ms)"
        )
        if runs > 1:
            report_warm_starts(root, attempt, runs)


# --- driver -----------------------------------------------------------------------------


def run_phase(*args: str) -> dict:
    result = subprocess.run(
        [sys.executable, __file__, "--phase", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def ctags_available() -> bool:
    try:
        out = subprocess.run(["ctags", "--version"], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        return False
    return "Universal Ctags" in out.stdout


def report(label: str, root: Path, suffixes: tuple[str, ...]) -> None:
    files = list_tree(root, suffixes)
    size_mb = tree_bytes(root, files) / 1e6
    warm(root, files)
    print(f"\n== {label}: {len(files)} files, {size_mb:.1f} MB ({root})")
    tag = ",".join(suffixes)
    runs = {}
    for workers in (2, 1):
        runs[workers] = run_phase("index", str(root), tag, str(workers))
        r = runs[workers]
        print(
            f"grinta index, {workers} process(es): {r['seconds']:.1f} s, "
            f"{size_mb / r['seconds']:.1f} MB/s, {r['files']} files, {r['symbols']} symbols, "
            f"peak RSS {r['rss_mb']:.0f} MB (workers {r['children_rss_mb']:.0f} MB)"
        )
    r = runs[2]
    print(
        f"incremental after one edit: refresh([path]) {r['refresh_one_ms']:.1f} ms, "
        f"full refresh() {r['refresh_full_ms']:.0f} ms (re-parsed {r['refreshed_files']})"
    )
    print(
        f"resolve ({r['resolve_samples']} addresses): p50 {r['resolve_p50_ms']:.3f} ms, "
        f"p95 {r['resolve_p95_ms']:.3f} ms, max {r['resolve_max_ms']:.1f} ms; "
        f"not found (with suggestions): p50 {r['resolve_not_found_p50_ms']:.1f} ms, "
        f"p95 {r['resolve_not_found_p95_ms']:.1f} ms"
    )
    if ctags_available():
        c = run_phase("ctags", str(root), tag)
        print(
            f"universal-ctags (1 process): {c['seconds']:.1f} s, {size_mb / c['seconds']:.1f} MB/s, "
            f"{c['tags']} tags, peak RSS {c['rss_mb']:.0f} MB"
        )
        print(
            f"ratio grinta/ctags: {runs[2]['seconds'] / c['seconds']:.2f}x with 2 processes, "
            f"{runs[1]['seconds'] / c['seconds']:.2f}x with 1"
        )
    else:
        print("universal-ctags not installed (apt-get install -y universal-ctags); no comparison")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--node", default="/tmp/bench-node", help="a JS/TS tree (node_modules)")
    parser.add_argument("--throughput", action="store_true", help="also the throughput figures")
    parser.add_argument(
        "--runs", type=int, default=5, help="second sessions timed again this many times"
    )
    parser.add_argument("--phase", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        name, root, *rest = args.phase
        suffixes = tuple(rest[0].split(",")) if rest and name != "session-ready" else PY_SUFFIXES
        if name == "index":
            figures = phase_index(Path(root), suffixes, int(rest[1]))
        elif name == "session-cold":
            figures = phase_session_cold(Path(root))
        elif name == "session-warm":
            figures = phase_session_warm(Path(root))
        elif name == "session-ready":
            figures = phase_session_ready(Path(root), rest[0])
        elif name == "ctags-r":
            figures = phase_ctags_r(Path(root))
        elif name == "ctags":
            figures = phase_ctags(Path(root), suffixes)
        else:
            figures = phase_agreement(Path(root))
        print(json.dumps(figures))
        return

    site = Path(sysconfig.get_paths()["purelib"])
    with tempfile.TemporaryDirectory(prefix="bench-session-") as tmp:
        tree = Path(tmp, "tree")
        report_session(tree, build_session_tree(site, tree), args.runs)
    if not args.throughput:
        return
    with tempfile.TemporaryDirectory(prefix="bench-py-") as tmp:
        copy = Path(tmp, "site-packages")
        for f in list_tree(site, PY_SUFFIXES):
            (copy / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(site / f, copy / f)
        report("Python (site-packages)", copy, PY_SUFFIXES)
        a = run_phase("agreement", str(copy))
        print(
            f"agreement with ast over every file: {a['files']} files ({a['skipped']} skipped), "
            f"{a['definitions']} defs, recall {a['recall']:.4%}, precision {a['precision']:.4%}"
        )
    node = Path(args.node)
    if node.is_dir():
        with tempfile.TemporaryDirectory(prefix="bench-js-") as tmp:
            copy = Path(tmp, "tree")
            for f in list_tree(node, JS_SUFFIXES):
                (copy / f).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(node / f, copy / f)
            report("JS/TS (node_modules)", copy, JS_SUFFIXES)
    else:
        print(f"\nno JS/TS tree at {node}; pass --node DIR")


if __name__ == "__main__":
    main()
