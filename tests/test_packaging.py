"""Installing from a checkout runs no Node.js and leaves the checkout as it was.

The JupyterLab extension and the card bundle are built and committed
(tests/test_labextension.py checks they match their sources); hatch_build.py
puts them in the wheel as they are and runs npm only when they are stale. Each
test installs a copy of this checkout (its tracked and new files, committed in
a scratch git repository) with an ``npm`` that records its calls first on PATH.
The build backend comes from the test's own environment (``--no-build-isolation``),
so nothing is downloaded.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RECORDER = """#!/bin/sh
echo "$(basename "$0") $*" >> "{log}"
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A git repository holding this checkout's files as they are now, committed."""
    copy = tmp_path / "checkout"
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in listed)):
        source = REPO / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            (copy / name).write_bytes(source.read_bytes())
    git(copy, "init", "-q")
    git(copy, "add", "-A")
    git(copy, "commit", "-q", "-m", "copy")
    return copy


@pytest.fixture
def npm_log(tmp_path: Path) -> Path:
    """The file an ``npm`` (and ``node``) first on PATH appends each of its calls to."""
    shims = tmp_path / "shims"
    shims.mkdir()
    log = tmp_path / "npm-calls.log"
    for name in ("npm", "node"):
        (shims / name).write_text(RECORDER.format(log=log))
        (shims / name).chmod(0o755)
    return log


def git(where: Path, *args: str) -> str:
    identity = ["-c", "user.name=test", "-c", "user.email=test@example.invalid"]
    return subprocess.run(
        ["git", *identity, *args], cwd=where, capture_output=True, text=True, check=True
    ).stdout


def install(checkout: Path, npm_log: Path, *how: str) -> Path:
    """A new virtual environment with the checkout installed ``how`` (``-e`` or nothing)."""
    venv = checkout.parent / f"venv{'-editable' if how else ''}"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    # The new environment sees this one's packages (pip, hatchling) behind its own.
    site = subprocess.run(
        [
            venv / "bin" / "python",
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "outer.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {**os.environ, "PATH": f"{npm_log.parent / 'shims'}:{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-deps"]
        + ["--no-build-isolation", "--no-index", "--disable-pip-version-check", "-q"]
        + [*how, str(checkout)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return venv


@pytest.mark.parametrize("how", [(), ("-e",)], ids=["install", "editable"])
def test_install_runs_no_node_and_leaves_the_checkout_clean(
    checkout: Path, npm_log: Path, how: tuple[str, ...]
) -> None:
    venv = install(checkout, npm_log, *how)
    assert not npm_log.exists(), npm_log.read_text()
    assert git(checkout, "status", "--porcelain", "--untracked-files=all") == ""
    # The extension is where JupyterLab looks, and the package is the checkout's.
    built = venv / "share/jupyter/labextensions/grinta-jupyter-labextension"
    assert (built / "package.json").is_file() and (built / "static").is_dir()
    where = subprocess.run(
        [venv / "bin" / "python", "-c", "import grinta_jupyter; print(grinta_jupyter.__file__)"],
        capture_output=True,
        text=True,
        cwd=checkout.parent,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(checkout if how else venv)


def test_a_stale_build_is_rebuilt_with_npm(checkout: Path, npm_log: Path) -> None:
    source = checkout / "labextension" / "src" / "index.ts"
    source.write_text(source.read_text() + "\n// edited\n")
    env = {**os.environ, "PATH": f"{npm_log.parent / 'shims'}:{os.environ['PATH']}"}
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index"]
        + ["-q", "-w", str(checkout.parent / "dist"), str(checkout)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert npm_log.read_text().splitlines() == ["npm ci", "npm run build:prod"]
