"""The committed JupyterLab extension build and card bundle match their sources (no Node needed).

``grinta_jupyter/labextension/`` is committed so that ``pip install`` works
without Node.js; ``npm run build:prod`` in ``labextension/`` writes
``source.sha256``, a fingerprint of the sources it was built from
(``labextension/scripts/source-hash.mjs``). This test recomputes it as ``hatch_build.py``
(the install's build hook) does, so the hook and the check cannot disagree.
The live panel's card bundle (``grinta_jupyter/jupyter/static/card.js`` and
``card.css``, built from the same sources by ``scripts/bundle-card.mjs``) names
that fingerprint on its first line.
"""

from __future__ import annotations

import json
from pathlib import Path

import grinta_jupyter
import hatch_build

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "labextension"
BUILD = REPO / "grinta_jupyter" / "labextension"
STATIC = REPO / "grinta_jupyter" / "jupyter" / "static"
REBUILD = "run `npm ci && npm run build:prod` in labextension/ (or .ci/browser-setup) and commit"


def source_hash() -> str:
    """The fingerprint as the build hook computes it (the hook that decides whether to rebuild)."""
    return hatch_build.source_hash(REPO)


def test_committed_build_matches_sources() -> None:
    stamp = BUILD / "source.sha256"
    assert stamp.is_file(), f"no labextension build: {REBUILD}"
    assert stamp.read_text().strip() == source_hash(), f"labextension build is stale: {REBUILD}"


def test_card_bundle_matches_sources() -> None:
    banner = (
        "/* grinta card bundle, built by labextension/scripts/bundle-card.mjs from sources "
        f"{source_hash()} */"
    )
    for name in ("card.js", "card.css"):
        bundle = STATIC / name
        assert bundle.is_file(), f"no card bundle {name}: {REBUILD}"
        first = bundle.read_text(encoding="utf-8").split("\n", 1)[0]
        assert first == banner, f"{name} is stale: {REBUILD}"


def test_card_bundle_is_an_anywidget_module() -> None:
    from grinta_jupyter.jupyter.card import StepCardWidget

    esm = StepCardWidget().get_state()["_esm"]
    assert "export" in esm and "render" in esm, "the bundle exports render (src/widget.ts)"


def test_build_is_complete_and_versioned_with_the_package() -> None:
    built = json.loads((BUILD / "package.json").read_text())
    assert (BUILD / built["jupyterlab"]["_build"]["load"]).is_file()
    assert built["name"] == "grinta-jupyter-labextension"
    source = json.loads((SOURCE / "package.json").read_text())
    assert source["version"] == built["version"] == grinta_jupyter.__version__, (
        "labextension/package.json's version must equal grinta_jupyter.__version__"
    )


def test_develop_install_finds_the_build() -> None:
    (paths,) = grinta_jupyter._jupyter_labextension_paths()
    assert (Path(grinta_jupyter.__file__).parent / paths["src"] / "package.json").is_file()
    assert paths["dest"] == "grinta-jupyter-labextension"
