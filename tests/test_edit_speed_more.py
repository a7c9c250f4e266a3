"""The fast paths of an edit give what the slow ones give, on awkward inputs.

- Syntax checks of large Python files compile only the touched region (a top-level
  definition, or the part of a top-level class's body an edit touched): whatever it
  accepts must compile as a whole file, and whatever the whole file refuses it must
  refuse (global and nonlocal statements, ``__future__`` features, name mangling, an
  edit that ends a class early, CRLF, form feeds, edits at the file's start and end).
- The placeholder guard tests a line's first character before its word search.
- Diffs mark rows and strip added lines in C, and find common runs by slices.
- ``reindent`` measures the file's indentation unit only when it needs it.
"""

from __future__ import annotations

import random
import sysconfig
import uuid
import warnings
from pathlib import Path

import pytest

from grinta_jupyter.code.edits import reindent
from grinta_jupyter.runtime import guards, regions, validation
from grinta_jupyter.runtime.diffs import _bare, _lines, common_affixes, split_keepends

STDLIB = Path(sysconfig.get_paths()["stdlib"])


def _compiles(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "big.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def _verdict(old: str, new: str) -> tuple[bool, bool]:
    """(the runtime accepts ``new``, it took the region path), from cold caches and with the
    layout of ``old`` learnt, as after a commit."""
    validation.forget()
    regions.learn("big.py", old)
    fast = regions.region_ok("big.py", old, new)
    regions.forget()
    regions.learn("big.py", old)
    return validation.added_error("big.py", old, new, "python") is None, fast


def _big_class_file(prelude: str = "", newline: str = "\n") -> str:
    """A module of about 1,300 lines: a function, a class of 60 methods, a function."""
    methods = "".join(
        f"    def method_{i}(self, value):\n"
        f'        """Method {i}: é {i}."""\n'
        f"        total = value + {i}\n"
        f"        if total > {i}:\n"
        f"            return total\n"
        f"        return -total\n\n"
        for i in range(60)
    )
    text = (
        f"{prelude}import os\n\n\ndef before():\n    return 1\n\n\n"
        f"class Big:\n    LIMIT = 3\n\n{methods}\n"
        + "".join(f"def after_{i}():\n    return {i}\n\n\n" for i in range(220))
    )
    return text.replace("\n", newline)


def _replace_line(text: str, old_line: str, new_lines: str) -> str:
    assert old_line in text
    return text.replace(old_line, new_lines, 1)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_region_edits_in_a_class_body_match_a_whole_compile(newline: str) -> None:
    old = _big_class_file(newline=newline)
    assert _compiles(old) and old.count(newline) >= regions.REGION_MIN_LINES
    nl = newline
    cases = {
        "a changed line in a method": (
            "        total = value + 7" + nl,
            f"        total = value * 7{nl}",
            True,
        ),
        "a method added": (
            "    def method_8(self, value):" + nl,
            f"    def added(self):{nl}        return 1{nl}{nl}    def method_8(self, value):{nl}",
            True,
        ),
        "a broken method": ("        total = value + 9" + nl, f"        total = (value{nl}", False),
        "a column-0 line ends the class early": ("        return -total" + nl, f"x = 1{nl}", False),
        "mangled names collide": (
            "    def method_3(self, value):" + nl,
            f"    def method_3(self, __a, _Big__a):{nl}",
            False,
        ),
        "import * in a class body": (
            "    def method_4(self, value):" + nl,
            f"    from os import *{nl}    def method_4(self, value):{nl}",
            False,
        ),
        "global after an assignment in the class body": (
            "    def method_5(self, value):" + nl,
            f"    global LIMIT{nl}    def method_5(self, value):{nl}",
            False,
        ),
        "yield in the class body": (
            "    def method_6(self, value):" + nl,
            f"    yield 1{nl}    def method_6(self, value):{nl}",
            False,
        ),
    }
    for name, (line, replacement, expected) in cases.items():
        new = _replace_line(old, line, replacement)
        accepted, fast = _verdict(old, new)
        assert _compiles(new) is expected, name
        assert accepted is expected, name
        if expected:
            assert fast, f"{name}: the region path was not taken"


def test_future_features_of_the_file_apply_to_the_region() -> None:
    old = _big_class_file(prelude='"""Doc."""\nfrom __future__ import annotations\n')
    # A named expression in an annotation is an error only under ``annotations``.
    new = _replace_line(old, "        total = value + 2\n", "        total: (y := 1) = 2\n")
    assert not _compiles(new)
    assert _verdict(old, new) == (False, False)
    fine = _replace_line(old, "        total = value + 2\n", "        total: int = 2\n")
    assert _verdict(old, fine) == (True, True)
    # A mention of __future__ that is no import (quoted below the top): the features are read
    # from the syntax tree, so it changes nothing.
    quoted = old + '\nNOTE = "from __future__ import annotations"\n'
    edited = _replace_line(quoted, "        total = value + 2\n", "        total: int = 2\n")
    assert _verdict(quoted, edited) == (True, True)


def test_module_level_global_statements_are_seen_across_the_region() -> None:
    old = "X = 1\n" + _big_class_file()
    new = _replace_line(old, "def after_7():\n", "global X\n\n\ndef after_7():\n")
    assert not _compiles(new)
    assert _verdict(old, new)[0] is False
    later = old + "\nglobal Y\n"  # valid: nothing used Y before
    assert _compiles(later)
    new_use = _replace_line(later, "    return 7\n", "    return 7\n\n\nY = 2\n")
    assert not _compiles(new_use)
    assert _verdict(later, new_use)[0] is False


def test_edits_at_the_start_and_end_and_without_a_final_newline() -> None:
    old = _big_class_file().rstrip("\n")  # no newline at the end
    assert _compiles(old)
    for new in (
        "# a first line\n" + old,
        old + "\n\n\ndef last():\n    return 0",
        old[: old.rindex("def after_219")],
        old.replace("def before():", "def before(:", 1),
        "def ünïcode():\n    return 'é'\n\n\n" + old,
    ):
        accepted, _ = _verdict(old, new)
        assert accepted is _compiles(new)


def test_form_feed_lines_never_make_a_region_edge() -> None:
    """``splitlines`` cuts at a form feed; Python does not: such an edge is not trusted."""
    old = _big_class_file().replace("    def method_9(", "    x = 1  #\x0c\n    def method_9(", 1)
    assert _compiles(old)
    new = old.replace("#\x0c\n    def method_9(", "#\x0c    def method_9(", 1)
    assert _verdict(old, new)[0] is _compiles(new)


@pytest.mark.parametrize("seed", [1, 2])
def test_random_line_edits_of_real_modules_match_a_whole_compile(seed: int) -> None:
    """Mutations of standard-library modules: the region verdict is the whole file's."""
    snippets = [
        "global x\n", "    global x\n", "        nonlocal y\n", '    """\n', ")\n", "x = 1\n",
        "    x: (y := 1) = 2\n", "    from os import *\n", "    return 1\n", "    yield 1\n",
        "        pass\n", "class Q:\n", "    @property\n", "def g():\n", "\tpass\n", "    break\n",
        "\x0c\n", "# comment\n", 'S = """\n', '    s = """x"""\n', "    x: int = 1\n",
        "    def h(self):\n        return [i async for i in x]\n",
    ]  # fmt: skip
    rng = random.Random(seed)
    sources = [STDLIB / "tarfile.py", STDLIB / "dataclasses.py", STDLIB / "argparse.py"]
    fast_paths = 0
    for path in sources:
        base = path.read_text() + f"# {uuid.uuid4()}\n"
        for old in (base, "from __future__ import annotations\n" + base):
            lines = old.splitlines(keepends=True)
            for _ in range(40):
                new = list(lines)
                k = rng.randrange(len(new))
                roll = rng.random()
                if roll < 0.4:
                    new.insert(k, rng.choice(snippets))
                elif roll < 0.6:
                    del new[k]
                elif roll < 0.8:
                    new[k] = new[k].rstrip("\r\n") + "  # edited\n"
                else:
                    new[k:k] = [new[rng.randrange(len(new))]]
                text = "".join(new)
                accepted, fast = _verdict(old, text)
                fast_paths += fast
                assert accepted is _compiles(text), (path.name, k, new[k])
    assert fast_paths > 60  # the region path was exercised, not only the fallback


# -- placeholder guard --------------------------------------------------------------------


PLACEHOLDERS = [
    "# ... existing code ...",
    "// rest of file unchanged",
    "/* ... */",
    "<!-- rest unchanged -->",
    "(rest unchanged)",
    "[snip]",
    "...existing code...",
    "… rest of the code …",
    "{/* ... */}",
    "-- remaining handlers as before",
    "; rest of config unchanged",
    "% rest of the document unchanged",
    "* rest of list omitted",
]


def test_first_character_filter_loses_no_placeholder() -> None:
    """Every line ``_classify`` calls a placeholder starts with a character of _MAY_OPEN."""
    lines = list(PLACEHOLDERS)
    for module in ("tarfile.py", "argparse.py", "typing.py", "pydoc.py"):
        lines += (STDLIB / module).read_text().splitlines()
    rng = random.Random(3)
    alphabet = "#/*<>!-.…⋯()[]{};%  abcdrestunchangedexistingcode\t"
    lines += [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) for _ in range(20000)
    ]
    words = ["rest", "unchanged", "existing", "code", "...", "…", "same", "omitted", "as before"]
    lines += [
        f"{rng.choice(['', 'x ', '1 ', 'é '])}{' '.join(rng.sample(words, 3))}" for _ in range(2000)
    ]
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        for prose in (False, True):
            kind = guards._classify(stripped, prose)
            assert guards._placeholder(line, prose) == (
                kind if stripped[0] in guards._MAY_OPEN else None
            )
            if kind is not None:
                assert stripped[0] in guards._MAY_OPEN, line
    assert all(guards.is_placeholder_line(line) for line in PLACEHOLDERS[:9])


# -- diffs --------------------------------------------------------------------------------


def _reference_lines(mark: str, lines: list[str], crlf: bool) -> list[str]:
    """Row by row: a CRLF ending is a line end only with ``crlf`` (every line end of the
    diff is one), else its "\\r" stays in the row."""
    out = []
    for line in lines:
        if line.endswith("\n"):
            cut = 2 if crlf and line.endswith("\r\n") else 1
            out.append(mark + line[:-cut])
        else:
            out.extend([mark + line, "\\ No newline at end of file"])
    return out


def _reference_affixes(a: list[str], b: list[str]) -> tuple[int, int]:
    prefix, limit = 0, min(len(a), len(b))
    while prefix < limit and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    return prefix, suffix


AWKWARD_TEXTS = [
    "",
    "a",
    "a\n",
    "a\r\nb\r\n",
    "a\r\nb",
    "x\ry\nz\n",
    "é\u2028ü\n\x0c\nlast",
    "\n\n\n",
    "one\ntwo\r\nthree",
    "tab\tand\x0bvertical\n",
]


@pytest.mark.parametrize("text", AWKWARD_TEXTS)
def test_marked_rows_and_bare_lines_match_line_by_line(text: str) -> None:
    lines = split_keepends(text)
    for start in range(len(lines) + 1):
        for end in range(start, len(lines) + 1):
            part = lines[start:end]
            for crlf in (False, True):
                assert _lines("+", part, crlf) == _reference_lines("+", part, crlf)
            assert _bare(part) == [line.removesuffix("\n").removesuffix("\r") for line in part]


def test_common_affixes_match_a_line_by_line_scan() -> None:
    rng = random.Random(5)
    for _ in range(3000):
        size = rng.choice([0, 1, 2, 3, 15, 16, 17, 33, 200, 5000])
        a = (
            [rng.choice(["x\n", "y\n", "x\r\n"]) for _ in range(size)]
            if rng.random() < 0.5
            else ["s\n"] * size
        )
        b = list(a)
        for _ in range(rng.randint(0, 3)):
            at = rng.randint(0, len(b))
            roll = rng.random()
            if roll < 0.4:
                b.insert(at, rng.choice(["x\n", "z\n", "x"]))
            elif b and roll < 0.8:
                del b[min(at, len(b) - 1)]
            elif b:
                b[min(at, len(b) - 1)] = "changed\n"
        assert common_affixes(a, b) == _reference_affixes(a, b)


# -- reindent -------------------------------------------------------------------------------


@pytest.mark.parametrize("indent", ["", "    ", "\t", "  "])
@pytest.mark.parametrize("unit", ["    ", "\t", "  "])
@pytest.mark.parametrize(
    "source",
    [
        "def f():\n    return 1\n",
        "def f():\n\treturn 1\n",
        "def f():\n  if x:\n    return 1\n",
        "x = 1",
        "\n\n  def g():\n      pass\n\n",
        "def f():\r\n\treturn 1\r\n",
    ],
)
def test_reindent_with_a_deferred_unit_is_the_same(indent: str, unit: str, source: str) -> None:
    asked: list[bool] = []

    def measured() -> str:
        asked.append(True)
        return unit

    assert reindent(source, indent, measured) == reindent(source, indent, unit)
    if (
        indent
        and "\t" not in indent
        and any(line.startswith(" ") for line in source.splitlines() if line.strip())
    ):
        assert not asked  # a space target and space-indented text: the unit is not needed


def test_hint_search_on_lowercased_ascii_is_the_same() -> None:
    rng = random.Random(7)
    texts = (STDLIB / "pydoc.py").read_text().splitlines()
    alphabet = "aAbBcCdDeEfFgGhHiIkKlLmMnNoOpPrRsStTuUvVwWxX .…_-'#[]()"
    texts += [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(20000)
    ]
    texts += ["REST OF FILE", "# Rest Unchanged", "As Is", "aS iS", "Kelvin \u212a", "ſame", "İtem"]
    for text in texts:
        assert guards._has_hint(text) == (guards._HINT.search(text) is not None), text


def test_kept_tree_is_served_only_for_the_exact_result() -> None:
    """``kept_tree`` (for the symbol index): the result's tree, and only for its bytes."""
    from grinta_jupyter.code.edits import kept_tree, replace_symbol
    from grinta_jupyter.code.symbols import extract_symbols, locate_nodes

    text = (STDLIB / "argparse.py").read_text() + f"# {uuid.uuid4()}\n"
    target = next(s for s in extract_symbols("a.py", text.encode()) if s.kind == "method")
    body = text.encode()[target.start_byte : target.end_byte].decode()
    result = replace_symbol(text, target, body + "  # é")
    tree = kept_tree("a.py", "python", result.encode())
    assert tree is not None
    _, located = locate_nodes("a.py", result.encode(), "python", tree)
    assert [s for s, _ in located] == extract_symbols("a.py", result.encode())
    assert kept_tree("a.py", "python", text.encode()) is None
    assert kept_tree("b.py", "python", result.encode()) is None


def test_symbols_located_after_a_commit_serve_the_next_edit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``result_symbols`` (the index's re-read) locates once; the next edit reuses it."""
    from grinta_jupyter.code import edits, symbols
    from grinta_jupyter.code.symbols import extract_symbols

    monkeypatch.setattr(edits, "_LAST_TREE", edits._TreeCache())
    text = (STDLIB / "tarfile.py").read_text() + f"# {uuid.uuid4()}\n"
    methods = [s for s in extract_symbols("t.py", text.encode()) if s.kind == "method"]
    body = text.encode()[methods[5].start_byte : methods[5].end_byte].decode()
    first = edits.replace_symbol(text, methods[5], body + "  # one")
    assert edits.result_symbols("t.py", "python", text.encode()) is None  # not the kept text
    found = edits.result_symbols("t.py", "python", first.encode())
    assert found == extract_symbols("t.py", first.encode())

    calls: list[int] = []
    real_locate = symbols.locate_nodes

    def counting_locate(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real_locate(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(edits, "locate_nodes", counting_locate)
    target = next(s for s in found if s.qualname == methods[9].qualname)
    body = first.encode()[target.start_byte : target.end_byte].decode()
    second = edits.replace_symbol(first, target, body + "  # two")
    assert calls == []  # located by result_symbols already
    monkeypatch.setattr(edits, "_LAST_TREE", edits._TreeCache())
    assert edits.replace_symbol(first, target, body + "  # two") == second
    assert calls == [1]
