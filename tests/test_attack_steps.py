"""Attacks on changes far apart proven one region at a time (``regions._in_steps``), on the
checks around them, and on paired diffs of same-length sides (``diffs._paired``).

``region_ok`` may answer True only when the whole new file compiles, and the layout it keeps
for the new text must be the one ``learn`` takes from it afresh. ``_in_steps`` proves a
text through intermediate ones (new text up to the end of change k, old text after it): the
chain is sound when each single-region step is, the last step's text is the new text, and
every layout a step keeps is the fresh one. Holes found (each test under "holes" fails on
the code of b5d3421):

- A *relative* ``from .__future__ import barry_as_FLUFL`` at the top of a file. CPython's
  parser enables ``<>`` only for a level-0 future import (pegen checks the level), but
  ``regions._future_flags`` counts the relative one too, so the learnt layout holds the
  BARRY flag and every region is compiled with it: an edit writing ``1 <> 2`` anywhere is
  proven, and the runtime commits a file that does not compile. (The compiler's own
  ``future.c`` does not check the level, so ``annotations`` and the rest do apply: only the
  parser's flag is wrong.)
- ``regions.declares_coding`` reads the first two lines up to ``\\n`` only. In a file with
  lone-``\\r`` line ends whose first line is blank, the declaration on line 2 is missed
  (``^`` never matches after a ``\\r``); Python reads the file by it. An edit adding a
  non-ASCII character under ``# coding: ascii`` (or a declaration of no encoding) is
  accepted by the whole-file check too (it compiles the str), in files of any size.
- ``diffs._paired`` pairs same-length sides line by line unless a differing line equals the
  other side's line one above or below. A block moved by two or more lines (two lines
  deleted here, two added a few lines further down, and any change far away to make the
  middle longer than 32 lines) is not caught: every line between is shown removed and
  added again (11 and 11 rows instead of 2 and 2). Nothing is hidden and the text is
  rebuilt exactly, but hunks show unchanged lines as changes.

Tried and held (the invariant tests below guard them): randomized multi-change edits (2 to
6 changes, gaps of 18 to 300 lines, at the first and last lines too) of stdlib modules and
of tab-indented, CRLF and CR files, chained, with every intermediate step's layout checked
against ``learn`` (about 3,000 proofs and 1,000 step chains while attacking); changes 19
and 20 unchanged lines apart (merged, then stepped); both ends of a class over 200 lines;
a class boundary between changes; deleting a file's last function and appending after a
last line without a newline; a backslash-continued line at a step's edge; a change at a
``__future__`` import; steps after the answer for one change was kept; a multiedit through
the runtime on a CRLF file. Paired diffs of random same-length edits with repeated,
blank and CRLF lines and a last line without a newline rebuild the new text, and every row
of every hunk names the line it shows.
"""

from __future__ import annotations

import random
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime import regions
from grinta_jupyter.runtime.diffs import line_opcodes, parse_unified, split_keepends, unified_diff
from grinta_jupyter.tools.facade import _REINDEXER
from tests.test_attack_regions import SNIPPETS, _awkward_file, _compiles
from tests.test_attack_regions2 import BLOCKS, LINES, _disk_compiles, _tab_file
from tests.test_diffs import apply_diff
from tests.test_edit_speed_more import _verdict

STDLIB = Path(sysconfig.get_paths()["stdlib"])
FUNCTIONS = "".join(f"def f_{i}():\n    return {i}\n\n\n" for i in range(300))

StepCall = tuple[str, str, bool, bool]  # (old, new, steps, answer) of one ``_region_ok``


@pytest.fixture
def region_calls(monkeypatch: pytest.MonkeyPatch) -> list[StepCall]:
    """Every ``_region_ok`` call (the steps' among them), with its answer."""
    calls: list[StepCall] = []
    real = regions._region_ok

    def spied(path: str, old: str, new: str, old_key: bytes, new_key: bytes, steps: bool) -> bool:
        answer = real(path, old, new, old_key, new_key, steps)
        calls.append((old, new, steps, answer))
        return answer

    monkeypatch.setattr(regions, "_region_ok", spied)
    return calls


def _fresh(text: str) -> regions.Layout | None:
    """The layout ``learn`` takes from ``text``, under a path of its own (nothing forgotten)."""
    regions.learn("fresh.py", text)
    return regions._layout_of("fresh.py", text)


def _check_proof(old: str, new: str, calls: list[StepCall]) -> bool:
    """``region_ok`` from ``old``'s learnt layout to ``new``: True only when ``new``
    compiles; every text a step proved compiles and keeps the fresh layout."""
    regions.forget()
    regions.learn("big.py", old)
    calls.clear()
    fast = regions.region_ok("big.py", old, new)
    assert _compiles(new) or not fast
    for _, text, _, answer in calls:
        if answer:
            assert _compiles(text)
            kept = regions._layout_of("big.py", text)
            assert kept is None or kept == _fresh(text)
    if fast:
        assert regions._layout_of("big.py", new) is not None
    return fast


def _workspace(tmp_path: Path, data: bytes) -> tuple[Runtime, Path]:
    root = tmp_path / "ws"
    root.mkdir()
    path = root / "big.py"
    path.write_bytes(data)
    regions.forget()
    return Runtime(root), path


# --- holes ----------------------------------------------------------------------------

RELATIVE_FUTURE = "from .__future__ import barry_as_FLUFL\n"


def test_a_relative_future_import_lends_regions_no_parser_flag() -> None:
    old = RELATIVE_FUTURE + FUNCTIONS
    new = old.replace("    return 5\n", "    return 1 <> 2\n")
    assert _compiles(old) and not _compiles(new)  # "<>" needs a level-0 future import
    assert _verdict(old, new)[0] is False


def test_the_runtime_does_not_write_a_diamond_under_a_relative_future(tmp_path: Path) -> None:
    rt, path = _workspace(tmp_path, (RELATIVE_FUTURE + FUNCTIONS).encode())
    warm = rt.propose(
        "replace_string",
        {"path": "big.py", "old_string": "    return 7\n", "new_string": "    return 7  # w\n"},
    )
    assert rt.commit(warm).ok
    _REINDEXER.wait()  # the layout of the committed text is learnt in the background
    proposal = rt.propose(
        "replace_string",
        {"path": "big.py", "old_string": "    return 5\n", "new_string": "    return 1 <> 2\n"},
    )
    if proposal.ok:
        assert rt.commit(proposal).ok
    assert _disk_compiles(path)


CR_CODING = {  # a first line ending in a lone "\r", a declaration on the second
    "blank first line": "\r# coding: ascii\r",
    "spaces on the first line": "   \r# -*- coding: ascii -*-\r",
    "no such encoding": "\t\r# vim: set fileencoding=nonesuch :\r",
}


@pytest.mark.parametrize("case", sorted(CR_CODING))
def test_a_declaration_after_a_lone_cr_is_a_declaration(case: str) -> None:
    head = CR_CODING[case].encode()
    with pytest.raises(SyntaxError):  # Python reads the file by it
        compile(head + b"x = '\xc3\xa9'\r", "c.py", "exec", dont_inherit=True)
    assert regions.declares_coding(CR_CODING[case] + "x = 1\r")


CR_RUNTIME = {  # (the file, the line replaced, its new text)
    "non-ASCII under an ASCII declaration": (
        "\r# coding: ascii\r" + FUNCTIONS.replace("\n", "\r"),
        "    return 5\r",
        "    return '\u00e9'\r",
    ),
    "a declaration of no encoding": (
        "\rimport os\r" + FUNCTIONS.replace("\n", "\r"),
        "import os\r",
        "# vim: set fileencoding=nonesuch :\rimport os\r",
    ),
}


@pytest.mark.parametrize("case", sorted(CR_RUNTIME))
def test_the_runtime_does_not_write_what_python_cannot_read(tmp_path: Path, case: str) -> None:
    text, old_string, new_string = CR_RUNTIME[case]
    rt, path = _workspace(tmp_path, text.encode())
    assert _disk_compiles(path)
    proposal = rt.propose(
        "replace_string", {"path": "big.py", "old_string": old_string, "new_string": new_string}
    )
    if proposal.ok:
        assert rt.commit(proposal).ok
    assert _disk_compiles(path)


def _changed_rows(a: list[str], b: list[str]) -> int:
    return sum(i2 - i1 + j2 - j1 for tag, i1, i2, j1, j2 in line_opcodes(a, b) if tag != "equal")


@pytest.mark.parametrize("shift", [2, 3, 4])
def test_a_block_moved_by_more_than_one_line_is_not_paired(shift: int) -> None:
    """``shift`` lines deleted, as many added eight lines below, a line changed far away:
    same length, few lines differ, none equal to the other side's line one above or below."""
    a = [f"line {i}\n" for i in range(80)]
    added = [f"new {k}\n" for k in range(shift)]
    b = a[:10] + a[10 + shift : 18 + shift] + added + a[18 + shift : 50] + ["changed\n"] + a[51:]
    assert len(a) == len(b)
    assert _changed_rows(a, b) == 2 * shift + 2  # as difflib's matcher finds
    diff = unified_diff("x.py", "".join(a), "".join(b))
    assert diff.removed == shift + 1 and len(diff.added) == shift + 1


# --- invariants that hold: steps --------------------------------------------------------


def _class_file(newline: str = "\n", tail: str = "") -> str:
    """About 1,100 lines: a class of 80 three-line methods (240 lines), then functions."""
    methods = "".join(
        f"    def m_{i}(self):\n        x = {i}\n        return x\n" for i in range(80)
    )
    functions = "".join(f"def g_{i}():\n    return {i}\n\n\n" for i in range(215))
    return ("import os\n\n\nclass Big:\n" + methods + "\n\n" + functions + tail).replace(
        "\n", newline
    )


def _edit(text: str, *pairs: tuple[str, str]) -> str:
    for old, new in pairs:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


STEP_CASES: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "both ends of a class": (
        _class_file(),
        (("        x = 1\n", "        x = 1 + 1\n"), ("        x = 78\n", "        x = (78\n)\n")),
    ),
    "a method added at both ends of a class": (
        _class_file(),
        (
            ("class Big:\n", "class Big:\n    def first(self):\n        pass\n"),
            ("        x = 79\n        return x\n", "        x = 79\n        return x\n    z = 2\n"),
        ),
    ),
    "a class boundary between changes": (
        _class_file(),
        (
            ("        x = 2\n", "        x = 2  # c\n"),
            ("        x = 79\n", "        x = 79\n        y = x\n"),
            ("def g_1():\n", "def inserted():\n    pass\n\n\ndef g_1():\n"),
            ("    return 150\n", "    return 150  # c\n"),
        ),
    ),
    "the first and the last line": (
        _class_file(),
        (("import os\n", "import sys\nimport os\n"), ("    return 214\n", "    return 214\nz = 1")),
    ),
    "the last function deleted": (
        _class_file(),
        (("        x = 3\n", "        x = 33\n"), ("def g_214():\n    return 214\n", "")),
    ),
    "after a last line without a newline": (
        _class_file(tail="end = 1"),
        (("        x = 3\n", "        x = 33\n"), ("end = 1", "end = 1\nmore = 2\n")),
    ),
    "CRLF": (
        _class_file("\r\n"),
        (
            ("        x = 1\r\n", "        x = 1\r\n        y = 2\r\n"),
            ("    return 100\r\n", "    return (100,\r\n        1)\r\n"),
        ),
    ),
    "CR": (
        _class_file("\r"),
        (("        x = 1\r", "        x = 1\r        y = 2\r"), ("    return 100\r", "    pass\r")),
    ),
    "a backslash at a step's edge": (
        _class_file(),
        (
            ("        x = 5\n        return x\n", "        x = 5; \\\n        return x\n"),
            ("    return 120\n", "    a = 1; \\\n    return 120\n"),
        ),
    ),
    "a future import below the edits": (
        "from __future__ import annotations\n" + _class_file(),
        (
            ("        x = 1\n", "        x: int = 1\n"),
            ("    return 200\n", "    return 200  # c\n"),
        ),
    ),
}


@pytest.mark.parametrize("case", sorted(STEP_CASES))
def test_changes_far_apart_are_proven_in_steps(
    case: str, region_calls: list[StepCall], steps_taken: list[bool | None]
) -> None:
    text, pairs = STEP_CASES[case]
    new = _edit(text, *pairs)
    assert len(text.splitlines()) >= regions.REGION_MIN_LINES and _compiles(new)
    assert _check_proof(text, new, region_calls)
    assert steps_taken == [True]
    assert regions._layout_of("big.py", new) == _fresh(new)


BROKEN_STEPS: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "a backslash before a blank line": (
        _class_file(),
        (
            ("        x = 5\n", "        x = 5  # c\n"),
            ("    return 120\n", "    return 120 + \\\n"),
        ),
    ),
    "a member dedented past the class": (
        _class_file(),
        (("        x = 5\n", "        x = 5  # c\n"), ("        x = 70\n", "    x = 70\n")),
    ),
    "a future import below a step": (
        _class_file(),
        (
            ("        x = 5\n", "        x = 5  # c\n"),
            ("def g_9():\n", "from __future__ import annotations\n"),
        ),
    ),
    "a global after the name's use": (
        _class_file(),
        (
            ("        x = 5\n", "        x = 5  # c\n"),
            ("    return 120\n", "    return g_1\n    global g_1\n"),
        ),
    ),
    "a member with the second step's indentation": (
        _class_file(),
        (("        x = 5\n", "        x = 5  # c\n"), ("    def m_75(self):\n", "     def q():\n")),
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN_STEPS))
def test_a_broken_last_step_is_refused(
    case: str, region_calls: list[StepCall], steps_taken: list[bool | None]
) -> None:
    text, pairs = BROKEN_STEPS[case]
    new = _edit(text, *pairs)
    assert not _compiles(new)
    assert not _check_proof(text, new, region_calls)
    assert steps_taken in ([], [False], [None])  # refused by one region, or by the steps


def _function_file(gap: int) -> tuple[str, str]:
    """A 260-line function (its one region is over 200 lines), changed at two lines with
    ``gap`` unchanged lines between them."""
    body = "".join(f"    v_{i} = {i}\n" for i in range(260))
    text = "def big():\n" + body + "    return 0\n\n\n" + FUNCTIONS
    new = text.replace("    v_10 = 10\n", "    v_10 = -10\n").replace(
        f"    v_{11 + gap} = {11 + gap}\n", f"    v_{11 + gap} = -1\n"
    )
    return text, new


@pytest.mark.parametrize(("gap", "expected"), [(19, [None]), (20, [True]), (21, [True])])
def test_changes_closer_than_the_gap_are_one(
    gap: int,
    expected: list[bool | None],
    region_calls: list[StepCall],
    steps_taken: list[bool | None],
) -> None:
    text, new = _function_file(gap)
    assert _check_proof(text, new, region_calls)
    assert steps_taken == expected
    assert regions._layout_of("big.py", new) == _fresh(new)


def test_steps_from_an_answer_already_kept(
    region_calls: list[StepCall], steps_taken: list[bool | None]
) -> None:
    """The second change's own edit was proven before (its answer and layout are kept): the
    steps still end on the new text, with its fresh layout."""
    text, pairs = STEP_CASES["both ends of a class"]
    half = _edit(text, pairs[0])
    new = _edit(half, pairs[1])
    regions.forget()
    regions.learn("big.py", text)
    assert regions.region_ok("big.py", text, half)
    assert regions.region_ok("big.py", half, new)
    assert regions.region_ok("big.py", text, new)
    assert steps_taken[-1] is True
    assert regions._layout_of("big.py", new) == _fresh(new)


def _mutate_at(rng: random.Random, lines: list[str], k: int) -> list[str]:
    new = list(lines)
    roll = rng.random()
    pool = SNIPPETS + LINES + BLOCKS
    if roll < 0.3:
        new[k:k] = rng.choice(pool).splitlines(keepends=True)
    elif roll < 0.5:
        del new[k : k + rng.randint(1, 6)]
    elif roll < 0.65:
        new[k : k + 1] = rng.choice(pool).splitlines(keepends=True)
    elif roll < 0.75:
        depth = len(new[k]) - len(new[k].lstrip(" \t"))
        new[k] = new[k][min(depth, rng.choice([1, 2, 4, 8])) :]
    elif roll < 0.85:
        new[k] = rng.choice(["    ", "\t", " "]) + new[k]
    elif roll < 0.92:
        j = rng.randrange(len(lines))
        new[k:k] = lines[j : j + rng.randint(1, 8)]
    elif new[k].strip():
        body = new[k].rstrip("\r\n")
        new[k] = body + "  # c" + new[k][len(body) :]
    return new


def _spread(rng: random.Random, text: str, newline: str) -> str:
    """``text`` changed at 2 to 6 places, mostly far apart, at times at its first or last
    line; most changes keep the text compiling on their own."""
    lines = text.splitlines(keepends=True)
    positions = {rng.randrange(len(lines)) for _ in range(rng.randint(2, 6))}
    if rng.random() < 0.2:
        positions.add(0)
    if rng.random() < 0.2:
        positions.add(len(lines) - 1)
    ordered = sorted(positions)
    if rng.random() < 0.7:
        gap = rng.choice([18, 19, 20, 21, 40, 300])
        spaced = [ordered[0]]
        for p in ordered[1:]:
            spaced.append(max(p, spaced[-1] + gap))
        ordered = [p for p in spaced if p < len(lines)]
    for k in reversed(ordered):
        if k >= len(lines):
            continue
        for _ in range(6):
            trial = _mutate_at(rng, lines, k)
            if rng.random() < 0.25 or _compiles("".join(trial)):
                break
        lines = trial
    return "".join(
        line[:-1] + newline if line.endswith("\n") and not line.endswith("\r\n") else line
        for line in lines
    )


def _texts() -> Iterator[tuple[str, str]]:
    for module in ("typing.py", "_pydecimal.py", "argparse.py"):
        yield (STDLIB / module).read_text(encoding="utf-8"), "\n"
    yield _awkward_file().replace("\n", "\r\n"), "\r\n"
    yield _tab_file().replace("\n", "\r"), "\r"
    yield _class_file(), "\n"


@pytest.mark.parametrize("index", range(6))
def test_random_changes_far_apart_are_sound_and_keep_fresh_layouts(
    index: int, region_calls: list[StepCall], steps_taken: list[bool | None]
) -> None:
    """Chains of random multi-change edits, each from the layout the previous proof kept:
    every step a chain took compiles and keeps the fresh layout, and so does the end."""
    text, newline = list(_texts())[index]
    rng = random.Random(index)
    regions.forget()
    regions.learn("big.py", text)
    proven = 0
    for _ in range(30):
        new = _spread(rng, text, newline)
        if not regions.known("big.py", text):
            regions.learn("big.py", text)
        region_calls.clear()
        fast = regions.region_ok("big.py", text, new)
        assert _compiles(new) or not fast
        for _, step_text, _, answer in region_calls:
            if answer:
                kept = regions._layout_of("big.py", step_text)
                assert kept is None or kept == _fresh(step_text)
        if fast:
            proven += 1
        if _compiles(new):
            text = new
    assert proven >= 5
    assert steps_taken.count(True) >= 2


def test_a_multiedit_of_a_crlf_file_through_the_runtime(
    tmp_path: Path, steps_taken: list[bool | None]
) -> None:
    text = _class_file("\r\n")
    rt, path = _workspace(tmp_path, text.encode())
    regions.learn("big.py", text)
    edits = [
        {"old_string": "        x = 1\r\n", "new_string": "        x = 1\r\n        y = x\r\n"},
        {"old_string": "    return 150\r\n", "new_string": "    return (150,\r\n    )\r\n"},
    ]
    proposal = rt.propose("multiedit", {"edits": [{"path": "big.py", **e} for e in edits]})
    assert proposal.ok, proposal.error
    assert steps_taken == [True]
    assert rt.commit(proposal).ok
    assert _disk_compiles(path)
    on_disk = path.read_bytes().decode()
    assert on_disk.count("\r\n") == on_disk.count("\n")  # the line ends kept
    assert regions._layout_of("big.py", on_disk) == _fresh(on_disk)


# --- invariants that hold: paired diffs -------------------------------------------------

ROWS = ["a\n", "b\n", "\n", "x = 1\n", "c\r\n", "-- d\n", "    pass\n", "}\n", "\r\n"]


def _rebuilt(a: list[str], b: list[str]) -> list[str]:
    out: list[str] = []
    at = 0
    for tag, i1, i2, j1, j2 in line_opcodes(a, b):
        assert i1 == at
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2]
        out.extend(a[i1:i2] if tag == "equal" else b[j1:j2])
        at = i2
    assert at == len(a)
    return out


def _same_length(rng: random.Random) -> tuple[list[str], list[str]]:
    """Two sides of 33 to 200 lines (so that pairing is tried), a few lines changed and at
    times a line moved or a block shifted, from few distinct rows (repeats everywhere)."""
    n = rng.randint(33, 200)
    a = [rng.choice(ROWS) for _ in range(n)]
    if rng.random() < 0.5:
        a[-1] = a[-1].rstrip("\r\n") or "end"  # no newline at the end
    b = list(a)
    for k in rng.sample(range(n), rng.randint(1, 12)):
        b[k] = rng.choice([*ROWS, f"new {k}\n", "a", "a\r\n"])
    if rng.random() < 0.3:
        k, j = sorted(rng.sample(range(n - 1), 2))
        b.insert(j, b.pop(k))
    b[-1] = b[-1] if b[-1].endswith("\n") or rng.random() < 0.5 else b[-1] + "\n"
    return a, b


def _rows_name_their_lines(old: str, new: str) -> None:
    a, b = split_keepends(old), split_keepends(new)
    diff = unified_diff("f.txt", old, new)
    files = parse_unified(diff.text)
    assert len(files) == 1
    parsed = files[0]
    # A row is its line without the line end: a CRLF is a line end only when every line end
    # of both texts is one; otherwise the "\r" is the row's, so a change to it shows.
    crlf = all(line.endswith("\r\n") for line in a + b if line.endswith("\n"))

    def shown(line: str) -> str:
        line = line.removesuffix("\n")
        return line.removesuffix("\r") if crlf else line

    removed = 0
    for hunk in parsed.hunks:
        for row in hunk.rows:
            if row.old_line is not None:
                assert shown(a[row.old_line - 1]) == row.text
            if row.new_line is not None:
                assert shown(b[row.new_line - 1]) == row.text
            removed += row.role == "del"
    assert removed == diff.removed == parsed.removed
    assert [(n, line) for n, line in diff.added] == [
        (n, b[n - 1].removesuffix("\n").removesuffix("\r")) for n, _ in diff.added
    ]


@pytest.mark.parametrize("seed", range(8))
def test_paired_diffs_rebuild_the_text_and_name_every_line(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(60):
        a, b = _same_length(rng)
        assert _rebuilt(a, b) == b
        old, new = "".join(a), "".join(b)
        if a == b:
            continue
        _rows_name_their_lines(old, new)
        if new.endswith("\n"):  # the reader rebuilds every added line with "\n"
            rebuilt = apply_diff(old, unified_diff("f.txt", old, new).text)
            assert rebuilt.replace("\r\n", "\n") == new.replace("\r\n", "\n")


def test_a_paired_last_line_without_a_newline_says_so() -> None:
    a = [f"line {i}\n" for i in range(60)] + ["last"]
    b = [*a]
    b[5], b[-1] = "five\n", "last\n"
    diff = unified_diff("f.txt", "".join(a), "".join(b))
    assert diff.text.endswith("-last\n\\ No newline at end of file\n+last\n")
    assert "-line 5\n+five\n" in diff.text


def test_lines_moved_by_one_are_never_paired() -> None:
    a = [f"line {i}\n" for i in range(100)]
    for gone in range(0, 60, 7):
        for added in range(gone + 2, gone + 30, 5):
            b = a[:gone] + a[gone + 1 : added] + ["new\n"] + a[added:]
            assert _changed_rows(a, b) == 2, (gone, added)
