"""Reading notebooks as cells: read, outline, symbols, search (issue 12).

A read shows each cell's address, type, execution count, numbered source and its
outputs summarised and bounded (stream text cut, errors as ``ename: evalue``,
images as ``[image/png WxH]`` read from the real image): never the notebook's raw
JSON. A 500-cell notebook pages by cells. Search matches cell sources only and
locates hits by cell; the symbol index finds definitions in code cells.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from tests.test_notebooks import (
    NB,
    committed,
    nb_code,
    nb_markdown,
    nb_notebook,
    nb_output,
    nb_raw,
    nb_write,
)


def png(width: int, height: int) -> str:
    """A real PNG of ``width`` x ``height`` black pixels, base64 as in a notebook."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\x00\x00\x00" * width for _ in range(height))
    data = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
    return base64.b64encode(data).decode()


LONG_STREAM = "".join(f"epoch {i}: loss {1 / (i + 1):.4f}\n" for i in range(200))


@pytest.fixture
def outputs_ws(tmp_path: Path) -> Path:
    nb = nb_notebook(
        cells=[
            nb_markdown("# Training\nA model, trained.", id="intro"),
            nb_code(
                "for epoch in range(200):\n    train(epoch)",
                id="train",
                execution_count=4,
                outputs=[nb_output("stream", name="stdout", text=LONG_STREAM)],
            ),
            nb_code(
                "1 / 0",
                id="boom",
                execution_count=5,
                outputs=[
                    nb_output(
                        "error",
                        ename="ZeroDivisionError",
                        evalue="division by zero",
                        traceback=["\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"],
                    )
                ],
            ),
            nb_code(
                "plt.plot(losses)",
                id="plot",
                execution_count=6,
                outputs=[
                    nb_output(
                        "display_data",
                        data={"image/png": png(640, 480), "text/plain": "<Figure size 640x480>"},
                    ),
                    nb_output("execute_result", data={"text/plain": "42"}, execution_count=6),
                ],
            ),
            nb_raw("raw text", id="raw"),
            nb_code("def evaluate(model):\n    return model.score()\n", id="eval"),
        ]
    )
    nb_write(nb, tmp_path / NB)
    return tmp_path


def test_a_read_shows_cells_not_json(outputs_ws: Path) -> None:
    output = Runtime(outputs_ws).call("read", {"path": NB}).output
    assert output.startswith(f"{NB}: notebook, 6 cells (cells 1-6 of 6)")
    assert f"[cell 1/6] {NB}::cell:intro · markdown" in output
    assert f"[cell 2/6] {NB}::cell:train · code · [4]" in output
    assert f"[cell 5/6] {NB}::cell:raw · raw" in output
    assert f"[cell 6/6] {NB}::cell:eval · code\n" in output  # never run: no count
    assert "     1\tfor epoch in range(200):\n     2\t    train(epoch)" in output
    for raw_json in ('"cell_type"', '"outputs"', '"metadata"', '"nbformat"', "iVBORw0KGgo"):
        assert raw_json not in output


def test_outputs_are_summarised_and_bounded(outputs_ws: Path) -> None:
    output = Runtime(outputs_ws).call("read", {"path": NB}).output
    assert "out: stdout: epoch 0: loss 1.0000" in output
    assert "epoch 199" not in output  # the stream is cut ...
    assert "more lines]" in output  # ... and says so
    assert "out: error: ZeroDivisionError: division by zero" in output
    assert "\x1b[" not in output  # the traceback's colour codes are not shown
    assert "[image/png 640x480]" in output
    assert "result: 42" in output
    assert len(output) < 3000


def test_outline_lists_cells_and_the_definitions_in_code_cells(outputs_ws: Path) -> None:
    output = Runtime(outputs_ws).call("read", {"path": NB, "outline": True}).output
    assert output.splitlines()[0] == f"{NB} outline (6 cells, 1 definitions)"
    assert "[cell 1] cell:intro markdown # Training" in output
    assert "[cell 6] cell:eval code     def evaluate(model):" in output
    assert "function  evaluate" in output
    assert output.index("cell:eval") < output.index("function  evaluate")


def test_a_cell_and_a_definition_in_a_cell_read_by_address(outputs_ws: Path) -> None:
    rt = Runtime(outputs_ws)
    cell = rt.call("read", {"symbol": f"{NB}::cell:train"})
    assert cell.ok, cell.error
    assert "code cell 2 of 6" in cell.output
    assert "     1\tfor epoch in range(200):" in cell.output
    prefix = rt.call("read", {"symbol": f"{NB}::cell:tr"})  # a unique prefix reads too
    assert prefix.output == cell.output
    definition = rt.call("read", {"symbol": f"{NB}::evaluate"})
    assert definition.ok, definition.error
    assert f"{NB}::cell:eval" in definition.output
    assert "     2\t    return model.score()" in definition.output
    by_name = rt.call("read", {"symbol": "evaluate"})
    assert by_name.output == definition.output


def test_a_prefix_shared_by_cells_returns_candidates_on_read(tmp_path: Path) -> None:
    nb = nb_notebook(cells=[nb_code("a = 1", id="abc1"), nb_code("b = 2", id="abc2")])
    nb_write(nb, tmp_path / NB)
    observation = Runtime(tmp_path).call("read", {"symbol": f"{NB}::cell:abc"})
    assert observation.error is not None and observation.error.code == "AMBIGUOUS_SYMBOL"
    assert [c.path for c in observation.error.candidates] == [
        f"{NB}::cell:abc1",
        f"{NB}::cell:abc2",
    ]


def big_notebook(root: Path, cells: int = 500) -> None:
    items = []
    for i in range(cells // 2):
        items.append(nb_markdown(f"## Step {i}\nWhat step {i} does.", id=f"m{i:04d}"))
        items.append(
            nb_code(
                f"def step_{i}(frame):\n    frame['c{i}'] = frame['a'] * {i}\n    return frame\n\n"
                f"frame = step_{i}(frame)\nprint(len(frame))",
                id=f"c{i:04d}",
                execution_count=i + 1,
                outputs=[nb_output("stream", name="stdout", text=f"{i}\n")],
            )
        )
    nb_write(nb_notebook(cells=items), root / "big.ipynb")


def test_a_500_cell_notebook_pages_by_cells(tmp_path: Path) -> None:
    big_notebook(tmp_path)
    rt = Runtime(tmp_path)
    first = rt.call("read", {"path": "big.ipynb"}).output
    head = first.splitlines()[0]
    assert head.startswith("big.ipynb: notebook, 500 cells (cells 1-")
    shown = int(head.split("cells 1-")[1].split(" ")[0])
    assert 1 < shown < 500
    assert first.rstrip().endswith(
        f"continue with start_line={shown + 1} (a notebook is read by cells)]"
    )
    assert f"[cell {shown}/500]" in first and f"[cell {shown + 1}/500]" not in first
    seen = shown
    while seen < 500:  # paging on reaches the last cell, each cell once
        page = rt.call("read", {"path": "big.ipynb", "start_line": seen + 1}).output
        assert f"[cell {seen + 1}/500]" in page
        assert f"[cell {seen}/500]" not in page
        seen = int(page.splitlines()[0].split("-")[1].split(" ")[0])
    assert "[cell 500/500] big.ipynb::cell:c0249" in page
    window = rt.call("read", {"path": "big.ipynb", "start_line": 10, "end_line": 12}).output
    assert window.splitlines()[0] == "big.ipynb: notebook, 500 cells (cells 10-12 of 500)"
    assert window.count("[cell ") == 3
    past = rt.call("read", {"path": "big.ipynb", "start_line": 501})
    assert past.error is not None and past.error.code == "INVALID_ARGS"
    backwards = rt.call("read", {"path": "big.ipynb", "start_line": 20, "end_line": 10})
    assert backwards.error is not None and backwards.error.code == "INVALID_ARGS"


def test_a_500_cell_notebook_edits_and_indexes(tmp_path: Path) -> None:
    big_notebook(tmp_path)
    rt = Runtime(tmp_path)
    committed(
        rt,
        rt.propose(
            "replace_string",
            {"path": "big.ipynb", "old_string": "frame['a'] * 123\n", "new_string": "frame['b']\n"},
        ),
    )
    committed(
        rt,
        rt.propose(
            "edit_symbols",
            {
                "edits": [
                    {
                        "symbol": "big.ipynb::cell:c0200",
                        "action": "insert_after",
                        "new_source": "def extra():\n    return 1\n",
                    }
                ]
            },
        ),
    )
    cells = json.loads((tmp_path / "big.ipynb").read_text())["cells"]
    assert len(cells) == 501
    found = rt.call("read", {"symbol": "big.ipynb::extra"})
    assert found.ok, found.error
    assert rt.call("read", {"symbol": "big.ipynb::step_249"}).ok


def test_a_corrupt_notebook_reads_as_text_with_a_note(tmp_path: Path) -> None:
    (tmp_path / NB).write_text('{"cells": [{"cell_type": "code", "source": "x = 1"\n')
    observation = Runtime(tmp_path).call("read", {"path": NB})
    assert observation.ok, observation.error
    assert observation.output.startswith(
        "[not a valid nbformat-4 notebook: shown as text; edits are refused]"
    )
    assert '"source": "x = 1"' in observation.output


# -- search -----------------------------------------------------------------------------------


def test_search_locates_hits_by_cell_and_line(outputs_ws: Path) -> None:
    output = Runtime(outputs_ws).call("search", {"query": "model"}).output
    assert f"{NB}::cell:intro:2: A model, trained." in output
    assert f"{NB}::cell:eval:1: def evaluate(model):" in output
    assert f"{NB}::cell:eval:2: return model.score()" in output


@pytest.mark.parametrize(
    "query", ["cell_type", "execution_count", "nbformat_minor", "output_type", "iVBORw0KGgo"]
)
def test_search_never_matches_the_notebooks_json(outputs_ws: Path, query: str) -> None:
    output = Runtime(outputs_ws).call("search", {"query": query}).output
    assert NB not in output


def test_search_does_not_match_outputs(outputs_ws: Path) -> None:
    """Only sources are searched: a string printed by a cell is not code to find."""
    output = Runtime(outputs_ws).call("search", {"query": "division by zero"}).output
    assert NB not in output


def test_search_lists_definitions_in_cells(outputs_ws: Path) -> None:
    output = Runtime(outputs_ws).call("search", {"query": "evaluate"}).output
    assert f"{NB}::cell:eval:1: function evaluate" in output


# -- the symbol index -------------------------------------------------------------------------


def test_the_index_finds_definitions_in_code_cells_only(tmp_path: Path) -> None:
    nb = nb_notebook(
        cells=[
            nb_markdown("```python\ndef not_code():\n    pass\n```", id="doc"),
            nb_code("%%bash\ndef_not_python() { echo; }", id="shell"),
            nb_raw("def raw_text():\n    pass", id="raw"),
            nb_code(
                "import os\n\nclass Loader:\n    def load(self, path):\n        return path\n",
                id="code",
            ),
        ]
    )
    nb_write(nb, tmp_path / NB)
    rt = Runtime(tmp_path)
    symbols = {s.qualname: s for s in rt.symbols.outline(NB)}
    assert set(symbols) == {"Loader", "Loader.load"}
    assert symbols["Loader.load"].cell == "code"
    assert symbols["Loader.load"].start_line == 4  # counted within the cell
    assert symbols["Loader.load"].location == f"{NB}::cell:code"
    for missing in ("not_code", "raw_text"):
        observation = rt.call("read", {"symbol": f"{NB}::{missing}"})
        assert observation.error is not None and observation.error.code == "SYMBOL_NOT_FOUND"


def test_the_index_follows_commits_and_undo(tmp_path: Path) -> None:
    nb_write(nb_notebook(cells=[nb_code("x = 1", id="a")]), tmp_path / NB)
    rt = Runtime(tmp_path)
    assert rt.symbols.outline(NB) == []
    committed(
        rt,
        rt.propose(
            "edit_symbols",
            {
                "edits": [
                    {
                        "symbol": f"{NB}::cell:a",
                        "action": "insert_after",
                        "new_source": "def fresh():\n    return 2\n",
                    }
                ]
            },
        ),
    )
    assert [s.qualname for s in rt.symbols.outline(NB)] == ["fresh"]
    assert rt.call("read", {"symbol": "fresh"}).ok
    assert rt.undo().ok
    assert rt.symbols.outline(NB) == []
