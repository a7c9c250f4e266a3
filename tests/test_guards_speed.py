"""The placeholder guard's first pass over a large new text (``guards._hinted``).

A ``create`` of a 1,500-line module has hundreds of comment lines, and each was searched
for a hint word with a regex of 37 branches (9 ms of the guard's 9.2 ms at 1,501 lines).
Now one ``str.find`` per word over all of them keeps the lines that hold one; the
per-line checks then run on those only. The pass must keep every line the per-line hint
test accepts (or the guard would let a placeholder through), in any case and spelling.
"""

from __future__ import annotations

import random
import sysconfig
from pathlib import Path

import pytest

from grinta_jupyter.runtime import guards
from grinta_jupyter.runtime.errors import PLACEHOLDER

STDLIB = Path(sysconfig.get_paths()["stdlib"])
MODULES = ["dataclasses.py", "tarfile.py", "argparse.py", "typing.py", "inspect.py"]


def _numbered(text: str) -> list[tuple[int, str]]:
    return [(k + 1, line) for k, line in enumerate(text.split("\n"))]


@pytest.mark.parametrize("module", MODULES)
def test_the_first_pass_keeps_every_line_with_a_hint(module: str) -> None:
    lines = _numbered((STDLIB / module).read_text(encoding="utf-8"))
    kept = set(guards._hinted(lines))
    wanted = {pair for pair in lines if guards._has_hint(pair[1])}
    assert wanted and wanted <= kept
    assert len(kept) < len(lines) // 2  # and it does filter


@pytest.mark.parametrize("seed", range(5))
def test_hints_in_any_case_and_place_are_kept(seed: int) -> None:
    rng = random.Random(seed)
    words = [*guards._HINT_WORDS, *guards._HINT_PHRASES]
    lines: list[tuple[int, str]] = []
    for k in range(400):
        if rng.random() < 0.3:
            word = rng.choice(words)
            word = rng.choice([word, word.upper(), word.title(), word.swapcase()])
            filler = rng.choice(["", "x", "abc ", "# ", "    // ", "(", "wh"])
            line = f"{filler}{word}{rng.choice(['', ' ', 'ed', ')', '...'])}"
        else:
            line = rng.choice(["x = 1", "    return y", "# plain words here", "", "def f():"])
        lines.append((k + 1, line))
    kept = set(guards._hinted(lines))
    assert {pair for pair in lines if guards._has_hint(pair[1])} <= kept


def test_non_ascii_text_is_not_filtered() -> None:
    """Lowering non-ASCII text can change its length (``"İ".lower()`` is two characters):
    offsets would point at the wrong lines, so such text keeps all its lines."""
    lines = [(k + 1, "# İİİİ" if k == 0 else f"# line {k}") for k in range(100)]
    lines[70] = (71, "# … the rest")
    assert list(guards._hinted(lines)) == lines


@pytest.mark.parametrize(
    "placeholder",
    ["    # ... rest of the code ...", "# REST OF FILE UNCHANGED", "    # (Existing Code)"],
)
def test_a_placeholder_deep_in_a_large_new_file_is_refused(placeholder: str) -> None:
    text = (STDLIB / "dataclasses.py").read_text(encoding="utf-8").split("\n")
    # Between the blank lines above a function past line 600: not in a block of comments
    # (where it would be prose) nor in a string.
    at = next(k for k in range(600, len(text)) if text[k].startswith("def ") and not text[k - 1])
    text.insert(at - 1, placeholder)
    at -= 1
    added = _numbered("\n".join(text))
    error = guards.check_placeholder(added, "", "new.py", "\n".join(text))
    assert error is not None and error.code == PLACEHOLDER and error.line == at + 1
