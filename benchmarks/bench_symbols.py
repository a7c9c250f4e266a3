"""Symbol index figures: cold index vs universal-ctags, incremental refresh, resolve latency.

Run: ``python benchmarks/bench_symbols.py [--node DIR]`` (not a test; prints figures).

Trees:
- Python: every ``.py`` file of this interpreter's site-packages, copied to a
  temp dir (the incremental phase edits a file; the venv is never touched).
- JS/TS: ``.js/.mjs/.cjs/.ts/.tsx`` under ``--node`` (default /tmp/bench-node,
  filled with ``npm install rxjs zod date-fns three @types/node lodash-es
  typeorm @angular/core``).

Each measurement runs in a fresh subprocess so peak RSS (``ru_maxrss``) is its
own; the index's worker processes are reported separately (children).
Files larger than the index's MAX_FILE_BYTES are left out of both tools.
"""

from __future__ import annotations

import argparse
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
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
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
    parser.add_argument("--phase", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        name, root, *rest = args.phase
        suffixes = tuple(rest[0].split(",")) if rest else PY_SUFFIXES
        if name == "index":
            figures = phase_index(Path(root), suffixes, int(rest[1]))
        elif name == "ctags":
            figures = phase_ctags(Path(root), suffixes)
        else:
            figures = phase_agreement(Path(root))
        print(json.dumps(figures))
        return

    site = Path(sysconfig.get_paths()["purelib"])
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
