"""Notebook editing attacked as a hostile file, a hostile model and a careless user would.

Each test names its attack. Those that found a bug fixed in runtime/ say so; the
bugs whose fix lies outside the notebook runtime are kept as strict expected
failures, with the fix in the reason. Everything goes through the public contract
(``Runtime.propose``/``commit``/``call``/``select_hunks``) on real files written
with real JSON; helpers: tests/test_notebooks.py and tests/test_notebook_refusals.py.
"""

from __future__ import annotations

import base64
import json
import os
import random
import struct
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime.notebook import Notebook, parse_view
from grinta_jupyter.runtime.proposal import WriteProposal
from grinta_jupyter.tools.base import Settings
from tests.conftest import snapshot
from tests.test_notebook_refusals import cell_edit, code_cell, notebook_text, replace
from tests.test_notebooks import (
    NB,
    cell_spans,
    cells_of,
    committed,
    masked,
    source_of,
    strictly_valid,
)


def workspace(tmp_path: Path, text: str, name: str = NB) -> Path:
    (tmp_path / name).write_text(text, encoding="utf-8", newline="")
    return tmp_path


def with_outputs(cell_id: str, source: str, *outputs: dict[str, Any]) -> dict[str, Any]:
    cell = code_cell(cell_id, source)
    cell["outputs"] = list(outputs)
    cell["execution_count"] = 1
    return cell


def png_b64(width: int, height: int, padding: int = 0) -> str:
    """A PNG header of the given size (followed by ``padding`` bytes), as base64."""
    header = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR"
    header += struct.pack(">II", width, height) + b"\x08\x02\x00\x00\x00" + bytes(4)
    return base64.b64encode(header + random.Random(0).randbytes(padding)).decode()


def read(rt: Runtime, **args: Any) -> str:
    observation = rt.call("read", {"path": NB, **args})
    assert observation.ok, observation.error
    return observation.output


def written_cells(path: Path) -> list[tuple[str, str, str]]:
    """The cells on disk as (key, type, source), read by the runtime's own parser."""
    notebook = Notebook.parse(path.read_text(encoding="utf-8-sig"))
    return [(c.key, c.cell_type, c.source) for c in notebook.cells]


# -- the syntax check after an edit that changes the view's marker --------------------------


def test_a_line_like_a_cell_header_does_not_make_other_cells_new_to_the_syntax_check(
    tmp_path: Path,
) -> None:
    """Attack: a model adds a Spyder-style comment `#%% cell 1: setup` to one cell of a
    notebook where another cell is already broken (work in progress).

    The written notebook's view then needs a longer marker (`#%%%`), and the check read
    the view before the edit with that marker: it found no cells there, took every code
    cell for new, and refused the edit for the untouched broken cell (fixed in
    notebook_checks.py: each view is read with its own marker)."""
    root = workspace(
        tmp_path, notebook_text(code_cell("a", "x = 1"), code_cell("b", "def f(:\n    pass"))
    )
    rt = Runtime(root)
    before = (root / NB).read_text()
    proposal = replace(rt, "x = 1", "#%% cell 1: setup\nx = 1")
    committed(rt, proposal)
    after = (root / NB).read_text()
    assert masked(after, ["a"]) == masked(before, ["a"])
    assert written_cells(root / NB)[0] == ("a", "code", "#%% cell 1: setup\nx = 1")
    # and back: removing the line shortens the marker again
    committed(rt, replace(rt, "#%% cell 1: setup\n", ""))
    assert (root / NB).read_text() == before


def test_the_check_still_refuses_a_broken_edit_when_the_marker_changes(tmp_path: Path) -> None:
    """Attack: hide a syntax error behind the marker change the fix above handles."""
    root = workspace(tmp_path, notebook_text(code_cell("a", "x = 1"), code_cell("b", "y = 2")))
    rt = Runtime(root)
    before = snapshot(root)
    proposal = replace(rt, "x = 1", "#%% cell 1: setup\nx = (1")
    assert proposal.error is not None and proposal.error.code == "SYNTAX_ERROR", proposal.error
    assert "cell a" in proposal.error.message
    assert not rt.commit(proposal).ok
    assert snapshot(root) == before


# -- hostile outputs in a read ---------------------------------------------------------------


@pytest.mark.parametrize(
    "output",
    [
        pytest.param(
            {"output_type": "display_data", "data": ["x"], "metadata": {}}, id="data-list"
        ),
        pytest.param({"output_type": "execute_result", "data": "x", "metadata": {}}, id="data-str"),
        pytest.param(
            {"output_type": "display_data", "data": {"image/png": "iVBOR"}, "metadata": [1]},
            id="metadata-list",
        ),
        pytest.param(
            {
                "output_type": "display_data",
                "data": {"image/png": "iVBOR"},
                "metadata": {"image/png": 5},
            },
            id="image-metadata-int",
        ),
    ],
)
def test_outputs_of_the_wrong_shape_do_not_break_a_read(
    tmp_path: Path, output: dict[str, Any]
) -> None:
    """Attack: a hand-edited notebook whose output `data` or `metadata` is not an object.

    A read does not validate the notebook, and the summary called `.items()`/`.get()` on
    them: the whole read failed with INTERNAL_ERROR (fixed in outputs.py)."""
    root = workspace(tmp_path, notebook_text(with_outputs("a", "x = 1", output)))
    text = read(Runtime(root))
    assert "nb.ipynb::cell:a" in text and "x = 1" in text


def test_names_in_outputs_are_bounded_in_a_read(tmp_path: Path) -> None:
    """Attack: an error output with a 200,000-character `ename`, an output type, a stream
    name and a thousand image MIME types, each huge or many.

    Only `evalue` and text were bounded: the read handed 200 KB to the model (fixed in
    outputs.py: names are cut, at most three images are listed)."""
    huge = "E" * 200_000
    outputs = (
        {"output_type": "error", "ename": huge, "evalue": "boom", "traceback": []},
        {"output_type": huge},
        {"output_type": "stream", "name": huge, "text": "hi\n"},
        {
            "output_type": "display_data",
            "data": {f"image/x-{n}-{'m' * 100}": "" for n in range(1000)},
            "metadata": {},
        },
    )
    root = workspace(tmp_path, notebook_text(with_outputs("a", "x = 1", *outputs)))
    text = read(Runtime(root))
    assert len(text) < 3_000, len(text)
    assert "error: EEEE" in text and "boom" in text
    assert "997 more images" in text


def test_an_image_in_wrapped_base64_shows_its_size(tmp_path: Path) -> None:
    """Attack: a 100 KB PNG whose base64 is wrapped in 76-character lines (as older
    writers save it, and as a list of lines).

    The header was decoded from the first 64 KiB with the line breaks taken out after the
    cut, so the length was no multiple of 4 and the decoder refused it: `[image/png]`
    with no size (fixed in outputs.py)."""
    data = png_b64(640, 480, padding=100_000)
    lines = [data[i : i + 76] + "\n" for i in range(0, len(data), 76)]
    root = workspace(
        tmp_path,
        notebook_text(
            with_outputs(
                "a",
                "plot()",
                {
                    "output_type": "display_data",
                    "data": {"image/png": "".join(lines)},
                    "metadata": {},
                },
                {"output_type": "display_data", "data": {"image/png": lines}, "metadata": {}},
            )
        ),
    )
    text = read(Runtime(root))
    assert text.count("[image/png 640x480]") == 2, text


# -- the file's own style ---------------------------------------------------------------------


def test_a_compact_notebook_whose_code_holds_a_colon_space_stays_compact(tmp_path: Path) -> None:
    """Attack: a notebook written with `separators=(",", ":")` whose code holds a dict
    literal (`{"k": 1}`, escaped in the JSON as `{\\"k\\": 1}`).

    The separators were guessed from the whole text, strings included, so the `": ` inside
    the source made an inserted cell come out as `{"cell_type": "code", ...}` in a file
    written without spaces (fixed in notebook_json.py: read outside strings)."""
    value: dict[str, Any] = {
        "cells": [code_cell("a", 'd = {"k": 1}'), code_cell("b", 'print("x", "y")')],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    root = workspace(tmp_path, json.dumps(value, separators=(",", ":")))
    rt = Runtime(root)
    proposal = cell_edit(rt, f"{NB}::cell:b", "insert_after", new_source="z = 3")
    committed(rt, proposal)
    fresh = cells_of(root / NB)[2]["id"]
    new = {
        "cell_type": "code",
        "execution_count": None,
        "id": fresh,
        "metadata": {},
        "outputs": [],
        "source": "z = 3",
    }
    value["cells"].append(new)
    assert (root / NB).read_text() == json.dumps(value, separators=(",", ":"))


def test_an_escaped_backslash_before_u_is_not_an_ascii_escape(tmp_path: Path) -> None:
    """Attack: an nbformat-style notebook (UTF-8, no escapes) that is all ASCII but whose
    code prints `"\\u00e9"` (a backslash escaped in JSON, then `u00e9`).

    That was taken for an ASCII-escaped file, so a cell the model added with `é` was
    written as `\\u00e9`, unlike every other writer of this file (fixed in
    notebook_json.py: only an odd run of backslashes escapes)."""
    root = workspace(tmp_path, notebook_text(code_cell("a", 'print("\\u00e9")')))
    rt = Runtime(root)
    committed(rt, cell_edit(rt, f"{NB}::cell:a", "insert_after", new_source="name = 'café'"))
    text = (root / NB).read_text(encoding="utf-8")
    assert "café" in text
    assert source_of(cells_of(root / NB)[0]) == 'print("\\u00e9")'


# -- files that are not one notebook ------------------------------------------------------------


def test_text_after_the_notebook_object_is_read_as_text_and_never_edited(tmp_path: Path) -> None:
    """Attack: two notebooks run together in one file (a botched write or merge), which
    Jupyter refuses to open ("Extra data").

    It was read as a healthy notebook of cells, without the note, and every edit was
    refused with "would not be valid JSON", blaming the model's edit (fixed in
    notebook.py: the notebook must be the whole file)."""
    root = workspace(tmp_path, notebook_text(code_cell("a", "x = 1")) + '{"cells": []}\n')
    rt = Runtime(root)
    assert read(rt).startswith("[not a valid nbformat-4 notebook")
    before = snapshot(root)
    for proposal in (
        replace(rt, "x = 1", "x = 2"),
        cell_edit(rt, f"{NB}::cell:a", "delete"),
    ):
        assert proposal.error is not None and proposal.error.code == "NOTEBOOK_INVALID"
        assert "would not" not in proposal.error.message, proposal.error.message
        assert not rt.commit(proposal).ok
    assert snapshot(root) == before


def test_a_symlinked_notebook_is_edited_through_its_link_and_stays_a_link(tmp_path: Path) -> None:
    """Attack: the notebook is a symlink to another notebook in the workspace; the host
    notebook's protected cell is addressed through the link."""
    root = workspace(
        tmp_path, notebook_text(code_cell("host", "%grinta fix it"), code_cell("b", "y = 2"))
    )
    os.symlink(NB, root / "alias.ipynb")
    rt = Runtime(root, settings=Settings(protected_cells=(f"{NB}::cell:host",)))
    proposal = cell_edit(rt, "alias.ipynb::cell:host", "delete")
    assert proposal.error is not None and proposal.error.code == "CELL_PROTECTED"
    committed(rt, replace(rt, "y = 2", "y = 3", path="alias.ipynb"))
    assert (root / "alias.ipynb").is_symlink()
    assert source_of(cells_of(root / NB)[1]) == "y = 3"


# -- the card shows exactly what is written -----------------------------------------------------

_HOSTILE_LAYOUTS = {
    "crlf-tabs-no-final-newline": lambda v: json.dumps(v, indent="\t").replace("\n", "\r\n"),
    "one-line": lambda v: json.dumps(v),
    "keys-reversed-indent-3": lambda v: json.dumps(_reversed(v), indent=3) + "\n\n",
}


def _reversed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reversed(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed(v) for v in value]
    return value


def _random_call(rng: random.Random, root: Path) -> dict[str, Any]:
    cells = cells_of(root / NB)
    ids = [c["id"] for c in cells]
    target = rng.choice(ids)
    roll = rng.random()
    source = rng.choice(
        [
            "v = 1",
            "w = [\n    1,\n]",
            "%time w\n!ls",
            "# note\n#%% cell x",
            "#%% cell zz (code)",
            "s = 'ü'",
        ]
    )
    if roll < 0.3 or len(cells) < 3:
        action = rng.choice(["insert_before", "insert_after"])
        kind = rng.choice(["code", "markdown"])
        return {
            "symbol": f"{NB}::cell:{target}",
            "action": action,
            "new_source": source,
            "cell_type": kind,
        }
    if roll < 0.45:
        return {"symbol": f"{NB}::cell:{target}", "action": "delete"}
    return {"symbol": f"{NB}::cell:{target}", "action": "replace", "new_source": source}


@pytest.mark.parametrize("layout", list(_HOSTILE_LAYOUTS))
def test_the_staged_view_is_exactly_what_is_written(tmp_path: Path, layout: str) -> None:
    """Attack: random chains of cell inserts, deletes and replaces (with magics, forged
    header-like lines and non-ASCII) on notebooks in hostile layouts (CRLF and tabs
    without a final newline, one line, keys reversed with blank lines after).

    After every commit the cells on disk are exactly those of the view the diff was made
    from, the file stays strictly valid, and every cell the call did not touch keeps its
    bytes, outputs included."""
    cells = [
        with_outputs(
            f"c{n}", f"x{n} = {n}", {"output_type": "stream", "name": "stdout", "text": [f"{n}\n"]}
        )
        for n in range(4)
    ]
    value = {
        "cells": cells,
        "metadata": {"widgets": {"state": {"w": 1}}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    root = workspace(tmp_path, _HOSTILE_LAYOUTS[layout](value))
    rt = Runtime(root)
    rng = random.Random(layout)
    commits = 0
    for _ in range(12):
        before = (root / NB).read_bytes().decode("utf-8")
        edits = [_random_call(rng, root) for _ in range(rng.randint(1, 2))]
        proposal = rt.propose("edit_symbols", {"edits": edits})
        if not proposal.ok:  # a cell deleted earlier, a forged header, a no-op
            assert proposal.error is not None
            assert proposal.error.code in ("SYMBOL_NOT_FOUND", "NOTEBOOK_INVALID", "NO_CHANGE")
            assert (root / NB).read_bytes().decode("utf-8") == before
            continue
        assert isinstance(proposal, WriteProposal)
        (change,) = proposal.changes
        assert change.before is not None and change.after is not None
        marker = change.before.split(" cell ", 1)[0]  # the view starts with a header
        staged = parse_view(change.after, marker)
        committed(rt, proposal)
        commits += 1
        assert strictly_valid(root / NB)
        after = (root / NB).read_bytes().decode("utf-8")
        assert written_cells(root / NB) == staged
        untouched = set(parse_view(change.before, marker)) & set(staged)
        old_spans = {key: before[s:e] for key, s, e in cell_spans(before)[1]}
        new_spans = {key: after[s:e] for key, s, e in cell_spans(after)[1]}
        for key, _, _ in untouched:
            assert new_spans[key] == old_spans[key], key
        assert after.endswith("\n\n") == before.endswith("\n\n")
        assert ("\r\n" in after) == ("\r\n" in before)
        assert after.count("\n") == after.count("\r\n") or "\r\n" not in after
    assert commits >= 6


# -- bugs outside the notebook runtime, kept as expected failures -------------------------------


def test_a_selection_of_hunks_says_only_which_outputs_it_clears(tmp_path: Path) -> None:
    """Attack: approve one of two hunks of an edit of two cells that have outputs.

    The card says the outputs of both cells are cleared; the commit keeps the outputs of
    the cell whose hunk was declined. The card must say what is written."""
    stream = {"output_type": "stream", "name": "stdout", "text": "hi\n"}
    a = "\n".join(f"a{n} = {n}" for n in range(30))
    b = "\n".join(f"b{n} = {n}" for n in range(30))
    root = workspace(
        tmp_path, notebook_text(with_outputs("a", a, stream), with_outputs("b", b, stream))
    )
    rt = Runtime(root)
    proposal = rt.propose(
        "multiedit",
        {
            "edits": [
                {"path": NB, "old_string": "a0 = 0", "new_string": "a0 = 10"},
                {"path": NB, "old_string": "b29 = 29", "new_string": "b29 = 0"},
            ]
        },
    )
    selected = rt.select_hunks(proposal, [0])
    committed(rt, selected)
    assert cells_of(root / NB)[1]["outputs"] == [stream]  # what is written
    assert "b (1 output)" not in selected.summary, selected.summary  # what the card says
    assert "clears the outputs and execution count of edited cell a (1 output)" in selected.summary
    assert "(1 of 2 hunks accepted by the reviewer)" in selected.summary


def test_a_cell_whose_source_has_crlf_line_endings_can_be_edited_by_string(tmp_path: Path) -> None:
    """Attack: a notebook saved on Windows by a tool that kept CRLF inside cell sources
    (`"source": ["import os\\r\\n", "x = 1\\r\\n", "y = 2"]`). The read shows plain lines;
    the model replaces two of them, in LF (as it reads them) and in CRLF."""
    cell = code_cell("a", "")
    cell["source"] = ["import os\r\n", "x = 1\r\n", "y = 2"]
    root = workspace(tmp_path, notebook_text(cell))
    rt = Runtime(root)
    for old, new in (("x = 1\ny = 2", "x = 3\ny = 4"), ("x = 1\r\ny = 2", "x = 3\r\ny = 4")):
        proposal = replace(rt, old, new)
        assert proposal.ok, proposal.error
    # Committed, the cell keeps its CRLF line ends and nothing else changes.
    assert rt.commit(replace(rt, "x = 1\ny = 2", "x = 3\ny = 4")).ok
    source = json.loads((root / NB).read_text())["cells"][0]["source"]
    assert "".join(source) == "import os\r\nx = 3\r\ny = 4", source


def test_a_position_is_never_taken_for_an_id_prefix_by_a_write(tmp_path: Path) -> None:
    """Attack: a model reads `[cell 3/3] nb.ipynb::cell:c0ffee00` and deletes `cell:3`;
    cell 2's id starts with `3`. Writes must target: a position-like key that is not an
    exact id is refused, never resolved to another cell."""
    root = workspace(
        tmp_path,
        notebook_text(
            code_cell("a1b2c3d4", "x = 1"),
            code_cell("3e9f0a11", "y = 2"),
            code_cell("c0ffee00", "z = 3"),
        ),
    )
    rt = Runtime(root)
    before = (root / NB).read_bytes()
    assert "[cell 3/3] nb.ipynb::cell:c0ffee00" in read(rt)
    proposal = cell_edit(rt, f"{NB}::cell:3", "delete")
    assert proposal.error is not None, proposal.summary
    assert proposal.error.code == "AMBIGUOUS_SYMBOL" and "by position" in proposal.error.message
    offered = [c.path for c in proposal.error.candidates]
    assert offered == [f"{NB}::cell:c0ffee00", f"{NB}::cell:3e9f0a11"], offered
    # A position no id starts with is refused too, with the cell at that position offered.
    proposal = cell_edit(rt, f"{NB}::cell:1", "delete")
    assert proposal.error is not None and proposal.error.code == "AMBIGUOUS_SYMBOL"
    assert [c.path for c in proposal.error.candidates] == [f"{NB}::cell:a1b2c3d4"]
    # The full id, and a prefix that is no position, still target.
    assert cell_edit(rt, f"{NB}::cell:c0ffee00", "delete").error is None
    assert cell_edit(rt, f"{NB}::cell:3e9", "delete").error is None
    assert (root / NB).read_bytes() == before, "nothing was committed"


def test_a_read_of_a_notebook_is_bounded_like_a_read_of_a_file(tmp_path: Path) -> None:
    """Attack: a notebook whose first cell holds 400 lines of 1,900 characters (a pasted
    data blob)."""
    blob = "\n".join("x = '" + "a" * 1900 + "'" for _ in range(400))
    root = workspace(tmp_path, notebook_text(code_cell("a", blob), code_cell("b", "y = 1")))
    rt = Runtime(root)
    limit = Settings().read_max_chars
    text = read(rt)
    assert len(text) <= limit + 1_000, len(text)
    assert f"more lines in this cell: read symbol='{NB}::cell:a' with start_line=" in text
    # The cell read by its address is bounded too, and goes on where the note says.
    shown: list[str] = []
    start = 1
    while True:
        observation = rt.call("read", {"symbol": f"{NB}::cell:a", "start_line": start})
        assert observation.ok, observation.error
        assert len(observation.output) <= limit + 1_000, len(observation.output)
        shown += [row for row in observation.output.split("\n") if "\tx = '" in row]
        if "continue with" not in observation.output:
            break
        start = int(observation.output.rsplit("start_line=", 1)[1].rstrip("]"))
    assert len(shown) == 400 and shown[-1].startswith("   400\t"), len(shown)
