"""A third attack on the region check of large Python files (``runtime/regions.py``).

``region_ok`` may answer True only when the whole new file compiles, and the layout it
carries over to the new text must be the one ``learn`` takes from that text afresh. Holes
found (each test below failed while its hole was open; all are closed now):

- A backslash right after a class body's indentation (``\\t\\`` then the member on the
  next line). CPython 3.11's tokenizer gives such a line the tab-expanded column for both
  of its indentation measures, so under a tab-indented body (``\\t`` is column 8 and
  alternative column 1) the line is "inconsistent use of tabs and spaces" (TabError). The
  region's wrapper ``class X:`` has no body yet, so that line sets the body's indentation
  there and compiles; when the region runs to the class's end (no ``pass`` footer to
  disagree with it) the edit is accepted and the runtime writes a file that does not
  compile. At fault: ``_class_region`` takes any character but whitespace after
  ``cls.indent`` on the region's first code line (regions.py line 232).
- The same backslash-only line before a class's first member (spaces are enough): the
  region proves the edit and carries the class's layout over, but ``learn`` drops the
  class (its first member continues a line, ``_members``, line 349): carried and fresh
  layouts differ.
- Outside regions.py, the same guarantee: Python reads a file by its coding declaration
  (``# -*- coding: ascii -*-`` in its first two lines), and ``compile()`` of a *str* ignores
  it (validation.py line 53, and the region compile alike). An edit that adds a non-ASCII
  character under an ASCII or Latin-1 declaration, or adds a declaration of an encoding
  that does not exist, is accepted; the file on disk does not compile.

Tried and held (the invariant tests below guard them): tab-indented and mixed
tab/space class bodies (equivalent indentation strings are never taken for starts),
backslash continuations at the end of code lines, multi-line strings, brackets,
decorators spanning lines, ``match``/``case``, ``elif``/``else`` after module-level blocks,
classes inside ``if``, a class directly followed by another, CR, CRLF and LF endings,
a file without a final newline, empty regions, edits at the first and last lines, layouts
kept per path, ``__class__``/``super()`` and mangled names, class names from compatibility
characters (refused), ``nonlocal`` at class scope and ``global`` in a module-level block,
nested ``__future__`` imports, deep nesting across the region edge.
"""

from __future__ import annotations

import random
import warnings
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime import regions
from grinta_jupyter.tools.facade import _REINDEXER
from tests.test_edit_speed_more import _compiles, _verdict

FUNCTIONS = "".join(f"def f_{i}():\n    return {i}\n\n\n" for i in range(300))
PAD = "".join(f"def g_{i}():\n    return {i}\n\n\n" for i in range(248))  # 992 lines


def _fresh(text: str) -> regions.Layout | None:
    """The layout ``learn`` takes from ``text``, under a path of its own (nothing forgotten)."""
    regions.learn("fresh.py", text)
    return regions._layout_of("fresh.py", text)


def _workspace(tmp_path: Path, text: str) -> tuple[Runtime, Path]:
    root = tmp_path / "ws"
    root.mkdir()
    path = root / "big.py"
    path.write_text(text, encoding="utf-8")
    regions.forget()
    return Runtime(root), path


def _replace(rt: Runtime, old_string: str, new_string: str) -> bool:
    proposal = rt.propose(
        "replace_string", {"path": "big.py", "old_string": old_string, "new_string": new_string}
    )
    if proposal.ok:
        assert rt.commit(proposal).ok
        _REINDEXER.wait()  # the committed text's layout is learnt in the background
    return proposal.ok


def _disk_compiles(path: Path) -> bool:
    """Whether Python can compile the file as it reads it (bytes: BOM and coding line)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


# --- holes ----------------------------------------------------------------------------

BACKSLASH_INDENT = {  # the class's last member, edited: (indentation, its new lines)
    "tab": ("\t", "\t\\\n\tb = 3\n"),
    "space and tab": (" \t", " \t\\\n \tb = 3\n"),
    "tab and spaces": ("\t  ", "\t  \\\n\t  b = 3\n"),
    "continued at column 0": ("\t", "\t\\\nb = 3\n"),
    "and code after the class": ("\t", "\t\\\n\tb = 3\nc = 1\n"),
}


@pytest.mark.parametrize("case", sorted(BACKSLASH_INDENT))
def test_a_backslash_after_a_tab_indentation_is_checked_against_the_body(case: str) -> None:
    indent, lines = BACKSLASH_INDENT[case]
    old = f"class X:\n{indent}a = 1\n{indent}b = 2\n\n\n" + FUNCTIONS
    new = old.replace(f"{indent}b = 2\n", lines, 1)
    assert _compiles(old) and not _compiles(new)  # TabError: the "\t\\" line is column 8 twice
    assert _verdict(old, new)[0] is False


def test_the_runtime_does_not_write_a_tab_error(tmp_path: Path) -> None:
    rt, path = _workspace(tmp_path, "class X:\n\ta = 1\n\tb = 2\n\n\n" + FUNCTIONS)
    assert _replace(rt, "    return 7\n", "    return 7  # warm\n")
    _replace(rt, "\tb = 2\n", "\t\\\n\tb = 3\n")
    assert _disk_compiles(path)


@pytest.mark.parametrize("member", ["    \\\n    a = 0\n", "    \\\na = 0\n"])
def test_a_first_member_on_a_continued_line_carries_the_fresh_layout(member: str) -> None:
    old = "class X:\n    a = 1\n    b = 2\n\n\n" + FUNCTIONS
    new = old.replace("    a = 1\n", member, 1)
    assert _compiles(new)
    regions.forget()
    regions.learn("big.py", old)
    if regions.region_ok("big.py", old, new):
        assert regions._layout_of("big.py", new) == _fresh(new)


CODING = {  # (the file, the line replaced, its new text)
    "non-ASCII under an ASCII declaration": (
        "# -*- coding: ascii -*-\n" + FUNCTIONS,
        "    return 5\n",
        '    return "\u00e9"\n',
    ),
    "an identifier under a Latin-1 declaration": (
        "# coding: latin-1\n" + FUNCTIONS,
        "    return 5\n",
        "    caf\u00e9 = 5\n    return caf\u00e9\n",
    ),
    "a declaration of no encoding": (
        "import os\n" + FUNCTIONS,
        "import os\n",
        "# vim: set fileencoding=nonesuch :\nimport os\n",
    ),
}


@pytest.mark.parametrize("case", sorted(CODING))
def test_what_python_reads_by_the_coding_declaration_compiles(tmp_path: Path, case: str) -> None:
    text, old_string, new_string = CODING[case]
    rt, path = _workspace(tmp_path, text)
    assert _disk_compiles(path)
    assert _replace(rt, "    return 7\n", "    return 7  # warm\n")
    _replace(rt, old_string, new_string)
    assert _disk_compiles(path)


# --- invariants that hold -------------------------------------------------------------

HEADS = {
    "tabs": "class T:\n\t'''d'''\n\ta = 1\n\tdef m(self):\n\t\treturn 1\n\tb = 2\n"
    "\tdef n(self):\n\t\tpass\n",
    "mixed": "class M:\n \ta = 1\n \t@dec(\n \t\t1)\n \tdef m(self):\n \t\treturn 1\n \tb = 2\n",
    "spaces": "class S:\n    '''d'''\n    a = 1\n    @dec\n    def m(self):\n        if self:\n"
    "            return 1\n        return 2\n    b = [\n1]\n    def n(self): pass\n",
    "module": "x = 1\nif x:\n    y = 2\nelse:\n    y = 3\n@dec\ndef g():\n    pass\n"
    "s = '''\ndef t():\n'''\nclass Y: pass\nclass Z:\n    z = 1\n",
}
# One-line edits, a backslash right after an indentation among them (the hole above).
LINES = [
    "\t\\\n", "    \\\n", " \t\\\n",
    "    pass\n", "\tpass\n", " \tpass\n", "        pass\n", "\t\tpass\n", "\t    pass\n",
    "def q():\n", "\tdef r(self):\n", "    def r(self):\n", "@dec\n", "\t@dec\n", "else:\n",
    "\telse:\n", "x = (\n", ")\n", "\tx = [\n", "\t]\n", "z = 1\n", "  y = 2\n", "class K:\n",
    "# c\n", "\t# c\n", "  # odd\n", "\n", "\t\n", "x = 1; \\\n", "\tx = 1 \\\n", "\tx = 1;\n",
    "'''\n", "\ts = '''\n", "    match x:\n", "\tcase 1:\n", "if x:\n", "elif y:\n",
    "\tif x:\n", "\tclass I:\n", "try:\n", "except E:\n", "\tnonlocal z\n", "\tglobal z\n",
    "\t__class__ = 1\n", "\tx: int\n", "def g(): pass\n", "\tdef m(self): pass\n",
    "\tyield\n", "    return\n", "\tfor i in x:\n", "\t\tbreak\n", "# \\\n", "\t'''d'''\n",
]  # fmt: skip


@pytest.mark.parametrize("head", sorted(HEADS))
def test_every_one_line_edit_of_an_awkward_head_is_sound(head: str) -> None:
    """Each line of a small awkward part at the top of a large file replaced by, and each
    gap given, every line of ``LINES``: a proven text compiles and carries the fresh layout."""
    old = HEADS[head] + "\n\n" + PAD
    lines = old.splitlines(keepends=True)
    assert _compiles(old) and len(lines) >= regions.REGION_MIN_LINES
    regions.forget()
    regions.learn("big.py", old)
    proven = 0
    for k in range(len(HEADS[head].splitlines()) + 1):
        for line in LINES:
            for new_lines in (lines[:k] + [line] + lines[k:], lines[:k] + [line] + lines[k + 1 :]):
                new = "".join(new_lines)
                if not regions.region_ok("big.py", old, new):
                    continue
                proven += 1
                assert _compiles(new), (k, line)
                carried = regions._layout_of("big.py", new)
                assert carried is None or carried == _fresh(new), (k, line)
    assert proven > 50


BLOCKS = [  # multi-line snippets of the kinds an agent writes, tabs and spaces alike
    "\tdef p(self):\n\t\treturn (\n\t\t\t1)\n",
    "\t@property\n\tdef q(self):\n\t\ts = '''\n\tdef fake():\n'''\n\t\treturn s\n",
    "\tif X:\n\t\ta = 1\n\telse:\n\t\ta = 2\n",
    "\tmatch a:\n\t\tcase [x, *_]:\n\t\t\tpass\n",
    "\tx = 1; \\\n\ty = 2\n",
    "if X:\n\tclass C:\n\t\tpass\nelif Y:\n\tpass\n",
    "for i in ():\n    pass\nelse:\n    pass\n",
    "try:\n    pass\nexcept* E:\n    pass\n",
    "\tclass Inner:\n\t\t__x = [w for w in ()]\n",
    "\tasync def a(self):\n\t\tawait b\n",
    "\t# comment \\\n",
    "#\n",
    "\n\n",
    "    def s(self):\n        return 1\n",
    "\t\treturn 0\n",
    "\tb = [\n1,\n]\n",
    "",
]


def _tab_file() -> str:
    """About 1,150 lines: tab-indented classes (one with a mixed indentation), functions."""
    tabs = "".join(f"\tdef m_{i}(self):\n\t\tif self:\n\t\t\treturn {i}\n" for i in range(90))
    mixed = "".join(f" \tdef n_{i}(self):\n \t\treturn {i}\n" for i in range(60))
    functions = "".join(f"def f_{i}():\n\treturn {i}\n\n" for i in range(230))
    return (
        "import os\nclass T:\n"
        + tabs
        + "class U(object):\n"
        + mixed
        + functions
        + "if os:\n\tclass V:\n\t\tpass\nelse:\n\tpass\nclass W:\n\tx = 1"
    )


@pytest.mark.parametrize(("newline", "seed"), [("\n", 21), ("\r\n", 22), ("\r", 23)])
def test_chained_edits_of_a_tab_indented_file_are_sound(newline: str, seed: int) -> None:
    """Random block edits one after another, each from the layout the previous proof
    carried (the file has no final newline): a proven text compiles, and its carried
    layout is the fresh one."""
    rng = random.Random(seed)
    text = _tab_file().replace("\n", newline)
    assert _compiles(text) and len(text.splitlines()) >= regions.REGION_MIN_LINES
    regions.forget()
    regions.learn("big.py", text)
    proven = 0
    for _ in range(150):
        lines = text.splitlines(keepends=True)
        k = rng.randrange(len(lines) + 1)
        block = rng.choice(BLOCKS).replace("\n", newline).splitlines(keepends=True)
        cut = rng.choice([0, 0, 1, 2, 5])
        new = "".join(lines[:k] + block + lines[k + cut :])
        if not regions.known("big.py", text):
            regions.learn("big.py", text)
        if regions.region_ok("big.py", text, new):
            proven += 1
            assert _compiles(new), "".join(block)
            carried = regions._layout_of("big.py", new)
            assert carried is None or carried == _fresh(new), "".join(block)
        if _compiles(new):
            text = new
    assert proven > 30
