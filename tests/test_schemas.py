"""The model-facing schema is part of the prompt: any change must show up as a diff here.

To accept an intended change: GRINTA_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_schemas.py
"""

from __future__ import annotations

import json
import os
import time
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


def test_the_encoding_loads_once_when_two_threads_ask_together(monkeypatch):
    """The kernel's warming and a session's first turn may ask at once: one load, and the
    process's TIKTOKEN_CACHE_DIR (pointed at litellm's copy during a load) as it was."""
    import threading

    import tiktoken

    from grinta_jupyter.tools import tokens

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "/the-users-own")
    real = tiktoken.get_encoding
    loads: list[str | None] = []

    def slow(name: str):  # type: ignore[no-untyped-def]
        loads.append(os.environ.get("TIKTOKEN_CACHE_DIR"))
        time.sleep(0.2)  # a window for the other thread
        return real(name)

    monkeypatch.setattr(tiktoken, "get_encoding", slow)
    tokens._encoding.cache_clear()
    tokens._load.cache_clear()
    try:
        got: list[object] = []
        threads = [threading.Thread(target=lambda: got.append(tokens._encoding())) for _ in "ab"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert len(loads) == 1, loads
        assert loads[0] != "/the-users-own"  # litellm's folder, during the load
        assert got[0] is got[1]
        assert os.environ["TIKTOKEN_CACHE_DIR"] == "/the-users-own"
        assert tokens.count_tokens("hello world") == 2
    finally:
        tokens._encoding.cache_clear()
        tokens._load.cache_clear()
