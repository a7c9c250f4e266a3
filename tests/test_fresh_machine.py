"""The README's main command, on a fresh machine, installs everything its demo needs.

The main command installs the package with the extras it names (``.[lab]``) and opens
the demo notebooks in JupyterLab. The demo sessions run the bundled samples' own tests
(``python -m pytest`` in a copy of raft_kv or sales), and the notebooks import what
their cells use. A module that only the test extra brings is there on a developer's
machine and missing on a user's: the demo then fails in its first minute (``No module
named pytest``, and the demo model cannot finish its fix). These tests read what the
notebooks and sample workspaces import and check that the distributions the main
command installs (the dependencies and the named extras, with everything they require,
as installed here) provide each of them.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import sys
from pathlib import Path

import pytest
from IPython.core.inputtransformer2 import TransformerManager
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from grinta_jupyter.samples.core import SAMPLES_DIR

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPO / "notebooks"
OURS = {"grinta_jupyter", "__future__"}


def main_command() -> str:
    """The README's command that starts JupyterLab (its first code block's ``jupyter lab`` line)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", readme, re.S)
    assert block, "README.md has no bash block with the main command"
    lines = [line for line in block.group(1).splitlines() if "jupyter lab" in line]
    assert len(lines) == 1, f"expected one `jupyter lab` command in README.md, found {lines}"
    return lines[0]


def extras_of(command: str) -> set[str]:
    """The extras ``pip install -e ".[a,b]"`` names in ``command``."""
    named = re.search(r'pip install -e "\.\[([^\]]*)\]"', command)
    assert named, f"the main command installs no `.[extras]`: {command}"
    return {canonicalize_name(extra) for extra in named.group(1).split(",")}


def installed_by(extras: set[str]) -> set[str]:
    """The distributions ``pip install .[extras]`` brings, as this environment resolves them."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    optional = {canonicalize_name(k): v for k, v in project["optional-dependencies"].items()}
    unknown = extras - optional.keys()
    assert not unknown, f"pyproject.toml has no extra {sorted(unknown)}"
    todo = [(Requirement(r), {""}) for r in project["dependencies"]]
    todo += [(Requirement(r), {""}) for extra in extras for r in optional[extra]]
    seen: set[str] = set()
    while todo:
        requirement, context = todo.pop()
        if requirement.marker and not any(
            requirement.marker.evaluate({"extra": extra}) for extra in context
        ):
            continue
        name = canonicalize_name(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            raise AssertionError(
                f"{name} (required by the main command) is not installed here: "
                'install with `pip install -e ".[lab,test]"`'
            ) from None
        wanted = {""} | {canonicalize_name(extra) for extra in requirement.extras}
        todo += [(Requirement(r), wanted) for r in requires]
    return seen


def imports_in(source: str) -> set[str]:
    """The top-level modules a Python source (or an IPython cell, magics and all) imports."""
    tree = ast.parse(TransformerManager().transform_cell(source))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def code_cells(notebook: Path) -> list[str]:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]


def third_party(modules: set[str], local: frozenset[str] | set[str] = frozenset()) -> set[str]:
    """The modules neither the standard library, grinta nor the workspace (``local``) provides."""
    return {m for m in modules if m not in sys.stdlib_module_names and m not in OURS | local}


def missing_from(installed: set[str], modules: set[str]) -> dict[str, list[str]]:
    """The modules no installed distribution provides, with the distributions that would."""
    providers = importlib.metadata.packages_distributions()
    missing = {}
    for module in sorted(modules):
        dists = {canonicalize_name(d) for d in providers.get(module, [])}
        assert dists, f"no distribution here provides {module!r}"
        if not dists & installed:
            missing[module] = sorted(dists)
    return missing


def test_the_main_command_installs_what_the_demo_notebooks_import() -> None:
    installed = installed_by(extras_of(main_command()))
    needed: dict[str, set[str]] = {}
    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        for source in code_cells(notebook):
            for module in third_party(imports_in(source)):
                needed.setdefault(module, set()).add(notebook.name)
    assert {"IPython", "matplotlib"} <= needed.keys()  # the check reads real imports
    missing = missing_from(installed, set(needed))
    assert not missing, {m: (sorted(needed[m]), d) for m, d in missing.items()}


def test_the_main_command_installs_what_the_sample_workspaces_run() -> None:
    """A demo session runs the copy's own tests (``python -m pytest``) and notebooks."""
    installed = installed_by(extras_of(main_command()))
    needed: dict[str, set[str]] = {}
    for workspace in sorted(p for p in SAMPLES_DIR.iterdir() if (p / "pyproject.toml").is_file()):
        local = {p.stem for p in workspace.iterdir()} | {"conftest", "tests"}
        sources = [p.read_text(encoding="utf-8") for p in workspace.rglob("*.py")]
        for notebook in workspace.rglob("*.ipynb"):
            sources += code_cells(notebook)
        for source in sources:
            for module in third_party(imports_in(source), local):
                needed.setdefault(module, set()).add(workspace.name)
    assert "pytest" in needed  # raft_kv's suite is pytest's
    missing = missing_from(installed, set(needed))
    assert not missing, {m: (sorted(needed[m]), d) for m, d in missing.items()}


def test_the_main_command_opens_a_demo_notebook_as_root() -> None:
    """Guard: the README opens a notebook that exists, and as root (--allow-root) too."""
    command = main_command()
    opened = re.search(r"jupyter lab (.*)$", command)
    assert opened
    words = opened.group(1).split()
    assert "--allow-root" in words
    notebooks = [w for w in words if w.endswith(".ipynb")]
    assert notebooks and all((REPO / n).is_file() for n in notebooks), notebooks


@pytest.mark.parametrize("sample", ["raft_kv", "sales"])
def test_a_demo_copy_next_to_the_notebooks_is_not_collected_by_the_test_command(
    tmp_path: Path, sample: str
) -> None:
    """``%grinta fix the wrong total in the sales notebook`` typed in the quickstart copies
    the sales sample to notebooks/sales; the test command then collected its planted bug
    (its tests and its notebook under nbval), and git offered it as a new folder."""
    import shutil
    import subprocess

    from grinta_jupyter.samples.tasks import copy_workspace

    notebooks = tmp_path / "notebooks"
    shutil.copytree(  # as committed: without the demo copies an earlier run made there
        REPO / "notebooks", notebooks, ignore=shutil.ignore_patterns("raft_kv*", "sales*")
    )
    copy_workspace(sample, notebooks / sample)
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", str(notebooks)],
        cwd=REPO,
        # with nbval, as the test command runs (conftest.py keeps plugins out of other runs)
        env={k: v for k, v in os.environ.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert f"notebooks/{sample}/" not in listed.stdout, listed.stdout
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", f"notebooks/{sample}/x.py"],
        cwd=REPO,
    )
    assert ignored.returncode == 0, f"git would offer notebooks/{sample}/ as new"
