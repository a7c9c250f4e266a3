"""A third attack on the cut inside a class of ``runtime/halves.py``: differential fuzzing.

``halves.compiles(text)`` must say True only when ``compile(text, "<whole>", "exec",
dont_inherit=True)`` succeeds. The fuzzer (a bounded, seeded copy of the one run for this
attack: 112,000 cases, 58,000 of them cut inside a class, 18,000 proven) mutates
standard-library modules and synthetic classes near the cut and near the class's header and
first body line (statements from a class-body grammar, deleted and duplicated lines,
indentation of spaces, tabs, form feeds and vertical tabs, line ends, headers, deep nesting
after the cut) and compares the halves' answer with the whole compile.

The test under "holes" FAILED when written (CPython 3.11.7, b39b763 plus the working tree):
``_inside`` takes the body's first line to be the first indented line after the class line
whose indentation is spaces and tabs only (``_BODY_LINE``), and ``_in_class`` checks that the
class body's first instruction after its ``class`` line is on that line. A line whose
indentation runs into a form feed is passed over, on the reasoning that if it starts the
body's first statement, that statement's first instruction is on it, so the check fails.
It need not be: a statement continued over lines (an open bracket, a backslash) whose first
instruction comes from its second line, ``x = (\\n    1)`` (``LOAD_CONST 1``), a default
``a=g()`` on a parameter line of a ``def``. The form feed sets the tokenizer's column back
to 0, so ``"    \\f  x = ("`` starts the body at two columns; the continuation line
``"    1)"`` (inside the bracket, its indentation means nothing to the tokenizer) is taken
for the body's first line, at four spaces, and holds the first instruction. The body then
opens a block at two columns (``for``, ``while``, ``with``, ``if``) that holds the methods
and the cut at four: every check passes, and the helper compiles the second half directly
in a class body with that block missing. Twenty nested loops after the cut (21 blocks whole,
"too many statically nested blocks") or 98 nested ``if`` (one level past the tokenizer's
100, "too many levels of indentation") are proven. A fix that makes it pass: refuse the cut
when a line between the class line and the body line has a form feed in its indentation (or
read the indentation as the tokenizer does, form feeds resetting the column, so that such a
line is taken for the body's first and its indentation is not the cut's). Checking the first
instruction's column (``co_positions``) would not do: ``1`` in ``x = (\\n    1)`` is at
column 4, the cut's indentation.
"""

from __future__ import annotations

import random
import re
import sysconfig
from pathlib import Path

import pytest

from grinta_jupyter.runtime import halves
from tests.test_attack_halves_classes import MARK, _helper_up, _methods, _nested_blocks
from tests.test_halves import _fresh_helper, _whole_ok  # noqa: F401  (autouse)

STDLIB = Path(sysconfig.get_paths()["stdlib"])


# -- holes: a form feed line starting a statement continued over lines -----------------------

# Headers of a class ``Box`` whose body's first statement starts on a line with a form feed in
# its indentation (read at two columns) and goes on to a line at four spaces that holds its
# first instruction; the body then opens a block at two columns holding the methods and the
# cut, at four.
CONTINUED = {
    "a bracket": "class Box:\n    \x0c  x = (\n    1)\n  for _ in ():\n",
    "a parameter's default": "class Box:\n    \x0c  def f(self,\n    a=g()): pass\n  with a:\n",
    "a backslash": "class Box:\n    \x0c  x = \\\n    1\n  while x:\n",
    "an annotation's value": "class Box:\n  \x0c x: int = (\n    1)\n for _ in ():\n",
}


def _continued(route: str, second: str) -> str:
    return f"{CONTINUED[route]}{_methods('early')}{MARK}{second}{_methods('late')}"


@pytest.mark.parametrize("route", sorted(CONTINUED))
def test_the_route_is_a_fine_text_whose_body_is_at_fewer_columns(route: str) -> None:
    """Not a hole: the route's text is fine whole, and its body is at one or two columns, not
    the four of the line taken for its first (when written, the text was cut inside ``Box``
    at four spaces, inside a block of the body; a fix may refuse that cut)."""
    assert _whole_ok(_continued(route, ""))
    first_three = "\n".join(CONTINUED[route].split("\n")[:3]) + "\n"
    with pytest.raises(IndentationError):  # "unexpected indent": four is not the body's
        compile(first_three + "    z = 1\n", "<t>", "exec", dont_inherit=True)


@pytest.mark.parametrize("limit", ["blocks", "indentation"])
@pytest.mark.parametrize("route", sorted(CONTINUED))
def test_hole_a_form_feed_line_continued_onto_the_body_line(route: str, limit: str) -> None:
    """HOLE (fails when written). The body's first statement starts on a form feed line,
    which ``_BODY_LINE`` passes over, and its first instruction is on its continuation line,
    taken for the body's first: the cut, inside a block of the body, is proven with 21
    nested blocks or 101 levels of indentation in the whole file."""
    second = _nested_blocks(20) if limit == "blocks" else _nested_blocks(98, "if 1:")
    text = _continued(route, second)
    assert not _whole_ok(text)
    _helper_up()
    assert not halves.compiles(text), f"proven, but too many {limit} ({route})"


# -- the fuzzer, seeded and bounded -----------------------------------------------------------

SOURCES = ["tarfile.py", "typing.py", "argparse.py", "configparser.py", "enum.py"]
NAMES = ["x", "g", "__x", "\uff58", "match", "_", "__class__", "q"]
INDENTS = ["", " ", "  ", "\t", "\t ", " \t", "\x0c", "    \x0c", "  \x0c  ", "\x0b", "     "]
HEADERS = [
    "class {c}:",
    "class {c}(\n    object,\n):",
    "class {c}(object, \\\n    ):",
    "class {c}: # c",
    "class {c}(b='''\n    x\n    '''):",
    "@dec\nclass {c}:",
    "class {c}(\n  x):",
]
BLOCKS = ["for _ in ():", "while x:", "with a:", "if 1:", "if x:", "try:", "async for _ in a:"]
# The first statements of a body after a form feed line (the holes' route, and others).
FIRSTS = ["x = (\n{i}1)", "x = \\\n{i}1", "if 1:", "global q", "pass", "'''\n{i}doc'''", "[\n{i}y]"]


def _statement(rng: random.Random, i: str, s: str, c: str, depth: int = 0) -> list[str]:
    """Lines of a statement of a class body at indentation ``i``, a level being ``s``."""
    n = rng.choice([*NAMES, f"_{c}__x"])
    d = i + s
    simple = [
        f"global {n}",
        f"{n}: int",
        f"{n}: int = 1",
        f"{n} = 1",
        f"nonlocal {n}",
        f"del {n}",
        "from os import *",
        f"z = [{n} := 1 for _ in ()]",
        f"({n} := 1)",
        "yield",
        "await x",
        "return",
        "break",
        "type X = int",
        f"x = {'-' * 3000}1",
        f"x = 1; global {n}",
        f"s = 'global {n}'; global q",
        "from __future__ import annotations",
        "__grinta_half__ = 0",
        "\x0c  x = 1",
        "x = 1\r",
        "\\",
        f"global {n}, \\\n{d}q",
        f"doc = '''\nclass {c}:\n{i}'''",
        f"# class {c}:\n#class {c}:",
        f"def f(self, __a, _{c}__a): pass",
        f"def f(self):\n{d}global {n}\n{d}{n}: int",
        f"def f(self,\n{d}a=g()): pass",
        f"async def {n}(self):\n{d}await x",
        f"class {n}:\n{d}global x",
        f"match x:\n{d}case 1:\n{d}{s}global {n}",
        f"x = (\n{d}1)",
        "else:\n    pass",
    ]
    k = rng.randrange(len(simple) + 3)
    if k < len(simple):
        return [f"{i}{line}" if j == 0 else line for j, line in enumerate(simple[k].split("\n"))]
    if k == len(simple):
        body = _statement(rng, d, s, c, depth + 1) if depth < 2 else [f"{d}pass"]
        tail = [f"{i}finally:", f"{d}pass"] if rng.random() < 0.4 else []
        return [f"{i}{rng.choice(BLOCKS)}", *body, *tail]
    if k == len(simple) + 1:
        count, keyword = rng.choice([(20, "for _ in ():"), (21, "while x:"), (98, "if 1:")])
        return [i + " " * j + keyword for j in range(count)] + [i + " " * count + "pass"]
    return [f"{i}@dec", f"{i}def {n}(self): pass"]


def _line_near(rng: random.Random, text: str, at: int) -> tuple[int, int]:
    """A line (start, end after its newline) within a few lines of ``at``."""
    start = text.rfind("\n", 0, max(0, at - rng.randrange(300))) + 1
    end = text.find("\n", start)
    return start, len(text) if end < 0 else end + 1


def _mutate(rng: random.Random, text: str, place: halves._Place) -> str:
    c, i = place.inside or "Box", place.indent
    s = rng.choice(["    ", "  ", "\t", i])
    starts = [0, *(m.end() for m in re.finditer("\n", text))]
    head, body = starts[place.lines[0] - 1], starts[place.lines[1] - 1]
    after = text.find("\n\n", place.at) + 1 or place.at
    for _ in range(rng.choice([1, 2, 3])):
        spot = rng.choice([place.at, after, body, head, text.find("\n", head) + 1])
        op = rng.randrange(8)
        if op <= 2:
            indent = i if rng.random() < 0.7 else rng.choice(INDENTS)
            text = text[:spot] + "\n".join(_statement(rng, indent, s, c)) + "\n" + text[spot:]
        elif op == 3:
            start, end = _line_near(rng, text, spot)  # deleted or duplicated
            text = text[:start] + (text[start:end] * 2 if rng.random() < 0.5 else "") + text[end:]
        elif op == 4:
            start, end = _line_near(rng, text, spot)
            stripped = text[start:end].lstrip(" \t\x0c\x0b")
            text = text[:start] + rng.choice(INDENTS) + stripped + text[end:]
        elif op == 5:
            low, high = max(0, spot - 2000), min(len(text), spot + 2000)
            text = (
                text[:low] + text[low:high].replace("\n", rng.choice(["\r\n", "\r"])) + text[high:]
            )
        elif op == 6:
            end = text.find("\n", head)
            text = text[:head] + rng.choice(HEADERS).format(c=c) + text[end:]
        else:
            line_end = text.find("\n", head) + 1
            pre = rng.choice(["    \x0c  ", "  \x0c ", "\t\x0c"])
            block = rng.choice(["", "  for _ in ():\n", " while x:\n", "  with a:\n"])
            first = rng.choice(FIRSTS).format(i=i)
            text = text[:line_end] + pre + first + "\n" + block + text[line_end:]
        place = halves._place(text, halves._SHARE) or place
    return text


def _synthetic(rng: random.Random) -> str:
    c = rng.choice(["Box", "_Priv", "__Dunder", "match"])
    i = rng.choice(["    ", "  ", "\t", "\t  "])
    head = rng.choice(["", "import os\n", "from __future__ import annotations\n", "global x\n"])
    text = f"{head}class {c}:\n{_methods('early', i, rng.randrange(150, 200))}"
    text += MARK.replace("    ", i) + _methods("late", i, rng.randrange(150, 200))
    return text


def test_fuzzing_cuts_inside_classes_never_proves_a_failing_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = random.Random(40_3)
    texts = [(STDLIB / name).read_text() for name in SOURCES]
    _helper_up()
    proven = refused = inside = 0
    wrong: list[str] = []
    for round_ in range(1600):
        share = rng.choice([0.3, 0.38, 0.44, 0.5, 0.56, 0.62, 0.7])
        monkeypatch.setattr(halves, "_SHARE", share)
        base = _synthetic(rng) if round_ % 2 else texts[round_ // 2 % len(texts)]
        place = halves._place(base, share)
        if place is None or place.inside is None:
            continue
        text = _mutate(rng, base, place)
        new = halves._place(text, share)
        if new is None or new.inside is None:
            continue
        inside += 1
        if halves.compiles(text):
            proven += 1
            if not _whole_ok(text):
                wrong.append(f"round {round_} (share {share}): {text[:300]!r}")
        else:
            refused += 1
    assert not wrong, f"proven, but they do not compile: {wrong[:3]}"
    assert inside >= 600 and proven >= 150 and refused >= 300, (inside, proven, refused)
