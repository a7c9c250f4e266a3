"""A symbol write changes the definition it names and nothing else: not the other names
declared by the same statement (``const a = () => 1, b = 2;``), and not the wrong lines
of a file whose lines end in a lone CR."""

from __future__ import annotations

from pathlib import Path

import pytest

from grinta_jupyter import Runtime


def _propose(root: Path, edits: list[dict[str, str]]):
    rt = Runtime(root)
    return rt, rt.propose("edit_symbols", {"edits": edits})


# (file, its text, the address, the names the statement declares besides it)
SHARED_STATEMENTS = [
    ("a.js", "const a = () => 1, b = () => 2;\nfunction z() {}\n", "b", ["a"]),
    ("a.ts", "export const X = 1, Y = 2;\nfunction z() {}\n", "Y", ["X"]),
    # `p` is no symbol at all: only the tree knows the statement declares it.
    ("a.ts", "let p = 1, q = () => 2;\nfunction z() {}\n", "q", ["p"]),
    ("a.go", "package m\n\nconst C, D = 1, 2\n\nfunc z() {}\n", "D", ["C"]),
    ("a.c", "typedef int I, J;\n\nint z(void) { return 0; }\n", "J", ["I"]),
    ("a.c", "struct S { int a; } s1, s2;\n\nint z(void) { return 0; }\n", "S", ["s1", "s2"]),
    ("m.py", "A = B = 1\n\n\ndef z():\n    pass\n", "A", ["B"]),
]


@pytest.mark.parametrize(("path", "source", "address", "others"), SHARED_STATEMENTS)
def test_deleting_one_name_of_a_statement_that_declares_several_is_refused(
    tmp_path: Path, path: str, source: str, address: str, others: list[str]
) -> None:
    (tmp_path / path).write_text(source)
    _, p = _propose(tmp_path, [{"symbol": address, "action": "delete"}])
    assert p.error is not None and p.error.code == "NOT_SUPPORTED", p.diff
    assert f"declared in one statement with {', '.join(others)}" in p.error.message
    assert (tmp_path / path).read_text() == source


def test_a_replace_that_drops_a_name_declared_alongside_is_refused(tmp_path: Path) -> None:
    source = "const a = () => 1, b = () => 2;\nfunction z() {}\n"
    (tmp_path / "a.js").write_text(source)
    edit = {"symbol": "b", "action": "replace", "new_source": "const b = () => 3;"}
    _, p = _propose(tmp_path, [edit])
    assert p.error is not None and p.error.code == "INVALID_ARGS", p.diff
    assert "with a (line 1)" in p.error.message
    assert (tmp_path / "a.js").read_text() == source


def test_a_replace_that_keeps_every_name_of_the_statement_goes_through(tmp_path: Path) -> None:
    (tmp_path / "a.js").write_text("const a = () => 1, b = () => 2;\nfunction z() {}\n")
    # As `read` shows it, with b changed; and the way out the refusal of a delete names.
    rt, p = _propose(
        tmp_path,
        [{"symbol": "b", "action": "replace", "new_source": "const a = () => 1, b = () => 3;"}],
    )
    assert p.ok, p.error
    assert rt.commit(p).ok
    rt, p = _propose(
        tmp_path, [{"symbol": "a", "action": "replace", "new_source": "const b = () => 3;"}]
    )
    assert p.ok, p.error
    assert rt.commit(p).ok
    assert (tmp_path / "a.js").read_text() == "const b = () => 3;\nfunction z() {}\n"


def test_a_statement_declaring_one_name_is_deleted_as_before(tmp_path: Path) -> None:
    """Guard (passes before and after): a single declarator is the definition's own."""
    (tmp_path / "a.js").write_text("const a = () => 1;\nfunction z() {}\n")
    rt, p = _propose(tmp_path, [{"symbol": "a", "action": "delete"}])
    assert p.ok, p.error
    assert rt.commit(p).ok
    assert (tmp_path / "a.js").read_text() == "function z() {}\n"


LONE_CR = b"def f():\r    return 1\r\r\rdef g():\r    return 2\r"


@pytest.mark.parametrize(
    "edit",
    [
        {"symbol": "f", "action": "insert_after", "new_source": "def h():\n    return 9\n"},
        {"symbol": "g", "action": "replace", "new_source": "def g():\n    return 3\n"},
        {"symbol": "f", "action": "delete"},
    ],
)
def test_a_file_whose_lines_end_in_a_lone_cr_is_refused_not_edited_in_the_wrong_place(
    tmp_path: Path, edit: dict[str, str]
) -> None:
    """Before: every definition sat on "line 1"; an insert after f landed after g, a
    replace of g dropped the file's last CR and wrote LF into a CR file."""
    (tmp_path / "m.py").write_bytes(LONE_CR)
    _, p = _propose(tmp_path, [edit])
    assert p.error is not None and p.error.code == "NOT_SUPPORTED", p.diff
    assert "lone CR" in p.error.message and "replace_string" in p.error.message
    assert (tmp_path / "m.py").read_bytes() == LONE_CR


def test_a_crlf_file_is_still_edited_in_place(tmp_path: Path) -> None:
    """Guard (passes before and after): CR before LF is no lone CR."""
    source = b"def f():\r\n    return 1\r\n\r\n\r\ndef g():\r\n    return 2\r\n"
    (tmp_path / "m.py").write_bytes(source)
    edit = {"symbol": "f", "action": "insert_after", "new_source": "def h():\n    return 9\n"}
    rt, p = _propose(tmp_path, [edit])
    assert p.ok, p.error
    assert rt.commit(p).ok
    assert (tmp_path / "m.py").read_bytes() == source.replace(
        b"\r\n\r\n\r\ndef g", b"\r\n\r\n\r\ndef h():\r\n    return 9\r\n\r\n\r\ndef g"
    )


RUN_ON = "class A:\n    def f(self):\n        x = {\n\n    def g(self):\n        return 2\n"


@pytest.mark.parametrize(
    "edit",
    [
        {"symbol": "A.f", "action": "replace", "new_source": "def f(self):\n    x = {}\n"},
        {"symbol": "A.f", "action": "delete"},
    ],
)
def test_a_definition_a_syntax_error_ran_on_into_the_next_is_refused(
    tmp_path: Path, edit: dict[str, str]
) -> None:
    """Before: tree-sitter's recovery from the unclosed ``{`` ended ``A.f`` after ``def g``,
    so fixing (or deleting) ``f`` deleted ``g`` as well."""
    (tmp_path / "m.py").write_text(RUN_ON)
    _, p = _propose(tmp_path, [edit])
    assert p.error is not None and p.error.code == "SYNTAX_ERROR", p.diff
    assert "runs it on into line 5" in p.error.message
    assert (tmp_path / "m.py").read_text() == RUN_ON


def test_a_syntax_error_that_stays_inside_its_definition_is_still_fixed_by_replace(
    tmp_path: Path,
) -> None:
    """Guard (passes before and after): the error ends where the indentation does."""
    source = "def f():\n    x = foo(\n    return 1\n\n\ndef g():\n    return 2\n"
    (tmp_path / "m.py").write_text(source)
    edit = {"symbol": "f", "action": "replace", "new_source": "def f():\n    return foo()\n"}
    rt, p = _propose(tmp_path, [edit])
    assert p.ok, p.error
    assert rt.commit(p).ok
    assert (tmp_path / "m.py").read_text() == source.replace(
        "    x = foo(\n    return 1\n", "    return foo()\n"
    )
