"""Attacks on the region check of large Python files (``runtime/regions.py``).

``region_ok`` may answer True only when the whole new file compiles, and the layout it
carries over to the new text must be the one ``learn`` takes from that text afresh (a later
edit is cut by it). Holes found (each test below failed while its hole was open; all are
closed now):

- A ``__future__`` import after the region: a statement inserted above one (an import
  added at the top of the file), or a module docstring edited into something that is no
  docstring, is proven by a region that does not hold the import.
- A ``__future__`` import spelled with compatibility characters (``__ｆuture__``, NFKC-equal
  to ``__future__``) passes the text test: accepted in the middle of a file, and deleting
  one leaves its flag in the carried layout (then ``1 <> 2`` is accepted).
- A line a backslash continues is taken for a statement start (``x = 1; \\`` then
  ``y = 2``; ``class X: \\`` then its body; a member after ``a = 1; \\``; a body whose
  indentation a backslash-only line set): the next edit there is proven by a region that
  starts in the middle of a logical line.
- A class region ending in a line continued by a backslash (``x = 1; \\``): the ``pass``
  footer completes it; the member that really follows does not.
- A region of "blank lines and comments" is accepted without compiling, but ``str.strip``
  strips characters Python refuses (a no-break space, U+3000), and a comment may hold a NUL.
- A class region whose code ends the class (a column-0 block header) while members follow:
  the ``pass`` footer becomes that block's body, and so do the real members (which may then
  break: here they nest one loop too deep).

Invariants that hold (and must keep holding): chains of random edits of stdlib modules and
of a file of tab-indented, CRLF, decorated, nested and semicolon-joined code are sound and
carry the fresh layout; texts with a form feed or U+2028 are never cut; a module- or
class-scope ``global`` keeps the region path away.
"""

from __future__ import annotations

import random
import sysconfig
import warnings
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime import regions
from grinta_jupyter.tools.facade import _REINDEXER
from tests.test_edit_speed_more import _verdict

STDLIB = Path(sysconfig.get_paths()["stdlib"])
FUNCTIONS = "".join(f"def f_{i}():\n    return {i}\n\n\n" for i in range(300))
METHODS = "".join(f"    def m_{i}(self):\n        return {i}\n" for i in range(6))
FULLWIDTH_FUTURE = "from __\uff46uture__ import "  # NFKC: "from __future__ import "


def _compiles(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "big.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):  # a NUL byte; a lone surrogate (UnicodeEncodeError)
        return False
    return True


def _fresh_layout(text: str) -> regions.Layout | None:
    regions.forget()
    regions.learn("big.py", text)
    return regions._layout_of("big.py", text)


def _carried_layout(old: str, new: str) -> regions.Layout | None:
    """The layout ``region_ok`` carries from ``old`` (learnt) to ``new``."""
    assert _fresh_layout(old) is not None
    assert regions.region_ok("big.py", old, new)
    return regions._layout_of("big.py", new)


# --- holes ----------------------------------------------------------------------------

FUTURE_AFTER_THE_REGION = {
    "import above it": (
        "from __future__ import annotations\n" + FUNCTIONS,
        "import os\nfrom __future__ import annotations\n" + FUNCTIONS,
    ),
    "import between the licence comment and it": (
        "# Licence.\n\nfrom __future__ import annotations\n" + FUNCTIONS,
        "# Licence.\n\nimport os\nfrom __future__ import annotations\n" + FUNCTIONS,
    ),
    "docstring made an f-string": (
        '"""Doc."""\nfrom __future__ import annotations\n' + FUNCTIONS,
        'f"""Doc."""\nfrom __future__ import annotations\n' + FUNCTIONS,
    ),
    "a future without a compiler flag": (
        "from __future__ import generators\n" + FUNCTIONS,
        "x = 1\nfrom __future__ import generators\n" + FUNCTIONS,
    ),
}


@pytest.mark.parametrize("case", sorted(FUTURE_AFTER_THE_REGION))
def test_an_edit_above_a_future_import_is_refused(case: str) -> None:
    old, new = FUTURE_AFTER_THE_REGION[case]
    assert _compiles(old) and not _compiles(new)
    assert _verdict(old, new)[0] is False


def test_a_future_import_in_compatibility_characters_is_refused_mid_file() -> None:
    new = FUNCTIONS.replace("def f_5():", FULLWIDTH_FUTURE + "annotations\ndef f_5():")
    assert not _compiles(new)  # from __future__ imports must occur at the beginning
    assert _verdict(FUNCTIONS, new)[0] is False


def test_deleting_a_future_import_in_compatibility_characters_drops_its_flag() -> None:
    old = FULLWIDTH_FUTURE + "barry_as_FLUFL\n" + FUNCTIONS
    assert _compiles(old) and _compiles(FUNCTIONS)
    assert _fresh_layout(old) is not None
    # The region holds the future import: not trusted, so no layout (with its flag) carried.
    assert not regions.region_ok("big.py", old, FUNCTIONS)
    assert regions._layout_of("big.py", FUNCTIONS) is None
    assert _fresh_layout(FUNCTIONS) is not None and _fresh_layout(FUNCTIONS).flags == 0  # type: ignore[union-attr]
    # What a stale flag would let through next:
    diamond = FUNCTIONS.replace("    return 5\n", "    return 1 <> 2\n")
    assert not _compiles(diamond)
    assert not regions.region_ok("big.py", FUNCTIONS, diamond)


CONTINUED_STARTS = {
    "module statement after '; \\'": (
        FUNCTIONS + "x = 1; \\\ny = 2\n\n\n" + FUNCTIONS.replace("f_", "g_"),
        FUNCTIONS + "x = 1; \\\ndef y(): pass\n\n\n" + FUNCTIONS.replace("f_", "g_"),
    ),
    "class body continued onto the header's line": (
        "class X: \\\n    pass\n\n\n" + FUNCTIONS,
        "class X: \\\n    pass\n    x = 1\n\n\n" + FUNCTIONS,
    ),
    "member after '; \\'": (
        "class X:\n    a = 1; \\\n    b = 2\n" + METHODS + "\n\n" + FUNCTIONS,
        "class X:\n    a = 1; \\\n    def b(self): pass\n" + METHODS + "\n\n" + FUNCTIONS,
    ),
    "body indentation set by a backslash-only line": (
        "class X:\n    \\\n  x = 1\n\n\n" + FUNCTIONS,
        "class X:\n    \\\n  x = 1\n  y = 2\n\n\n" + FUNCTIONS,
    ),
}


@pytest.mark.parametrize("case", sorted(CONTINUED_STARTS))
def test_a_line_a_backslash_continues_starts_no_region(case: str) -> None:
    old, new = CONTINUED_STARTS[case]
    assert _compiles(old) and not _compiles(new)
    assert _verdict(old, new)[0] is False


@pytest.mark.parametrize("tail", ["    x = 1; \\\n", "    if x: \\\n"])
def test_a_class_region_ending_in_a_continued_line_is_refused(tail: str) -> None:
    old = "class X:\n" + METHODS + "\n\n" + FUNCTIONS
    new = old.replace("        return 1\n", "        return 1\n" + tail, 1)
    assert _compiles(old) and not _compiles(new)  # the next line is "    def m_2(self):"
    assert _verdict(old, new)[0] is False


BLANK_LOOKING = {
    "no-break space line": (FUNCTIONS, FUNCTIONS.replace("def f_5():", "\xa0\ndef f_5():")),
    "ideographic space before a comment": (
        FUNCTIONS,
        FUNCTIONS.replace("def f_5():", "\u3000# note\ndef f_5():"),
    ),
    "NUL in a comment": (FUNCTIONS, FUNCTIONS.replace("def f_5():", "# a\x00b\ndef f_5():")),
    "member deleted down to a no-break space": (
        "class X:\n" + METHODS + "\n\n" + FUNCTIONS,
        "class X:\n"
        + METHODS.replace("    def m_2(self):\n        return 2\n", "    \xa0\n")
        + "\n\n"
        + FUNCTIONS,
    ),
}


@pytest.mark.parametrize("case", sorted(BLANK_LOOKING))
def test_a_region_of_what_looks_like_blank_lines_and_comments_is_compiled(case: str) -> None:
    old, new = BLANK_LOOKING[case]
    assert _compiles(old) and not _compiles(new)
    assert _verdict(old, new)[0] is False


def _loops(depth: int, indent: str) -> str:
    lines = [f"{indent}{'    ' * k}for _{k} in ():\n" for k in range(depth)]
    return "".join(lines) + f"{indent}{'    ' * depth}pass\n"


def test_members_after_a_region_that_ends_the_class_are_checked_where_they_land() -> None:
    # 20 nested loops are the most a code object may hold: fine in the class body, one
    # too many once a column-0 ``for`` the edit adds takes the members after it.
    old = "class X:\n" + METHODS + _loops(20, "    ") + "\n\n" + FUNCTIONS
    new = old.replace("        return 3\n", "        return 33\nfor q in ():\n", 1)
    assert _compiles(old) and not _compiles(new)
    assert _verdict(old, new)[0] is False


RUNTIME_EDITS = {
    "import above a future import": (
        "from __future__ import annotations\n" + FUNCTIONS,
        [
            (
                "from __future__ import annotations\n",
                "import os\nfrom __future__ import annotations\n",
            )
        ],
    ),
    "no-break space": (FUNCTIONS, [("def f_5():\n", "\xa0\ndef f_5():\n")]),
    "continued class member": (
        "class X:\n" + METHODS + "\n\n" + FUNCTIONS,
        [("        return 1\n", "        return 1\n    x = 1; \\\n")],
    ),
    "stale future flag": (
        FULLWIDTH_FUTURE + "barry_as_FLUFL\n" + FUNCTIONS,
        [(FULLWIDTH_FUTURE + "barry_as_FLUFL\n", ""), ("    return 5\n", "    return 1 <> 2\n")],
    ),
}


@pytest.mark.parametrize("case", sorted(RUNTIME_EDITS))
def test_what_the_runtime_commits_compiles(tmp_path: Path, case: str) -> None:
    text, steps = RUNTIME_EDITS[case]
    root = tmp_path / "ws"
    root.mkdir()
    path = root / "big.py"
    path.write_text(text, encoding="utf-8")
    regions.forget()
    rt = Runtime(root)
    warm = rt.propose(
        "replace_string",
        {"path": "big.py", "old_string": "    return 7\n", "new_string": "    return 7  # w\n"},
    )
    assert rt.commit(warm).ok
    _REINDEXER.wait()  # the layout of the committed text is learnt in the background
    for old_string, new_string in steps:
        proposal = rt.propose(
            "replace_string",
            {"path": "big.py", "old_string": old_string, "new_string": new_string},
        )
        if proposal.ok:
            assert rt.commit(proposal).ok
            _REINDEXER.wait()
        assert _compiles(path.read_text(encoding="utf-8")), (case, new_string)


# --- invariants that hold -------------------------------------------------------------

# Edits of the kinds an agent makes, kept clear of the holes above (no backslash, no
# ``__future__``, ASCII only) so that these tests guard everything else.
SNIPPETS = [
    "", "    pass\n", "def q():\n", "    def r(self):\n", "@dec\n", "    @dec\n", "else:\n",
    "    return 3\n", "x = (\n", ")\n", "    x = 1\n", "z = 1\n", "  y = 2\n", "class K:\n",
    "        pass\n", "# c\n", "    # c\n", "  # odd\n", "\n", "\tx = 1\n", "    if x:\n",
    "    try:\n", "    except* E:\n", "        yield 1\n", "    nonlocal q\n",
    "    [y := 1 for _ in z]\n", "    __x = 1\n", "    async def a(self):\n",
    "        await x\n", "match x:\n", "    case 1:\n", "    break\n", "    continue\n",
    "return 1\n", "yield 1\n", "await z\n", "    def m(self): pass\n", "class C: pass\n",
    "    class Inner:\n", "        '''d'''\n", "    x = 1; y = 2\n", "    '''doc\n", "'''\n",
    "    )\n", "    f(\n", "    @property\n", "    x: int\n", "x: int = 1\n", "global G\n",
    "    global G\n", "async def g():\n", "if x:\n", "    def h():\n", "        return 0\n",
    "    __slots__ = ()\n", "class D(object):\n", "    lambda x=(yield): 0\n",
    "try:\n", "except* ValueError:\n", "finally:\n", "    G: int = 1\n",
]  # fmt: skip


def _mutate(rng: random.Random, lines: list[str]) -> list[str]:
    new = list(lines)
    k = rng.randrange(len(lines))
    roll = rng.random()
    if roll < 0.35:
        new.insert(k, rng.choice(SNIPPETS))
    elif roll < 0.55:  # across member boundaries, at times
        del new[k : k + rng.randint(1, 12)]
    elif roll < 0.7:
        new[k] = rng.choice(SNIPPETS) or new[k]
    elif roll < 0.8:  # dedent (to column 0, at times)
        line = new[k]
        depth = len(line) - len(line.lstrip(" \t"))
        new[k] = line[min(depth, rng.choice([1, 2, 4, 8])) :]
    elif roll < 0.9:
        new[k] = "    " + new[k]
    else:  # a copy of lines from elsewhere (a method pasted at another class's end)
        j = rng.randrange(len(lines))
        new[k:k] = lines[j : j + rng.randint(1, 8)]
    return new


def _chain(text: str, seed: int, steps: int, newline: str = "\n") -> int:
    """Random edits one after another, each checked against the layout the previous one
    left (carried over where a region proved it): a proven text compiles and its carried
    layout is the fresh one. Returns how many edits a region proved."""
    rng = random.Random(seed)
    regions.forget()
    regions.learn("big.py", text)
    proven = 0
    for _ in range(steps):
        new = _mutate(rng, text.splitlines(keepends=True))
        candidate = "".join(  # snippets end with "\n"
            line[:-1] + newline if line.endswith("\n") and not line.endswith("\r\n") else line
            for line in new
        )
        if not regions.known("big.py", text):
            regions.learn("big.py", text)
        fast = regions.region_ok("big.py", text, candidate)
        compiles = _compiles(candidate)
        assert compiles or not fast, "".join(line for line in new if line not in text)
        carried = regions._layout_of("big.py", candidate) if fast else None
        if carried is not None:
            proven += 1
            assert _fresh_layout(candidate) == carried
            # go on from the carried one
            regions._LAYOUTS.put(regions.fingerprint("big.py", candidate), carried)
        if compiles:
            text = candidate
    return proven


@pytest.mark.parametrize(
    ("module", "seed"),
    [("tarfile.py", 1), ("argparse.py", 2), ("typing.py", 3), ("inspect.py", 4), ("_pydecimal.py", 5)],
)  # fmt: skip
def test_chained_random_edits_of_stdlib_modules_are_sound(module: str, seed: int) -> None:
    text = (STDLIB / module).read_text(encoding="utf-8")
    assert _chain(text, seed, 70) > 15


def _awkward_file() -> str:
    """About 1,400 lines: a tab-indented class, a class of decorated, joined and nested
    members with ``if`` blocks, odd comments after a class, module-level blocks."""
    tabs = "".join(
        f"\tdef m_{i}(self):\n\t\tif self:\n\t\t\treturn {i}\n\t\treturn 0\n" for i in range(110)
    )
    spaces = "".join(
        f"  @property\n  def p_{i}(self):  # c\n    return {i}\n  x_{i} = 1; y_{i} = 2\n"
        f"  if x_{i}:\n    def q_{i}(self): pass\n  class I_{i}:\n    __z = [w for w in ()]\n"
        for i in range(55)
    )
    functions = "".join(
        f"def f_{i}(a=lambda: {i}):\n    global G\n    def inner():\n        nonlocal a\n"
        f"        a = 1\n    match a:\n        case {i}:\n            pass\n    return a\n"
        for i in range(40)
    )
    return (
        '"""Awkward."""\nimport os\nclass T:\n'
        + tabs
        + "class S(object):\n  '''doc'''\n"
        + spaces
        + "# odd\n   # odd too\n"
        + functions
        + "try:\n    pass\nexcept* ValueError:\n    pass\nclass E: pass\n"
    )


@pytest.mark.parametrize(("newline", "seed"), [("\n", 11), ("\r\n", 12), ("\r", 13)])
def test_chained_random_edits_of_an_awkward_file_are_sound(newline: str, seed: int) -> None:
    text = _awkward_file().replace("\n", newline)
    assert _compiles(text) and len(text.splitlines()) >= regions.REGION_MIN_LINES
    assert _chain(text, seed, 120, newline) > 10


@pytest.mark.parametrize("mark", ["\x0c", "\u2028", "\x85", "\x1c"])
def test_a_text_with_a_break_python_does_not_see_is_never_cut(mark: str) -> None:
    old = "class X:\n" + METHODS + "\n\n" + FUNCTIONS
    rng = random.Random(mark)
    lines = old.splitlines(keepends=True)
    for _ in range(20):
        k = rng.randrange(len(lines))
        new = list(lines)
        new[k] = f"    {mark}return 1\n" if rng.random() < 0.5 else mark
        assert _fresh_layout(old) is not None
        assert not regions.region_ok("big.py", old, "".join(new))


@pytest.mark.parametrize(
    "declaration",
    ["global G\n", "if x:\n    global G\n", "try:\n    pass\nfinally:\n    nonlocal_ = 1\n    global G\n"],
)  # fmt: skip
def test_a_module_scope_global_keeps_every_edit_off_the_region_path(declaration: str) -> None:
    old = "class X:\n" + METHODS + "\n\n" + FUNCTIONS + declaration
    assert _compiles(old)
    lines = old.splitlines(keepends=True)
    rng = random.Random(declaration)
    for _ in range(15):
        new = _mutate(rng, lines)
        assert _fresh_layout(old) is not None
        assert not regions.region_ok("big.py", old, "".join(new))
