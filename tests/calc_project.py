"""A tiny pytest project whose one bug (``add`` subtracts) makes ``test_calc.py::test_add``
fail: the guard tests' workspace."""

from __future__ import annotations

from pathlib import Path

TEST_ADD = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def calc_project(
    tmp_path: Path, *, also: dict[str, str] | None = None, tests: str = TEST_ADD
) -> Path:
    """``tmp_path/calc``: calc.py with the bug, ``tests`` as test_calc.py, the files in
    ``also``, and a pyproject.toml that keeps pytest's cache and nbval out."""
    root = tmp_path / "calc"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "test_calc.py").write_text(tests)
    for name, text in (also or {}).items():
        (root / name).write_text(text)
    (root / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\naddopts = "-p no:cacheprovider -p no:nbval"\n'
    )
    return root
