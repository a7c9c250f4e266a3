"""Changes far apart, checked one region at a time (``regions._in_steps``), and what keeps
the checks cheap: paired diffs of same-length sides, caches keyed by digests.

A multiedit of two functions at both ends of a large module used to compile one region
spanning both (or, over a third of the file, the whole file). Now each change is proven
from the text the one before it left: soundness is the chain's (each step may answer True
only when its text compiles), and the layout carried to the last text must be the one
``learn`` takes from it afresh.
"""

from __future__ import annotations

import difflib
import random
import sysconfig
import tracemalloc
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime import regions, validation
from grinta_jupyter.runtime.diffs import line_opcodes, unified_diff
from grinta_jupyter.runtime.errors import SYNTAX_ERROR
from grinta_jupyter.tools.facade import _REINDEXER
from tests.test_attack_regions import _compiles, _mutate

STDLIB = Path(sysconfig.get_paths()["stdlib"])


def _far_apart(rng: random.Random, lines: list[str], parts: int) -> list[str]:
    """``lines`` with one edit in each of ``parts`` slices: a random one of the attack tests
    (it breaks the file more often than not; one slice in ``parts`` on average), else a
    comment added to a line."""
    size = len(lines) // parts
    new: list[str] = []
    for k in range(parts):
        piece = lines[k * size : (k + 1) * size if k < parts - 1 else len(lines)]
        if rng.random() < 1 / parts:
            new.extend(_mutate(rng, piece))
            continue
        at = rng.randrange(len(piece))
        line = piece[at]
        if line.strip() and not line.rstrip("\r\n").endswith("\\"):
            piece = [*piece[:at], line.rstrip("\r\n") + "  # c\n", *piece[at + 1 :]]
        new.extend(piece)
    return new


@pytest.mark.parametrize(
    ("module", "seed", "parts"),
    [("tarfile.py", 11, 2), ("argparse.py", 12, 3), ("typing.py", 13, 2), ("inspect.py", 14, 4)],
)
def test_changes_far_apart_are_proven_soundly_one_at_a_time(
    module: str, seed: int, parts: int, steps_taken: list[bool | None]
) -> None:
    text = (STDLIB / module).read_text(encoding="utf-8")
    rng = random.Random(seed)
    regions.forget()
    regions.learn("big.py", text)
    proven = 0
    for _ in range(60):
        candidate = "".join(_far_apart(rng, text.splitlines(keepends=True), parts))
        if not regions.known("big.py", text):
            regions.learn("big.py", text)
        fast = regions.region_ok("big.py", text, candidate)
        compiles = _compiles(candidate)
        assert compiles or not fast
        if fast:
            proven += 1
            carried = regions._layout_of("big.py", candidate)
            assert carried is not None
            regions.forget()
            regions.learn("big.py", candidate)
            assert regions._layout_of("big.py", candidate) == carried
        if compiles:
            text = candidate
    assert proven > 8
    assert steps_taken.count(True) > 4  # the steps did the proving, not one large region


def _module(functions: int = 700) -> str:
    return "".join(f"def f_{i}(a):\n    return a + {i}\n\n\n" for i in range(functions))


def test_a_multiedit_at_both_ends_of_a_file_is_checked_in_steps(
    tmp_path: Path, steps_taken: list[bool | None]
) -> None:
    (tmp_path / "big.py").write_text(_module(), encoding="utf-8")
    regions.forget()
    rt = Runtime(tmp_path)
    regions.learn("big.py", (tmp_path / "big.py").read_text(encoding="utf-8"))
    edits = [
        {"old_string": "    return a + 3\n", "new_string": "    return a - 3\n"},
        {"old_string": "    return a + 690\n", "new_string": "    return (a\n        + 690)\n"},
    ]
    proposal = rt.propose("multiedit", {"edits": [{"path": "big.py", **e} for e in edits]})
    assert proposal.ok, proposal.error
    assert steps_taken == [True]
    assert rt.commit(proposal).ok
    text = (tmp_path / "big.py").read_text(encoding="utf-8")
    assert "return a - 3\n" in text and "        + 690)\n" in text


def test_steps_whose_middle_text_breaks_fall_back_to_the_whole_file(
    tmp_path: Path, steps_taken: list[bool | None]
) -> None:
    """The first change opens a string the second closes: the text between the steps does
    not compile, so the steps cannot prove it; the whole file does, and it compiles."""
    (tmp_path / "big.py").write_text(_module(), encoding="utf-8")
    regions.forget()
    rt = Runtime(tmp_path)
    regions.learn("big.py", (tmp_path / "big.py").read_text(encoding="utf-8"))
    edits = [
        {"old_string": "def f_5(a):\n", "new_string": 'S = """\ndef f_5(a):\n'},
        {"old_string": "def f_650(a):\n", "new_string": '"""\ndef f_650(a):\n'},
    ]
    proposal = rt.propose("multiedit", {"edits": [{"path": "big.py", **e} for e in edits]})
    assert proposal.ok, proposal.error
    assert steps_taken == [False]
    assert rt.commit(proposal).ok
    _REINDEXER.wait()
    # And the other way: each change alone keeps the file valid, both together do not.
    edits = [
        {"old_string": "def f_660(a):\n", "new_string": "def f_660(a, b):\n"},
        {"old_string": "    return a + 3\n", "new_string": "    return a + 3 +\n"},
    ]
    refused = rt.propose("multiedit", {"edits": [{"path": "big.py", **e} for e in edits]})
    assert not refused.ok and refused.error is not None
    assert refused.error.code == SYNTAX_ERROR


def test_more_changes_than_steps_compile_the_whole_file(steps_taken: list[bool | None]) -> None:
    old = _module()
    new = old
    for i in range(0, 700, 100):  # seven changes, 100 functions apart
        new = new.replace(f"    return a + {i}\n", f"    return a * {i}\n")
    regions.forget()
    regions.learn("big.py", old)
    assert not regions.region_ok("big.py", old, new)
    assert steps_taken == [None]  # not tried: a whole compile is cheaper than seven steps
    assert validation.added_error("big.py", old, new, "python") is None


# --- diffs of same-length sides -----------------------------------------------------------


def _apply(ops: list[tuple[str, int, int, int, int]], a: list[str], b: list[str]) -> list[str]:
    out: list[str] = []
    at = 0
    for tag, i1, i2, j1, j2 in ops:
        assert i1 == at
        out.extend(a[i1:i2] if tag == "equal" else b[j1:j2])
        at = i2
    assert at == len(a)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_same_length_edits_far_apart_diff_as_the_matcher_does(seed: int) -> None:
    rng = random.Random(seed)
    a = [f"line {i}\n" for i in range(400)]
    b = list(a)
    for k in rng.sample(range(400), rng.randint(1, 8)):
        b[k] = f"changed {k}\n"
    ops = line_opcodes(a, b)
    assert _apply(ops, a, b) == b
    expected = [op for op in difflib.SequenceMatcher(None, a, b).get_opcodes()]
    assert ops == expected


@pytest.mark.parametrize("seed", range(6))
def test_moved_lines_are_not_paired(seed: int) -> None:
    """Same length, but a line deleted here and another inserted there: pairing would show
    every line between as changed; the diff shows one line out and one in."""
    rng = random.Random(seed)
    a = [f"line {i}\n" for i in range(400)]
    gone, added = sorted(rng.sample(range(50, 350), 2))
    b = a[:gone] + a[gone + 1 : added] + ["new\n"] + a[added:]
    ops = line_opcodes(a, b)
    assert _apply(ops, a, b) == b
    changed = sum(i2 - i1 + j2 - j1 for tag, i1, i2, j1, j2 in ops if tag != "equal")
    assert changed == 2
    diff = unified_diff("x.py", "".join(a), "".join(b))
    assert diff.removed == 1 and len(diff.added) == 1


# --- what the checks keep -----------------------------------------------------------------


def test_cached_syntax_answers_do_not_keep_the_texts() -> None:
    validation.forget()
    texts = [f"x_{k} = 1\n" + "y = 2\n" * 20_000 for k in range(40)]  # 40 texts of 120 KB
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for text in texts:
            assert validation.first_error("t.py", text) is None
            assert regions.region_ok("t.py", text, text + "z = 3\n") is False  # no layout
        texts.clear()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 1_000_000, kept  # the 4.8 MB of texts went with the list


def test_a_very_long_file_is_not_learnt(tmp_path: Path) -> None:
    """Its tree would hold the GIL and memory longer than the compile it saves."""
    small = _module(300)
    long = _module(regions.REGION_MAX_LEARN_LINES // 4 + 10)
    regions.forget()
    regions.learn("big.py", small)
    regions.learn("long.py", long)
    assert regions.known("big.py", small)
    assert not regions.known("long.py", long)


def test_deleting_a_class_s_last_method_does_not_compile_the_whole_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The region proves it (no layout is kept: where the class now ends is for ``learn``),
    and the runtime's later "does it compile?" takes that answer instead of compiling the
    file whole (a 6,425-line module: 43-54 ms each, the tail of edit_symbols delete)."""
    text = (
        _module(300)
        + "class Two:\n    def first(self):\n        return 0\n\n"
        + "    def handle(self):\n        return 1\n\n\n"
        + _module(10)
    )
    (tmp_path / "big.py").write_text(text.replace("f_", "g_", 10), encoding="utf-8")
    regions.forget()
    validation.forget()
    rt = Runtime(tmp_path)
    regions.learn("big.py", (tmp_path / "big.py").read_text(encoding="utf-8"))
    whole: list[int] = []
    real = validation._python

    def counted(text: str, path: str, flags: int = 0) -> validation.FirstError:
        whole.append(len(text))
        return real(text, path, flags)

    monkeypatch.setitem(validation.PARSERS, "python", counted)
    proposal = rt.propose(
        "edit_symbols", {"edits": [{"symbol": "big.py::Two.handle", "action": "delete"}]}
    )
    assert proposal.ok, proposal.error
    assert rt.commit(proposal).ok
    assert whole == []
    after = (tmp_path / "big.py").read_text(encoding="utf-8")
    assert "def handle" not in after and "return 0\n" in after and _compiles(after)
