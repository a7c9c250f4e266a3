"""Attacks on notebooks as workspaces, third pass: separators, scale and plain refusals.

Each test names its attack and the bug it found (fixed in runtime/notebook.py or
runtime/outputs.py). Real files in ``tmp_path``, the real ``Runtime``; the JSON is
written by hand where a hand-written file is the attack.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime.notebook import Notebook, write_view
from grinta_jupyter.runtime.outputs import summarize_outputs
from tests.conftest import snapshot
from tests.test_notebook_refusals import cell_edit, code_cell
from tests.test_notebooks import NB, strictly_valid


def notebook(*cells: dict[str, Any], minor: int = 5) -> dict[str, Any]:
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": minor}


def sources(root: Path) -> list[str]:
    cells = json.loads((root / NB).read_bytes().decode("utf-8"))["cells"]
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells]


# -- the bytes around the cells ----------------------------------------------------------------


def test_the_first_cell_of_an_empty_crlf_notebook_brings_no_lf(tmp_path: Path) -> None:
    """Attack: insert the first cell into an empty notebook saved with CRLF line ends.

    Bug: the whitespace around the new cell was written with LF (`"cells": [\\n  {`,
    `}\\n ],`) while the cell itself and the rest of the file kept CRLF: a file of
    mixed line ends after one edit."""
    text = json.dumps(notebook(), indent=1).replace("\n", "\r\n") + "\r\n"
    (tmp_path / NB).write_bytes(text.encode())
    rt = Runtime(tmp_path)
    proposal = cell_edit(rt, f"{NB}::cell:", "insert_after", new_source="x = 1\ny = 2")
    assert proposal.error is None, proposal.error
    assert rt.commit(proposal).ok
    raw = (tmp_path / NB).read_bytes()
    assert raw.count(b"\n") == raw.count(b"\r\n")
    assert sources(tmp_path) == ["x = 1\ny = 2"]
    assert strictly_valid(tmp_path / NB)


def _one_line(cell: dict[str, Any]) -> str:
    return json.dumps(cell)


def test_a_delete_keeps_the_bytes_between_cells_that_stay_neighbours(tmp_path: Path) -> None:
    """Attack: a hand-written notebook with a blank line between its second and third
    cells; delete the first cell (or insert one before it).

    Bug: once cells were added or removed, every separator of the cells array was
    rewritten as the first one, so the blank line between two untouched cells
    vanished: bytes the edit never named changed."""
    a, b, c = (_one_line(code_cell(k, f"{k} = 1")) for k in "abc")
    tail = ' ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n'
    text = '{"cells": [\n  ' + a + ",\n  " + b + ",\n\n  " + c + "\n" + tail
    (tmp_path / NB).write_text(text, newline="")
    rt = Runtime(tmp_path)
    deleted = cell_edit(rt, f"{NB}::cell:a", "delete")
    assert deleted.error is None, deleted.error
    assert rt.commit(deleted).ok
    assert (tmp_path / NB).read_text() == '{"cells": [\n  ' + b + ",\n\n  " + c + "\n" + tail

    inserted = cell_edit(rt, f"{NB}::cell:b", "insert_before", new_source="n = 0")
    assert inserted.error is None, inserted.error
    assert rt.commit(inserted).ok
    after = (tmp_path / NB).read_text()
    assert after.endswith(b + ",\n\n  " + c + "\n" + tail), after
    assert sources(tmp_path) == ["n = 0", "b = 1", "c = 1"]
    assert strictly_valid(tmp_path / NB)


# -- scale ---------------------------------------------------------------------------------------


def test_writing_a_30000_cell_notebook_is_linear(tmp_path: Path) -> None:
    """Attack: edit a notebook of 30,000 small cells.

    Bug: the check that an edit keeps the cells' order built a set of all the kept
    cells once per cell: quadratic, 2 s for 10,000 cells and about 20 s for 30,000,
    on every propose. Linear now (a few hundredths of a second); the bound is far
    from both."""
    cells = [code_cell(f"c{n:05d}", f"x{n} = {n}\nprint(x{n})") for n in range(30_000)]
    parsed = Notebook.parse(json.dumps(notebook(*cells), indent=1) + "\n")
    view = parsed.view()
    deleted = "\n".join(view.split("\n")[3:])  # the first cell gone: order check and rebuild
    started = time.perf_counter()
    written = write_view(parsed, deleted)
    edited = write_view(parsed, view.replace("x7 = 7\n", "x7 = 8\n", 1))
    assert time.perf_counter() - started < 3.0
    assert len(json.loads(written)["cells"]) == 29_999
    assert json.loads(edited)["cells"][7]["source"] == "x7 = 8\nprint(x7)"


# -- refusals that say what the file is ------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        pytest.param(b"", "is empty", id="empty"),
        pytest.param(b" \n", "is empty", id="blank"),
        pytest.param(b'{"a": 1}\n', "is JSON but no notebook", id="json-no-notebook"),
    ],
)
def test_a_file_that_is_no_notebook_is_refused_saying_what_it_is(
    tmp_path: Path, raw: bytes, says: str
) -> None:
    """Attack: edit a cell of an empty `.ipynb` file, and of one holding JSON that is not
    a notebook.

    Bug: the refusals read "is not valid notebook JSON (expected an object at offset
    0)" and "is nbformat None; only nbformat 4 notebooks are edited as cells (convert
    it with `jupyter nbconvert ...`)": the first says nothing of an empty file, the
    second advises converting what is no notebook."""
    (tmp_path / NB).write_bytes(raw)
    rt = Runtime(tmp_path)
    before = snapshot(tmp_path)
    proposal = cell_edit(rt, f"{NB}::cell:a", "replace", new_source="x = 2")
    assert proposal.error is not None
    assert proposal.error.code == "NOTEBOOK_INVALID", proposal.error
    assert says in proposal.error.message
    assert "nbconvert" not in proposal.error.message
    assert snapshot(tmp_path) == before


# -- outputs as Jupyter shows them ---------------------------------------------------------------


def test_a_progress_bar_reads_as_its_last_state_and_colours_as_text(tmp_path: Path) -> None:
    """Attack: read a cell whose output is a tqdm-style progress bar (one line redrawn
    with carriage returns, 200 steps) and an IPython error in terminal colours.

    Bug: the read cut the raw text at 600 characters, so the bar read as stuck at 3%
    where Jupyter shows 100%, and the error read `\\x1b[0;31mValueError\\x1b[0m`. The read
    now shows what Jupyter shows: the last state of each redrawn line, no escape codes."""
    bar = "".join(f"\r{step / 2:5.1f}%|{'#' * (step // 20):<10}|" for step in range(201)) + "\n"
    cell = code_cell("run", "for _ in tqdm(range(200)): pass")
    cell["execution_count"] = 1
    cell["outputs"] = [
        {"output_type": "stream", "name": "stderr", "text": bar},
        {
            "output_type": "error",
            "ename": "\x1b[0;31mValueError\x1b[0m",
            "evalue": "\x1b[1mbad value\x1b[0m",
            "traceback": [],
        },
    ]
    (tmp_path / NB).write_text(json.dumps(notebook(cell), indent=1) + "\n")
    observation = Runtime(tmp_path).call("read", {"path": NB})
    assert observation.ok, observation.error
    assert "   out: stderr: 100.0%|##########|\n" in observation.output + "\n"
    assert "  0.0%" not in observation.output
    assert "   out: error: ValueError: bad value" in observation.output
    assert "\x1b" not in observation.output
    # A line ended by CRLF is one line; text without a carriage return is as it was.
    assert summarize_outputs([{"output_type": "stream", "name": "stdout", "text": "a\r\nb\n"}]) == [
        "stdout: a\nb"
    ]


def test_an_empty_file_reads_as_empty_not_as_an_error(tmp_path) -> None:
    """A read of an empty file was refused: "end_line 0 is before start_line 1"."""
    from grinta_jupyter import Runtime

    (tmp_path / "e.py").write_text("")
    (tmp_path / "n.ipynb").write_text("")
    runtime = Runtime(tmp_path)
    for args in ({"path": "e.py"}, {"path": "e.py", "start_line": 1}, {"path": "n.ipynb"}):
        seen = runtime.call("read", args)
        assert seen.ok and "(empty file)" in seen.output, (args, seen.output)
    past = runtime.call("read", {"path": "e.py", "start_line": 2})
    assert not past.ok and "past the end" in past.output


# -- fourth pass: bounded cost, what Jupyter shows, bounded outlines ----------------------------


def test_editing_every_cell_of_a_one_line_notebook_is_linear() -> None:
    """Attack: `replace_all` through every cell of a notebook saved as JSON on one line
    (`json.dump(nb, f)`, as scripts write them), 40,000 cells.

    Bug: for each edited cell the start of its line was searched for back through the
    whole text, and the text before the cell copied: quadratic, 13 s for the write alone
    (26 s for the propose) of 40,000 cells; linear now (under a second)."""
    cells = [code_cell(f"c{n:05d}", f"x{n} = {n}\nprint(x{n})") for n in range(40_000)]
    parsed = Notebook.parse(json.dumps(notebook(*cells)) + "\n")
    edited = parsed.view().replace("print(", "show(")
    started = time.perf_counter()
    written = write_view(parsed, edited)
    assert time.perf_counter() - started < 5.0
    assert "\n" not in written[:-1]  # still one line
    assert json.loads(written)["cells"][39_999]["source"] == "x39999 = 39999\nshow(x39999)"


def test_sources_starting_like_every_header_marker_are_refused_fast(tmp_path: Path) -> None:
    """Attack: a notebook whose one cell has the lines `#%% cell`, `#%%% cell`, ... up to
    2,000 percent signs, beside 20,000 small cells.

    Bug: the marker was lengthened until no line started with it, each length tried
    against every line (quadratic, over a second), and the 2,001-character marker was then
    written in every cell's header: a 5 MB notebook's view was 42 MB and an edit of one
    cell took 18 s and 400 MB. Such a notebook is refused now (NOTEBOOK_INVALID, nothing
    written, read as text), and one with a few such lines still gets its longer marker."""
    bad = "\n".join("#" + "%" * k + " cell" for k in range(2, 2001))
    cells = [code_cell("a", bad)] + [code_cell(f"c{n}", f"x{n} = {n}") for n in range(20_000)]
    (tmp_path / NB).write_text(json.dumps(notebook(*cells), indent=1) + "\n")
    before = snapshot(tmp_path)
    rt = Runtime(tmp_path)
    started = time.perf_counter()
    proposal = rt.propose(
        "replace_string", {"path": NB, "old_string": "x5 = 5", "new_string": "x5 = 6"}
    )
    assert time.perf_counter() - started < 5.0
    assert proposal.error is not None and proposal.error.code == "NOTEBOOK_INVALID"
    assert "cell view" in proposal.error.message
    assert snapshot(tmp_path) == before

    few = "\n".join("#" + "%" * k + " cell" for k in range(2, 6))
    parsed = Notebook.parse(json.dumps(notebook(code_cell("a", few))))
    assert parsed.marker == "#%%%%%%"
    assert parsed.view() == "#%%%%%% cell a (code)\n" + few + "\n"


def test_text_a_carriage_return_ends_still_reads_as_jupyter_shows_it(tmp_path: Path) -> None:
    """Attack: read a cell whose loop printed its progress with `end="\\r"`, and one whose
    shorter last redraw leaves the tail of a longer one on the line.

    Bug: everything up to a line's last carriage return was dropped, so the first read
    as an empty output (Jupyter shows `step 99`), and the second as `Done` (Jupyter, like
    a terminal, shows `Doneloading 100%`)."""
    loop = code_cell("loop", "for i in range(100): print(f'step {i}', end='\\r')")
    loop["execution_count"] = 1
    loop["outputs"] = [
        {
            "output_type": "stream",
            "name": "stdout",
            "text": "".join(f"step {i}\r" for i in range(100)),
        }
    ]
    fetch = code_cell("fetch", "fetch()")
    fetch["execution_count"] = 2
    fetch["outputs"] = [
        {"output_type": "stream", "name": "stderr", "text": "Downloading 100%\rDone\n"}
    ]
    (tmp_path / NB).write_text(json.dumps(notebook(loop, fetch), indent=1) + "\n")
    observation = Runtime(tmp_path).call("read", {"path": NB})
    assert observation.ok, observation.error
    assert "   out: stdout: step 99\n" in observation.output
    assert "   out: stderr: Doneloading 100%" in observation.output


def test_the_outline_of_a_notebook_of_thousands_of_cells_is_bounded(tmp_path: Path) -> None:
    """Attack: `read` with `outline` on a notebook of 3,000 cells, each defining a function.

    Bug: the outline listed every cell and definition whatever their number: 220,000
    characters for the model from one read (370,000 for 5,000 cells), where every other
    read stops at 40,000 characters or 400 lines with a note on how to go on."""
    cells = [code_cell(f"c{n}", f"def f{n}():\n    return {n}") for n in range(3_000)]
    (tmp_path / NB).write_text(json.dumps(notebook(*cells), indent=1) + "\n")
    observation = Runtime(tmp_path).call("read", {"path": NB, "outline": True})
    assert observation.ok, observation.error
    assert len(observation.output) < 40_000
    assert observation.output.count("\n") <= 402
    assert observation.output.startswith(f"{NB} outline (3000 cells, 3000 definitions)\n")
    assert "[cell 1] cell:c0 code     def f0():" in observation.output
    assert "output limit reached at cell 201 of 3000: read with start_line=201" in (
        observation.output
    )


def test_the_outline_of_a_file_of_thousands_of_definitions_is_bounded(tmp_path: Path) -> None:
    """Attack: `read` with `outline` on a Python file of 5,000 functions. Bug: 149,000
    characters for the model from one read; now cut at the read limits, saying where the
    file goes on."""
    (tmp_path / "many.py").write_text(
        "".join(f"def function_{n}():\n    return {n}\n\n\n" for n in range(5_000))
    )
    observation = Runtime(tmp_path).call("read", {"path": "many.py", "outline": True})
    assert observation.ok, observation.error
    assert len(observation.output) < 40_000
    assert observation.output.count("\n") <= 402
    assert observation.output.startswith("many.py outline (5000 definitions)\n")
    assert "function_0\n" in observation.output
    assert (
        "[output limit reached at definition 401 of 5000, line 1601: read the file from "
        "start_line=1601" in observation.output
    )
    assert "function_401\n" not in observation.output


@pytest.mark.parametrize("minor", ['"5"', "5.0", "null", "-1"])
def test_a_notebook_with_a_malformed_minor_version_is_refused_naming_it(
    tmp_path: Path, minor: str
) -> None:
    """Bug: nbformat's reader asserts on the version fields, so the refusal ended in
    ``(AssertionError())`` and named nothing to fix."""
    from grinta_jupyter.runtime.notebook_checks import validate_json

    text = '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": ' + minor + "}"
    error = validate_json(text, "a.ipynb")
    assert error is not None and error.code == "NOTEBOOK_INVALID"
    assert f"its nbformat_minor is {minor}, not a whole number" in error.message
    assert "AssertionError" not in error.message
