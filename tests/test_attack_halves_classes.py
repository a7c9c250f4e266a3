"""Attacks on the cut inside a class of ``runtime/halves.py`` (commit a877523).

``halves.compiles(text)`` must say True only when ``compile(text, "<whole>", "exec",
dont_inherit=True)`` succeeds. Every test here passes on a correct module. The tests under
"holes" FAILED when written (CPython 3.11.7): the probe appended to the first half proves
only that it is *a* statement of the body of a module-level class of that name, anywhere in
it: inside a ``for``, ``while``, ``with``, ``try`` or ``if`` of the body too, and that class
may itself sit in module-level blocks. The helper compiles the second half directly in the
body of a class at column 0, so the blocks around the cut are missing from what it compiles:
the limits that count them (statically nested blocks, indentation levels, the compiler's
recursion depth) are checked against a shallower text than the whole. The guess that lets
the cut line's indentation stand for the body's (``_inside``: the first indented line after
the ``class`` line) is fooled by a header continued on the next lines, a line holding only
spaces and a form feed, or a ``class`` line inside a string. The fix (``_in_class``): the
class's code must start on the ``class`` line found at column 0, and its first instruction
after that line must be on the body line the guess took, so the cut's indentation is the
body's own level and the class is in no block. The rest are attacks the module withstood,
kept so that it keeps withstanding them.
"""

from __future__ import annotations

import time

import pytest

from grinta_jupyter.runtime import halves
from tests.test_halves import _fresh_helper, _whole_ok  # noqa: F401  (autouse)
from tests.test_halves_classes import MARK, _methods, _probed


def _in_box(header: str, first: str = "", second: str = "") -> str:
    """A class ``Box`` opened by ``header`` with one place to cut, at ``MARK`` (four
    spaces), which must be taken as a cut inside ``Box``."""
    text = f"{header}{_methods('early')}{first}{MARK}{second}{_methods('late')}"
    place = halves._place(text)
    assert place is not None and place.at == text.index(MARK) + 2, "the cut moved"
    assert place.inside == "Box" and place.indent == "    ", place
    return text


def _helper_up() -> None:
    plain = _in_box("class Box:\n")
    for _ in range(60):
        if halves.compiles(plain):
            return
        time.sleep(0.05)
    pytest.fail("the helper never proved a plain class")


def _fails_whole(text: str) -> bool:
    try:
        compile(text, "<whole>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    return False


# -- holes: the cut inside a block of the class body -----------------------------------------

# Headers of a class ``Box`` whose body (at two spaces) opens a block at two spaces, inside
# which the methods and the cut are at four: each fools ``_inside`` into taking four spaces
# for the body's indentation, and the probe, stored by Box's body, passes ``_in_class``.
NESTED = {
    "header continued over lines": "class Box(\n    object,\n):\n  for _ in range(1):\n",
    "header continued by a backslash": "class Box(object, \\\n    ):\n  for _ in ():\n",
    "a class line in a string": 'class Box:\n  for _ in ():\n    doc = """\nclass Box:\n    """\n',
}


# Two more routes of the same holes when written: a line of spaces and a form feed (blank to
# the tokenizer) taken for the body's first line. Since the body line must be indented by
# spaces and tabs only up to its first character, they are not cut inside Box at all.
FORM_FEED = {
    "a form feed line first": "class Box:\n    \x0c\n  while 1:\n",
    "a form feed comment first": "class Box:\n    \x0c# c\n  with a:\n",
}


@pytest.mark.parametrize("route", sorted(FORM_FEED))
def test_a_form_feed_line_is_not_taken_for_the_body(route: str) -> None:
    text = f"{FORM_FEED[route]}{_methods('early')}{MARK}{_nested_blocks(20)}{_methods('late')}"
    assert not _whole_ok(text)
    place = halves._place(text)
    assert place is None or place.inside is None, place
    _helper_up()
    assert not halves.compiles(text)


def _nested_blocks(count: int, keyword: str = "for _ in ():") -> str:
    """``count`` nested blocks from four spaces on (the cut's level)."""
    lines = "".join(" " * (4 + k) + keyword + "\n" for k in range(count))
    return lines + " " * (4 + count) + "pass\n"


@pytest.mark.parametrize("route", sorted(NESTED))
def test_a_nested_cut_is_what_the_holes_below_use(
    route: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not a hole: each route is taken as a cut inside ``Box`` (``_in_box``), so the holes
    below go through the in-class path. When written, a fine text was proven so; now no
    cut inside a block of the body is, fine or not, and only the line check refuses it."""
    text = _in_box(NESTED[route])
    assert _whole_ok(text)
    _helper_up()
    assert not halves.compiles(text)
    monkeypatch.setattr(halves, "_in_class", lambda code, name, *lines: _probed(code, name))
    assert halves.compiles(text), "without the line check the nested cut is proven"


@pytest.mark.parametrize("route", sorted(NESTED))
def test_hole_too_many_statically_nested_blocks(route: str) -> None:
    """HOLE (fails on a877523). Twenty nested loops after the cut, which is inside a loop of
    the class body: the whole file has 21 blocks in Box's body ("too many statically nested
    blocks", CO_MAXBLOCKS is 20), the helper's text only 20."""
    text = _in_box(NESTED[route], second=_nested_blocks(20))
    assert not _whole_ok(text)
    _helper_up()
    assert not halves.compiles(text), "proven, but: too many statically nested blocks"


@pytest.mark.parametrize("route", sorted(NESTED))
def test_hole_too_many_levels_of_indentation(route: str) -> None:
    """HOLE (fails on a877523). Indentation nested just to the tokenizer's limit (100 levels)
    in the helper's text is one level past it in the whole file, where the cut sits inside a
    block of the class body ("too many levels of indentation")."""
    text = _in_box(NESTED[route], second=_nested_blocks(98, "if 1:"))
    assert not _whole_ok(text)
    _helper_up()
    assert not halves.compiles(text), "proven, but: too many levels of indentation"


def _deep_class(levels: int, minuses: int) -> str:
    """A class ``Box`` nested in ``levels`` module-level ``if`` blocks, found through a
    ``class Box:`` line in a string, with one expression ``minuses`` unary minuses deep after
    the cut (a comment at the end keeps the length, so the cut, whatever ``minuses``)."""
    body = " " * (levels + 4)
    head = "".join(" " * k + "if 1:\n" for k in range(levels))
    head += f'{" " * levels}class Box:\n{body}doc = """\nclass Box:\n{body}"""\n'
    mark = f"\n\n{body}def marker(self):\n{body}    pass\n"
    second = f"{body}x = {'-' * minuses}1\n"
    text = head + _methods("early", body, 90) + mark + second + _methods("late", body, 90)
    text += "#" + "-" * (6_000 - minuses) + "\n"
    place = halves._place(text)
    assert place is not None and place.inside == "Box" and place.indent == body, place
    return text


def test_hole_the_compilers_recursion_depth() -> None:
    """HOLE (fails on a877523). The compiler allows three levels of nesting per frame left;
    the whole file is 60 levels deeper than the helper's text (the class sits in 60
    module-level ``if`` blocks; the helper's wrapper puts it at column 0), far more than the
    frame the helper is allowed fewer. An expression just too deep for the whole file here
    ("maximum recursion depth exceeded during compilation") is proven."""
    levels = 60
    low, high = 1_000, 6_000  # unary minuses: compiles at ``low``, fails at ``high``
    assert not _fails_whole(_deep_class(levels, low))
    assert _fails_whole(_deep_class(levels, high))
    while high - low > 1:
        middle = (low + high) // 2
        if _fails_whole(_deep_class(levels, middle)):
            high = middle
        else:
            low = middle
    text = _deep_class(levels, high)  # the shallowest that fails whole, at this depth
    _helper_up()
    proven = halves.compiles(text)
    assert _fails_whole(text)
    assert not proven, f"proven, but {high} minuses exceed the compiler's depth here"


# -- attacks that held ------------------------------------------------------------------------

# (header, end of the first half, start of the second half): each fails as a whole file.
HELD: dict[str, tuple[str, str, str]] = {
    "21 nested blocks in a nested cut": (NESTED["header continued over lines"], "", "21"),
    "a walrus in a class comprehension": ("class Box:\n", "", "    [y := 1 for _ in ()]\n"),
    "nonlocal in the class body": ("class Box:\n", "", "    nonlocal q\n"),
    "yield in the class body": ("class Box:\n", "", "    yield 1\n"),
    "await in the class body": ("class Box:\n", "", "    await q\n"),
    "return in the class body": ("class Box:\n", "", "    return\n"),
    "break in the class body": ("class Box:\n", "", "    break\n"),
    "continue in the class body": ("class Box:\n", "", "    continue\n"),
    "__debug__ assigned": ("class Box:\n", "", "    __debug__ = 1\n"),
    "__debug__ as a parameter": ("class Box:\n", "", "    def d(self, __debug__):\n        pass\n"),
    "import star in the class body": ("class Box:\n", "", "    from os import *\n"),
    "a __future__ import in the body": (
        "class Box:\n",
        "",
        "    from __future__ import annotations\n",
    ),
    "private names colliding (NFKC)": (
        "class Box:\n",
        "",
        "    def clash(self, __\uff41, _Box__a):\n        pass\n",
    ),
    "an NFKC class name, a string's class line": (
        "class \uff22ox:\n",
        '    doc = """\nclass Box:\n    """\n',
        "    def clash(self, __a, _Box__a):\n        pass\n",
    ),
    "a global in a with, then an annotation": (
        "class Box:\n",
        "    with a:\n        global g\n",
        "    g: int = 1\n",
    ),
    "a global in a loop of the body, then an annotation": (
        NESTED["header continued over lines"],
        "    global g\n",
        "    g: int\n",
    ),
    "a global in a match case, then an annotation": (
        "class Box:\n",
        "    match x:\n        case 1:\n            global g\n",
        "    g: int\n",
    ),
    "a use, then a global after ';'": ("class Box:\n", "    g = 1\n", "    x = 1; global g\n"),
    "a use, then a global over a continuation": (
        "class Box:\n",
        "    g = 1\n",
        "    global h, \\\n        g\n",
    ),
    "a use, then an NFKC global": ("class Box:\n", "    g = 1\n", "    global \uff47\n"),
    "an open bracket before the cut": ("class Box:\n", "    x = (\n", ""),
    "a continuation before the cut": ("class Box:\n", "    x = 1 + \\\n", ""),
    "an open triple quote before the cut": ("class Box:\n", "    x = '''\n", ""),
    "an unfinished try before the cut": ("class Box:\n", "    try:\n        pass\n", ""),
    "a block header before the cut": ("class Box:\n", "    if x:\n", ""),
    "a dedent the wrapper lacks after the cut": (
        NESTED["header continued over lines"],
        "",
        "  z = 1\n",
    ),
    "an else at column 0 after the class": ("class Box:\n", "", "else:\n    pass\n"),
    "except at column 0 after the class": ("class Box:\n", "", "except E:\n    pass\n"),
}


def _held(case: str) -> str:
    header, first, second = HELD[case]
    if second == "21":
        second = _nested_blocks(21)
    return _in_box(header, first, second)


@pytest.mark.parametrize("case", sorted(HELD))
def test_attacks_that_held_are_never_proven(case: str) -> None:
    text = _held(case)
    assert not _whole_ok(text), "the case should fail as a whole file"
    _helper_up()
    assert not halves.compiles(text)


def test_a_body_at_a_tab_with_a_cut_at_spaces_is_not_cut_inside() -> None:
    """Eight spaces after a tab body (a TabError whole) is never a cut inside the class."""
    text = "class Box:\n" + _methods("early", "\t") + MARK.replace("    ", "        ")
    text += _methods("late", "\t")
    assert not _whole_ok(text)
    _helper_up()
    assert not halves.compiles(text)


def test_lone_cr_lines_are_not_cut() -> None:
    text = "class Box:\n" + _methods("early") + MARK.replace("\n", "\r") + _methods("late")
    assert halves._place(text) is None or halves._place(text).inside is None
