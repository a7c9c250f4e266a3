"""What a notebook write refuses, and that a refusal leaves every byte on disk as it was.

Anything that would break nbformat (a forged cell header, an invalid or old
notebook on disk, text that is no JSON, duplicate ids), a code cell made invalid
Python (IPython's magics, shell escapes and top-level await are not errors), the
protected cell that runs the session, arguments that make no sense for a cell, and
files built to crash the parser. Most of these were bugs an attack pass found; each
test names what it once broke.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime.notebook_checks import source_digest, validate_json
from grinta_jupyter.runtime.proposal import Proposal
from grinta_jupyter.tools.base import Settings
from tests.conftest import snapshot
from tests.test_notebooks import (
    NB,
    cells_of,
    committed,
    nb_code,
    nb_markdown,
    nb_notebook,
    nb_write,
    source_of,
    strictly_valid,
)


def code_cell(cell_id: str, source: str) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": cell_id,
        "metadata": {},
        "outputs": [],
        "source": source,
    }


def notebook_text(*cells: dict[str, Any], metadata: dict[str, Any] | None = None) -> str:
    value = {"cells": list(cells), "metadata": metadata or {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(value, indent=1) + "\n"


@pytest.fixture
def small(tmp_path: Path) -> Path:
    nb = nb_notebook(
        cells=[
            nb_markdown("# Title\nSome text", id="md"),
            nb_code("import os\nx = 1\nprint(x)", id="first", execution_count=1),
            nb_code("def load(p):\n    return p\n\ny = load(2)", id="second"),
        ]
    )
    nb_write(nb, tmp_path / NB)
    (tmp_path / "m.py").write_text("def helper():\n    return 1\n")
    return tmp_path


def refused(root: Path, proposal: Proposal, code: str, rt: Runtime | None = None) -> None:
    """``proposal`` is refused with ``code``; committing it anyway writes nothing."""
    before = snapshot(root)
    assert proposal.error is not None, proposal.diff
    assert proposal.error.code == code, proposal.error
    if rt is not None:
        assert not rt.commit(proposal).ok
    assert snapshot(root) == before


def replace(rt: Runtime, old: str, new: str, path: str = NB) -> Proposal:
    return rt.propose("replace_string", {"path": path, "old_string": old, "new_string": new})


def cell_edit(rt: Runtime, symbol: str, action: str, **more: Any) -> Proposal:
    return rt.propose("edit_symbols", {"edits": [{"symbol": symbol, "action": action, **more}]})


# -- the cell structure cannot be forged through text --------------------------------------


def test_a_header_naming_an_existing_cell_is_refused(small: Path) -> None:
    rt = Runtime(small)
    proposal = replace(rt, "x = 1", "x = 1\n#%% cell second (code)\nimport evil")
    refused(small, proposal, "NOTEBOOK_INVALID", rt)
    inserted = cell_edit(
        rt, f"{NB}::cell:first", "insert_after", new_source="#%% cell md (markdown)\nhi"
    )
    refused(small, inserted, "NOTEBOOK_INVALID", rt)


def test_a_header_line_is_not_text_a_string_edit_can_touch(small: Path) -> None:
    rt = Runtime(small)
    for old, new in (
        ("#%% cell second (code)", "#%% cell second (markdown)"),
        ("print(x)\n#%% cell second (code)\n", ""),
        ("#%% cell first (code)\nimport os", "import os"),
    ):
        refused(small, replace(rt, old, new), "NOT_FOUND", rt)


def test_a_forged_header_with_a_new_id_through_replace_string_is_refused(small: Path) -> None:
    rt = Runtime(small)
    proposal = replace(rt, "x = 1", "x = 1\n#%% cell evil (code)\nimport evil")
    refused(small, proposal, "NOTEBOOK_INVALID", rt)


def test_a_forged_header_in_a_cells_new_source_is_refused_or_kept_as_text(small: Path) -> None:
    rt = Runtime(small)
    proposal = cell_edit(
        rt,
        f"{NB}::cell:first",
        "replace",
        new_source="a = 1\n#%% cell evil (markdown)\nhi",
    )
    if proposal.ok:  # acceptable only if the line stays text of the one cell
        committed(rt, proposal)
        cells = cells_of(small / NB)
        assert len(cells) == 3
        assert source_of(cells[1]) == "a = 1\n#%% cell evil (markdown)\nhi"
    else:
        refused(small, proposal, "NOTEBOOK_INVALID", rt)


def test_a_forged_duplicate_id_is_never_committed(small: Path) -> None:
    rt = Runtime(small)
    proposal = replace(
        rt, "Some text", "Some text\n#%% cell zz (code)\nimport a\n#%% cell zz (code)\nimport b"
    )
    if proposal.ok:
        rt.commit(proposal)
    assert strictly_valid(small / NB)


def test_validation_refuses_duplicate_cell_ids() -> None:
    text = notebook_text(code_cell("a", "x = 1"), code_cell("a", "y = 2"))
    error = validate_json(text, NB)
    assert error is not None and error.code == "NOTEBOOK_INVALID"


def test_create_refuses_a_notebook_with_duplicate_ids(tmp_path: Path) -> None:
    rt = Runtime(tmp_path)
    content = notebook_text(code_cell("a", "x = 1"), code_cell("a", "y = 2"))
    proposal = rt.propose("create", {"path": NB, "content": content})
    assert proposal.error is not None and proposal.error.code == "NOTEBOOK_INVALID"


def test_an_invalid_id_on_disk_never_costs_a_cell(tmp_path: Path) -> None:
    text = notebook_text(
        code_cell("first", "x = 1"), code_cell("a b", "y = 2"), code_cell("c", "z = 3")
    )
    (tmp_path / NB).write_text(text)
    rt = Runtime(tmp_path)
    proposal = replace(rt, "z = 3", "z = 4")
    if proposal.ok:
        committed(rt, proposal)
        assert [source_of(c) for c in cells_of(tmp_path / NB)] == ["x = 1", "y = 2", "z = 4"]
    else:
        refused(tmp_path, proposal, "NOTEBOOK_INVALID", rt)


def test_a_source_line_like_a_header_is_kept_as_text(tmp_path: Path) -> None:
    """A cell that documents the view's own header line: the view picks a longer marker."""
    text = notebook_text(
        code_cell("doc", "#%% cell other (code)\nx = 1"), code_cell("other", "y = 2")
    )
    (tmp_path / NB).write_text(text)
    rt = Runtime(tmp_path)
    proposal = replace(rt, "y = 2", "y = 3")
    committed(rt, proposal)
    assert "#%%% cell other (code)" in proposal.diff
    assert [source_of(c) for c in cells_of(tmp_path / NB)] == [
        "#%% cell other (code)\nx = 1",
        "y = 3",
    ]


# -- notebooks that cannot be edited as cells ---------------------------------------------


def _edits(rt: Runtime) -> list[Proposal]:
    return [
        replace(rt, "x = 1", "x = 2"),
        cell_edit(rt, f"{NB}::cell:a", "delete"),
        rt.propose(
            "multiedit",
            {
                "edits": [
                    {"path": NB, "old_string": "x = 1", "new_string": "x = 2", "replace_all": True}
                ]
            },
        ),
    ]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"cells": [ {"cell_type": "code", "source": "x = 1"', id="not-json"),
        pytest.param("", id="empty-file"),
        pytest.param('["x = 1"]', id="an-array"),
        pytest.param(
            json.dumps(
                {
                    "nbformat": 3,
                    "nbformat_minor": 0,
                    "metadata": {},
                    "worksheets": [
                        {
                            "cells": [
                                {
                                    "cell_type": "code",
                                    "input": "x = 1",
                                    "language": "python",
                                    "outputs": [],
                                    "metadata": {},
                                }
                            ],
                            "metadata": {},
                        }
                    ],
                },
                indent=1,
            ),
            id="nbformat-3",
        ),
        pytest.param(
            json.dumps(
                {
                    "cells": [
                        code_cell("a", "x = 1"),
                        {
                            "cell_type": "code",
                            "id": "b",
                            "metadata": {},
                            "execution_count": None,
                            "source": "y = 1",
                        },
                    ],
                    "metadata": {},
                    "nbformat": 4,
                    "nbformat_minor": 5,
                }
            ),
            id="invalid-nbformat-no-outputs",
        ),
        pytest.param(
            json.dumps(
                {
                    "cells": [
                        {"cell_type": "heading", "id": "a", "metadata": {}, "source": "x = 1"}
                    ],
                    "metadata": {},
                    "nbformat": 4,
                    "nbformat_minor": 5,
                }
            ),
            id="unknown-cell-type",
        ),
        pytest.param(
            json.dumps(
                {
                    "cells": [
                        {
                            "cell_type": "code",
                            "id": "a",
                            "metadata": {},
                            "execution_count": None,
                            "outputs": [],
                            "source": 7,
                        }
                    ],
                    "metadata": {},
                    "nbformat": 4,
                    "nbformat_minor": 5,
                }
            ),
            id="source-not-text",
        ),
        pytest.param(
            notebook_text(code_cell("a", "x = 1"), code_cell("a", "y = 1")), id="duplicate-ids"
        ),
    ],
)
def test_a_notebook_that_is_not_valid_nbformat_4_is_never_edited(tmp_path: Path, text: str) -> None:
    (tmp_path / NB).write_text(text)
    rt = Runtime(tmp_path)
    for proposal in _edits(rt):
        assert proposal.error is not None
        assert proposal.error.code in ("NOTEBOOK_INVALID", "AMBIGUOUS_SYMBOL"), proposal.error
        refused(tmp_path, proposal, proposal.error.code, rt)


def test_an_edit_that_leaves_the_cell_structure_is_refused(small: Path) -> None:
    rt = Runtime(small)
    proposal = cell_edit(rt, f"{NB}::cell:md", "replace", new_source="x", cell_type="code")
    refused(small, proposal, "INVALID_ARGS", rt)


# -- Python syntax in code cells ----------------------------------------------------------


def test_a_code_cell_made_invalid_python_is_refused_and_names_the_cell(small: Path) -> None:
    rt = Runtime(small)
    proposal = replace(rt, "print(x)", "print(x")
    refused(small, proposal, "SYNTAX_ERROR", rt)
    assert proposal.error is not None
    assert proposal.error.candidates[0].path == f"{NB}::cell:first"
    assert proposal.error.candidates[0].line == 3
    inserted = cell_edit(rt, f"{NB}::cell:md", "insert_after", new_source="def broken(:\n    pass")
    refused(small, inserted, "SYNTAX_ERROR", rt)
    definition = rt.propose(
        "edit_symbols",
        {
            "edits": [
                {
                    "symbol": f"{NB}::load",
                    "action": "replace",
                    "new_source": "def load(p:\n    return p\n",
                }
            ]
        },
    )
    assert definition.error is not None
    assert definition.error.code in ("SYNTAX_ERROR", "INVALID_ARGS")


def test_markdown_is_not_python(small: Path) -> None:
    rt = Runtime(small)
    committed(rt, replace(rt, "Some text", "def (: not python"))
    committed(
        rt,
        cell_edit(rt, f"{NB}::cell:md", "insert_after", new_source="x = (", cell_type="markdown"),
    )


@pytest.mark.parametrize(
    "source",
    [
        "%time x = sum(range(10))",
        "!ls -la",
        "%matplotlib inline\nimport os",
        "%%bash\nls | wc -l\nif [ -d . ]; then echo yes; fi",
        "%%time\nx = [i for i in range(3)]",
        "import asyncio\nawait asyncio.sleep(0)",
        "async with lock:\n    pass",
        "async for item in stream():\n    print(item)",
        "def f():\n    !echo hi\n    %time g()\n    return 1",
    ],
)
def test_magics_shell_escapes_and_top_level_await_are_not_syntax_errors(
    small: Path, source: str
) -> None:
    rt = Runtime(small)
    proposal = cell_edit(rt, f"{NB}::cell:first", "insert_after", new_source=source)
    assert proposal.ok, proposal.error
    committed(rt, proposal)
    assert source in [source_of(c) for c in cells_of(small / NB)]


@pytest.mark.parametrize(
    "source", ["files = !ls *.csv", "t = %timeit -o sum(range(9))", "len?", "  %time y = 2"]
)
def test_ipython_assignments_and_help_are_not_syntax_errors(small: Path, source: str) -> None:
    rt = Runtime(small)
    proposal = cell_edit(rt, f"{NB}::cell:first", "insert_after", new_source=source)
    assert proposal.ok, proposal.error


def test_a_continuation_line_starting_with_the_modulo_operator_is_valid(small: Path) -> None:
    rt = Runtime(small)
    source = "total = (\n    first_value\n    % modulus\n)"
    proposal = cell_edit(rt, f"{NB}::cell:first", "insert_after", new_source=source)
    assert proposal.ok, proposal.error


def test_code_cells_of_an_r_notebook_are_not_checked_as_python(tmp_path: Path) -> None:
    metadata = {
        "kernelspec": {"name": "ir", "display_name": "R", "language": "R"},
        "language_info": {"name": "R"},
    }
    (tmp_path / NB).write_text(notebook_text(code_cell("a", "x <- 1"), metadata=metadata))
    rt = Runtime(tmp_path)
    proposal = replace(rt, "x <- 1", "x <- function(a) { a + 1 }")
    assert proposal.ok, proposal.error


def test_create_refuses_a_notebook_whose_code_cell_is_invalid(tmp_path: Path) -> None:
    rt = Runtime(tmp_path)
    content = notebook_text(code_cell("a", "def broken(:\n    pass"))
    proposal = rt.propose("create", {"path": NB, "content": content})
    assert proposal.error is not None and proposal.error.code == "SYNTAX_ERROR"


# -- the protected cell ----------------------------------------------------------------------


def test_the_protected_cell_is_never_edited_or_deleted(small: Path) -> None:
    rt = Runtime(small, settings=Settings(protected_cells=(f"{NB}::cell:first",)))
    for proposal in (
        replace(rt, "x = 1", "x = 2"),
        rt.propose(
            "replace_string",
            {
                "path": NB,
                "old_string": "import os",
                "new_string": "import sys",
                "replace_all": True,
            },
        ),
        cell_edit(rt, f"{NB}::cell:first", "replace", new_source="x = 2"),
        cell_edit(rt, f"{NB}::cell:first", "delete"),
        cell_edit(rt, f"{NB}::cell:fir", "delete"),  # by a prefix
        rt.propose(
            "multiedit",
            {
                "edits": [
                    {"path": "m.py", "old_string": "return 1", "new_string": "return 2"},
                    {"path": NB, "old_string": "print(x)", "new_string": "print(x, x)"},
                ]
            },
        ),
    ):
        refused(small, proposal, "CELL_PROTECTED", rt)


def test_cells_next_to_the_protected_one_can_be_inserted_and_others_edited(small: Path) -> None:
    rt = Runtime(small, settings=Settings(protected_cells=(f"{NB}::cell:first",)))
    committed(rt, cell_edit(rt, f"{NB}::cell:first", "insert_before", new_source="a = 1"))
    committed(rt, cell_edit(rt, f"{NB}::cell:first", "insert_after", new_source="b = 2"))
    committed(rt, replace(rt, "y = load(2)", "y = load(3)"))
    committed(rt, cell_edit(rt, f"{NB}::cell:md", "delete"))
    sources = [source_of(c) for c in cells_of(small / NB)]
    assert sources == [
        "a = 1",
        "import os\nx = 1\nprint(x)",
        "b = 2",
        "def load(p):\n    return p\n\ny = load(3)",
    ]


def test_the_protected_cell_of_another_notebook_does_not_protect_this_one(small: Path) -> None:
    rt = Runtime(small, settings=Settings(protected_cells=("other.ipynb::cell:first",)))
    committed(rt, replace(rt, "x = 1", "x = 2"))


def test_a_notebook_saved_without_ids_protects_the_running_cell_by_its_source(
    tmp_path: Path,
) -> None:
    # nbformat 4.4 and older have no cell ids on disk; JupyterLab sends a made-up one, which
    # names no cell there, so the cell running the session is known by its source.
    running = "%grinta fix the loader"
    cells = [running, "x = 1\nprint(x)", "%grinta fix the loader\n# another run"]
    notebook = {
        "nbformat": 4,
        "nbformat_minor": 4,
        "metadata": {},
        "cells": [
            {
                "cell_type": "code",
                "source": s,
                "metadata": {},
                "outputs": [],
                "execution_count": None,
            }
            for s in cells
        ],
    }
    (tmp_path / NB).write_text(json.dumps(notebook, indent=1) + "\n")
    protected = (f"{NB}::cell:4f1c2d3e", f"{NB}::code:{source_digest(running + chr(10))}")
    rt = Runtime(tmp_path, settings=Settings(protected_cells=protected))
    refused(tmp_path, cell_edit(rt, f"{NB}::cell:1", "delete"), "CELL_PROTECTED", rt)
    refused(
        tmp_path,
        cell_edit(rt, f"{NB}::cell:1", "replace", new_source="%grinta x"),
        "CELL_PROTECTED",
        rt,
    )
    committed(rt, replace(rt, "# another run", "# a later run"))
    committed(rt, cell_edit(rt, f"{NB}::cell:2", "replace", new_source="x = 2"))
    # Once a cell on disk has the id (the notebook was saved at 4.5), the id alone decides.
    rt = Runtime(tmp_path, settings=Settings(protected_cells=(f"{NB}::cell:2", protected[1])))
    committed(rt, cell_edit(rt, f"{NB}::cell:1", "replace", new_source="%grinta again"))


# -- arguments that make no sense for a cell -------------------------------------------------


def test_cell_arguments_are_checked(small: Path) -> None:
    rt = Runtime(small)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"symbol": "cell:first", "action": "delete"}, "INVALID_ARGS"),  # no notebook named
        ({"symbol": f"{NB}::cell:first", "action": "replace"}, "INVALID_ARGS"),
        ({"symbol": f"{NB}::cell:first", "action": "insert_after"}, "INVALID_ARGS"),
        ({"symbol": f"{NB}::cell:first", "action": "delete", "new_source": "x"}, "INVALID_ARGS"),
        (
            {
                "symbol": f"{NB}::cell:first",
                "action": "insert_after",
                "new_source": "x",
                "cell_type": "raw",
            },
            "INVALID_ARGS",
        ),
        (
            {
                "symbol": "m.py::helper",
                "action": "replace",
                "new_source": "def helper():\n    pass\n",
                "cell_type": "code",
            },
            "INVALID_ARGS",
        ),
        ({"symbol": f"{NB}::cell:nope", "action": "delete"}, "SYMBOL_NOT_FOUND"),
        ({"symbol": f"{NB}::cell:", "action": "delete"}, "INVALID_ARGS"),  # names no cell
        ({"symbol": "missing.ipynb::cell:a", "action": "delete"}, "FILE_NOT_FOUND"),
    ]
    for edit, code in cases:
        proposal = rt.propose("edit_symbols", {"edits": [edit]})
        assert proposal.error is not None and proposal.error.code == code, (edit, proposal.error)
        refused(small, proposal, code, rt)


def test_a_cell_address_in_a_python_file_is_refused_not_a_crash(small: Path) -> None:
    rt = Runtime(small)
    proposal = cell_edit(rt, "m.py::cell:1", "delete")
    assert proposal.error is not None and proposal.error.code == "INVALID_ARGS"
    assert "not a notebook" in proposal.error.message
    read = rt.propose("read", {"symbol": "m.py::cell:1"})
    assert read.error is not None and read.error.code == "INVALID_ARGS"


# -- files built to crash the parser ---------------------------------------------------------


def deep_notebook(depth: int) -> str:
    nested = "[" * depth + "]" * depth
    return (
        '{"cells": [{"cell_type": "code", "execution_count": null, "id": "a", '
        '"metadata": {"deep": ' + nested + '}, "outputs": [], "source": "def f():\\n    pass"}], '
        '"metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
    )


def test_a_deeply_nested_notebook_is_refused_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / NB).write_text(deep_notebook(3000))
    (tmp_path / "m.py").write_text("def helper():\n    pass\n")
    rt = Runtime(tmp_path)
    proposal = replace(rt, "pass", "return 1")
    assert proposal.error is not None and proposal.error.code == "NOTEBOOK_INVALID"
    for args in ({"symbol": "m.py::helper"}, {"path": NB}):
        observation = rt.call("read", args)
        assert observation.error is None or observation.error.code != "INTERNAL_ERROR", args
    search = rt.call("search", {"query": "pass"})
    assert search.ok, search.error


def test_a_moderately_nested_notebook_is_fine(tmp_path: Path) -> None:
    (tmp_path / NB).write_text(deep_notebook(300))
    rt = Runtime(tmp_path)
    committed(rt, replace(rt, "pass", "return 1"))
    assert strictly_valid(tmp_path / NB)


def test_a_lone_surrogate_in_an_edited_cell_is_not_a_crash(tmp_path: Path) -> None:
    text = notebook_text(
        {"cell_type": "markdown", "id": "m", "metadata": {}, "source": "Café"},
        code_cell("a", "s = '\ud83d'\nx = 1"),
    ).replace("\\u00e9", "é")
    (tmp_path / NB).write_text(text, encoding="utf-8")
    rt = Runtime(tmp_path)
    proposal = replace(rt, "x = 1", "x = 2")
    assert proposal.error is None or proposal.error.code != "INTERNAL_ERROR", proposal.error


def test_a_lone_surrogate_escape_in_an_ascii_notebook_survives_an_edit(tmp_path: Path) -> None:
    text = notebook_text(code_cell("a", "s = '\ud83d'\nx = 1"))
    assert "\\ud83d" in text
    (tmp_path / NB).write_text(text)
    rt = Runtime(tmp_path)
    committed(rt, replace(rt, "x = 1", "x = 2"))
    assert "\\ud83d" in (tmp_path / NB).read_text()
