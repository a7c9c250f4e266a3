"""Notebook files in every style they come in, edited in their own style.

Hand-written JSON in the styles real tools write (nbformat's, indent 2 and 4,
tabs, one line, compact, ASCII escapes, keys not sorted, sources as one string,
no final newline, a BOM, CRLF), nbformat 4.4 notebooks without cell ids, empty
notebooks and new ones. After an edit the whole file must equal what its own
writer would have written. Helpers: tests/test_notebooks.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter import Runtime
from tests.test_notebooks import (
    NB,
    assert_edited_only,
    cells_of,
    committed,
    nb_code,
    nb_notebook,
    nb_roundtrip,
    nb_write,
    new_ids,
    source_of,
    strictly_valid,
    without,
)

# -- file styles ------------------------------------------------------------------------------

STYLE_NB: dict[str, Any] = {
    "cells": [
        {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": ["# Café\n", "notes"]},
        {
            "cell_type": "code",
            "execution_count": 7,
            "id": "k1",
            "metadata": {"tags": ["keep"]},
            "outputs": [{"name": "stdout", "output_type": "stream", "text": ["1\n"]}],
            "source": ["x = 1\n", "print(x)"],
        },
        {
            "cell_type": "code",
            "execution_count": 8,
            "id": "k2",
            "metadata": {},
            "outputs": [],
            "source": ["y = 2"],
        },
    ],
    "metadata": {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}
    },
    "nbformat": 4,
    "nbformat_minor": 5,
}


def _reorder(value: Any) -> Any:
    """Keys in reverse order at every level (a file whose keys are not sorted)."""
    if isinstance(value, dict):
        return {k: _reorder(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reorder(v) for v in value]
    return value


def _one_string(value: dict[str, Any]) -> dict[str, Any]:
    copy: dict[str, Any] = json.loads(json.dumps(value))
    for cell in copy["cells"]:
        cell["source"] = "".join(cell["source"])
    return copy


# name: (how the notebook is transformed, json.dumps arguments, text after dumping)
STYLES: dict[str, tuple[Any, dict[str, Any], str]] = {
    "nbformat": (None, {"indent": 1, "sort_keys": True, "ensure_ascii": False}, "\n"),
    "indent-2": (None, {"indent": 2}, "\n"),
    "indent-4-no-final-newline": (None, {"indent": 4, "ensure_ascii": False}, ""),
    "tabs": (None, {"indent": "\t", "ensure_ascii": False}, "\n"),
    "one-line": (None, {}, ""),
    "compact": (None, {"separators": (",", ":"), "ensure_ascii": False}, "\n"),
    "ascii-escapes": (None, {"indent": 1, "ensure_ascii": True}, "\n"),
    "keys-not-sorted": (_reorder, {"indent": 1, "ensure_ascii": False}, "\n"),
    "source-as-one-string": (_one_string, {"indent": 1, "ensure_ascii": False}, "\n"),
}


def _styled(value: dict[str, Any], style: str) -> str:
    transform, dump, end = STYLES[style]
    if transform is not None:
        value = transform(value)
    return json.dumps(value, **dump) + end


def _expected_after_edits(style: str, fresh: str) -> str:
    """The file as its own writer would write it after the two edits of the style test."""
    value = json.loads(json.dumps(STYLE_NB))
    k1 = value["cells"][1]
    k1["source"] = ["x = 'é'\n", "print(x)"]
    k1["outputs"] = []
    k1["execution_count"] = None
    new = {
        "cell_type": "markdown",
        "id": fresh,
        "metadata": {},
        "source": ["## Ünïcode\n", "text"],
    }
    value["cells"].append(new)
    text = _styled(value, style)
    if style == "keys-not-sorted":  # the new cell's keys in nbformat's order, not reversed
        reordered = json.dumps(_reorder(new), indent=1, ensure_ascii=False)
        plain = json.dumps(new, indent=1, ensure_ascii=False)
        indent = "\n  "
        text = text.replace(reordered.replace("\n", indent), plain.replace("\n", indent))
    return text


@pytest.mark.parametrize("style", list(STYLES))
def test_edits_follow_the_files_own_style(tmp_path: Path, style: str) -> None:
    text = _styled(STYLE_NB, style)
    (tmp_path / NB).write_text(text, encoding="utf-8")
    rt = Runtime(tmp_path)
    committed(
        rt,
        rt.propose("replace_string", {"path": NB, "old_string": "x = 1", "new_string": "x = 'é'"}),
    )
    edited = (tmp_path / NB).read_text(encoding="utf-8")
    assert_edited_only(text, edited, ["k1"])
    committed(
        rt,
        rt.propose(
            "edit_symbols",
            {
                "edits": [
                    {
                        "symbol": f"{NB}::cell:k2",
                        "action": "insert_after",
                        "new_source": "## Ünïcode\ntext",
                        "cell_type": "markdown",
                    }
                ]
            },
        ),
    )
    after = (tmp_path / NB).read_text(encoding="utf-8")
    (fresh,) = new_ids(edited, after)
    assert without(after, [fresh]) == edited
    assert after == _expected_after_edits(style, fresh)
    assert strictly_valid(tmp_path / NB)


def test_a_crlf_notebook_keeps_crlf_in_edited_and_new_cells(tmp_path: Path) -> None:
    text = json.dumps(STYLE_NB, indent=1, ensure_ascii=False).replace("\n", "\r\n") + "\r\n"
    (tmp_path / NB).write_bytes(text.encode())
    rt = Runtime(tmp_path)
    committed(
        rt, rt.propose("replace_string", {"path": NB, "old_string": "x = 1", "new_string": "x = 2"})
    )
    committed(
        rt,
        rt.propose(
            "edit_symbols",
            {"edits": [{"symbol": f"{NB}::cell:k2", "action": "insert_after", "new_source": "z"}]},
        ),
    )
    raw = (tmp_path / NB).read_bytes()
    assert raw.count(b"\n") == raw.count(b"\r\n")


def test_a_notebook_with_a_bom_keeps_it(tmp_path: Path) -> None:
    text = json.dumps(STYLE_NB, indent=1) + "\n"
    (tmp_path / NB).write_bytes(b"\xef\xbb\xbf" + text.encode())
    rt = Runtime(tmp_path)
    committed(
        rt, rt.propose("replace_string", {"path": NB, "old_string": "y = 2", "new_string": "y = 3"})
    )
    raw = (tmp_path / NB).read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    assert_edited_only(text, raw[3:].decode(), ["k2"])


def test_a_notebook_without_ids_is_edited_by_cell_position(tmp_path: Path) -> None:
    """nbformat 4.4: no ids; cells are named cell:1, cell:2 ...; new cells get no id."""
    value = json.loads(json.dumps(STYLE_NB))
    value["nbformat_minor"] = 4
    for cell in value["cells"]:
        del cell["id"]
    text = json.dumps(value, indent=1, sort_keys=True) + "\n"
    (tmp_path / NB).write_text(text)
    rt = Runtime(tmp_path)
    read = rt.call("read", {"path": NB})
    assert f"{NB}::cell:2 · code · [7]" in read.output
    proposal = rt.propose(
        "edit_symbols",
        {
            "edits": [
                {"symbol": f"{NB}::cell:3", "action": "replace", "new_source": "y = 3"},
                {"symbol": f"{NB}::cell:1", "action": "insert_after", "new_source": "z = 0"},
            ]
        },
    )
    committed(rt, proposal)
    after = json.loads((tmp_path / NB).read_text())
    assert after["nbformat_minor"] == 4
    assert [source_of(c) for c in after["cells"]] == [
        "# Café\nnotes",
        "z = 0",
        "x = 1\nprint(x)",
        "y = 3",
    ]
    assert all("id" not in c for c in after["cells"])
    assert strictly_valid(tmp_path / NB)
    # A prefix is no address without ids: cell:1 is the first cell, never cell 10.
    ambiguous = rt.propose(
        "edit_symbols", {"edits": [{"symbol": f"{NB}::cell:", "action": "delete"}]}
    )
    assert ambiguous.error is not None


def test_an_empty_notebook_can_be_read_and_emptied(tmp_path: Path) -> None:
    nb_write(nb_notebook(cells=[nb_code("x = 1", id="only")]), tmp_path / NB)
    rt = Runtime(tmp_path)
    committed(
        rt,
        rt.propose("edit_symbols", {"edits": [{"symbol": f"{NB}::cell:only", "action": "delete"}]}),
    )
    assert cells_of(tmp_path / NB) == []
    assert strictly_valid(tmp_path / NB)
    assert "no cells" in rt.call("read", {"path": NB}).output
    assert rt.undo().ok
    assert source_of(cells_of(tmp_path / NB)[0]) == "x = 1"


def test_create_writes_a_new_notebook_and_validates_it(tmp_path: Path) -> None:
    rt = Runtime(tmp_path)
    good = nb_roundtrip(json.dumps(nb_notebook(cells=[nb_code("x = 1", id="a")])))
    committed(rt, rt.propose("create", {"path": "new.ipynb", "content": good}))
    assert (tmp_path / "new.ipynb").read_text() == good
    for bad in (
        '{"cells": 1}',
        "not json",
        json.dumps({"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": []}),
    ):
        proposal = rt.propose("create", {"path": "bad.ipynb", "content": bad})
        assert proposal.error is not None and proposal.error.code == "NOTEBOOK_INVALID", bad
    assert not (tmp_path / "bad.ipynb").exists()
