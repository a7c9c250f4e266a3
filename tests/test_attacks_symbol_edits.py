"""Attacks on symbol edits with shapes found in real code (site-packages, node_modules,
/usr/include): an edit changes exactly the named definition and nothing else.

Each test replays a property that failed on real files: replacing a definition with
its own text (as ``read`` shows it) must leave the file byte for byte; deleting one
must leave every other definition's text as it was.
"""

from __future__ import annotations

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.code.edits import append_to, delete_symbol, insert_symbol, replace_symbol
from grinta_jupyter.code.symbols import Symbol, extract_symbols


def _symbol(path: str, source: str, qualname: str) -> Symbol:
    return next(s for s in extract_symbols(path, source.encode()) if s.qualname == qualname)


def _lines(source: str, symbol: Symbol) -> str:
    """The symbol's whole lines, as ``read {symbol}`` shows them."""
    return "\n".join(source.split("\n")[symbol.start_line - 1 : symbol.end_line]) + "\n"


def _texts(path: str, source: str) -> list[tuple[str, str]]:
    data = source.encode()
    return [
        (s.qualname, data[s.start_byte : s.end_byte].decode()) for s in extract_symbols(path, data)
    ]


TS_FIELDS = """\
export abstract class Box {
  private readonly onChange = () => this.draw();

  abstract get(key: string): string;

  draw(): void {}
}

function mkMode(config) {
  return config;
};
"""


def test_ts_member_ending_in_semicolon_round_trips_and_deletes_whole():
    """Attack: replace a TS arrow-function field / abstract method (labextension/src,
    @rjsf/core Form.tsx, every .d.ts) with its own lines, and delete it.
    Bug: the span stopped before the member's `;`, so the replace wrote `;;` and the
    delete left a lone `;` line in the class body."""
    for qualname in ("Box.onChange", "Box.get", "mkMode"):
        target = _symbol("box.ts", TS_FIELDS, qualname)
        assert replace_symbol(TS_FIELDS, target, _lines(TS_FIELDS, target)) == TS_FIELDS
        deleted = delete_symbol(TS_FIELDS, target)
        assert ";;" not in deleted and "\n;\n" not in deleted, deleted
    assert delete_symbol(TS_FIELDS, _symbol("box.ts", TS_FIELDS, "Box.get")) == TS_FIELDS.replace(
        "  abstract get(key: string): string;\n\n", ""
    )


def test_js_class_field_arrow_round_trips():
    """Attack: replace a JS class-field arrow method (`onTick = () => {...};`) with the
    lines read shows. Bug: the file got `};;`."""
    source = "class Node {\n  onTick = () => {\n    this.tick();\n  };\n\n  tick() {}\n}\n"
    target = _symbol("node.js", source, "Node.onTick")
    assert replace_symbol(source, target, _lines(source, target)) == source


PY_TRAILING = """\
import logging

RETRIES_BACKOFF_FACTOR = 0.5  # 0s, 0.5s, 1s, 2s, 4s, etc.


def connect():
    return None
"""

CPP_NAMESPACE = """\
namespace engine {

inline int square(int x) { return x * x; }

}  // namespace engine

int main() { return 0; }
"""


def test_replace_with_own_lines_keeps_trailing_comment_once():
    """Attack: replace a definition whose last line carries a comment (httpcore's
    `RETRIES_BACKOFF_FACTOR = 0.5  # 0s, ...`, numpy's constants, C++
    `}  // namespace engine`) with the lines read shows.
    Bug: the comment stayed in the file and came again with the new text:
    `# 0s, ...  # 0s, ...`, `}  // namespace engine  // namespace engine`."""
    for path, source, qualname in (
        ("conn.py", PY_TRAILING, "RETRIES_BACKOFF_FACTOR"),
        ("engine.cpp", CPP_NAMESPACE, "engine"),
    ):
        target = _symbol(path, source, qualname)
        assert replace_symbol(source, target, _lines(source, target)) == source
    # Without the comment in the new text, the comment stays (docs/languages.md).
    target = _symbol("conn.py", PY_TRAILING, "RETRIES_BACKOFF_FACTOR")
    assert replace_symbol(PY_TRAILING, target, "RETRIES_BACKOFF_FACTOR = 1\n") == (
        PY_TRAILING.replace("= 0.5  #", "= 1  #")
    )


PY_HEADER = """\
import re

# -----------------------------------------------------------------------------
# Globals and constants
# -----------------------------------------------------------------------------

# timestamp formats
ISO8601 = "%Y-%m-%dT%H:%M:%S.%f"
ISO8601_PAT = re.compile(r"^(\\d{4}-\\d{2}-\\d{2})")
"""


def test_delete_does_not_glue_a_detached_comment_to_the_next_definition():
    """Attack: delete a constant that has a blank line above it and its sibling directly
    below (jupyter_client/jsonutil.py `ISO8601`, ray's CHECKPOINT_VERSION, webpack's
    SourceMapDevToolPlugin.js). Bug: the blank line above went too, so the section
    header comment became attached to `ISO8601_PAT`: its span (and a later replace or
    delete of it) took the header along."""
    before = dict(_texts("json.py", PY_HEADER))
    deleted = delete_symbol(PY_HEADER, _symbol("json.py", PY_HEADER, "ISO8601"))
    assert dict(_texts("json.py", deleted)) == {"ISO8601_PAT": before["ISO8601_PAT"]}
    assert deleted.endswith("-\n\nISO8601_PAT" + PY_HEADER.split("ISO8601_PAT")[1])


C_TABS = """\
/*
 * A kernel-style header: tabs for code,
 * one-space margins in comments.
 */

struct timeval_k {
\tlong long\ttv_sec;
\tlong long\ttv_usec;
};

/*
 * Another comment.
 */
int zero(void);
"""


def test_tab_indented_c_struct_round_trips_despite_comment_margins():
    """Attack: replace a tab-indented struct in a Linux header (linux/timex.h) with its
    own lines, and insert a function after it. Bug: the ` * ` lines of block comments
    made the file's indent unit one space, so the struct's tabs were turned into
    single spaces, and a new function kept the model's spaces."""
    target = _symbol("timex.h", C_TABS, "timeval_k")
    assert replace_symbol(C_TABS, target, _lines(C_TABS, target)) == C_TABS
    # A model's space-indented function comes in with the file's tabs.
    added = insert_symbol(C_TABS, target, "int one(void) {\n    return 1;\n}\n", "after")
    assert "};\n\nint one(void) {\n\treturn 1;\n}\n\n/*" in added, added


def test_runtime_round_trip_of_real_shapes(ws):
    """Attack: the same round trips through the real Runtime (propose + commit): each
    definition replaced with the lines `read` shows leaves the files byte for byte."""
    files = {"box.ts": TS_FIELDS, "conn.py": PY_TRAILING, "engine.cpp": CPP_NAMESPACE}
    for name, text in files.items():
        (ws / name).write_text(text)
    rt = Runtime(ws)
    for name, qualname in (
        ("box.ts", "Box.onChange"),
        ("conn.py", "RETRIES_BACKOFF_FACTOR"),
        ("engine.cpp", "engine"),
    ):
        target = _symbol(name, files[name], qualname)
        edit = {
            "symbol": f"{name}::{qualname}",
            "action": "replace",
            "new_source": _lines(files[name], target),
        }
        proposal = rt.propose("edit_symbols", {"edits": [edit]})
        if proposal.error is None:  # an unchanged file may be refused as a no-op
            rt.commit(proposal)
        assert (ws / name).read_text() == files[name], name


def test_delete_only_method_of_a_class_in_a_broken_python_file_leaves_pass():
    """Attack: delete a class's only method in a file that already has a syntax error
    elsewhere (a model mid-way through a refactor). Bug: the `pass` rule ran only on
    files tree-sitter parsed cleanly, and the compile check sees only the file's first
    error, so `class K:` was left with no body: a second, silent syntax error."""
    source = "def bad(:\n    pass\n\n\nclass K:\n    def m(self):\n        return 2\n"
    deleted = delete_symbol(source, _symbol("broken.py", source, "K.m"))
    assert deleted == "def bad(:\n    pass\n\n\nclass K:\n    pass\n"


C_SAME_NAME = """\
/* Used by the registration method. */
typedef struct napi_module {
  int nm_version;
  void* reserved[4];
} napi_module;

int napi_version(void) { return 1; }
"""


def test_typedef_struct_with_its_own_name_is_one_symbol(ws):
    """Attack: edit `napi_module` (node/node_api.h: `typedef struct napi_module {...}
    napi_module;`, the usual C idiom). Bug: the struct tag and the typedef name made two
    symbols with the same name, kind, line and span, so every write was refused as
    ambiguous between two identical candidates the model could never tell apart."""
    found = [s for s in extract_symbols("api.h", C_SAME_NAME.encode()) if s.name == "napi_module"]
    assert len(found) == 1
    (ws / "api.h").write_text(C_SAME_NAME)
    new = "typedef struct napi_module {\n  int nm_version;\n} napi_module;\n"
    obs = Runtime(ws).call(
        "edit_symbols",
        {"edits": [{"symbol": "napi_module", "action": "replace", "new_source": new}]},
    )
    assert obs.ok, obs.output
    # The attached comment is part of the span: a replace without it drops it.
    expected = C_SAME_NAME.replace("  void* reserved[4];\n", "").split("\n", 1)[1]
    assert (ws / "api.h").read_text() == expected


CPP_RAGGED = """\
class Formattable {
 public:
    Formattable *clone() const;

    /**
     * Selector for flavor of data type.
     */
    enum Type {
        kDate,
        kDouble
   };
};
"""


def test_definition_with_a_less_indented_line_round_trips():
    """Attack: replace ICU's `Formattable::Type` (unicode/fmtable.h), whose closing `};`
    sits one column left of the enum, with its own lines (as read shows them, and
    indented one level deeper).
    Bug: the text was dedented by its smallest margin, not placed by its first line, so
    every line of the definition moved one column right."""
    target = _symbol("fmt.hpp", CPP_RAGGED, "Formattable.Type")
    lines = _lines(CPP_RAGGED, target)
    assert replace_symbol(CPP_RAGGED, target, lines) == CPP_RAGGED
    deeper = "".join("    " + line for line in lines.splitlines(True))
    assert replace_symbol(CPP_RAGGED, target, deeper) == CPP_RAGGED


C_GNU = """\
/* GNU style: two-space levels, a tab for every eight columns. */
typedef int (*argp_parser_t) (int __key, char *__arg,
\t\t\t\t  struct argp_state *__state);

static int
parse_opt (int key)
{
  switch (key)
    {
    case 1:
      return 0;
    }
  return 1;
}
"""


def test_gnu_style_tab_continuation_round_trips():
    """Attack: replace glibc's `argp_parser_t` (argp.h) with its own lines. Bug: the
    continuation line's tabs (eight columns each, after two-space levels) were taken
    for a model's tab indentation and turned into indent units, moving the line."""
    target = _symbol("argp.h", C_GNU, "argp_parser_t")
    assert replace_symbol(C_GNU, target, _lines(C_GNU, target)) == C_GNU


RS_CONTAINERS = """\
pub trait Backend {
    fn load(&self) -> Vec<u8>;

    fn describe(&self) -> String {
        String::new()
    }
}

mod disk {
    pub struct Disk;

    fn open() {}
}
"""


def test_append_fn_to_rust_trait_or_module_goes_into_its_body():
    """Attack: `create {into: "Backend"}` / `{into: "disk"}` with an `fn` for a Rust
    trait and a module. Bug: every `fn` appended to a Rust container was treated as a
    method for a struct, so it landed in a new `impl Backend {}` / `impl disk {}` after
    the container (not a trait item; `impl` of a module is no Rust at all), and the
    `impl Disk {}` made for a struct inside `mod disk` sat at column 0."""
    symbols = {s.qualname: s for s in extract_symbols("lib.rs", RS_CONTAINERS.encode())}
    out = append_to(RS_CONTAINERS, symbols["Backend"], "fn flush(&self) {}\n", "rust")
    assert out == RS_CONTAINERS.replace(
        "        String::new()\n    }\n}",
        "        String::new()\n    }\n\n    fn flush(&self) {}\n}",
    )
    out = append_to(RS_CONTAINERS, symbols["disk"], "fn close() {}\n", "rust")
    assert out == RS_CONTAINERS.replace(
        "    fn open() {}\n", "    fn open() {}\n\n    fn close() {}\n"
    )
    out = append_to(
        RS_CONTAINERS, symbols["disk.Disk"], "fn size(&self) -> u64 {\n    0\n}\n", "rust"
    )
    assert "    pub struct Disk;\n\n    impl Disk {\n        fn size(&self) -> u64 {\n" in out, out


CPP_FLAT_NAMESPACE = """\
namespace engine {

class Component {
 public:
  void update() {}
};

namespace detail {
int helper(int x) {
  return x + 1;
}
}  // namespace detail

}  // namespace engine
"""


def test_append_into_cpp_namespace_and_class_follows_member_indentation():
    """Attack: `create {into: ...}` for a C++ namespace whose members sit at column 0
    (the usual style), and for a class whose first line is ` public:`. Bug: a member
    indentation of "" counted as none found, so the new function was indented two
    spaces; the class's access specifier was taken for its first member (one space);
    and a blank line before the closing brace came on top of the new gap."""
    symbols = {s.qualname: s for s in extract_symbols("e.cpp", CPP_FLAT_NAMESPACE.encode())}
    new = "int zz() { return 1; }\n"
    out = append_to(CPP_FLAT_NAMESPACE, symbols["engine.detail"], new, "cpp")
    assert out == CPP_FLAT_NAMESPACE.replace(
        "}\n}  // namespace detail", "}\n\nint zz() { return 1; }\n}  // namespace detail"
    )
    out = append_to(CPP_FLAT_NAMESPACE, symbols["engine"], new, "cpp")
    assert out == CPP_FLAT_NAMESPACE.replace(
        "}  // namespace detail\n\n", "}  // namespace detail\n\nint zz() { return 1; }\n\n"
    )
    out = append_to(CPP_FLAT_NAMESPACE, symbols["engine.Component"], "void zz() {}\n", "cpp")
    assert "  void update() {}\n\n  void zz() {}\n};" in out, out


C_MIXED = """\
/*
 * tcl8.6/tk.h: tabs almost everywhere,
 */

typedef struct Tk_FakeWin {
\tint dummy1;
\tint dummy2;
\tint dummy3;
} Tk_FakeWin;

typedef enum {
    TK_STATE_NULL = -1, TK_STATE_ACTIVE, TK_STATE_DISABLED,
    TK_STATE_NORMAL, TK_STATE_HIDDEN
} Tk_State;
"""


def test_space_indented_definition_in_a_tab_file_round_trips():
    """Attack: replace tk.h's `Tk_State`, a four-space enum in a file indented with
    tabs, with its own lines. Bug: the text was taken for a model's space indentation
    and turned into tabs (and in a space file, a tab-indented definition into spaces):
    the conversion looked at the file, not at the definition being replaced."""
    for qualname in ("Tk_State", "Tk_FakeWin"):
        target = _symbol("tk.h", C_MIXED, qualname)
        assert replace_symbol(C_MIXED, target, _lines(C_MIXED, target)) == C_MIXED
    spaces = C_MIXED.replace("\t", "    ").replace("    TK_", "\tTK_")
    target = _symbol("tk.h", spaces, "Tk_State")
    assert replace_symbol(spaces, target, _lines(spaces, target)) == spaces


CPP_GNU = """\
namespace std
{
  template<typename _OutputIterator, typename _Tp>
    class raw_storage_iterator
    {
    public:
      raw_storage_iterator&
      operator=(const _Tp& __element)
      {
\tstd::_Construct(std::__addressof(*_M_iter), __element);
\treturn *this;
      }
    };
}
"""


def test_gnu_style_nested_definition_round_trips():
    """Attack: replace libstdc++'s `raw_storage_iterator::operator=` (bits/
    stl_raw_storage_iter.h, GNU style: two-space levels, a tab for every eight columns)
    with its own lines; 105 of 450 sampled libstdc++ definitions failed. Bug: the
    margins `      ` and `\\t` share no prefix, so nothing was dedented and the whole
    definition moved six columns right."""
    target = _symbol("iter.hpp", CPP_GNU, "std.raw_storage_iterator.operator=")
    lines = _lines(CPP_GNU, target)
    assert replace_symbol(CPP_GNU, target, lines) == CPP_GNU


CPP_GNU_ODD = """\
namespace std
{
  struct thread
  {
      struct _State_impl
      {
\t_Callable\t\t_M_func;

\ttemplate<typename... _Args>
\t  _State_impl(_Args&&... __args)
\t  : _M_func{{std::forward<_Args>(__args)...}}
\t  { }
\t  typename __enable_if<__value,
\t\t  \t\t    istreambuf_iterator<_CharT> >::__type
\t  find();
      };
  };
}
"""


def test_gnu_style_odd_margins_round_trip():
    """Attack: replace libstdc++ definitions whose margins are tab-then-spaces
    (bits/std_thread.h `_State_impl`) or tab-space-tab (bits/streambuf_iterator.h)
    with their own lines. Bug: the dedented `  ` of `\\t  ` was taken for a model's
    space indentation and turned into a tab, and odd margins were rewritten."""
    for qualname in ("std.thread._State_impl", "std.thread", "std"):
        target = _symbol("thread.hpp", CPP_GNU_ODD, qualname)
        assert replace_symbol(CPP_GNU_ODD, target, _lines(CPP_GNU_ODD, target)) == CPP_GNU_ODD


@pytest.mark.parametrize(
    ("path", "source", "qualname", "new", "expected"),
    [
        (
            "a.ts",
            "class A { m() { return 0 } }\n",
            "A.m",
            "m() { return 1 }",
            "class A { m() { return 1 } }\n",
        ),
        (
            "b.cpp",
            "namespace a { void f() {} }\n",
            "a.f",
            "void f() { return; }",
            "namespace a { void f() { return; } }\n",
        ),
        (
            "c.js",
            "const o = 1; class B { static s() { return 0 } } // B\n",
            "B.s",
            "static s() { return 1 }",
            "const o = 1; class B { static s() { return 1 } } // B\n",
        ),
        ("d.rs", "mod m { fn f() {} }\n", "m.f", "fn f() { g() }", "mod m { fn f() { g() } }\n"),
    ],
)
def test_a_one_line_container_keeps_its_closer_when_a_member_is_replaced(
    path, source, qualname, new, expected
):
    """Attack (review of this file's own fixes): replace a member of a one-line class or
    namespace. Bug: taking along the text that shares the definition's last line when the
    new text ends with it (meant for a trailing comment) took the container's `}` as well,
    since the new member ends in `}` too: the edit was refused as a syntax error."""
    symbol = _symbol(path, source, qualname)
    assert replace_symbol(source, symbol, new) == expected


# -- overloads: one name in one file, told apart by the line a candidate shows ----------------

OVERLOADS = (
    "from typing import overload\n\n"
    "@overload\ndef f(x: int) -> int: ...\n"
    "@overload\ndef f(x: str) -> str: ...\n"
    "def f(x):\n    return x\n"
)


def test_an_overload_is_written_by_the_line_its_candidate_shows(tmp_path) -> None:
    """Before stop 33 a write to one of several definitions with one name in one file was
    refused as ambiguous with advice ('path::Class.method') that named all of them again:
    no address could pick one, and the model had to fall back to replace_string."""
    (tmp_path / "m.py").write_text(OVERLOADS)
    rt = Runtime(tmp_path)
    new = "def f(x):\n    return 2 * x\n"
    refused = rt.propose(
        "edit_symbols", {"edits": [{"symbol": "f", "action": "replace", "new_source": new}]}
    )
    assert refused.error is not None and refused.error.code == "AMBIGUOUS_SYMBOL"
    assert "e.g. 'm.py::f@4'" in refused.error.message
    assert [c.line for c in refused.error.candidates] == [4, 6, 7]
    done = rt.call(
        "edit_symbols", {"edits": [{"symbol": "m.py::f@7", "action": "replace", "new_source": new}]}
    )
    assert done.ok, done.output
    assert (tmp_path / "m.py").read_text() == OVERLOADS.replace(
        "    return x\n", "    return 2 * x\n"
    )
    read = rt.call("read", {"symbol": "f@6"})
    assert read.ok and "def f(x: str) -> str: ..." in read.output and "2 * x" not in read.output


def test_a_line_no_definition_of_the_name_is_on_is_refused_with_the_candidates(tmp_path) -> None:
    (tmp_path / "m.py").write_text(OVERLOADS)
    before = (tmp_path / "m.py").read_bytes()
    refused = Runtime(tmp_path).propose(
        "edit_symbols", {"edits": [{"symbol": "m.py::f@5", "action": "delete"}]}
    )
    assert refused.error is not None and refused.error.code == "SYMBOL_NOT_FOUND"
    assert "no definition named 'm.py::f' is on line 5" in refused.error.message
    assert [c.line for c in refused.error.candidates] == [4, 6, 7]
    assert (tmp_path / "m.py").read_bytes() == before


def test_ambiguity_across_files_still_advises_a_path(tmp_path) -> None:
    (tmp_path / "a.py").write_text("def g():\n    return 1\n")
    (tmp_path / "b.py").write_text("def g():\n    return 2\n")
    refused = Runtime(tmp_path).propose(
        "edit_symbols", {"edits": [{"symbol": "g", "action": "delete"}]}
    )
    assert refused.error is not None and "e.g. 'path::Class.method'" in refused.error.message


def test_a_misspelt_name_with_a_line_still_gets_the_closest_names(tmp_path) -> None:
    (tmp_path / "m.py").write_text("def compute(x):\n    return x\n")
    for address in ("m.py::compte", "m.py::compte@1"):
        refused = Runtime(tmp_path).propose(
            "edit_symbols", {"edits": [{"symbol": address, "action": "delete"}]}
        )
        assert refused.error is not None and refused.error.code == "SYMBOL_NOT_FOUND"
        assert "closest names below" in refused.error.message, (address, refused.error.message)
        assert [c.name for c in refused.error.candidates] == ["compute"]
