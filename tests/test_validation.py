"""Validation before commit: syntax per language and the content guards."""

from __future__ import annotations

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime.guards import (
    check_serialized,
    escapes_outside_strings,
    is_placeholder_line,
)
from tests.conftest import snapshot

CASES = [
    # (file, valid content, old, broken new)
    ("m.py", "def f():\n    return 1\n", "return 1", "return (1"),
    ("c.json", '{"a": 1}\n', '"a": 1', '"a": '),
    ("p.toml", "[tool]\nname = 'x'\n", "name = 'x'", "name = "),
    ("c.yaml", "key: [1, 2]\n", "[1, 2]", "[1, 2"),
    ("m.go", "package m\n\nfunc F() int {\n\treturn 1\n}\n", "return 1", "return (1"),
    ("m.rs", "fn f() -> i32 {\n    1\n}\n", "    1\n}", "    1\n"),
    ("m.ts", "export function f(): number {\n  return 1;\n}\n", "return 1;", "return (1;"),
    ("M.java", "class M {\n  int f() { return 1; }\n}\n", "return 1;", "return (1;"),
    ("m.c", "int f(void) {\n  return 1;\n}\n", "return 1;", "return (1;"),
    ("m.rb", "def f\n  1\nend\n", "  1\nend", "  1\n"),
]


@pytest.mark.parametrize("name,content,old,new", CASES, ids=[c[0] for c in CASES])
def test_edit_that_breaks_syntax_is_refused_naming_the_line(ws, name, content, old, new):
    (ws / name).write_text(content)
    rt = Runtime(ws)
    before = snapshot(ws)
    p = rt.propose("replace_string", {"path": name, "old_string": old, "new_string": new})
    assert not p.ok and p.error.code == "SYNTAX_ERROR", p.error
    assert "line" in p.error.message and p.error.line is not None
    assert not rt.commit(p).ok
    assert snapshot(ws) == before


@pytest.mark.parametrize("name,content,old,new", CASES, ids=[c[0] for c in CASES])
def test_valid_edits_pass(ws, name, content, old, new):
    (ws / name).write_text(content)
    p = Runtime(ws).propose(
        "replace_string", {"path": name, "old_string": old, "new_string": old + " "}
    )
    # A trailing space never breaks these files.
    assert p.ok, p.error


def test_already_broken_file_may_be_edited_if_no_worse(ws):
    (ws / "broken.py").write_text("def f(:\n    pass\n\nx = 1\n")
    rt = Runtime(ws)
    assert rt.propose(
        "replace_string", {"path": "broken.py", "old_string": "x = 1", "new_string": "x = 2"}
    ).ok
    p = rt.propose(
        "replace_string", {"path": "broken.py", "old_string": "def f(:", "new_string": "def f():"}
    )
    assert p.ok, "fixing the error is allowed"
    p = rt.propose(
        "replace_string", {"path": "broken.py", "old_string": "x = 1", "new_string": "x = (\nclass"}
    )
    assert p.error.code == "SYNTAX_ERROR"


def test_unknown_languages_are_not_validated(ws):
    (ws / "notes.weird").write_text("((((\n")
    p = Runtime(ws).propose(
        "replace_string", {"path": "notes.weird", "old_string": "((((", "new_string": "))"}
    )
    assert p.ok


def test_serialized_payload_is_refused(rt, ws):
    before = snapshot(ws)
    p = rt.propose(
        "replace_string",
        {
            "path": "pkg/core.py",
            "old_string": "    return a - b",
            "new_string": "    x = a - b\\n    return x\\n",
        },
    )
    assert p.error.code == "CONTENT_SERIALIZED"
    p = rt.propose("create", {"path": "n.py", "content": 'def f():\\n    return \\"x\\"\\n'})
    assert p.error.code == "CONTENT_SERIALIZED"
    assert snapshot(ws) == before


def test_real_escapes_inside_string_literals_pass(rt):
    new = 'def join(lines):\n    return "\\n".join(lines) + "\\t\\n"\n'
    assert rt.propose("create", {"path": "j.py", "content": new}).ok
    assert rt.propose(
        "create", {"path": "j.js", "content": "const s = `a\\nb`;\nconst t = 'c\\nd';\n"}
    ).ok


def test_escape_counting():
    assert escapes_outside_strings('print("a\\nb")') == 0
    assert escapes_outside_strings("x = 1\\ny = 2\\n") == 2
    assert escapes_outside_strings('say(\\"hi\\")') == 2
    assert check_serialized("line one\nline two\n") is None


@pytest.mark.parametrize(
    "line",
    [
        "# ... rest of the code unchanged ...",
        "    // ... existing code ...",
        "# rest of the file unchanged",
        "/* ... remaining methods ... */",
        "<!-- ... existing content ... -->",
        "    # (rest of implementation omitted)",
    ],
)
def test_placeholder_lines(line):
    assert is_placeholder_line(line)


@pytest.mark.parametrize(
    "line",
    [
        "...",
        "    ...",
        "# Keep existing entries when the term matches",
        "print('...')",
        "pass  # unchanged",
        "# the rest of the log is truncated here",
    ],
)
def test_not_placeholder_lines(line):
    assert not is_placeholder_line(line)


def test_placeholder_edit_is_refused_but_existing_marker_is_fine(ws):
    (ws / "p.py").write_text(
        "class A:\n    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n"
    )
    rt = Runtime(ws)
    p = rt.propose(
        "replace_string",
        {
            "path": "p.py",
            "old_string": "    def f(self):\n        return 1\n\n    def g(self):\n        return 2",
            "new_string": "    def f(self):\n        return 10\n\n    # ... rest of the methods unchanged ...",
        },
    )
    assert p.error.code == "PLACEHOLDER" and p.error.line == 5
    (ws / "q.py").write_text("# ... existing code ...\nx = 1\n")
    assert (
        Runtime(ws)
        .propose("replace_string", {"path": "q.py", "old_string": "x = 1", "new_string": "x = 2"})
        .ok
    )
