"""Build hook: install the committed JupyterLab extension and card bundle, running Node only if stale.

``grinta_jupyter/labextension/`` and ``grinta_jupyter/jupyter/static/card.{js,css}``
are built from ``labextension/`` by ``npm run build:prod`` and committed, so that
``pip install`` (editable or not) needs no Node.js and leaves the checkout as it
found it. The build records the fingerprint of the sources it was made from
(``source.sha256``, and the first line of each bundle: see
``labextension/scripts/source-hash.mjs``, whose hash this file computes the same way).

When the fingerprint matches the sources, nothing runs. When it does not (the
sources were edited and not rebuilt), ``npm ci`` and ``npm run build:prod``
rebuild it; without npm the committed build is used as is, with a warning
(tests/test_labextension.py fails on a stale build either way).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import warnings
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

# Keep in step with INPUTS in labextension/scripts/source-hash.mjs.
INPUTS = ("package.json", "package-lock.json", "tsconfig.json", "scripts", "src", "style")
STAMP = "grinta_jupyter/labextension/source.sha256"
BUNDLES = ("grinta_jupyter/jupyter/static/card.js", "grinta_jupyter/jupyter/static/card.css")
# What a wheel cannot do without.
ENSURED = ("grinta_jupyter/labextension/package.json", *BUNDLES)


def source_hash(root: Path) -> str:
    """The fingerprint of the extension's sources under ``root/labextension``."""
    source = root / "labextension"
    files: list[str] = []
    for name in INPUTS:
        path = source / name
        if path.is_dir():
            files += [p.relative_to(source).as_posix() for p in path.rglob("*") if p.is_file()]
        elif path.is_file():
            files.append(name)
    digest = hashlib.sha256()
    for rel in sorted(files):
        digest.update(rel.encode() + b"\0")
        # Line endings normalised, as source-hash.mjs does, so a Windows checkout agrees.
        digest.update((source / rel).read_bytes().replace(b"\r\n", b"\n"))
        digest.update(b"\0")
    return digest.hexdigest()


def stale_parts(root: Path) -> list[str]:
    """The committed build outputs not made from the sources as they are now ([] if none)."""
    current = source_hash(root)
    stale = []
    stamp = root / STAMP
    if not stamp.is_file() or stamp.read_text().strip() != current:
        stale.append(STAMP)
    banner = (
        "/* grinta card bundle, built by labextension/scripts/bundle-card.mjs from sources "
        f"{current} */"
    )
    for name in BUNDLES:
        bundle = root / name
        first = bundle.read_text(encoding="utf-8").split("\n", 1)[0] if bundle.is_file() else ""
        if first != banner:
            stale.append(name)
    return stale


class LabextensionBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Rebuilds the extension only when its committed build is stale."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root)
        if not (root / "labextension" / "package.json").is_file():
            return  # an sdist without the extension's sources: its build is what there is
        stale = stale_parts(root)
        if stale:
            self._rebuild(root, stale)
        missing = [name for name in ENSURED if not (root / name).is_file()]
        if missing:
            raise RuntimeError(f"the JupyterLab extension build is missing {', '.join(missing)}")

    def _rebuild(self, root: Path, stale: list[str]) -> None:
        npm = shutil.which("npm")
        what = f"{', '.join(stale)} not built from the current labextension/ sources"
        if npm is None:
            warnings.warn(
                f"{what}; no npm to rebuild them, so they are used as they are", stacklevel=1
            )
            return
        self.app.display_info(f"{what}: rebuilding with npm")
        for command in (["ci"], ["run", "build:prod"]):
            subprocess.run([npm, *command], cwd=root / "labextension", check=True)
