"""Notebook writes through the public contract (issue 12): every write path, byte for byte.

A realistic notebook written by nbformat (outputs, an attachment, widget state) is
edited with ``replace_string``, ``multiedit`` and ``edit_symbols`` (on cells and on
definitions inside code cells). After each commit the JSON text outside the
edited cells must be exactly what it was, and an edited code cell has no outputs
and no execution count (docs/notebook.md). The other files:
tests/test_notebook_history.py (hunks, undo, stale commits, open documents),
tests/test_notebook_styles.py (file styles, notebooks without ids, empty and new
notebooks), tests/test_notebook_refusals.py (what is refused, and the bugs found)
and tests/test_notebook_reads.py (reads, search and the symbol index).

The helpers here locate cells in the JSON text with their own scanner, so the
byte comparisons do not trust the implementation's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat import v4
from nbformat.validator import isvalid

from grinta_jupyter import Runtime
from grinta_jupyter.runtime.proposal import Proposal

NB = "nb.ipynb"
ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # nbformat 4.5's cell id pattern

# -- nbformat, typed (it ships no type hints) ----------------------------------------------
# A NotebookNode is a dict with attribute access; typed Any here as nbformat leaves it.


def nb_code(source: str | list[str], **fields: Any) -> Any:
    return v4.new_code_cell(source, **fields)  # type: ignore[no-untyped-call]


def nb_markdown(source: str, **fields: Any) -> Any:
    return v4.new_markdown_cell(source, **fields)  # type: ignore[no-untyped-call]


def nb_raw(source: str, **fields: Any) -> Any:
    return v4.new_raw_cell(source, **fields)  # type: ignore[no-untyped-call]


def nb_output(output_type: str, **fields: Any) -> Any:
    return v4.new_output(output_type, **fields)  # type: ignore[no-untyped-call]


def nb_notebook(**fields: Any) -> Any:
    return v4.new_notebook(**fields)  # type: ignore[no-untyped-call]


def nb_write(notebook: Any, path: Path) -> None:
    nbformat.write(notebook, path)  # type: ignore[no-untyped-call]


def nb_read(path: Path) -> Any:
    return nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]


def nb_roundtrip(text: str) -> str:
    """``text`` as nbformat itself writes the notebook it reads there."""
    node = nbformat.reads(text, as_version=4)  # type: ignore[no-untyped-call]
    written: str = nbformat.writes(node)  # type: ignore[no-untyped-call]
    return written + "\n"


# -- finding cells in JSON text, independently of grinta -------------------------------

_DECODER = json.JSONDecoder()


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _members(text: str, at: int) -> dict[str, tuple[int, int]]:
    """The value spans of the object at ``at`` (which must start there)."""
    assert text[at] == "{"
    found: dict[str, tuple[int, int]] = {}
    at = _skip(text, at + 1)
    while text[at] != "}":
        key, at = _DECODER.raw_decode(text, at)
        at = _skip(text, at)
        assert text[at] == ":"
        start = _skip(text, at + 1)
        _, end = _DECODER.raw_decode(text, start)
        found[key] = (start, end)
        at = _skip(text, end)
        if text[at] == ",":
            at = _skip(text, at + 1)
    return found


def cell_spans(text: str) -> tuple[tuple[int, int], list[tuple[str, int, int]]]:
    """(the cells array's span, [(id or 1-based position, start, end) per cell])."""
    start, end = _members(text, _skip(text, 0))["cells"]
    spans: list[tuple[str, int, int]] = []
    at = _skip(text, start + 1)
    while text[at] != "]":
        _, stop = _DECODER.raw_decode(text, at)
        cell = json.loads(text[at:stop])
        spans.append((str(cell.get("id") or len(spans) + 1), at, stop))
        at = _skip(text, stop)
        if text[at] == ",":
            at = _skip(text, at + 1)
    return (start, end), spans


def masked(text: str, keys: Sequence[str]) -> str:
    """``text`` with the JSON of the cells ``keys`` replaced by a placeholder."""
    _, spans = cell_spans(text)
    for key, start, end in reversed(spans):
        if key in keys:
            text = text[:start] + f"<cell {key}>" + text[end:]
    return text


def without(text: str, keys: Sequence[str]) -> str:
    """``text`` with the cells ``keys`` removed, each with the separator before it (after
    it, for a first cell): the file as it was before those cells were inserted."""
    _, spans = cell_spans(text)
    for index in reversed(range(len(spans))):
        key, start, end = spans[index]
        if key not in keys:
            continue
        if index > 0:
            start = spans[index - 1][2]
        elif len(spans) > 1:
            end = spans[1][1]
        text = text[:start] + text[end:]
    return text


def cells_of(path: Path) -> list[dict[str, Any]]:
    cells: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8-sig"))["cells"]
    return cells


def source_of(cell: dict[str, Any]) -> str:
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else str(source)


def strictly_valid(path: Path) -> bool:
    """Valid nbformat, without nbformat's silent repair of missing or duplicate ids."""
    data = json.loads(path.read_text(encoding="utf-8-sig"))
    return bool(isvalid(data))  # type: ignore[no-untyped-call]


def assert_edited_only(before: str, after: str, edited: Sequence[str]) -> None:
    """Every byte outside the cells ``edited`` is as it was; they were cleared like a
    re-run would (code cells: no outputs, no execution count) and kept their id and
    metadata."""
    assert masked(after, edited) == masked(before, edited)
    old = {key: json.loads(before[s:e]) for key, s, e in cell_spans(before)[1]}
    new = {key: json.loads(after[s:e]) for key, s, e in cell_spans(after)[1]}
    for key in edited:
        assert new[key]["cell_type"] == old[key]["cell_type"]
        assert new[key]["metadata"] == old[key]["metadata"]
        assert new[key].get("id") == old[key].get("id")
        assert new[key].get("attachments") == old[key].get("attachments")
        if new[key]["cell_type"] == "code":
            assert new[key]["outputs"] == []
            assert new[key]["execution_count"] is None


def new_ids(before: str, after: str) -> list[str]:
    old = {key for key, _, _ in cell_spans(before)[1]}
    return [key for key, _, _ in cell_spans(after)[1] if key not in old]


def committed(rt: Runtime, proposal: Proposal) -> None:
    assert proposal.ok, proposal.error
    observation = rt.commit(proposal)
    assert observation.ok, observation.error


# -- notebooks ----------------------------------------------------------------------------

PNG_1x1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="


def analysis_notebook() -> Any:
    """A realistic notebook: markdown with an attachment, code with outputs, widget state."""
    attachment = {"dot.png": {"image/png": PNG_1x1}}
    markdown = nb_markdown("# Sales\nTotals by region. ![dot](attachment:dot.png)", id="intro")
    markdown["attachments"] = attachment
    return nb_notebook(
        cells=[
            markdown,
            nb_code(
                "import pandas as pd\nframe = pd.read_csv('sales.csv')\nframe.head()",
                id="load",
                execution_count=1,
                metadata={"tags": ["parameters"], "collapsed": False},
                outputs=[
                    nb_output(
                        "execute_result", data={"text/plain": "   a  b\n0  1  2"}, execution_count=1
                    )
                ],
            ),
            nb_code(
                "def total(frame):\n    # the sum of all sales\n    return frame['amount'].sum()\n\n\n"
                "print(total(frame))\n",
                id="total",
                execution_count=2,
                outputs=[nb_output("stream", name="stdout", text="42\n")],
            ),
            nb_markdown("## Per region — ünïcode", id="region-md"),
            nb_code(
                "by_region = frame.groupby('region').sum()\nby_region",
                id="region",
                execution_count=3,
                outputs=[
                    nb_output(
                        "display_data",
                        data={"image/png": PNG_1x1, "text/plain": "<Figure>"},
                        metadata={"image/png": {"width": 1, "height": 1}},
                    )
                ],
            ),
        ],
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python", "version": "3.11.0"},
            "widgets": {
                "application/vnd.jupyter.widget-state+json": {
                    "state": {"a1b2": {"model_name": "IntSliderModel", "state": {"value": 3}}},
                    "version_major": 2,
                    "version_minor": 0,
                }
            },
        },
    )


def analysis_workspace(tmp_path: Path) -> Path:
    """A workspace with the analysis notebook and a Python file."""
    root = tmp_path / "ws"
    root.mkdir()
    nb_write(analysis_notebook(), root / NB)
    (root / "report.py").write_text("TITLE = 'Sales'\nframe = None\n")
    return root


@pytest.fixture
def nb_ws(tmp_path: Path) -> Path:
    return analysis_workspace(tmp_path)


@pytest.fixture
def nb_rt(nb_ws: Path) -> Runtime:
    return Runtime(nb_ws)


# -- replace_string and multiedit ----------------------------------------------------------


def test_replace_string_within_a_cell_changes_that_cell_only(nb_ws: Path, nb_rt: Runtime) -> None:
    before = (nb_ws / NB).read_text()
    proposal = nb_rt.propose(
        "replace_string",
        {"path": NB, "old_string": "return frame['amount'].sum()", "new_string": "return 0"},
    )
    assert proposal.ok, proposal.error
    assert "#%% cell total (code)" in proposal.diff  # the diff is the cell view, not JSON
    assert '"source"' not in proposal.diff
    committed(nb_rt, proposal)
    after = (nb_ws / NB).read_text()
    assert_edited_only(before, after, ["total"])
    cell = next(c for c in cells_of(nb_ws / NB) if c.get("id") == "total")
    assert source_of(cell) == (
        "def total(frame):\n    # the sum of all sales\n    return 0\n\n\nprint(total(frame))\n"
    )
    assert cell["source"][0] == "def total(frame):\n"  # still a list of lines, as nbformat writes
    assert strictly_valid(nb_ws / NB)
    assert nb_read(nb_ws / NB).cells[1].outputs  # the untouched outputs


def test_editing_a_markdown_cell_keeps_its_attachments(nb_ws: Path, nb_rt: Runtime) -> None:
    before = (nb_ws / NB).read_text()
    committed(
        nb_rt,
        nb_rt.propose(
            "replace_string", {"path": NB, "old_string": "Totals by region.", "new_string": "Sums."}
        ),
    )
    after = (nb_ws / NB).read_text()
    assert_edited_only(before, after, ["intro"])
    intro = cells_of(nb_ws / NB)[0]
    assert intro["attachments"] == {"dot.png": {"image/png": PNG_1x1}}
    assert source_of(intro) == "# Sales\nSums. ![dot](attachment:dot.png)"


def test_a_string_in_two_cells_is_ambiguous_and_the_candidates_name_the_cells(
    nb_ws: Path, nb_rt: Runtime
) -> None:
    before = (nb_ws / NB).read_bytes()
    proposal = nb_rt.propose(
        "replace_string", {"path": NB, "old_string": "frame", "new_string": "df"}
    )
    assert proposal.error is not None and proposal.error.code == "AMBIGUOUS_MATCH"
    paths = [c.path for c in proposal.error.candidates]
    assert paths == [f"{NB}::cell:load", f"{NB}::cell:total", f"{NB}::cell:region"]
    # Lines count within the cell: "frame" first appears on line 2 of the load cell.
    assert [c.line for c in proposal.error.candidates] == [2, 1, 1]
    assert nb_rt.commit(proposal).ok is False
    assert (nb_ws / NB).read_bytes() == before


def test_a_string_spanning_two_cells_is_not_found(nb_ws: Path, nb_rt: Runtime) -> None:
    before = (nb_ws / NB).read_bytes()
    for old in (
        "frame.head()\ndef total(frame):",  # the end of one cell and the start of the next
        "frame.head()\n#%% cell total (code)\ndef total",  # ... with the view's header
        '"cell_type": "code"',  # JSON is not text of the notebook
    ):
        proposal = nb_rt.propose(
            "replace_string", {"path": NB, "old_string": old, "new_string": "x"}
        )
        assert proposal.error is not None and proposal.error.code == "NOT_FOUND", old
        assert "within one cell" in proposal.error.message
    assert (nb_ws / NB).read_bytes() == before


def test_replace_all_edits_every_cell_with_the_string(nb_ws: Path, nb_rt: Runtime) -> None:
    before = (nb_ws / NB).read_text()
    proposal = nb_rt.propose(
        "replace_string",
        {"path": NB, "old_string": "frame", "new_string": "sales", "replace_all": True},
    )
    committed(nb_rt, proposal)
    after = (nb_ws / NB).read_text()
    assert_edited_only(before, after, ["load", "total", "region"])
    sources = [source_of(c) for c in cells_of(nb_ws / NB)]
    assert "frame" not in "".join(sources)
    assert sources[1] == "import pandas as pd\nsales = pd.read_csv('sales.csv')\nsales.head()"
    assert strictly_valid(nb_ws / NB)


def test_multiedit_across_a_notebook_and_a_python_file_then_undo(
    nb_ws: Path, nb_rt: Runtime
) -> None:
    nb_before = (nb_ws / NB).read_bytes()
    py_before = (nb_ws / "report.py").read_bytes()
    proposal = nb_rt.propose(
        "multiedit",
        {
            "edits": [
                {"path": NB, "old_string": "'sales.csv'", "new_string": "'sales-2024.csv'"},
                {"path": "report.py", "old_string": "TITLE = 'Sales'", "new_string": "TITLE = 'S'"},
                {"path": NB, "old_string": "sum()\nby_region", "new_string": "sum()\nresult"},
            ]
        },
    )
    assert proposal.ok, proposal.error
    assert "--- a/nb.ipynb" in proposal.diff and "--- a/report.py" in proposal.diff
    committed(nb_rt, proposal)
    after = (nb_ws / NB).read_text()
    assert_edited_only(nb_before.decode(), after, ["load", "region"])
    assert (nb_ws / "report.py").read_text() == "TITLE = 'S'\nframe = None\n"
    undone = nb_rt.undo()
    assert undone.ok, undone.error
    assert (nb_ws / NB).read_bytes() == nb_before
    assert (nb_ws / "report.py").read_bytes() == py_before


def test_a_refused_edit_in_a_multiedit_writes_neither_file(nb_ws: Path, nb_rt: Runtime) -> None:
    before = {name: (nb_ws / name).read_bytes() for name in (NB, "report.py")}
    proposal = nb_rt.propose(
        "multiedit",
        {
            "edits": [
                {"path": "report.py", "old_string": "frame = None", "new_string": "frame = 1"},
                {"path": NB, "old_string": "import pandas as pd", "new_string": "import pandas as"},
            ]
        },
    )
    assert proposal.error is not None and proposal.error.code == "SYNTAX_ERROR"
    assert {name: (nb_ws / name).read_bytes() for name in before} == before


# -- edit_symbols on cells ----------------------------------------------------------------


def test_replace_a_cell_keeps_its_type_and_clears_its_outputs(nb_ws: Path, nb_rt: Runtime) -> None:
    before = (nb_ws / NB).read_text()
    proposal = nb_rt.propose(
        "edit_symbols",
        {
            "edits": [
                {"symbol": f"{NB}::cell:region", "action": "replace", "new_source": "summary = 1"},
                {"symbol": f"{NB}::cell:region-md", "action": "replace", "new_source": "## Done"},
            ]
        },
    )
    committed(nb_rt, proposal)
    after = (nb_ws / NB).read_text()
    assert_edited_only(before, after, ["region", "region-md"])
    cells = cells_of(nb_ws / NB)
    assert [(c["cell_type"], source_of(c)) for c in cells[3:]] == [
        ("markdown", "## Done"),
        ("code", "summary = 1"),
    ]


def test_delete_a_cell_removes_its_json_and_nothing_else(nb_ws: Path, nb_rt: Runtime) -> None:
    before = (nb_ws / NB).read_text()
    for cell in ("total", "intro", "region"):  # a middle, the first and the last cell
        rt = Runtime(nb_ws)
        (nb_ws / NB).write_text(before)
        proposal = rt.propose(
            "edit_symbols", {"edits": [{"symbol": f"{NB}::cell:{cell}", "action": "delete"}]}
        )
        committed(rt, proposal)
        after = (nb_ws / NB).read_text()
        assert without(before, [cell]) == after, cell
        assert strictly_valid(nb_ws / NB)


@pytest.mark.parametrize(
    ("action", "cell_type", "expected_type", "position"),
    [
        ("insert_before", "markdown", "markdown", 2),
        ("insert_after", "code", "code", 3),
        ("insert_after", None, "code", 3),  # the default type is code
    ],
)
def test_insert_a_cell_with_a_fresh_valid_id(
    nb_ws: Path,
    nb_rt: Runtime,
    action: str,
    cell_type: str | None,
    expected_type: str,
    position: int,
) -> None:
    before = (nb_ws / NB).read_text()
    edit: dict[str, Any] = {
        "symbol": f"{NB}::cell:total",
        "action": action,
        "new_source": "x = 1\n",
    }
    if cell_type:
        edit["cell_type"] = cell_type
    proposal = nb_rt.propose("edit_symbols", {"edits": [edit]})
    committed(nb_rt, proposal)
    after = (nb_ws / NB).read_text()
    (fresh,) = new_ids(before, after)
    assert ID.match(fresh)
    assert without(after, [fresh]) == before
    cell = cells_of(nb_ws / NB)[position]
    assert cell["id"] == fresh and cell["cell_type"] == expected_type
    # A cell's source keeps no final newline (as Jupyter saves cells): none shows as a blank line.
    assert source_of(cell) == "x = 1"
    assert cell["metadata"] == {}
    if expected_type == "code":
        assert cell["outputs"] == [] and cell["execution_count"] is None
    else:
        assert "outputs" not in cell
    # The new cell is written as nbformat writes one (its keys, order and indent).
    assert nb_roundtrip(after) == after
    assert strictly_valid(nb_ws / NB)


def test_several_cell_edits_in_one_call_build_on_each_other(nb_ws: Path, nb_rt: Runtime) -> None:
    before = (nb_ws / NB).read_text()
    proposal = nb_rt.propose(
        "edit_symbols",
        {
            "edits": [
                {"symbol": f"{NB}::cell:region", "action": "insert_before", "new_source": "a = 1"},
                {
                    "symbol": f"{NB}::cell:region-md",
                    "action": "insert_after",
                    "new_source": "b = 2",
                },
                {"symbol": f"{NB}::cell:region", "action": "replace", "new_source": "c = 3"},
                {"symbol": f"{NB}::cell:region-md", "action": "delete"},
                {
                    "symbol": f"{NB}::cell:intro",
                    "action": "insert_before",
                    "new_source": "# Top",
                    "cell_type": "markdown",
                },
            ]
        },
    )
    committed(nb_rt, proposal)
    cells = cells_of(nb_ws / NB)
    assert [source_of(c) for c in cells] == [
        "# Top",
        source_of(cells[1]),
        source_of(cells[2]),
        source_of(cells[3]),
        "b = 2",
        "a = 1",
        "c = 3",
    ]
    assert [c["id"] for c in cells[1:4]] == ["intro", "load", "total"]
    ids = [c["id"] for c in cells]
    assert len(set(ids)) == len(ids) and all(ID.match(i) for i in ids)
    after = (nb_ws / NB).read_text()
    fresh = new_ids(before, after)
    assert len(fresh) == 3
    assert masked(without(after, fresh), ["region"]) == masked(
        without(before, ["region-md"]), ["region"]
    )
    assert strictly_valid(nb_ws / NB)


def test_a_later_edit_of_a_cell_an_earlier_one_deleted_refuses_the_call(
    nb_ws: Path, nb_rt: Runtime
) -> None:
    before = (nb_ws / NB).read_bytes()
    proposal = nb_rt.propose(
        "edit_symbols",
        {
            "edits": [
                {"symbol": f"{NB}::cell:total", "action": "delete"},
                {"symbol": f"{NB}::cell:total", "action": "insert_after", "new_source": "y = 1"},
            ]
        },
    )
    assert proposal.error is not None and proposal.error.code == "SYMBOL_NOT_FOUND"
    assert "edit 2 of 2" in proposal.error.message
    assert (nb_ws / NB).read_bytes() == before


def test_a_unique_id_prefix_names_a_cell_a_shared_one_is_refused(
    nb_ws: Path, nb_rt: Runtime
) -> None:
    before = (nb_ws / NB).read_bytes()
    proposal = nb_rt.propose(
        "edit_symbols", {"edits": [{"symbol": f"{NB}::cell:reg", "action": "delete"}]}
    )
    assert proposal.error is not None and proposal.error.code == "AMBIGUOUS_SYMBOL"
    assert sorted(c.path for c in proposal.error.candidates) == [
        f"{NB}::cell:region",
        f"{NB}::cell:region-md",
    ]
    assert (nb_ws / NB).read_bytes() == before
    # An exact id wins over the ids it is a prefix of ...
    exact = nb_rt.propose(
        "edit_symbols", {"edits": [{"symbol": f"{NB}::cell:region", "action": "delete"}]}
    )
    assert exact.ok, exact.error
    # ... and a prefix shared by no other cell names its cell.
    unique = nb_rt.propose(
        "edit_symbols",
        {"edits": [{"symbol": f"{NB}::cell:tot", "action": "replace", "new_source": "t = 0"}]},
    )
    assert unique.ok, unique.error
    assert "#%% cell total (code)\n-def total(frame):" in unique.diff.replace("\n ", "\n")


def test_an_unknown_cell_is_refused_with_the_cells_as_candidates(
    nb_ws: Path, nb_rt: Runtime
) -> None:
    proposal = nb_rt.propose(
        "edit_symbols", {"edits": [{"symbol": f"{NB}::cell:totl", "action": "delete"}]}
    )
    assert proposal.error is not None and proposal.error.code == "SYMBOL_NOT_FOUND"
    assert f"{NB}::cell:total" in [c.path for c in proposal.error.candidates]


def test_replace_cannot_change_a_cells_type(nb_ws: Path, nb_rt: Runtime) -> None:
    proposal = nb_rt.propose(
        "edit_symbols",
        {
            "edits": [
                {
                    "symbol": f"{NB}::cell:total",
                    "action": "replace",
                    "new_source": "# T",
                    "cell_type": "markdown",
                }
            ]
        },
    )
    assert proposal.error is not None and proposal.error.code == "INVALID_ARGS"


# -- definitions inside code cells ---------------------------------------------------------


def test_replace_a_definition_in_a_cell_keeps_the_rest_of_the_cell(
    nb_ws: Path, nb_rt: Runtime
) -> None:
    before = (nb_ws / NB).read_text()
    proposal = nb_rt.propose(
        "edit_symbols",
        {
            "edits": [
                {
                    "symbol": f"{NB}::total",
                    "action": "replace",
                    "new_source": "def total(frame):\n    return frame['amount'].sum() * 2\n",
                }
            ]
        },
    )
    assert proposal.ok, proposal.error
    chosen = proposal.resolutions[0].chosen
    assert chosen is not None and f"{NB}::cell:total" in chosen
    committed(nb_rt, proposal)
    assert_edited_only(before, (nb_ws / NB).read_text(), ["total"])
    assert source_of(cells_of(nb_ws / NB)[2]) == (
        "def total(frame):\n    return frame['amount'].sum() * 2\n\n\nprint(total(frame))\n"
    )


def test_insert_and_delete_definitions_in_a_cell(nb_ws: Path, nb_rt: Runtime) -> None:
    before = (nb_ws / NB).read_text()
    proposal = nb_rt.propose(
        "edit_symbols",
        {
            "edits": [
                {
                    "symbol": f"{NB}::total",
                    "action": "insert_after",
                    "new_source": "def mean(frame):\n    return frame['amount'].mean()\n",
                },
                {"symbol": f"{NB}::total", "action": "insert_before", "new_source": "RATE = 2\n"},
            ]
        },
    )
    committed(nb_rt, proposal)
    source = source_of(cells_of(nb_ws / NB)[2])
    assert source.index("RATE = 2") < source.index("def total") < source.index("def mean")
    assert source.endswith("print(total(frame))\n")
    assert "# the sum of all sales" in source
    assert_edited_only(before, (nb_ws / NB).read_text(), ["total"])
    deleted = nb_rt.propose(
        "edit_symbols", {"edits": [{"symbol": f"{NB}::mean", "action": "delete"}]}
    )
    committed(nb_rt, deleted)
    assert "def mean" not in source_of(cells_of(nb_ws / NB)[2])
    assert strictly_valid(nb_ws / NB)


def test_a_definition_in_two_cells_is_ambiguous(tmp_path: Path) -> None:
    nb = nb_notebook(
        cells=[
            nb_code("def load(path):\n    return path\n", id="first"),
            nb_code("def load(path):\n    return open(path)\n", id="second"),
        ]
    )
    nb_write(nb, tmp_path / NB)
    before = (tmp_path / NB).read_bytes()
    rt = Runtime(tmp_path)
    proposal = rt.propose(
        "edit_symbols",
        {
            "edits": [
                {
                    "symbol": f"{NB}::load",
                    "action": "replace",
                    "new_source": "def load(path):\n    return None\n",
                }
            ]
        },
    )
    assert proposal.error is not None and proposal.error.code == "AMBIGUOUS_SYMBOL"
    assert [c.path for c in proposal.error.candidates] == [
        f"{NB}::cell:first",
        f"{NB}::cell:second",
    ]
    assert (tmp_path / NB).read_bytes() == before


def test_a_cell_edit_and_a_definition_edit_in_the_same_call(nb_ws: Path, nb_rt: Runtime) -> None:
    proposal = nb_rt.propose(
        "edit_symbols",
        {
            "edits": [
                {"symbol": f"{NB}::cell:total", "action": "insert_before", "new_source": "w = 1"},
                {
                    "symbol": f"{NB}::total",
                    "action": "replace",
                    "new_source": "def total(frame):\n    return w\n",
                },
            ]
        },
    )
    committed(nb_rt, proposal)
    cells = cells_of(nb_ws / NB)
    assert source_of(cells[2]) == "w = 1"
    assert source_of(cells[3]).startswith("def total(frame):\n    return w\n")


def test_an_empty_notebook_gets_cells_at_its_start_and_end(tmp_path: Path) -> None:
    """'nb.ipynb::cell:' names the notebook itself: inserts go at the start or the end."""
    nb = nbformat.v4.new_notebook()
    nbformat.write(nb, tmp_path / "e.ipynb")
    rt = Runtime(tmp_path)
    missing = rt.propose(
        "edit_symbols", {"edits": [{"symbol": "e.ipynb::cell:x", "action": "delete"}]}
    )
    assert missing.error is not None and "insert_after 'e.ipynb::cell:'" in missing.error.message
    edits = [
        {"symbol": "e.ipynb::cell:", "action": "insert_after", "new_source": "x = 1\n"},
        {
            "symbol": "e.ipynb::cell:",
            "action": "insert_before",
            "cell_type": "markdown",
            "new_source": "# T",
        },
        {"symbol": "e.ipynb::cell:", "action": "insert_after", "new_source": "y = 2"},
    ]
    assert rt.call("edit_symbols", {"edits": edits}).ok
    cells = nbformat.read(tmp_path / "e.ipynb", 4).cells
    assert [(c.cell_type, c.source) for c in cells] == [
        ("markdown", "# T"),
        ("code", "x = 1"),
        ("code", "y = 2"),
    ]
    before = (tmp_path / "e.ipynb").read_bytes()
    for action in ("replace", "delete"):
        edit = {"symbol": "e.ipynb::cell:", "action": action}
        if action == "replace":
            edit["new_source"] = "z = 3"
        refused = rt.propose("edit_symbols", {"edits": [edit]})
        assert refused.error is not None and refused.error.code == "INVALID_ARGS"
    assert (tmp_path / "e.ipynb").read_bytes() == before


def test_the_reviewer_is_told_which_outputs_an_edit_clears(tmp_path: Path) -> None:
    """The diff shows cell sources; what it cannot show (outputs cleared) is in the summary."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "print(1)", execution_count=2, outputs=[nbformat.v4.new_output("stream", text="1\n")]
        ),
        nbformat.v4.new_code_cell("x = 1"),
    ]
    nb.cells[0].id, nb.cells[1].id = "shown", "never-run"
    nbformat.write(nb, tmp_path / "a.ipynb")
    rt = Runtime(tmp_path)
    p = rt.propose(
        "replace_string", {"path": "a.ipynb", "old_string": "print(1)", "new_string": "print(2)"}
    )
    assert (
        p.ok
        and "clears the outputs and execution count of edited cell shown (1 output)" in p.summary
    )
    quiet = rt.propose(
        "replace_string", {"path": "a.ipynb", "old_string": "x = 1", "new_string": "x = 2"}
    )
    assert quiet.ok and "clears" not in quiet.summary  # a cell never run loses nothing
