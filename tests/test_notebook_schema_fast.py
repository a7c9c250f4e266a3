"""A notebook edit is checked against nbformat's schema without importing nbformat.

``import nbformat`` imports jsonschema, whose format checkers import rfc3987-syntax, which
builds its grammars at import: 2.7-2.9 s of processor here before the first notebook edit
of a process could be staged. A valid notebook is now checked with fastjsonschema against
nbformat's own schema files (``notebook_checks._passes_the_schema``); whatever that does not
pass goes to nbformat as before. These tests hold the two to the same verdicts.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grinta_jupyter.runtime import notebook_checks
from grinta_jupyter.runtime.notebook_checks import validate_json

REPO = Path(__file__).resolve().parent.parent


def _notebook(minor: int = 5) -> dict[str, Any]:
    cells: list[dict[str, Any]] = [
        {
            "cell_type": "code",
            "execution_count": 1,
            "metadata": {},
            "outputs": [{"output_type": "stream", "name": "stdout", "text": ["hi\n"]}],
            "source": ["print('hi')"],
        },
        {"cell_type": "markdown", "metadata": {}, "source": "# Title"},
        {"cell_type": "raw", "metadata": {}, "source": ""},
    ]
    if minor >= 5:
        for number, cell in enumerate(cells):
            cell["id"] = f"cell-{number}"
    return {"nbformat": 4, "nbformat_minor": minor, "metadata": {}, "cells": cells}


def _nbformat_passes(data: Any) -> bool:
    try:
        nbformat.validate(nbformat.from_dict(copy.deepcopy(data)), version=4)
    except Exception:  # noqa: BLE001 - any refusal
        return False
    return True


def test_a_valid_notebook_is_checked_without_importing_nbformat() -> None:
    texts = [json.dumps(_notebook(minor)) for minor in range(6)]
    texts.append((REPO / "notebooks" / "06-notebooks-and-kernels.ipynb").read_text())
    script = (
        "import json, sys\n"
        "from grinta_jupyter.runtime.notebook_checks import validate_json\n"
        "texts = json.loads(sys.stdin.read())\n"
        "print([validate_json(t, 'a.ipynb') for t in texts])\n"
        "print(sorted(m for m in ('nbformat', 'jsonschema', 'rfc3987_syntax') if m in sys.modules))\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    verdicts, imported = ran.stdout.splitlines()
    assert verdicts == str([None] * len(texts))
    assert imported == "[]"


def _mutations() -> list[tuple[str, Any]]:
    cases: list[tuple[str, Any]] = []

    def case(name: str, change: Any, minor: int = 5) -> None:
        data = _notebook(minor)
        change(data)
        cases.append((name, data))

    case("valid", lambda d: None)
    case("valid 4.4", lambda d: None, minor=4)
    case("valid 4.0", lambda d: None, minor=0)
    case("no outputs on a code cell", lambda d: d["cells"][0].pop("outputs"))
    case("no source", lambda d: d["cells"][1].pop("source"))
    case("source a number", lambda d: d["cells"][1].update(source=3))
    case("outputs on markdown", lambda d: d["cells"][1].update(outputs=[]))
    case("unknown cell type", lambda d: d["cells"][2].update(cell_type="sql"))
    case("execution count a string", lambda d: d["cells"][0].update(execution_count="1"))
    case("an unknown top-level key", lambda d: d.update(extra=1))
    case("metadata a list", lambda d: d.update(metadata=[]))
    case("cells an object", lambda d: d.update(cells={}))
    case(
        "an output of no known type", lambda d: d["cells"][0]["outputs"][0].update(output_type="x")
    )
    case("a stream with no name", lambda d: d["cells"][0]["outputs"][0].pop("name"))
    case("an id in a 4.4 notebook", lambda d: d["cells"][0].update(id="abc"), minor=4)
    case("an id with a space", lambda d: d["cells"][0].update(id="a b"))
    case("kernelspec without a name", lambda d: d["metadata"].update(kernelspec={"x": 1}))
    case("a future minor with unknown keys", lambda d: d.update(extra=1), minor=99)
    return cases


@pytest.mark.parametrize(("name", "data"), _mutations(), ids=[n for n, _ in _mutations()])
def test_the_fast_check_passes_only_what_nbformat_passes(name: str, data: Any) -> None:
    fast = notebook_checks._passes_the_schema(copy.deepcopy(data))
    by_nbformat = _nbformat_passes(data)
    if fast:
        assert by_nbformat, f"{name}: passed the fast check, refused by nbformat"
    # The verdict of a whole check is nbformat's, whichever way it went.
    error = validate_json(json.dumps(data), "a.ipynb")
    assert (error is None) == by_nbformat, (name, error)
    if data["nbformat_minor"] <= 5 and by_nbformat:
        assert fast, f"{name}: valid, but not passed by the fast check"


def test_a_future_minor_or_another_validator_goes_to_nbformat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert not notebook_checks._passes_the_schema(_notebook(99))
    monkeypatch.setenv("NBFORMAT_VALIDATOR", "jsonschema")
    assert not notebook_checks._passes_the_schema(_notebook(5))
    assert validate_json(json.dumps(_notebook(5)), "a.ipynb") is None


def test_every_notebook_shipped_gets_nbformat_s_verdict() -> None:
    found = [*REPO.glob("notebooks/*.ipynb"), *REPO.glob("grinta_jupyter/samples/**/*.ipynb")]
    assert len(found) >= 5
    for path in found:
        data = json.loads(path.read_text(encoding="utf-8"))
        assert notebook_checks._passes_the_schema(data) == _nbformat_passes(data), path


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_FIELDS = ["cell_type", "source", "metadata", "outputs", "execution_count", "id", "attachments"]


@settings(max_examples=300, deadline=None)
@given(cell=st.integers(0, 2), field=st.sampled_from(_FIELDS), value=_JSON)
def test_any_value_in_any_cell_field_gets_nbformat_s_verdict(
    cell: int, field: str, value: Any
) -> None:
    data = _notebook(5)
    data["cells"][cell][field] = value
    if notebook_checks._passes_the_schema(copy.deepcopy(data)):
        assert _nbformat_passes(data), (cell, field, value)
