"""Symbol edits later in one call find the definition the address named, not a namesake
an earlier edit of the same call added (or one a BOM shifted)."""

from __future__ import annotations

from pathlib import Path

from grinta_jupyter import Runtime


def _edit(root: Path, edits: list[dict[str, str]]):
    rt = Runtime(root)
    return rt, rt.propose("edit_symbols", {"edits": edits})


def test_a_namesake_inserted_above_by_an_earlier_edit_is_not_the_one_replaced(
    tmp_path: Path,
) -> None:
    source = "def a():\n    return 0\n\n\ndef f():\n    return 1\n"
    (tmp_path / "m.py").write_text(source)
    rt, p = _edit(
        tmp_path,
        [
            {"symbol": "a", "action": "insert_after", "new_source": "def f():\n    return 'new'\n"},
            {"symbol": "f", "action": "replace", "new_source": "def f():\n    return 'changed'\n"},
        ],
    )
    assert p.ok, p.error
    assert rt.commit(p).ok
    # The f the address named (the file's only one) is replaced; the new one stays as sent.
    assert (tmp_path / "m.py").read_text() == (
        "def a():\n    return 0\n\n\n"
        "def f():\n    return 'new'\n\n\n"
        "def f():\n    return 'changed'\n"
    )


def test_an_overload_picked_by_line_in_a_bom_file_after_an_earlier_edit(tmp_path: Path) -> None:
    source = "def g():\n    return 0\n\n\ndef f():\n    return 1\n\n\ndef f():\n    return 2\n"
    (tmp_path / "m.py").write_bytes(b"\xef\xbb\xbf" + source.encode())
    rt, p = _edit(
        tmp_path,
        [
            {"symbol": "g", "action": "replace", "new_source": "def g():\n    return 'g'\n"},
            {
                "symbol": "m.py::f@9",
                "action": "replace",
                "new_source": "def f():\n    return 'second'\n",
            },
        ],
    )
    assert p.ok, p.error
    assert "-    return 2\n+    return 'second'" in p.diff
    assert rt.commit(p).ok
    assert (tmp_path / "m.py").read_bytes() == b"\xef\xbb\xbf" + source.replace(
        "return 0", "return 'g'"
    ).replace("return 2", "return 'second'").encode()


def test_a_definition_an_earlier_edit_made_two_is_refused_with_both(tmp_path: Path) -> None:
    source = "def f():\n    return 1\n"
    (tmp_path / "m.py").write_text(source)
    _, p = _edit(
        tmp_path,
        [
            {
                "symbol": "f",
                "action": "replace",
                "new_source": "def f():\n    return 'a'\n\n\ndef f():\n    return 'b'\n",
            },
            {"symbol": "f", "action": "delete"},
        ],
    )
    assert p.error is not None and p.error.code == "AMBIGUOUS_SYMBOL"
    assert [(c.line, c.name) for c in p.error.candidates] == [(1, "f"), (5, "f")]
    assert (tmp_path / "m.py").read_text() == source


def test_a_name_matched_exactly_says_which_definitions_it_passed_over(tmp_path: Path) -> None:
    """The documented rule (an exact qualified name wins) edits the function ``process``
    over the method ``A.process``; the resolution the reviewer reads said "the only
    definition with this name", which was not true."""
    (tmp_path / "m.py").write_text(
        "class A:\n    def process(self):\n        return 1\n\n\ndef process():\n    return 2\n"
    )
    edit = {
        "symbol": "process",
        "action": "replace",
        "new_source": "def process():\n    return 3\n",
    }
    p = Runtime(tmp_path).propose("edit_symbols", {"edits": [edit]})
    assert p.ok, p.error
    (resolution,) = p.resolutions
    assert resolution.chosen == "m.py:6 function process"
    assert "only definition" not in resolution.reason
    assert "not m.py:2 method A.process" in resolution.reason
    # Alone, it is the only one, and says so.
    (tmp_path / "m.py").write_text("def process():\n    return 2\n")
    p = Runtime(tmp_path).propose("edit_symbols", {"edits": [edit]})
    assert p.resolutions[0].reason == "the only definition with this name"


def test_a_bom_is_no_part_of_the_first_definition_shown_as_a_candidate(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_bytes(
        b"\xef\xbb\xbfdef f():\n    return 1\n\n\ndef f():\n    return 2\n"
    )
    before = (tmp_path / "m.py").read_bytes()
    _, p = _edit(tmp_path, [{"symbol": "f", "action": "replace", "new_source": "def f(): ..."}])
    assert not p.ok and p.error is not None
    assert [(c.line, c.snippet) for c in p.error.candidates] == [(1, "def f():"), (5, "def f():")]
    assert (tmp_path / "m.py").read_bytes() == before
