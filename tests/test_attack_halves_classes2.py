"""Attacks on the cut inside a class of ``runtime/halves.py`` after d30cffb (the line checks).

``halves.compiles(text)`` must say True only when ``compile(text, "<whole>", "exec",
dont_inherit=True)`` succeeds. Every test here passes on a correct module. The tests under
"holes" FAILED when written (CPython 3.11.7, d30cffb).

The hole: ``_inside`` takes the body's level to be the indentation string of the first
indented line after the class line (``_BODY_LINE``: ``[ \\t]+`` up to the first other
character), and ``_in_class`` checks that the class's first instruction after its line is
on that line, so that line does start the body's first statement. But a form feed inside a
line's indentation resets the tokenizer's column to 0 (``tokenizer.c``: ``col = altcol =
0``), so the line ``"    \\x0c  x = 1"`` is read at column 2 while ``_BODY_LINE`` takes
``"    "`` (four) for its indentation. The body is then really at two spaces, a block of it
(``for``, ``if`` ...) can hold the methods and the cut at four, the probe at four is stored
by Box's body, the class starts on its line and its first instruction is on the body line:
every check passes, and the helper compiles the second half directly in the body of a class
(at four spaces) with the block around the cut missing. The limits that count blocks
(statically nested blocks, indentation levels, the compiler's recursion depth) are then
checked against a shallower text than the whole, as in the first attack's holes. A fix
that makes these tests pass: ``_BODY_LINE = re.compile(r"\\n([ \\t]+)[^ \\t\\r\\n#\\x0c]")``
(a line whose indentation runs into a form feed is never taken for the body line; if it
is the body's first, the line check then finds the first instruction on another line).
Reading the indentation as the tokenizer does (columns, form feeds resetting them) is the
other way.
"""

from __future__ import annotations

import pytest

from grinta_jupyter.runtime import halves
from tests.test_attack_halves_classes import MARK, _helper_up, _in_box, _methods, _nested_blocks
from tests.test_halves import _fresh_helper, _whole_ok  # noqa: F401  (autouse)

# -- holes: a form feed in the body line's indentation ---------------------------------------

# Headers of a class ``Box`` whose first body line has a form feed inside its indentation:
# the tokenizer reads the body at one or two spaces, ``_BODY_LINE`` at four. The body then
# opens a block whose own body (the methods, the cut) is at four spaces.
FORM_FEED = {
    "an assignment at two spaces": "class Box:\n    \x0c  x = 1\n  for _ in range(1):\n",
    "a docstring at two spaces": "class Box:\n    \x0c  '''doc'''\n  while x:\n",
    "a call at one space": "class Box:\n    \x0c f()\n with a:\n",
}


def _form_feed(route: str, second: str) -> str:
    """The text of a route (not asserted to be cut inside Box: a fix may refuse that)."""
    return f"{FORM_FEED[route]}{_methods('early')}{MARK}{second}{_methods('late')}"


@pytest.mark.parametrize("route", sorted(FORM_FEED))
def test_a_form_feed_body_line_is_a_body_at_fewer_columns(route: str) -> None:
    """The route the holes below use: the text is fine, and the body is at one or two
    columns, not the four ``_BODY_LINE`` reads (a second statement at four spaces is an
    unexpected indent)."""
    assert _whole_ok(_form_feed(route, ""))
    first_two = "\n".join(FORM_FEED[route].split("\n")[:2]) + "\n"
    with pytest.raises(IndentationError):  # "unexpected indent": four is not the body's
        compile(first_two + "    z = 1\n", "<t>", "exec", dont_inherit=True)


@pytest.mark.parametrize("route", sorted(FORM_FEED))
def test_hole_form_feed_too_many_statically_nested_blocks(route: str) -> None:
    """HOLE (fails on d30cffb, where the cut is taken inside Box at four spaces). Twenty
    nested loops after the cut, which is inside a block of the class body: the whole file
    has 21 blocks in Box's body ("too many statically nested blocks"), the helper's text
    only 20."""
    text = _form_feed(route, _nested_blocks(20))
    assert not _whole_ok(text)
    _helper_up()
    assert not halves.compiles(text), "proven, but: too many statically nested blocks"


@pytest.mark.parametrize("route", sorted(FORM_FEED))
def test_hole_form_feed_too_many_levels_of_indentation(route: str) -> None:
    """HOLE (fails on d30cffb). Indentation nested to the tokenizer's limit in the helper's
    text is one level past it in the whole file ("too many levels of indentation")."""
    text = _form_feed(route, _nested_blocks(98, "if 1:"))
    assert not _whole_ok(text)
    _helper_up()
    assert not halves.compiles(text), "proven, but: too many levels of indentation"


def test_a_form_feed_body_line_around_a_try_held() -> None:
    """Held: the cut inside a ``try`` of the body (reached through the form feed) needs the
    handler after it, at the body's level, which the helper's wrapper does not have."""
    header = "class Box:\n    \x0c  x = 1\n  try:\n"
    text = f"{header}{_methods('early')}{MARK}{_nested_blocks(20)}{_methods('late')}"
    text += "  except E:\n    pass\n"
    assert not _whole_ok(text)
    _helper_up()
    assert not halves.compiles(text)


# -- attacks that held ------------------------------------------------------------------------

# (header, end of the first half, start of the second half): each is taken as a cut inside
# Box at four spaces and fails as a whole file.
HELD: dict[str, tuple[str, str, str]] = {
    # the body line's instructions: a first statement that emits no code, or is folded
    "a global first, the header continued": (
        "class Box(\n    object):\n  global q\n  for _ in ():\n",
        "",
        "21",
    ),
    "while 1 folded, the header continued": ("class Box(\n    object):\n  while 1:\n", "", "21"),
    "if __debug__ folded, the header continued": (
        "class Box(\n    object):\n  for _ in ():\n   if __debug__:\n    pass\n",
        "",
        "21",
    ),
    # line numbers that could disagree with the text's count of newlines
    "a lone CR ending the body line": ("class Box:\n    x = 1\r  for _ in ():\n", "", "21"),
    "a lone CR ending a comment line": ("class Box:\n    # c\r  for _ in ():\n", "", "21"),
    "a backslash line first": ("class Box:\n    \\\n  x = 1\n  for _ in ():\n", "", "21"),
    "a vertical tab in the indentation": (
        "class Box:\n    \x0b  x = 1\n  for _ in ():\n",
        "",
        "21",
    ),
    # another class of the name: an earlier one at column 0, the cut's in a block
    "a redefinition in a block, found by a string": (
        "class Box:\n    pass\nif 1:\n  class Box:\n    doc = '''\nclass Box:\n    '''\n",
        "",
        "98",
    ),
    # globals spelled so that a scan could miss them
    "a global after a string holding global": (
        "class Box:\n",
        "    s = 'global'; global g\n",
        "    g: int\n",
    ),
    "a global after a string ending in a backslash": (
        "class Box:\n",
        "    s = 'global \\\\'; global g\n",
        "    g: int\n",
    ),
    "a global in a case of a match": (
        "class Box:\n",
        "    match x:\n        case 1: global g\n",
        "    g: int = 1\n",
    ),
    # scoping across the halves
    "a global, then nonlocal in a method": (
        "class Box:\n",
        "    global q\n",
        "    def f(self):\n        nonlocal q\n",
    ),
    "a walrus in a comprehension after a global": (
        "class Box:\n",
        "    global g\n",
        "    z = [g := 1 for _ in ()]\n",
    ),
}


def _held(case: str) -> str:
    header, first, second = HELD[case]
    if second == "21":
        second = _nested_blocks(21)
    elif second == "98":
        second = _nested_blocks(98, "if 1:")
    return _in_box(header, first, second)


@pytest.mark.parametrize("case", sorted(HELD))
def test_attacks_that_held_are_never_proven(case: str) -> None:
    text = _held(case)
    assert not _whole_ok(text), "the case should fail as a whole file"
    _helper_up()
    assert not halves.compiles(text)
