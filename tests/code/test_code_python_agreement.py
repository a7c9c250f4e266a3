"""Python symbols agree with the standard library's ``ast`` on real code.

Over a deterministic sample (every Nth file, at least 2,000 files) of the
installed site-packages, the functions and classes found by ``extract_symbols``
are compared with an ``ast`` walk as (path, qualified name, line of ``def``/``class``).
The full tree is measured by benchmarks/bench_symbols.py.
"""

from __future__ import annotations

import ast
import sysconfig
import time
from pathlib import Path

import pytest

from grinta_jupyter.code.symbols import extract_symbols

SAMPLE_FILES = 2000


def ast_definitions(tree: ast.AST) -> set[tuple[str, int]]:
    """(qualified name, line) of every def and class, nested ones included."""
    found: set[tuple[str, int]] = set()

    def walk(node: ast.AST, parts: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qualified = (*parts, child.name)
                found.add((".".join(qualified), child.lineno))
                walk(child, qualified)
            else:
                walk(child, parts)

    walk(tree, ())
    return found


def python_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if p.is_file())


def agreement(root: Path, files: list[Path]) -> dict[str, float]:
    true_positive = false_negative = false_positive = skipped = 0
    for path in files:
        source = path.read_bytes()
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            skipped += 1
            continue
        expected = {(str(path), q, line) for q, line in ast_definitions(tree)}
        found = {
            (str(path), s.qualname, s.def_line)
            for s in extract_symbols(str(path.relative_to(root)), source, "python")
            if s.kind in ("function", "method", "class")
        }
        true_positive += len(expected & found)
        false_negative += len(expected - found)
        false_positive += len(found - expected)
    return {
        "files": len(files) - skipped,
        "skipped": skipped,
        "definitions": true_positive + false_negative,
        "recall": true_positive / max(1, true_positive + false_negative),
        "precision": true_positive / max(1, true_positive + false_positive),
    }


def test_python_symbols_agree_with_ast(capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(sysconfig.get_paths()["purelib"])
    files = python_files(root)
    if len(files) < SAMPLE_FILES:
        pytest.skip(f"only {len(files)} Python files installed")
    step = max(1, len(files) // SAMPLE_FILES)
    sample = files[::step]
    started = time.perf_counter()
    figures = agreement(root, sample)
    elapsed = time.perf_counter() - started
    with capsys.disabled():
        print(
            f"\nsymbols vs ast on {figures['files']} files ({figures['definitions']} defs, "
            f"{figures['skipped']} skipped, {elapsed:.1f}s): recall {figures['recall']:.4%}, "
            f"precision {figures['precision']:.4%}"
        )
    assert figures["recall"] >= 0.995
    assert figures["precision"] >= 0.995
