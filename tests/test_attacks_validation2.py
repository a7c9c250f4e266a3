"""Attacks on exact matching and validation: overlapping matches, files with mixed line
endings, a JSON file Python wrote with a NaN in it, text that differs only in what cannot
be seen."""

from __future__ import annotations

import unicodedata

from grinta_jupyter import Runtime


def propose_replace(rt: Runtime, path: str, old: str, new: str, replace_all: bool = False):  # type: ignore[no-untyped-def]
    args = {"path": path, "old_string": old, "new_string": new, "replace_all": replace_all}
    return rt.propose("replace_string", args)


# --- a match that overlaps a second one is two matches ---------------------------------


def test_old_string_overlapping_another_occurrence_is_ambiguous(rt, ws):
    # "}\n}" occurs at the inner and at the outer closing brace: which one is a guess.
    data = b"if (a) {\n  if (b) {\n  }\n}\n}\n"
    (ws / "a.js").write_bytes(data)
    p = propose_replace(rt, "a.js", "}\n}", "}\n}\nfoo()")
    assert p.error is not None and p.error.code == "AMBIGUOUS_MATCH", p.error
    assert [c.line for c in p.error.candidates] == [3, 4]
    assert "overlapping" in p.error.message
    assert (ws / "a.js").read_bytes() == data


def test_spaces_inside_a_longer_run_are_ambiguous(rt, ws):
    (ws / "s.py").write_bytes(b"x = 'a     b'\n")  # five spaces: four of them, which?
    p = propose_replace(rt, "s.py", "    ", "\t")
    assert p.error is not None and p.error.code == "AMBIGUOUS_MATCH"


def test_replace_all_with_overlaps_replaces_left_to_right(rt, ws):
    # Guard (passes before and after): replace_all keeps str.replace's meaning, so
    # four spaces to a tab still works in eight-space indentation.
    (ws / "t.py").write_bytes(b"if x:\n        y = 1\n")
    obs = rt.call(
        "replace_string",
        {"path": "t.py", "old_string": "    ", "new_string": "\t", "replace_all": True},
    )
    assert obs.ok, obs.output
    assert (ws / "t.py").read_bytes() == b"if x:\n\t\ty = 1\n"


# --- files with mixed line endings: matched as the model reads them ----------------------


def test_mixed_endings_match_spanning_crlf_and_lf_lines(rt, ws):
    # The model reads lines, not their endings; it cannot know line 2 ends in CRLF.
    (ws / "m.py").write_bytes(b"a = 1\nb = 2\r\nc = 3\nd = 4\ne = 5\n")
    obs = rt.call(
        "replace_string",
        {"path": "m.py", "old_string": "b = 2\nc = 3", "new_string": "b = 20\nc = 30"},
    )
    assert obs.ok, obs.output
    assert (ws / "m.py").read_bytes() == b"a = 1\nb = 20\r\nc = 30\nd = 4\ne = 5\n"


def test_mixed_endings_match_inside_the_minority_ending(rt, ws):
    # LF-dominant file, a block of CRLF lines: new lines take that block's ending.
    (ws / "w.py").write_bytes(b"a = 1\r\nb = 2\r\nc = 3\nd = 4\ne = 5\n")
    obs = rt.call(
        "replace_string",
        {"path": "w.py", "old_string": "a = 1\nb = 2", "new_string": "a = 1\nz = 0\nb = 2"},
    )
    assert obs.ok, obs.output
    assert (ws / "w.py").read_bytes() == b"a = 1\r\nz = 0\r\nb = 2\r\nc = 3\nd = 4\ne = 5\n"


def test_mixed_endings_same_lines_under_both_endings_are_ambiguous(rt, ws):
    # Before: the CRLF copy (the file's dominant ending) was taken as the only match.
    data = b"x = 1\r\ny = 2\r\nz = 3\r\n\r\nx = 1\ny = 2\n"
    (ws / "d.py").write_bytes(data)
    p = propose_replace(rt, "d.py", "x = 1\ny = 2", "x = 10\ny = 2")
    assert p.error is not None and p.error.code == "AMBIGUOUS_MATCH", p.error
    assert [c.line for c in p.error.candidates] == [1, 5]
    assert (ws / "d.py").read_bytes() == data


def test_mixed_endings_replace_all_keeps_every_other_byte(rt, ws):
    data = b"k = 1\r\nv = 2\r\nk = 1\nv = 2\nrest\r\n"
    (ws / "r.py").write_bytes(data)
    obs = rt.call(
        "replace_string",
        {"path": "r.py", "old_string": "k = 1\nv = 2", "new_string": "kv = 3", "replace_all": True},
    )
    assert obs.ok, obs.output
    assert (ws / "r.py").read_bytes() == b"kv = 3\r\nkv = 3\nrest\r\n"
    rt.undo()
    assert (ws / "r.py").read_bytes() == data


# --- JSON a lenient reader read is not broken further ------------------------------------


def test_json_with_nan_refuses_an_edit_that_breaks_it_for_python(rt, ws):
    # json.dump writes NaN; the file counts as already broken for strict JSON, but
    # Python reads it. A trailing comma breaks it for Python too: tree-sitter, which
    # sees the NaN as two errors, counted no more errors and let it through.
    data = b'{"loss": NaN, "epochs": 3}\n'
    (ws / "r.json").write_bytes(data)
    p = propose_replace(rt, "r.json", '"epochs": 3', '"epochs": 4,')
    assert p.error is not None and p.error.code == "SYNTAX_ERROR", p.error
    assert p.error.message.startswith("the edit adds errors to r.json (.json): line 1:")
    assert (ws / "r.json").read_bytes() == data
    # Guard: an edit that keeps it readable is fine.
    assert rt.call(
        "replace_string",
        {"path": "r.json", "old_string": '"epochs": 3', "new_string": '"epochs": 4'},
    ).ok


# --- a near miss says what cannot be seen -----------------------------------------------


def test_near_miss_names_another_unicode_form(rt, ws):
    (ws / "u.py").write_text(unicodedata.normalize("NFC", "name = 'café'\n"), encoding="utf-8")
    p = propose_replace(rt, "u.py", unicodedata.normalize("NFD", "name = 'café'"), "name = 1")
    assert p.error is not None and p.error.code == "NOT_FOUND"
    note = p.error.candidates[0].note
    assert "NFC versus NFD" in note and "\\u0301" in note, note


def test_near_miss_names_an_invisible_character(rt, ws):
    (ws / "z.py").write_text("value = 1\nother = 2\n", encoding="utf-8")
    p = propose_replace(rt, "z.py", "val\u200bue = 1", "value = 3")
    assert p.error is not None and p.error.code == "NOT_FOUND"
    assert "invisible characters differ: U+200B" in p.error.candidates[0].note


def test_an_overlapping_occurrence_in_a_notebook_cell_is_ambiguous(rt, ws):
    """As in any file: ``}\\n}`` at the inner and the outer closing brace of one cell are two
    places; the notebook path counted them with ``str.count`` (one) and edited the first."""
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("if a:\n    x = {\n  1: {\n  }\n}\n}\n")]
    nbformat.write(notebook, str(ws / "n.ipynb"))
    data = (ws / "n.ipynb").read_bytes()
    p = propose_replace(rt, "n.ipynb", "}\n}", "}\n}\nfoo()")
    assert p.error is not None and p.error.code == "AMBIGUOUS_MATCH", p.error
    assert (ws / "n.ipynb").read_bytes() == data
    assert (
        rt.propose(
            "replace_string",
            {"path": "n.ipynb", "old_string": "}\n}", "new_string": "]", "replace_all": True},
        ).error
        is None
    )
