"""The model-facing schema is part of the prompt: any change must show up as a diff here.

To accept an intended change: GRINTA_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_schemas.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from grinta_jupyter.tools import TOOLSETS

SNAPSHOTS = Path(__file__).parent / "snapshots" / "schemas"


def all_tools():
    for toolset_name, factory in sorted(TOOLSETS.items()):
        for spec in factory().tools.values():
            yield toolset_name, spec


@pytest.mark.parametrize(
    "toolset_name,spec", list(all_tools()), ids=lambda v: getattr(v, "name", v)
)
def test_schema_snapshot(toolset_name, spec):
    path = SNAPSHOTS / toolset_name / f"{spec.name}.json"
    current = json.dumps(spec.schema(), indent=2, sort_keys=True) + "\n"
    if os.environ.get("GRINTA_UPDATE_SNAPSHOTS"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(current)
    assert path.exists(), f"no snapshot for {spec.name}; run with GRINTA_UPDATE_SNAPSHOTS=1"
    assert current == path.read_text(), (
        f"the {spec.name} schema changed; review and update the snapshot"
    )


def test_every_argument_model_forbids_extra_fields():
    for _, spec in all_tools():
        assert spec.args.model_config.get("extra") == "forbid", spec.name


def test_the_intent_toolset_fits_the_token_budget(monkeypatch):
    from grinta_jupyter.tools import intent_toolset
    from grinta_jupyter.tools.tokens import schema_tokens

    # A cache folder without the encoding must not make tiktoken download it.
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "/nonexistent")
    assert schema_tokens(intent_toolset().schemas()) <= 800
