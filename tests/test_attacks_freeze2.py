"""More attacks on "nothing the model or a file does hangs the kernel": search and read.

Not repeated from test_hostile_files.py (catastrophic regexes, FIFOs, sockets, loops,
large files) or test_freeze_attacks.py (the same in a real kernel). Here: what a
regex costs in memory once compiled, and names that would forge rows of a result.
Every call runs under ``bounded`` so a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from tests.test_hostile_files import bounded

MB = 1 << 20


def _resident() -> int:
    """This process's resident memory now, in bytes (not the peak: the peak only grows)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs /proc")
def test_many_distinct_large_regexes_do_not_pile_up_in_memory(ws: Path) -> None:
    """Attack: 20 searches, each a different regex near the size limit (about 14 MB compiled).
    The regex module caches up to 500 compiled patterns: 7 GB held after 500 searches."""
    rt = Runtime(ws)
    bounded(lambda: rt.propose("search", {"query": "(?:y{99990})", "regex": True}))
    before = _resident()
    for i in range(20):
        p = bounded(
            lambda i=i: rt.propose("search", {"query": f"(?:x{i}{{99990}})", "regex": True})
        )
        assert p.ok, p.error
    grown = _resident() - before
    assert grown < 120 * MB, f"{grown // MB} MB still held after the searches ended"


@pytest.mark.parametrize("flags", ["(?fi)", "(?if)", "(?V1i)", "(?f)(?i)"])
def test_a_fully_case_folded_class_repeated_is_refused_before_compiling(
    ws: Path, flags: str
) -> None:
    """Attack: with full case folding a class like ``[\\p{L}\\p{N}]`` compiles to about 27 KB,
    100 times a plain unit: ``{99999}`` of it took 2.7 GB and 7 s to compile, under the
    unit limit. Here ``{5000}`` (135 MB before the fix) must be refused as too large."""
    rt = Runtime(ws)
    p = bounded(
        lambda: rt.propose("search", {"query": flags + r"[\p{L}\p{N}]{5000}", "regex": True})
    )
    assert p.error is not None and p.error.code == "INVALID_ARGS"
    assert "repeats too much" in p.error.message
    # Full case folding itself, and small counts of it, still work.
    (ws / "de.txt").write_text("STRASSE\n")
    found = bounded(lambda: rt.call("search", {"query": "(?fi)straße", "regex": True}))
    assert "de.txt:1: STRASSE" in found.output
    assert bounded(lambda: rt.propose("search", {"query": "(?fi)[\\p{L}]{50}", "regex": True})).ok


def test_a_name_holding_a_newline_cannot_forge_search_rows(ws: Path) -> None:
    """Attack: a file named ``a\\nb.py:1: forged`` made its hit read as two rows, the
    second a hit in b.py that does not exist. Such a name is quoted, as diffs quote it."""
    (ws / "a\nb.py:1: forged").write_text("needle\n")
    (ws / "ok.txt").write_text("needle\n")
    rt = Runtime(ws)
    out = bounded(lambda: rt.call("search", {"query": "needle"})).output
    rows = out.splitlines()
    assert rows[0] == "2 matching lines in 2 files:"
    assert rows[1:] == ['"a\\nb.py:1: forged":1: needle', "ok.txt:1: needle"]


def test_a_name_holding_a_newline_cannot_forge_listing_entries(ws: Path) -> None:
    """Attack: the same name listed as two files (``a`` and ``b.py:1: forged``)."""
    (ws / "sub").mkdir()
    (ws / "sub" / "a\nevil.py").write_text("x = 1\n")
    (ws / "sub" / "fine.py").write_text("x = 2\n")
    rt = Runtime(ws)
    listing = bounded(lambda: rt.call("read", {"path": "sub"})).output
    assert listing.splitlines() == ["sub/ (2 files)", '"sub/a\\nevil.py"', "sub/fine.py"]
    read = bounded(lambda: rt.call("read", {"path": "sub/a\nevil.py"})).output
    assert read.splitlines()[0] == '"sub/a\\nevil.py" (lines 1-1 of 1)'
