"""Attacks on ``runtime/halves.py``: texts and situations where ``halves.compiles(text)``
might say True while ``compile(text, name, "exec", dont_inherit=True)`` fails here.

Every test passes when the module is right. The ones whose docstring says "Was a hole"
failed when written (CPython 3.11.7): what failed and the fix are in the docstring. The
rest are attacks the module withstood, kept so that it keeps withstanding them.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from grinta_jupyter.runtime import halves

MARK = "\n\ndef marker():\n    pass\n"
EARLY_FUNCTIONS = LATE_FUNCTIONS = (
    180  # about 12,500 characters a side (the tests lower the minimum)
)


def _filler(tag: str, functions: int) -> str:
    """Plain functions with no blank line between them: no place to cut."""
    return "".join(
        f"def {tag}_{k}(a, b=1):\n    total = a + b * {k}\n    return [total, {k}]\n"
        for k in range(functions)
    )


EARLY, LATE = _filler("early", EARLY_FUNCTIONS), _filler("late", LATE_FUNCTIONS)


def _file(opening: str = "", second: str = "", tail: str = "") -> str:
    """A text with one place to cut, ``MARK``: ``opening`` starts the file, ``tail`` ends the
    first half right before the blank line of the cut, ``second`` follows the function that
    opens the second half."""
    text = opening + EARLY + tail + MARK + second + LATE
    cut = halves._cut(text)
    assert cut == len(opening) + len(EARLY) + len(tail) + 2, "the cut moved"
    return text


def _whole(text: str) -> str:
    """'ok', or the kind of failure of the whole compile (here, at this depth)."""
    try:
        compile(text, "<whole>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as exc:
        return type(exc).__name__
    return "ok"


def _helper_ready() -> None:
    """Start the helper and wait until it proves a plain file."""
    plain = _file()
    for _ in range(60):
        if halves.compiles(plain):
            return
        time.sleep(0.05)
    pytest.fail("the helper never proved a plain file")


def _proven(text: str) -> bool:
    """``halves.compiles`` with the helper running (asked once)."""
    return halves.compiles(text)


@pytest.fixture(autouse=True)
def _fresh_helper(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Texts of a few tens of thousands of characters keep the tests quick; what is proven
    # does not depend on the size (test_halves.py checks the real threshold).
    monkeypatch.setattr(halves, "SPLIT_MIN_CHARS", 20_000)
    halves._HELPER.close()
    halves._HELPER = halves._Helper()
    yield
    process = halves._HELPER._process
    if process is not None and process.poll() is None:
        os.kill(process.pid, signal.SIGCONT)  # in case a test left it stopped
    halves._HELPER.close()


# -- texts: what crosses the cut ---------------------------------------------------------------

# (opening, second): ``opening`` starts the file, ``second`` follows the cut's function.
# Each fails as a whole file on 3.11.7 unless listed in COMPILING below.
CROSSING: dict[str, tuple[str, str]] = {
    "global after ';'": ("g = 1\n", "x = 1;global g\n"),
    "global after ':' on one line": ("g = 1\n", "if g: global g\n"),
    "global after a continued ';'": ("g = 1\n", "x = 1\\\n;global g\n"),
    "global under lone-CR lines": ("g = 1\n", "if g:\r    global g\r"),
    "global over a CRLF continuation": ("g = 1\n", "if g:\r\n    global \\\r\n        g\r\n"),
    "global over a lone-CR continuation": ("g = 1\n", "if g:\r    global h, \\\r        g\r"),
    "NFKC name bound first": ("\uff47 = 1\n", "global g\n"),
    "NFKC name declared": ("g = 1\n", "global \uff47\n"),
    "combining mark composed by NFKC": ("\u00e9 = 1\n", "global e\u0301\n"),
    "soft keyword name match": ("match = 1\n", "global match\n"),
    "soft keyword name case": ("case = 1\n", "global case\n"),
    "underscore name": ("_ = 1\n", "global _\n"),
    "form feed before global": ("g = 1\n", "\x0cglobal g\n"),
    "form feed after global": ("g = 1\n", "global\x0cg\n"),
    "tab after global": ("g = 1\n", "global\tg, h\n"),
    "global then comment": ("g = 1\n", "global g  # g\n"),
    "global then ';' and another": ("g = 1\n", "global h; global g\n"),
    "global in while-else": ("g = 1\n", "while 0:\n    pass\nelse:\n    global g\n"),
    "global in match case": ("g = 1\n", "match 1:\n    case 1:\n        global g\n"),
    "global in try-except": ("g = 1\n", "try:\n    pass\nexcept E:\n    global g\n"),
    "global in with": ("g = 1\n", "with a:\n    global g\n"),
    "global in elif": ("g = 1\n", "if 0:\n    pass\nelif 1:\n    global g\n"),
    "global after a string naming global": ("g = 1\n", "if 'global' in s: global g\n"),
    "bound by import": ("import g\n", "global g\n"),
    "bound by from-import as": ("from m import x as g\n", "global g\n"),
    "bound by for": ("for g in (): pass\n", "global g\n"),
    "bound by del": ("del g\n", "global g\n"),
    "bound by except as": ("try:\n    pass\nexcept E as g:\n    pass\n", "global g\n"),
    "bound by walrus": ("(g := 1)\n", "global g\n"),
    "bound by class": ("class g: pass\n", "global g\n"),
    "bound by async def": ("async def g(): pass\n", "global g\n"),
    "bound by decorated def": ("@d\ndef g(): pass\n", "global g\n"),
    "bound by augmented assignment": ("g += 1\n", "global g\n"),
    "bound by with tuple": ("with a as (g, h): pass\n", "global h\n"),
    "bound by star target": ("a, *g = x\n", "global g\n"),
    "bound by case capture": ("match x:\n    case [g]:\n        pass\n", "global g\n"),
    "bound by case mapping": ("match x:\n    case {'k': g}:\n        pass\n", "global g\n"),
    "bound by case class": ("match x:\n    case C(a=g):\n        pass\n", "global g\n"),
    "bound by case as": ("match x:\n    case _ as g:\n        pass\n", "global g\n"),
    "bound by case star": ("match x:\n    case [*g]:\n        pass\n", "global g\n"),
    "bound by case double star": ("match x:\n    case {**g}:\n        pass\n", "global g\n"),
    "annotated only": ("g: int\n", "global g\n"),
    "non-simple annotation": ("(g): int = 1\n", "global g\n"),
    "used in an f-string": ("print(f'{g}')\n", "global g\n"),
    "used as a comprehension's iterable": ("[_ for _ in g]\n", "global g\n"),
    "used as a base class": ("class C(g): pass\n", "global g\n"),
    "used as a default": ("def f(x=g): pass\n", "global g\n"),
    "used as an annotation": ("def f(x: g): pass\n", "global g\n"),
    "used as a decorator": ("@g\ndef f(): pass\n", "global g\n"),
    "used in a del subscript": ("del g[0]\n", "global g\n"),
    "future import with a tab": ("", "from\t__future__ import annotations\n"),
    "future import parenthesised": ("", "from __future__ import (annotations)\n"),
    "future import relative": ("", "from .__future__ import annotations\n"),
    "future braces": ("", "from __future__ import braces\n"),
    "future after import __future__": (
        "",
        "import __future__; from __future__ import annotations\n",
    ),
    "future in fullwidth low lines": (
        "",
        "from \uff3f\uff3ffuture\uff3f\uff3f import annotations\n",
    ),
    "future in fullwidth letters": (
        "",
        "from __\uff46\uff55\uff54\uff55\uff52\uff45__ import annotations\n",
    ),
    "future over a continuation": ("", "from \\\n    __future__ import annotations\n"),
    "annotations aliased, then a walrus": (
        "from __future__ import annotations as _a\n",
        "def w(x: (y := 1)): pass\n",
    ),
    "annotations in a parenthesised list": (
        "from __future__ import (\n    generator_stop,\n    annotations,\n)\n",
        "def w(x: (y := 1)): pass\n",
    ),
    "annotations after a docstring": (
        "'''doc'''\nfrom __future__ import annotations\n",
        "def w(x: (y := 1)): pass\n",
    ),
    "annotations NFKC, then a yield": (
        "from __future__ import \uff41nnotations\n",
        "def w(x: (yield)): pass\n",
    ),
    "annotations in a comment only": (
        "# from __future__ import annotations\n",
        "x: (y := 1) = 2\n",
    ),
    "barry then !=": ("from __future__ import barry_as_FLUFL\n", "x = 1 != 2\n"),
    "relative barry then <>": ("from .__future__ import barry_as_FLUFL\n", "x = 1 <> 2\n"),
    "future not at the top": ("x = 1\nfrom __future__ import annotations\n", ""),
    "nonlocal at module level": ("", "nonlocal g\n"),
    "return at module level": ("", "return\n"),
    "yield at module level": ("", "yield\n"),
    "await at module level": ("", "await g\n"),
    "break at module level": ("", "break\n"),
    "assert yield at module level": ("", "assert (yield)\n"),
    "__debug__ assigned": ("", "__debug__ = 1\n"),
    "__debug__ in NFKC assigned": ("", "__\uff44ebug__ = 1\n"),
    "__debug__ as a parameter": ("", "def f(__debug__): pass\n"),
    "too many nested parentheses": ("", "x = " + "(" * 201 + ")" * 201 + "\n"),
    "too many indentation levels": (
        "",
        "".join(" " * k + "if 1:\n" for k in range(101)) + " " * 101 + "pass\n",
    ),
    "too many statically nested blocks": (
        "",
        "".join("    " * k + "for _ in ():\n" for k in range(21)) + "    " * 21 + "pass\n",
    ),
    "tabs, then spaces": ("", "def f():\n\tif 1:\n        pass\n"),
    "unterminated triple quote": ("", "x = '''\n"),
    "a stray closing bracket": ("", ")\n"),
    "a NUL": ("", "x = 1\x00\n"),
    "a lone surrogate": ("", "x = '\ud800'\n"),
    "a BOM inside": ("", "\ufeffx = 1\n"),
    "a line separator": ("", "x = 1\u2028y = 2\n"),
    "a next-line character": ("", "x = 1\x85\n"),
    "a vertical tab": ("", "x = 1\x0b\n"),
    "a file separator": ("", "x = 1\x1c\n"),
    "a non-breaking space": ("", "x =\u00a01\n"),
    "a 5000-digit literal": ("", "x = " + "7" * 5000 + "\n"),
    "an f-string with a backslash": ("", "x = f'{\"\\n\"}'\n"),
    "an f-string reusing its quote": ("", "x = f'{'a'}'\n"),
    "a walrus in a comprehension's iterable": ("", "[x for x in (y := [])]\n"),
    "a walrus rebinding the comprehension variable": ("", "[x := 1 for x in ()]\n"),
    "a walrus in a class comprehension": ("", "class K:\n    [(z := 1) for _ in ()]\n"),
    "import star in a function": ("", "def f():\n    from m import *\n"),
    "global after assignment in a function": ("", "def f():\n    x = 1\n    global x\n"),
    "nonlocal without binding": ("", "def f():\n    nonlocal q\n"),
    "annotated global in a class": ("", "class K:\n    global q\n    q: int\n"),
    "parameter declared global": ("", "def f(q):\n    global q\n"),
    "duplicate argument": ("", "def f(a, a): pass\n"),
    "two starred targets": ("", "*a, *b = c\n"),
    "repeated keyword argument": ("", "f(a=1, a=2)\n"),
    "return value in an async generator": ("", "async def f():\n    yield 1\n    return 2\n"),
    "await in a comprehension of a def": ("", "def f():\n    [await x for x in y]\n"),
    "yield in a class body": ("", "class K:\n    yield 1\n"),
    "continue in a loop's else": ("", "for _ in ():\n    pass\nelse:\n    continue\n"),
    "bare except not last": ("", "try:\n    pass\nexcept:\n    pass\nexcept E:\n    pass\n"),
    "except and except* mixed": ("", "try:\n    pass\nexcept E:\n    pass\nexcept* F:\n    pass\n"),
    "a case after a wildcard": (
        "",
        "match x:\n    case _:\n        pass\n    case 1:\n        pass\n",
    ),
    "a pattern binding twice": ("", "match x:\n    case [a, a]:\n        pass\n"),
    "an or-pattern binding unequal names": ("", "match x:\n    case [a] | [b]:\n        pass\n"),
}
# Cases that compile whole on 3.11.7 (the module need not prove them, only never be wrong).
COMPILING = {
    "bound by import",  # an import is DEF_IMPORT, which a later global does not refuse
    "bound by from-import as",
    "annotations in a comment only",
    "barry then !=",
}


def test_what_crosses_the_cut_is_never_proven_when_it_does_not_compile() -> None:
    _helper_ready()
    wrong, unexpected = [], []
    for name, (opening, second) in CROSSING.items():
        text = _file(opening, second)
        whole = _whole(text)
        if (whole == "ok") != (name in COMPILING):
            unexpected.append(f"{name}: whole compile says {whole}")
        if _proven(text) and whole != "ok":
            wrong.append(f"{name}: halves said True, the whole compile raised {whole}")
    assert not unexpected, unexpected
    assert not wrong, wrong


# (tail, second): ``tail`` ends the first half right before the cut's blank line
TOKENIZER_AT_THE_CUT: list[tuple[str, str]] = [
    ("x = 1 \\", ""),  # a continuation onto the blank line
    ("    \\", ""),  # a line of a continuation only
    ("if 1:\n    pass\n    \\", ""),
    ("if 1:\n  if 1:\n    pass\n  \\", ""),
    ("x = 1 \\\r", ""),  # backslash CR LF, then the blank line
    ("x = 1 +\\", ""),  # an operand left for the blank line: fails
    ("x = (1 +\\", ")\n"),
    ("# c \\", ""),
    ("x = '\\\n'", ""),  # a string continued over a line
    ("x = '''", "'''\n"),  # a string across the cut
    ("x = f'''{", "}'''\n"),
    ("x = (", ")\n"),  # a bracket across the cut
    ("x = [", "]\n"),
    ("@d", ""),  # a decorator, a blank line, the def
    ("x = 1;", ""),
    ("x = 1\r", ""),
    ("\x0c", ""),
    ("\t", ""),
    ("if 1:\n\tpass", "if 1:\n        pass\n"),  # tabs above the cut, spaces below
    ("if 1:\n\tpass", "if 1:\n\tpass\n"),
    ("if 1:\n    pass\n  x = 1", ""),  # a dedent to no known level
    ("class C:\n    def f(self):\n        pass", "    x = 1\n"),  # indented below the cut
    ("match x:\n    case 1:\n        pass", "    case 2:\n        pass\n"),
    ("if x:\n    pass", "else:\n    pass\n"),
    ("try:\n    pass", "finally:\n    pass\n"),
    ("async def q(): pass\n\x0c", ""),
]


def test_the_tokenizer_state_at_the_cut_never_fools_the_halves() -> None:
    _helper_ready()
    wrong = []
    for tail, second in TOKENIZER_AT_THE_CUT:
        text = _file("", second, tail)
        whole = _whole(text)
        if _proven(text) and whole != "ok":
            wrong.append(f"tail {tail!r}, second {second!r}: True, whole {whole}")
    assert not wrong, wrong


# -- a seeded fuzz around the cut --------------------------------------------------------------

FIRST_PIECES = [
    "",
    "",
    "",
    "x = 1\n",
    "global g\n",
    "g = 1\n",
    "print(g)\n",
    "g: int\n",
    "del g\n",
    "import g\n",
    "for g in (): pass\n",
    "with a as g: pass\n",
    "class g: pass\n",
    "from __future__ import annotations\n",
    "from __future__ import barry_as_FLUFL\n",
    "from .__future__ import annotations\n",
    "from __future__ import (annotations,)\n",
    "from __\uff46uture__ import annotations\n",
    "if g:\n    pass\n",
    "if g: global g\n",
    "x = 1; global g\n",
    "match g:\n    case 1:\n        pass\n",
    "\x0c\n",
    "\t\n",
    "# c\n",
    "#\\\n",
    "\r\n",
    "x = 1\r",
    "f'{g}'\n",
    "async def q(): pass\n",
    "\uff47 = 1\n",
    "(g := 1)\n",
    "'''\n'''\n",
    "x = 1 \\\n",
    "return\n",
    "nonlocal g\n",
    "\ud800\n",
    "\x00\n",
]
SECOND_PIECES = [
    "",
    "",
    "",
    "x = 1\n",
    "global g\n",
    "if 1:\n    global g\n",
    "if g: global g\n",
    "x = 1;global g\n",
    "x=1;\\\nglobal g\n",
    "global \\\n  g\n",
    "global \uff47\n",
    "global g\u0301\n",
    "global match\n",
    "\x0cglobal g\n",
    "global\tg\n",
    "global g # c\n",
    "global g,\\\r\n h\n",
    "if g:\r    global g\r",
    "x = 1\rglobal g\n",
    "class C:\n    global g\n",
    "def f():\n    global g\n",
    "from __future__ import annotations\n",
    "import __future__\n",
    "def w(x: (y := 1)): pass\n",
    "x = 1 <> 2\n",
    "x = 1 != 2\n",
    "nonlocal g\n",
    "return\n",
    "await g\n",
    "g: int = 1\n",
    "match g:\n    case 1:\n        pass\n",
    "match = 1\n",
    "__debug__ = 1\n",
    "x = '''\n",
    "'''\n",
    ")\n",
    "\t\n",
    "  x = 1\n",
    "\\\n",
    "f'{g=}'\n",
    "global global_x\n",
    "x = 'global g'\n",
    "# global g\n",
    "x = g; global h\n",
    "print(g)\n",
    "class K:\n    [x := 1 for _ in ()]\n",
    "def f():\n    nonlocal g\n",
    "\u2028\n",
    "\ufeff\n",
    "x = 9" + "9" * 4400 + "\n",
    "@g\n",
    "@g\nclass Z: pass\n",
    "assert (yield)\n",
    "g = 2\n",
]
NOISE = [
    "\\",
    "\n",
    "\r",
    "\x0c",
    "\t",
    " ",
    "'",
    '"',
    '"""',
    "(",
    ")",
    "[",
    "#",
    ":",
    ";",
    "global ",
    "g",
    "\x00",
    "\u2028",
    "\x85",
    "\x0b",
    "\x1c",
    "__future__",
    "@",
    "def ",
    "\r\n",
    "f'",
    "{",
    "}",
    "\uff47",
    "\n\n",
]


def _fuzzed(rng: random.Random) -> str:
    first = "".join(rng.choice(FIRST_PIECES) for _ in range(rng.randint(0, 2)))
    second = "".join(rng.choice(SECOND_PIECES) for _ in range(rng.randint(0, 2)))
    text = first + EARLY + MARK + second + LATE
    near = len(first) + len(EARLY) + 2
    for _ in range(rng.choice((0, 0, 1, 2))):
        at = max(0, min(len(text), near + rng.randint(-50, 50)))
        text = text[:at] + rng.choice(NOISE) + text[at:]
    return text


def test_fuzz_around_the_cut_never_proves_a_text_that_does_not_compile() -> None:
    rng = random.Random(20260511)
    _helper_ready()
    proven = wrong = 0
    reports = []
    for round_ in range(220):
        text = _fuzzed(rng)
        if _proven(text):
            proven += 1
            whole = _whole(text)
            if whole != "ok":
                wrong += 1
                cut = halves._cut(text) or 0
                reports.append((round_, whole, text[max(0, cut - 120) : cut + 120]))
    assert not reports, reports[:5]
    assert proven >= 40, proven  # the helper ran and the fuzz reached it


# -- holes: the helper is not the caller --------------------------------------------------------


def _at_depth(frames: int, call: Callable[[], object]) -> object:
    return call() if frames == 0 else _at_depth(frames - 1, call)


def test_a_caller_deep_in_its_stack_is_not_told_a_text_compiles_when_it_does_not() -> None:
    """Was a hole, now closed.

    The compiler's recursion budget is 3 x (recursion limit - the caller's current
    depth); the helper compiles at depth 1, so it has nearly 3,000 levels while a caller 300
    frames deep has about 2,000. A chain of 2,600 ``+`` in the second half compiles in the
    helper and raises RecursionError ("maximum recursion depth exceeded during compilation")
    in the caller's whole compile. Seen: halves True, compile RecursionError. (A caller with
    a lower ``sys.setrecursionlimit`` is the same hole.)

    Fix: send the caller's budget with each half (``sys.getrecursionlimit()`` minus its
    depth) and have the helper compile with ``sys.setrecursionlimit(own depth + budget)``;
    or answer False when that budget is below the helper's."""
    text = _file("", "x = " + "+".join(["a"] * 2600) + "\n")
    assert _whole(text) == "ok", "at a shallow depth it compiles"
    _helper_ready()
    said, whole = _at_depth(300, lambda: (halves.compiles(text), _whole(text)))  # type: ignore[misc]
    assert whole == "RecursionError", "the case should fail 300 frames deep"
    assert not said, (
        "halves said True; the whole compile at the caller's depth raised RecursionError"
    )


def test_a_lower_int_max_str_digits_is_honoured() -> None:
    """Was a hole, now closed.

    ``sys.set_int_max_str_digits`` (or ``-X int_max_str_digits``, or
    PYTHONINTMAXSTRDIGITS, which ``-I`` makes the helper ignore) lowers the length of a
    decimal literal the compiler accepts. The helper keeps the default 4,300, so a 700-digit
    literal in the second half is proven in a process whose limit is 640, where the whole
    compile raises "SyntaxError: Exceeds the limit (640 digits) for integer string
    conversion". Seen: halves True, compile SyntaxError.

    Fix: send ``sys.get_int_max_str_digits()`` with each half and set it in the helper
    (``sys.set_int_max_str_digits``) before compiling."""
    text = _file("", "BIG = " + "7" * 700 + "\n")
    _helper_ready()
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        whole = _whole(text)
        said = halves.compiles(text)
    finally:
        sys.set_int_max_str_digits(old)
    assert whole == "SyntaxError"
    assert not said, "halves said True; the whole compile raised SyntaxError (digit limit)"


# -- holes: an interrupt leaves an answer in the pipe -------------------------------------------


def test_an_interrupt_while_waiting_for_the_helper_leaves_no_answer_for_the_next_caller() -> None:
    """Was a hole, now closed.

    A KeyboardInterrupt (Ctrl-C, an interrupted kernel) arriving while ``compiles``
    waits for the helper's answer: ``_Ask.ok`` marks the answer read *before* reading it,
    ``answer`` catches only OSError and ValueError, so the exception leaves with the byte
    still to come; ``__exit__`` sees it "read" and releases the helper. The next call sends
    its half and reads the previous answer. Seen: the next call, for a text whose second
    half is ``return 1`` at module level, says True; compile says SyntaxError.

    Fix: in ``_Ask.ok`` (or ``_Helper.answer``), on any BaseException stop the helper
    (``_stop()``) before re-raising, and mark the answer read only once it was."""
    good, bad = _file(), _file("", "return 1\n")
    assert _whole(bad) == "SyntaxError"
    _helper_ready()
    process = halves._HELPER._process
    assert process is not None
    pid = process.pid

    def interrupt(signum: int, frame: object) -> None:
        os.kill(pid, signal.SIGCONT)
        raise KeyboardInterrupt

    os.kill(pid, signal.SIGSTOP)  # the answer is late: the interrupt finds the caller waiting
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(KeyboardInterrupt):
            halves.compiles(good)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    time.sleep(0.2)  # the helper answers the interrupted half meanwhile
    said = halves.compiles(bad)
    assert not said, "halves said True for a text that does not compile (a stale answer)"


def test_an_interrupt_right_after_sending_leaves_no_answer_for_the_next_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Was a hole, now closed.

    An exception raised in ``_Helper.send`` after the half was written (a
    KeyboardInterrupt is checked for right after the write returns) goes through
    ``except BaseException: release; raise``: the helper is not stopped, the half it was
    sent is answered, and the next caller reads that answer as its own. Seen: True for a
    text whose second half is ``return 1``; compile says SyntaxError. (The interrupt is
    raised here by a profile hook when the pipe's ``write``/``flush`` returns, the point a
    real signal is handled at.)

    Fix: once writing has begun, on any BaseException stop the helper (``_stop()``) before
    releasing the lock."""
    good, bad = _file(), _file("", "return 1\n")
    assert _whole(bad) == "SyntaxError"
    _helper_ready()
    # The frames-left probe recurses until RecursionError, which would be raised inside the
    # profile hook and switch it off: a fixed answer keeps the hook on.
    monkeypatch.setattr(halves, "frames_left", lambda depth=0: 900)
    here = halves.__file__
    fired: list[str] = []

    def hook(frame, event, arg):  # type: ignore[no-untyped-def]
        if (
            not fired
            and event == "c_return"
            and frame.f_code.co_filename == here
            and getattr(arg, "__name__", "") in ("write", "flush")
        ):
            fired.append(arg.__name__)
            raise KeyboardInterrupt

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            halves.compiles(good)
    finally:
        sys.setprofile(previous)
    assert fired, "the interrupt was never raised: no write to the pipe from halves.py"
    said = halves.compiles(bad)
    assert not said, "halves said True for a text that does not compile (a stale answer)"


# -- hole: a hang ------------------------------------------------------------------------------


def test_scanning_for_global_statements_is_not_quadratic() -> None:
    """Was a hole, now closed.

    ``_uses_of_globals`` matches the rest of the line (up to ``;``, ``#`` or a line
    break; quotes do not stop it) after *every* free-standing ``global`` word, and searches
    for the next word from just after the previous one: a line holding k such words costs
    k x its length. A 14,000-character string of ``"global "`` words in the second half of a
    50,000-character file takes 1.8 s (7.5 s at 64,000 characters, minutes for a long
    one-line data blob) before anything is sent; the whole compile takes 25 ms.

    Fix: continue the search from the end of the tail just matched
    (``text.find("global", max(end, tail.end()))``): a ``global`` inside that tail has a
    tail that is a suffix of it, so it adds no name."""
    text = _file("", "WORDS = '" + "global " * 2000 + "'\n")
    assert _whole(text) == "ok"
    _helper_ready()
    started = time.perf_counter()
    compile(text, "<whole>", "exec", dont_inherit=True)
    whole = time.perf_counter() - started
    started = time.perf_counter()
    halves.compiles(text)
    halved = time.perf_counter() - started
    assert halved < max(0.5, 10 * whole), (
        f"halves took {halved:.2f} s, the whole compile {whole:.3f} s"
    )


# -- threads -----------------------------------------------------------------------------------


def test_threads_with_different_texts_get_no_wrong_true() -> None:
    texts = [
        _file(),
        _file("", "return 1\n"),
        _file("g = 1\n", "global g\n"),
        _file("", "x = 2\n"),
        _file("", "x = (\n"),
    ]
    expected = [_whole(text) == "ok" for text in texts]
    assert expected == [True, False, False, True, False]
    _helper_ready()
    wrong: list[int] = []
    proven = [0]

    def ask(index: int) -> None:
        for round_ in range(12):
            k = (index + round_) % len(texts)
            if halves.compiles(texts[k]):
                proven[0] += 1
                if not expected[k]:
                    wrong.append(k)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not wrong
    assert proven[0] > 0


def test_no_helper_is_left_behind_by_close() -> None:
    _helper_ready()
    process = halves._HELPER._process
    assert process is not None
    halves._HELPER.close()
    assert process.poll() is not None
