"""Symbol edits, byte for byte, in every language with symbol support."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from grinta_jupyter.code.edits import (
    SymbolEditError,
    append_to,
    delete_symbol,
    insert_symbol,
    reindent,
    replace_symbol,
)
from grinta_jupyter.code.symbols import Symbol, extract_symbols


def symbol(path: str, source: str, qualname: str, index: int = 0) -> Symbol:
    found = [s for s in extract_symbols(path, source.encode()) if s.qualname == qualname]
    return found[index]


@dataclass
class Case:
    path: str
    source: str
    target: str  # a nested member: replaced, deleted, and the anchor for inserts
    new: str  # sent at column 0, as models usually do
    replaced: str
    deleted: str
    inserted_after: str


CASES = [
    Case(
        "m.py",
        "class Outer:\n"
        "    class Inner:\n"
        "        # First.\n"
        "        @property\n"
        "        def a(self):\n"
        "            return 1\n"
        "\n"
        "        def b(self):\n"
        "            return 2\n"
        "\n"
        "\n"
        "def top():\n"
        "    pass\n",
        "Outer.Inner.a",
        "def c(self):\n    return 3\n",
        "class Outer:\n"
        "    class Inner:\n"
        "        def c(self):\n"
        "            return 3\n"
        "\n"
        "        def b(self):\n"
        "            return 2\n"
        "\n"
        "\n"
        "def top():\n"
        "    pass\n",
        "class Outer:\n"
        "    class Inner:\n"
        "        def b(self):\n"
        "            return 2\n"
        "\n"
        "\n"
        "def top():\n"
        "    pass\n",
        "class Outer:\n"
        "    class Inner:\n"
        "        # First.\n"
        "        @property\n"
        "        def a(self):\n"
        "            return 1\n"
        "\n"
        "        def c(self):\n"
        "            return 3\n"
        "\n"
        "        def b(self):\n"
        "            return 2\n"
        "\n"
        "\n"
        "def top():\n"
        "    pass\n",
    ),
    Case(
        "m.js",
        "export class Outer {\n"
        "  // First.\n"
        "  a() {\n"
        "    return 1;\n"
        "  }\n"
        "\n"
        "  b() {\n"
        "    return 2;\n"
        "  }\n"
        "}\n",
        "Outer.a",
        "c() {\n  return 3;\n}",
        "export class Outer {\n  c() {\n    return 3;\n  }\n\n  b() {\n    return 2;\n  }\n}\n",
        "export class Outer {\n  b() {\n    return 2;\n  }\n}\n",
        "export class Outer {\n"
        "  // First.\n"
        "  a() {\n"
        "    return 1;\n"
        "  }\n"
        "\n"
        "  c() {\n"
        "    return 3;\n"
        "  }\n"
        "\n"
        "  b() {\n"
        "    return 2;\n"
        "  }\n"
        "}\n",
    ),
    Case(
        "m.ts",
        "namespace N {\n"
        "    export class Outer {\n"
        "        @dec()\n"
        "        a(): number {\n"
        "            return 1;\n"
        "        }\n"
        "        b(): number {\n"
        "            return 2;\n"
        "        }\n"
        "    }\n"
        "}\n",
        "N.Outer.a",
        "c(): number {\n    return 3;\n}",
        "namespace N {\n"
        "    export class Outer {\n"
        "        c(): number {\n"
        "            return 3;\n"
        "        }\n"
        "        b(): number {\n"
        "            return 2;\n"
        "        }\n"
        "    }\n"
        "}\n",
        "namespace N {\n"
        "    export class Outer {\n"
        "        b(): number {\n"
        "            return 2;\n"
        "        }\n"
        "    }\n"
        "}\n",
        # No blank line between a and b in the file, so none is added.
        "namespace N {\n"
        "    export class Outer {\n"
        "        @dec()\n"
        "        a(): number {\n"
        "            return 1;\n"
        "        }\n"
        "        c(): number {\n"
        "            return 3;\n"
        "        }\n"
        "        b(): number {\n"
        "            return 2;\n"
        "        }\n"
        "    }\n"
        "}\n",
    ),
    Case(
        "m.tsx",
        "export function A() {\n  return <div>a</div>;\n}\n\nexport function B() {\n  return <b />;\n}\n",
        "A",
        "export function C() {\n  return <i />;\n}",
        "export function C() {\n  return <i />;\n}\n\nexport function B() {\n  return <b />;\n}\n",
        "export function B() {\n  return <b />;\n}\n",
        "export function A() {\n  return <div>a</div>;\n}\n\n"
        "export function C() {\n  return <i />;\n}\n\n"
        "export function B() {\n  return <b />;\n}\n",
    ),
    Case(
        "m.go",
        "package m\n\n// A does a.\nfunc (t *T) A() int {\n\treturn 1\n}\n\nfunc B() {}\n",
        "T.A",
        "func (t *T) C() int {\n    return 3\n}",
        "package m\n\nfunc (t *T) C() int {\n\treturn 3\n}\n\nfunc B() {}\n",
        "package m\n\nfunc B() {}\n",
        "package m\n\n// A does a.\nfunc (t *T) A() int {\n\treturn 1\n}\n\n"
        "func (t *T) C() int {\n\treturn 3\n}\n\nfunc B() {}\n",
    ),
    Case(
        "m.rs",
        "mod outer {\n"
        "    impl S {\n"
        "        /// A.\n"
        "        #[inline]\n"
        "        fn a(&self) -> i32 {\n"
        "            1\n"
        "        }\n"
        "\n"
        "        fn b(&self) {}\n"
        "    }\n"
        "}\n",
        "outer.S.a",
        "fn c(&self) -> i32 {\n    3\n}",
        "mod outer {\n"
        "    impl S {\n"
        "        fn c(&self) -> i32 {\n"
        "            3\n"
        "        }\n"
        "\n"
        "        fn b(&self) {}\n"
        "    }\n"
        "}\n",
        "mod outer {\n    impl S {\n        fn b(&self) {}\n    }\n}\n",
        "mod outer {\n"
        "    impl S {\n"
        "        /// A.\n"
        "        #[inline]\n"
        "        fn a(&self) -> i32 {\n"
        "            1\n"
        "        }\n"
        "\n"
        "        fn c(&self) -> i32 {\n"
        "            3\n"
        "        }\n"
        "\n"
        "        fn b(&self) {}\n"
        "    }\n"
        "}\n",
    ),
    Case(
        "M.java",
        "class Outer {\n"
        "    static class Inner {\n"
        "        /** A. */\n"
        "        @Override\n"
        "        int a() {\n"
        "            return 1;\n"
        "        }\n"
        "\n"
        "        void b() {}\n"
        "    }\n"
        "}\n",
        "Outer.Inner.a",
        "int c() {\n    return 3;\n}",
        "class Outer {\n"
        "    static class Inner {\n"
        "        int c() {\n"
        "            return 3;\n"
        "        }\n"
        "\n"
        "        void b() {}\n"
        "    }\n"
        "}\n",
        "class Outer {\n    static class Inner {\n        void b() {}\n    }\n}\n",
        "class Outer {\n"
        "    static class Inner {\n"
        "        /** A. */\n"
        "        @Override\n"
        "        int a() {\n"
        "            return 1;\n"
        "        }\n"
        "\n"
        "        int c() {\n"
        "            return 3;\n"
        "        }\n"
        "\n"
        "        void b() {}\n"
        "    }\n"
        "}\n",
    ),
    Case(
        "m.c",
        "/* A. */\nint a(void)\n{\n    return 1;\n}\n\nint b(void) { return 2; }\n",
        "a",
        "int c(void)\n{\n    return 3;\n}",
        "int c(void)\n{\n    return 3;\n}\n\nint b(void) { return 2; }\n",
        "int b(void) { return 2; }\n",
        "/* A. */\nint a(void)\n{\n    return 1;\n}\n\nint c(void)\n{\n    return 3;\n}\n\n"
        "int b(void) { return 2; }\n",
    ),
    Case(
        "m.cpp",
        "namespace n {\n"
        "class Outer {\n"
        " public:\n"
        "  // A.\n"
        "  int a() {\n"
        "    return 1;\n"
        "  }\n"
        "  void b() {}\n"
        "};\n"
        "}  // namespace n\n",
        "n.Outer.a",
        "int c() {\n  return 3;\n}",
        "namespace n {\n"
        "class Outer {\n"
        " public:\n"
        "  int c() {\n"
        "    return 3;\n"
        "  }\n"
        "  void b() {}\n"
        "};\n"
        "}  // namespace n\n",
        "namespace n {\nclass Outer {\n public:\n  void b() {}\n};\n}  // namespace n\n",
        "namespace n {\n"
        "class Outer {\n"
        " public:\n"
        "  // A.\n"
        "  int a() {\n"
        "    return 1;\n"
        "  }\n"
        "  int c() {\n"
        "    return 3;\n"
        "  }\n"
        "  void b() {}\n"
        "};\n"
        "}  // namespace n\n",
    ),
    Case(
        "m.rb",
        "module M\n"
        "  class Outer\n"
        "    # A.\n"
        "    def a\n"
        "      1\n"
        "    end\n"
        "\n"
        "    def b; end\n"
        "  end\n"
        "end\n",
        "M.Outer.a",
        "def c\n  3\nend",
        "module M\n  class Outer\n    def c\n      3\n    end\n\n    def b; end\n  end\nend\n",
        "module M\n  class Outer\n    def b; end\n  end\nend\n",
        "module M\n"
        "  class Outer\n"
        "    # A.\n"
        "    def a\n"
        "      1\n"
        "    end\n"
        "\n"
        "    def c\n"
        "      3\n"
        "    end\n"
        "\n"
        "    def b; end\n"
        "  end\n"
        "end\n",
    ),
]

IDS = [case.path for case in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_replace(case: Case) -> None:
    target = symbol(case.path, case.source, case.target)
    assert replace_symbol(case.source, target, case.new) == case.replaced


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_delete(case: Case) -> None:
    target = symbol(case.path, case.source, case.target)
    assert delete_symbol(case.source, target) == case.deleted


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_insert_after(case: Case) -> None:
    target = symbol(case.path, case.source, case.target)
    assert insert_symbol(case.source, target, case.new, "after") == case.inserted_after


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_insert_before_then_delete_round_trips(case: Case) -> None:
    target = symbol(case.path, case.source, case.target)
    inserted = insert_symbol(case.source, target, case.new, "before")
    before = {s.qualname for s in extract_symbols(case.path, case.source.encode())}
    (added,) = [
        s for s in extract_symbols(case.path, inserted.encode()) if s.qualname not in before
    ]
    assert added.end_line < symbol(case.path, inserted, case.target).start_line
    assert delete_symbol(inserted, added) == case.source


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_crlf_file_keeps_crlf(case: Case) -> None:
    source = case.source.replace("\n", "\r\n")
    target = symbol(case.path, source, case.target)
    assert replace_symbol(source, target, case.new) == case.replaced.replace("\n", "\r\n")
    assert delete_symbol(source, target) == case.deleted.replace("\n", "\r\n")
    after = insert_symbol(source, target, case.new, "after")
    assert after == case.inserted_after.replace("\n", "\r\n")


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_non_ascii_before_the_symbol(case: Case) -> None:
    marker = {"m.py": "# héllo wörld ☕\n", "m.rb": "# héllo wörld ☕\n"}.get(
        case.path, "// héllo wörld ☕\n"
    )
    if case.path == "m.go":  # a Go file starts with its package clause
        source = case.source.replace("package m\n", "package m\n" + marker)
        expected = case.replaced.replace("package m\n", "package m\n" + marker)
    else:
        source, expected = marker + "\n" + case.source, marker + "\n" + case.replaced
    target = symbol(case.path, source, case.target)
    assert target.start_byte > len(source[: source.index("☕")])  # bytes != characters
    assert replace_symbol(source, target, case.new) == expected


# --- Python specifics ---------------------------------------------------------------

PY = "import os\n\n\nclass A:\n    x = 1\n\n    def f(self):\n        return 1\n\n\ndef g():\n    pass\n"


def test_python_replace_keeps_formatting_elsewhere_and_equals_plain_splice() -> None:
    source = "# header  \nX = [1,\n   2]  # odd spacing kept\n\n\ndef f( a ):\n    return a\n"
    target = symbol("m.py", source, "f")
    result = replace_symbol(source, target, "def f(a):\n    return a + 1\n")
    plain = source[: source.index("def f")] + "def f(a):\n    return a + 1\n"
    assert result == plain


def test_python_replace_rejects_invalid_new_source() -> None:
    with pytest.raises(SymbolEditError) as error:
        replace_symbol(PY, symbol("m.py", PY, "A.f"), "def f(self:\n    pass\n")
    assert error.value.code == "SYNTAX_ERROR"


def test_python_replace_rejects_empty_new_source() -> None:
    with pytest.raises(SymbolEditError) as error:
        replace_symbol(PY, symbol("m.py", PY, "A.f"), "  \n")
    assert error.value.code == "INVALID_ARGS"


def test_python_delete_only_method_leaves_pass() -> None:
    source = "class A:\n    def f(self):\n        pass\n\n\nx = 1\n"
    result = delete_symbol(source, symbol("m.py", source, "A.f"))
    assert result == "class A:\n    pass\n\n\nx = 1\n"


def test_python_delete_keeps_detached_comments() -> None:
    source = "def a():\n    pass\n\n# Section.\n\ndef b():\n    pass\n"
    assert (
        delete_symbol(source, symbol("m.py", source, "b")) == "def a():\n    pass\n\n# Section.\n"
    )


def test_python_insert_before_top_level_uses_two_blank_lines() -> None:
    result = insert_symbol(PY, symbol("m.py", PY, "g"), "def h():\n    pass", "before")
    assert result == PY.replace("def g():", "def h():\n    pass\n\n\ndef g():")


def test_python_append_to_class_and_file() -> None:
    result = append_to(PY, symbol("m.py", PY, "A"), "def h(self):\n    pass", "python")
    assert result == PY.replace(
        "        return 1\n", "        return 1\n\n    def h(self):\n        pass\n"
    )
    result = append_to(PY, None, "def h():\n    pass\n", "python")
    assert result == PY + "\n\ndef h():\n    pass\n"


def test_python_model_text_already_indented_is_moved_not_doubled() -> None:
    target = symbol("m.py", PY, "A.f")
    result = replace_symbol(PY, target, "        def f(self):\n            return 2\n")
    assert "    def f(self):\n        return 2\n" in result


def test_stale_symbol_is_refused() -> None:
    target = symbol("m.py", PY, "A.f")
    with pytest.raises(SymbolEditError) as error:
        replace_symbol(PY.replace("def f(self)", "def f2(self)"), target, "def f(self):\n    pass")
    assert error.value.code == "SYMBOL_NOT_FOUND"


def test_moved_symbol_is_found_again() -> None:
    target = symbol("m.py", PY, "A.f")
    moved = "# new first line\n" + PY
    assert replace_symbol(moved, target, "def f(self):\n    return 9") == moved.replace(
        "return 1", "return 9"
    )


def test_overload_is_targeted_by_line() -> None:
    source = "@overload\ndef p(x: int) -> int: ...\n@overload\ndef p(x: str) -> str: ...\n"
    second = symbol("m.py", source, "p", 1)
    result = replace_symbol(source, second, "@overload\ndef p(x: bytes) -> bytes: ...")
    assert (
        result == "@overload\ndef p(x: int) -> int: ...\n@overload\ndef p(x: bytes) -> bytes: ...\n"
    )


# --- other languages ----------------------------------------------------------------


def test_append_to_brace_bodies() -> None:
    source = "class A {\n  int x;\n}\n\nclass B {}\n"
    a = symbol("M.java", source, "A")
    assert append_to(source, a, "void f() {\n  x++;\n}", "java") == (
        "class A {\n  int x;\n\n  void f() {\n    x++;\n  }\n}\n\nclass B {}\n"
    )
    b = symbol("M.java", source, "B")
    assert append_to(source, b, "void g() {}", "java") == (
        "class A {\n  int x;\n}\n\nclass B {\n  void g() {}\n}\n"
    )


def test_append_to_ruby_class() -> None:
    source = "class A\n  def a; end\nend\n"
    result = append_to(source, symbol("m.rb", source, "A"), "def b\n  1\nend", "ruby")
    assert result == "class A\n  def a; end\n\n  def b\n    1\n  end\nend\n"


def test_append_method_to_go_type_goes_after_its_methods() -> None:
    source = "package m\n\ntype T struct {\n\ta int\n}\n\nfunc (t T) A() {}\n\nfunc Other() {}\n"
    result = append_to(source, symbol("m.go", source, "T"), "func (t T) B() {}", "go")
    assert result == source.replace(
        "func (t T) A() {}\n", "func (t T) A() {}\n\nfunc (t T) B() {}\n"
    )
    field = append_to(source, symbol("m.go", source, "T"), "b string", "go")
    assert field == source.replace("\ta int\n", "\ta int\n\tb string\n")


def test_append_method_to_rust_struct_goes_into_its_impl() -> None:
    source = "struct S {\n    a: i32,\n}\n\nimpl S {\n    fn a(&self) {}\n}\n"
    result = append_to(source, symbol("m.rs", source, "S"), "fn b(&self) {}", "rust")
    assert result == source.replace("fn a(&self) {}\n", "fn a(&self) {}\n\n    fn b(&self) {}\n")
    bare = "struct S {\n    a: i32,\n}\n"
    result = append_to(bare, symbol("m.rs", bare, "S"), "fn b(&self) {}", "rust")
    assert result == bare + "\nimpl S {\n    fn b(&self) {}\n}\n"


def test_append_to_file_end() -> None:
    source = "fn a() {}\n\n\n"
    assert append_to(source, None, "fn b() {}", "rust") == "fn a() {}\n\nfn b() {}\n"
    assert append_to("", None, "fn b() {}", "rust") == "fn b() {}\n"


def test_syntax_error_in_result_is_refused() -> None:
    source = "function a() {\n  return 1;\n}\n"
    with pytest.raises(SymbolEditError) as error:
        replace_symbol(source, symbol("m.js", source, "a"), "function a() {\n  return (1;\n}")
    assert error.value.code == "SYNTAX_ERROR"


def test_invalid_where() -> None:
    with pytest.raises(SymbolEditError) as error:
        insert_symbol(PY, symbol("m.py", PY, "g"), "x = 1", "inside")  # type: ignore[arg-type]
    assert error.value.code == "INVALID_ARGS"


# --- reindent -----------------------------------------------------------------------


def test_reindent_dedents_and_keeps_relative_indentation() -> None:
    text = "\n    def f():\n        if x:\n            return 1\n\n        return 2\n\n"
    assert reindent(text, "  ") == "  def f():\n      if x:\n          return 1\n\n      return 2"


def test_reindent_spaces_to_tabs_and_back() -> None:
    assert reindent("func f() {\n    if x {\n        y()\n    }\n}", "\t") == (
        "\tfunc f() {\n\t\tif x {\n\t\t\ty()\n\t\t}\n\t}"
    )
    assert reindent("def f():\n\treturn 1", "    ", "    ") == "    def f():\n        return 1"
    assert reindent("a\r\n  b\r\n", "") == "a\n  b"


FIXTURES = Path(__file__).parent.parent / "fixtures" / "symbols"


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir()))
def test_replacing_a_symbol_with_its_own_text_changes_nothing(name: str) -> None:
    source = (FIXTURES / name).read_text()
    encoded = source.encode()
    for s in extract_symbols(name, encoded):
        start = encoded.rfind(b"\n", 0, s.start_byte) + 1
        if encoded[start : s.start_byte].strip():
            start = s.start_byte
        own = encoded[start : s.end_byte].decode()
        assert replace_symbol(source, s, own) == source, s.qualname
        assert replace_symbol(source, s, reindent(own, "")) == source, s.qualname


def test_reindent_keeps_column_zero_lines_of_an_indented_definition() -> None:
    text = "    void f() {\n#ifdef X\n        g();\n#endif\n    }"
    assert reindent(text, "") == "void f() {\n#ifdef X\n    g();\n#endif\n}"


def test_trailing_comment_on_the_last_line_stays_on_replace_and_goes_on_delete() -> None:
    source = "namespace a {\nint f() { return 1; }\n}  // namespace a\n\nint g() { return 2; }\n"
    ns = symbol("m.cpp", source, "a")
    replaced = replace_symbol(source, ns, "namespace a {\nint f() { return 3; }\n}")
    assert replaced == source.replace("return 1", "return 3")
    assert delete_symbol(source, ns) == "int g() { return 2; }\n"
