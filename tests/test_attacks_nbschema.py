"""Attacks on the fast schema check of a notebook edit (commit 0a5f42f).

``validate_json`` now accepts a notebook fastjsonschema passes against nbformat's own
schema without asking nbformat. The claim: what the fast check passes nbformat passes, so
the verdict is always nbformat's. Real inputs, the real ``Runtime``, no mocks.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import nbformat
import pytest

from grinta_jupyter.runtime import notebook_checks
from grinta_jupyter.runtime.notebook_checks import validate_json
from grinta_jupyter.tools.facade import Runtime

REPO = Path(__file__).resolve().parent.parent


def _notebook(minor: int = 5) -> dict[str, Any]:
    cells: list[dict[str, Any]] = [
        {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [], "source": "x"},
        {"cell_type": "markdown", "metadata": {}, "source": "m"},
        {"cell_type": "raw", "metadata": {}, "source": "r"},
    ]
    if minor >= 5:
        for number, cell in enumerate(cells):
            cell["id"] = f"c{number}"
    return {"nbformat": 4, "nbformat_minor": minor, "metadata": {}, "cells": cells}


def _nbformat_passes(text: str) -> bool:
    """nbformat's verdict on the JSON text (parsed afresh: no copy of ours involved)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nbformat.validate(nbformat.from_dict(json.loads(text)), version=4)
    except Exception:  # noqa: BLE001 - any refusal
        return False
    return True


def _deep(depth: int) -> str:
    return '{"a":' * depth + "0" + "}" * depth


def _deep_metadata_text(depth: int) -> str:
    data = _notebook(5)
    data["metadata"] = {"x": "@@"}
    return json.dumps(data).replace('"@@"', _deep(depth))


# -- HOLE: deeply nested metadata ---------------------------------------------------------


@pytest.mark.parametrize("depth", [600, 900])
def test_deeply_nested_metadata_gets_nbformat_s_verdict(depth: int) -> None:
    """Attack: notebook metadata nested 600-900 objects deep. json.loads parses it, the
    fast check passes it (metadata is any object), but nbformat.from_dict recurses two
    frames a level and raises RecursionError: nbformat refuses it (and nbformat.read, so
    Jupyter, cannot open the file). Before the change validate_json refused it."""
    text = _deep_metadata_text(depth)
    assert not _nbformat_passes(text)
    assert validate_json(text, "a.ipynb") is not None, "accepted what nbformat refuses"


def test_creating_a_deeply_nested_notebook_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    """The same through the runtime: the created notebook must be refused, nothing on disk
    (it is committed now, and nbformat.read of the written file raises RecursionError)."""
    rt = Runtime(tmp_path)
    proposal = rt.propose("create", {"path": "x.ipynb", "content": _deep_metadata_text(700)})
    if proposal.error is None:
        rt.commit(proposal)
    assert proposal.error is not None
    assert not (tmp_path / "x.ipynb").exists()


def test_a_cell_edit_of_a_deeply_nested_notebook_on_disk_is_refused(tmp_path: Path) -> None:
    """A notebook on disk that nbformat cannot read: a cell edit must be refused (invalid
    as it is already), and the file left as it was."""
    raw = _deep_metadata_text(700)
    (tmp_path / "nb.ipynb").write_text(raw, encoding="utf-8")
    rt = Runtime(tmp_path)
    proposal = rt.propose(
        "edit_symbols",
        {"edits": [{"symbol": "nb.ipynb::cell:c0", "action": "replace", "new_source": "y = 2"}]},
    )
    if proposal.error is None:
        rt.commit(proposal)
    assert proposal.error is not None
    assert (tmp_path / "nb.ipynb").read_text(encoding="utf-8") == raw


# -- held: odd values in every minor -------------------------------------------------------

_OUTPUTS: dict[str, Any] = {
    "stream": {"output_type": "stream", "name": "stdout", "text": "hi"},
    "stream bad name": {"output_type": "stream", "name": "foo", "text": "hi"},
    "stream text int": {"output_type": "stream", "name": "stdout", "text": 1},
    "result": {
        "output_type": "execute_result",
        "execution_count": 1,
        "data": {"text/plain": "1"},
        "metadata": {},
    },
    "result float count": {
        "output_type": "execute_result",
        "execution_count": 1.0,
        "data": {},
        "metadata": {},
    },
    "result no count": {"output_type": "execute_result", "data": {}, "metadata": {}},
    "result bad mime": {
        "output_type": "execute_result",
        "execution_count": 1,
        "data": {"notamime": "1"},
        "metadata": {},
    },
    "result mime int": {
        "output_type": "execute_result",
        "execution_count": 1,
        "data": {"text/plain": 5},
        "metadata": {},
    },
    "result json str": {
        "output_type": "execute_result",
        "execution_count": 1,
        "data": {"application/json": "x"},
        "metadata": {},
    },
    "display": {"output_type": "display_data", "data": {"image/png": "abc"}, "metadata": {}},
    "display with count": {
        "output_type": "display_data",
        "data": {},
        "metadata": {},
        "execution_count": 1,
    },
    "display transient": {
        "output_type": "display_data",
        "data": {},
        "metadata": {},
        "transient": {},
    },
    "error": {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["t"]},
    "error tb str": {"output_type": "error", "ename": "E", "evalue": "v", "traceback": "t"},
    "error extra": {"output_type": "error", "ename": "E", "evalue": "v", "traceback": [], "x": 1},
    "pyout (v3)": {"output_type": "pyout", "data": {}},
    "update_display_data": {"output_type": "update_display_data", "data": {}, "metadata": {}},
}

_CELLS: dict[str, Any] = {
    "count 1.0": lambda c: c[0].update(execution_count=1.0),
    "count 1.5": lambda c: c[0].update(execution_count=1.5),
    "count true": lambda c: c[0].update(execution_count=True),
    "count huge": lambda c: c[0].update(execution_count=10**4000),
    "count -1": lambda c: c[0].update(execution_count=-1),
    "count NaN": lambda c: c[0].update(execution_count=float("nan")),
    "count Infinity": lambda c: c[0].update(execution_count=float("inf")),
    "no count": lambda c: c[0].pop("execution_count"),
    "source list with int": lambda c: c[1].update(source=["a", 1]),
    "source unicode": lambda c: c[1].update(source="é\u2028\U0001f600\x00"),
    "source surrogate": lambda c: c[1].update(source="\ud800"),
    "source 2 MB": lambda c: c[1].update(source="x" * 2_000_000),
    "attachment": lambda c: c[1].update(attachments={"a.png": {"image/png": "abc"}}),
    "attachment int": lambda c: c[1].update(attachments={"a.png": {"image/png": 5}}),
    "attachment list": lambda c: c[1].update(attachments={"a.png": ["x"]}),
    "attachment bad mime": lambda c: c[1].update(attachments={"a.png": {"png": "x"}}),
    "attachment on raw": lambda c: c[2].update(attachments={"a": {"text/plain": "x"}}),
    "attachment on code": lambda c: c[0].update(attachments={"a": {"text/plain": "x"}}),
    "collapsed a string": lambda c: c[0]["metadata"].update(collapsed="yes"),
    "tags repeated": lambda c: c[0]["metadata"].update(tags=["a", "a"]),
    "tag with a comma": lambda c: c[0]["metadata"].update(tags=["a,b"]),
    "jupyter.source_hidden str": lambda c: c[0]["metadata"].update(jupyter={"source_hidden": "x"}),
    "execution time int": lambda c: c[0]["metadata"].update(execution={"iopub.status.busy": 5}),
    "execution time no date": lambda c: c[0]["metadata"].update(
        execution={"shell.execute_reply": "x"}
    ),
    "scrolled auto": lambda c: c[0]["metadata"].update(scrolled="auto"),
    "raw format int": lambda c: c[2]["metadata"].update(format=5),
    "raw_mimetype int": lambda c: c[2]["metadata"].update(raw_mimetype=5),
    "unknown cell key": lambda c: c[0].update(zzz=1),
    "outputs on markdown": lambda c: c[1].update(outputs=[]),
}

_TOP: dict[str, Any] = {
    "nbformat 3": lambda d: d.update(nbformat=3),
    "nbformat 5": lambda d: d.update(nbformat=5),
    "kernelspec": lambda d: d["metadata"].update(kernelspec={"name": "p", "display_name": "P"}),
    "kernelspec no name": lambda d: d["metadata"].update(kernelspec={"display_name": "P"}),
    "language_info no name": lambda d: d["metadata"].update(language_info={"x": 1}),
    "codemirror_mode int": lambda d: d["metadata"].update(
        language_info={"name": "p", "codemirror_mode": 5}
    ),
    "authors ints": lambda d: d["metadata"].update(authors=[5]),
    "title int": lambda d: d["metadata"].update(title=5),
    "orig_nbformat 0": lambda d: d["metadata"].update(orig_nbformat=0),
    "orig_nbformat str": lambda d: d["metadata"].update(orig_nbformat="3"),
    "no metadata": lambda d: d.pop("metadata"),
    "no cells": lambda d: d.pop("cells"),
    "no cells at all": lambda d: d.update(cells=[]),
    "a cell a number": lambda d: d["cells"].append(5),
    "a cell a list": lambda d: d["cells"].append([]),
    "worksheets": lambda d: d.update(worksheets=[]),
    "metadata NaN": lambda d: d["metadata"].update(x=float("nan"), y=float("-inf")),
    "metadata huge int": lambda d: d["metadata"].update(x=10**4000),
    "metadata nested 400": lambda d: d["metadata"].update(x=json.loads(_deep(400))),
}


def _cases() -> list[tuple[str, str]]:
    cases: list[tuple[str, str]] = []
    for minor in range(6):
        for name, output in _OUTPUTS.items():
            data = _notebook(minor)
            data["cells"][0]["outputs"] = [copy.deepcopy(output)]
            cases.append((f"4.{minor} output {name}", json.dumps(data)))
        for name, change in _CELLS.items():
            data = _notebook(minor)
            change(data["cells"])
            cases.append((f"4.{minor} cell {name}", json.dumps(data)))
        for name, change in _TOP.items():
            data = _notebook(minor)
            change(data)
            cases.append((f"4.{minor} {name}", json.dumps(data)))
    return cases


def test_odd_values_in_every_minor_get_nbformat_s_verdict() -> None:
    wrong = []
    for name, text in _cases():
        fast = notebook_checks._passes_the_schema(json.loads(text))
        by_nbformat = _nbformat_passes(text)
        verdict = validate_json(text, "a.ipynb")
        if fast and not by_nbformat:
            wrong.append(f"{name}: fast check passed, nbformat refuses")
        if verdict is None and not by_nbformat:
            wrong.append(f"{name}: accepted, nbformat refuses")
    assert not wrong, wrong


_TEXTS = {
    # JSON text oddities the json module accepts
    "NaN count": '{"nbformat":4,"nbformat_minor":4,"metadata":{},"cells":[{"cell_type":"code",'
    '"execution_count":NaN,"metadata":{},"outputs":[],"source":""}]}',
    "Infinity in metadata": '{"nbformat":4,"nbformat_minor":5,"metadata":{"a":Infinity,'
    '"b":-Infinity,"c":NaN},"cells":[]}',
    "1e400 count": '{"nbformat":4,"nbformat_minor":4,"metadata":{},"cells":[{"cell_type":'
    '"code","execution_count":1e400,"metadata":{},"outputs":[],"source":""}]}',
    "count 1.0": '{"nbformat":4,"nbformat_minor":4,"metadata":{},"cells":[{"cell_type":'
    '"code","execution_count":1.0,"metadata":{},"outputs":[],"source":""}]}',
    "duplicate count, last bad": '{"nbformat":4,"nbformat_minor":4,"metadata":{},"cells":[{'
    '"cell_type":"code","execution_count":1,"execution_count":"x","metadata":{},"outputs":[],'
    '"source":""}]}',
    "duplicate id, last good": '{"nbformat":4,"nbformat_minor":5,"metadata":{},"cells":[{'
    '"id":"a b","id":"a","cell_type":"raw","metadata":{},"source":""}]}',
    "duplicate nbformat": '{"nbformat":4,"nbformat":3,"nbformat_minor":5,"metadata":{},"cells":[]}',
    "duplicate minor": '{"nbformat":4,"nbformat_minor":5,"nbformat_minor":4,"metadata":{},'
    '"cells":[{"id":"a","cell_type":"raw","metadata":{},"source":""}]}',
    "minor 5.0": '{"nbformat":4,"nbformat_minor":5.0,"metadata":{},"cells":[]}',
    "minor true": '{"nbformat":4,"nbformat_minor":true,"metadata":{},"cells":[]}',
    "minor huge": '{"nbformat":4,"nbformat_minor":' + "9" * 4000 + ',"metadata":{},"cells":[]}',
    "minor 6 with extras": '{"nbformat":4,"nbformat_minor":6,"metadata":{},"cells":[],"x":1}',
    "nbformat 3 minor 5": '{"nbformat":3,"nbformat_minor":5,"metadata":{},"cells":[]}',
    "escaped unicode key": '{"nbformat":4,"nbformat_minor":5,"metadata":{},"cells":[],'
    '"\\u0063ells":[5]}',
    "BOM-less lone surrogate": '{"nbformat":4,"nbformat_minor":5,"metadata":{"\\ud800":1},'
    '"cells":[]}',
}


@pytest.mark.parametrize("name", list(_TEXTS))
def test_odd_json_text_gets_nbformat_s_verdict(name: str) -> None:
    text = _TEXTS[name]
    by_nbformat = _nbformat_passes(text)
    verdict = validate_json(text, "a.ipynb")
    if verdict is None:
        assert by_nbformat, f"{name}: accepted, nbformat refuses"


# -- held: threads, NBFORMAT_VALIDATOR, network, time --------------------------------------


def test_threads_checking_every_minor_at_once_agree_with_one_thread() -> None:
    texts = []
    for minor in range(7):
        texts.append(json.dumps(_notebook(minor)))
        bad = _notebook(minor)
        bad["cells"][0]["execution_count"] = "1"
        texts.append(json.dumps(bad))
    expected = [validate_json(t, "a.ipynb") is None for t in texts]
    assert expected == [_nbformat_passes(t) for t in texts]
    notebook_checks._SCHEMAS.clear()
    results: dict[int, list[bool]] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def run(number: int) -> None:
        try:
            barrier.wait()
            order = texts[number % len(texts) :] + texts[: number % len(texts)]
            got = [validate_json(t, "a.ipynb") is None for t in order]
            shift = number % len(texts)
            results[number] = got[len(texts) - shift :] + got[: len(texts) - shift]
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors
    assert all(results[n] == expected for n in range(8)), results


@pytest.mark.parametrize(
    "value", ["", "jsonschema", "FastJsonSchema", "fastjsonschema ", "nonsense", "0"]
)
def test_an_odd_nbformat_validator_gets_nbformat_s_verdict(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NBFORMAT_VALIDATOR", value)
    good = json.dumps(_notebook(5))
    bad = _notebook(5)
    bad["cells"][0]["execution_count"] = 1.5
    for text in (good, json.dumps(bad)):
        assert (validate_json(text, "a.ipynb") is None) == _nbformat_passes(text)


def test_no_network_and_no_nbformat_import_on_the_fast_path() -> None:
    script = (
        "import json, sys\n"
        "def hook(event, args):\n"
        "    if event.startswith(('socket.', 'urllib.')):\n"
        "        raise RuntimeError('network: ' + event)\n"
        "sys.addaudithook(hook)\n"
        "from grinta_jupyter.runtime.notebook_checks import validate_json\n"
        "nb = lambda m: {'nbformat': 4, 'nbformat_minor': m, 'metadata': {}, 'cells': []}\n"
        "print([validate_json(json.dumps(nb(m)), 'a') for m in range(6)])\n"
        "print('nbformat' in sys.modules)\n"
        "bad = nb(5); bad['x'] = 1\n"
        "print(validate_json(json.dumps(bad), 'a') is not None)\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == [str([None] * 6), "False", "True"]


def test_a_big_notebook_is_checked_without_hanging() -> None:
    data = _notebook(5)
    cell = data["cells"][0]
    data["cells"] = []
    for number in range(20_000):
        data["cells"].append({**cell, "id": f"c{number}", "source": ["x = 1\n"] * 5})
    data["cells"][-1]["source"] = "y" * 5_000_000
    text = json.dumps(data)
    started = time.perf_counter()
    assert validate_json(text, "a.ipynb") is None
    assert time.perf_counter() - started < 30


# -- held: the runtime leaves the disk alone on a refusal -----------------------------------


def test_a_created_notebook_nbformat_refuses_writes_nothing(tmp_path: Path) -> None:
    rt = Runtime(tmp_path)
    bad = _notebook(5)
    bad["cells"][0]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": 5}]
    proposal = rt.propose("create", {"path": "x.ipynb", "content": json.dumps(bad)})
    assert proposal.error is not None
    assert proposal.error.code == "NOTEBOOK_INVALID"
    assert not rt.commit(proposal).ok
    assert not (tmp_path / "x.ipynb").exists()
    good = rt.propose("create", {"path": "y.ipynb", "content": json.dumps(_notebook(5))})
    assert good.error is None
    assert rt.commit(good).ok
    assert nbformat.read(str(tmp_path / "y.ipynb"), as_version=4)


def test_a_cell_edit_of_a_notebook_invalid_on_disk_writes_nothing(tmp_path: Path) -> None:
    data = _notebook(5)
    data["metadata"]["kernelspec"] = {"display_name": "no name"}
    raw = json.dumps(data)
    (tmp_path / "nb.ipynb").write_text(raw, encoding="utf-8")
    rt = Runtime(tmp_path)
    proposal = rt.propose(
        "edit_symbols",
        {"edits": [{"symbol": "nb.ipynb::cell:c0", "action": "replace", "new_source": "y = 2"}]},
    )
    assert proposal.error is not None
    assert not rt.commit(proposal).ok
    assert (tmp_path / "nb.ipynb").read_text(encoding="utf-8") == raw
