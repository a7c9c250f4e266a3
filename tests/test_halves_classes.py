"""Cutting a large Python file inside a class (runtime/halves.py).

The property is the one ``tests/test_halves.py`` holds the module-level cut to:
``halves.compiles(text)`` is True only when ``compile(text)`` succeeds. Here the second
half starts inside the body of a class at column 0, is compiled by the helper under a
``class <name>:`` line, and the first half is compiled with a probe statement appended.
Each way a class body's statement in one half can make one in the other invalid is tried
with a file that fails whole, and the guard made for it is shown to be what catches it.
"""

from __future__ import annotations

import random
import sysconfig
import time
from pathlib import Path
from types import CodeType

import pytest

from grinta_jupyter.runtime import halves
from tests.test_halves import _fresh_helper, _whole_ok  # noqa: F401  (autouse)

STDLIB = Path(sysconfig.get_paths()["stdlib"])
CLASSY = ["tarfile.py", "typing.py", "argparse.py", "enum.py", "configparser.py"]


def _methods(tag: str, indent: str = "    ", count: int = 170) -> str:
    """Methods with no blank line between them (no place to cut), about 75 characters each,
    at ``indent`` (their bodies one level deeper)."""
    return "".join(
        f"{indent}def {tag}_{k}(self, a, b=1):\n{indent}    total = a + b * {k}\n"
        f"{indent}    return [total]\n"
        for k in range(count)
    )


MARK = "\n\n    def marker(self):\n        pass\n"


def _klass(head: str = "", first: str = "", second: str = "", name: str = "Box") -> str:
    """A module of one large class ``name`` with one place to cut, inside the class at
    ``MARK``: ``head`` opens the module, ``first`` ends the first half (class level),
    ``second`` follows the method that opens the second half."""
    text = f"{head}class {name}:\n{_methods('early')}{first}{MARK}{second}{_methods('late')}"
    place = halves._place(text)
    assert place is not None and place.at == text.index(MARK) + 2, "the cut moved"
    assert place.inside == name and place.indent == "    "
    return text


def _helper_up() -> None:
    plain = _klass()
    for _ in range(60):
        if halves.compiles(plain):
            return
        time.sleep(0.05)
    pytest.fail("the helper never proved a plain class")


def test_large_classes_are_cut_inside_and_proven(monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of it: tarfile's halves at the module's level are 54/46 at best; inside
    TarInfo the cut lands where it is asked to."""
    text = (STDLIB / "tarfile.py").read_text()
    place = halves._place(text, 0.44)
    assert place is not None and place.inside == "TarInfo"
    assert abs(place.at / len(text) - 0.44) < 0.01
    seen: list[str] = []
    real = halves._in_class
    monkeypatch.setattr(
        halves,
        "_in_class",
        lambda code, name, *lines: seen.append(name) or real(code, name, *lines),
    )
    monkeypatch.setattr(halves, "_SHARE", 0.44)
    for _ in range(60):
        if halves.compiles(text):
            break
        time.sleep(0.05)
    else:
        pytest.fail("tarfile was never proven")
    assert seen and seen[-1] == "TarInfo"


# -- what crosses the cut inside a class ----------------------------------------------------

FAKE_HEADER = '    doc = """\nclass Fake:\n    """\n'  # a class line inside a string

CROSSING = {
    # a global in the class body's first half, the name annotated in the second
    "global, then an annotation": {"first": "    global shared\n", "second": "    shared: int\n"},
    # ... with a line of the class's name in a string between the global and the cut: the
    # class line found in the text is not the class's own (the global is before it)
    "global before a class line in a string": {
        "first": "    global shared\n" + FAKE_HEADER.replace("Fake", "Box"),
        "second": "    shared: int = 1\n",
    },
    # a class line of another name in a string: private names are mangled by the class's
    "mangled by the name a string holds": {
        "first": FAKE_HEADER,
        "second": "    def clash(self, __a, _Box__a):\n        pass\n",
        "name": "Fake",
    },
    # ... the global in a method, an if, a continuation: all in the class's scope or not,
    # the annotation's name was declared global somewhere in the first half
    "global in an if of the class body": {
        "first": "    if True:\n        global shared\n",
        "second": "    shared: int\n",
    },
    "global over a continuation, NFKC name": {
        "first": "    global other, \\\n        ｓhared\n",
        "second": "    shared: int\n",
    },
    # a name used in the first half, declared global in the class's scope in the second
    "use, then a global": {"first": "    shared = 1\n", "second": "    global shared\n"},
    "def, then a global in a for": {
        "first": "    def shared(self):\n        pass\n",
        "second": "    for _ in ():\n        global shared\n",
    },
    # private names are mangled by the class's name: _Box__a is __a in Box only
    "mangled names that collide": {"second": "    def clash(self, __a, _Box__a):\n        pass\n"},
    # the cut line's indentation is not a level of the block: the body is at a tab, and the
    # line the text's guess took for its first is the header's continuation, at four spaces
    "a tab body, a header continued at spaces": {"header": "class Box(\n    object,\n):\n"},
}


def _crossing(case: str) -> str:
    spec = CROSSING[case]
    name = spec.get("name", "Box")
    header = spec.get("header", "class Box:\n")
    early = _methods("early", "\t" if "header" in spec else "    ")
    text = f"{header}{early}{spec.get('first', '')}{MARK}"
    text += f"{spec.get('second', '')}{_methods('late')}"
    place = halves._place(text)
    assert place is not None and place.inside == name, place
    return text


@pytest.mark.parametrize("case", sorted(CROSSING))
def test_what_crosses_a_cut_inside_a_class_is_never_proven(case: str) -> None:
    text = _crossing(case)
    assert not _whole_ok(text), "the case should fail as a whole file"
    _helper_up()
    assert not halves.compiles(text)


@pytest.mark.parametrize(
    "case, guard, off",
    [
        ("global, then an annotation", "_uses_of_globals", lambda text: ""),
        ("use, then a global", "_uses_of_globals", lambda text: ""),
        ("mangled by the name a string holds", "_in_class", lambda code, name, *lines: True),
    ],
)
def test_each_guard_is_what_catches_its_case(
    case: str, guard: str, off: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _crossing(case)
    _helper_up()
    monkeypatch.setattr(halves, guard, off)
    assert halves.compiles(text), f"{case}: expected the unguarded halves to be fooled"


@pytest.mark.parametrize("spelling", ["__grinta_half__", "__ｇrinta_half__"])
def test_the_probe_is_never_named_by_the_text(
    spelling: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module-level class named as the one found in a string, storing the probe's name
    (the compiler reads names NFKC-normalized): the probe would seem to be in its body. Such
    a text is not cut inside a class at all, and were it cut, the class's lines would not
    match (two checks: each alone keeps the answer right, both off it is wrong)."""
    text = f"class Fake:\n    {spelling} = 1\n\n\n" + _crossing(
        "mangled by the name a string holds"
    )
    assert not _whole_ok(text)
    place = halves._place(text)
    assert place is not None and place.inside == "Fake"
    assert halves._prepare(text, halves._SHARE, 1) is None
    _helper_up()
    assert not halves.compiles(text)
    monkeypatch.setattr(
        halves, "_mentions", lambda text, name: name == "__future__" and name in text
    )
    assert halves._prepare(text, halves._SHARE, 1) is not None
    assert not halves.compiles(text), "the lines of Fake's code are not the string's"
    monkeypatch.setattr(halves, "_in_class", lambda code, name, *lines: _probed(code, name))
    assert halves.compiles(text), "expected the unguarded halves to be fooled"


def _probed(code: CodeType, name: str) -> bool:
    """``_in_class`` without its line check: a class of that name stores the probe."""
    return any(
        isinstance(const, CodeType) and const.co_name == name and halves._PROBE in const.co_names
        for const in code.co_consts
    )


@pytest.mark.parametrize(
    "head, first, second, why",
    [
        ("", "", "", "a plain class"),
        (
            "",
            "    shared = 1\n",
            "    def use(self):\n        global shared\n",
            "a method's global",
        ),
        ("", "", "    x: int = 1\n    __slots__ = ()\n", "annotations in the second half"),
        (
            "from __future__ import annotations\n",
            "",
            "    def f(self) -> Later:\n        pass\n",
            "a feature",
        ),
        ("", "    global counter\n", "    counter = 2\n", "a global assigned after it"),
    ],
)
def test_what_is_fine_whole_is_proven(head: str, first: str, second: str, why: str) -> None:
    text = _klass(head, first, second)
    assert _whole_ok(text), why
    _helper_up()
    assert halves.compiles(text), why


@pytest.mark.parametrize(
    "text, why",
    [
        (
            "def outer():\n    y = 1\n"
            + FAKE_HEADER
            + _methods("early").replace("(self, ", "(")
            + MARK.replace("(self)", "()")
            + "    return y\n"
            + _methods("late").replace("(self, ", "("),
            "a function's body after a class line in a string",
        ),
        (
            "class Early:\n    pass\n"
            + FAKE_HEADER.replace("Fake", "Box")
            + "if True:\n  class Box:\n"
            + _methods("early", "    ")
            + MARK
            + _methods("late", "    ")
            + "  pass\n",
            "a class in a block, its second half back at the block's level",
        ),
    ],
)
def test_a_wrong_guess_only_fails_to_prove(text: str, why: str) -> None:
    """Where the cut only looks like one inside a class, the halves prove nothing (the whole
    compile then judges): they never say True for a text that is not a class's body."""
    assert _whole_ok(text), why
    _helper_up()
    assert not halves.compiles(text), why


# -- seeded mutations near a cut inside a class -----------------------------------------------

PARTS = [
    "global {n}",
    "{n}: int",
    "{n} = 1",
    "{n}",
    "nonlocal {n}",
    "del {n}",
    "import {n}",
    "def {n}(self): pass",
    "if True: global {n}",
    "global \\\n    {n}",
    "[{n} := 1 for _ in ()]",
    "def f(self):\n    global {n}\n    {n}: int",
    "return",
    "yield",
    "'''",
    "(",
    "@dec",
    "else: pass",
    "def f(self, __a, _{c}__a): pass",
    "\tpass",
    "  pass",
]


def test_mutations_around_a_cut_inside_a_class_are_never_proven_wrongly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = random.Random(20261206)
    texts = [(STDLIB / name).read_text() for name in CLASSY]
    _helper_up()
    proven = refused = 0
    for round_ in range(240):
        text = texts[round_ % len(texts)]
        share = rng.choice([0.3, 0.38, 0.44, 0.5, 0.6])
        place = halves._place(text, share)
        assert place is not None
        if place.inside is None:
            continue
        name = rng.choice(["x", "self", "__x", "ｘ", "match", place.inside])

        def fmt(part: str, indent: str, name: str = name, inside: str = place.inside) -> str:
            lines = part.format(n=name, c=inside).split("\n")
            return "".join(f"{indent}{line}\n" for line in lines)

        first = fmt(rng.choice(PARTS), place.indent)
        second = fmt(rng.choice(PARTS), place.indent if rng.random() < 0.7 else "")
        end = text.find("\n\n", place.at) + 1  # after the definition the cut starts
        new = text[: place.at - 1] + first + "\n" + text[place.at : end] + second + text[end:]
        monkeypatch.setattr(halves, "_SHARE", share)
        if halves.compiles(new):
            assert _whole_ok(new), f"round {round_}: proven, but it does not compile"
            proven += 1
        elif not _whole_ok(new):
            refused += 1
    assert proven >= 15 and refused >= 60, (proven, refused)
