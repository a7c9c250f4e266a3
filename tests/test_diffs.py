"""Unified diffs: always exact, bounded in time on repeated lines, read back by role."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from grinta_jupyter.runtime.diffs import (
    group_opcodes,
    line_opcodes,
    parse_unified,
    quote_path,
    split_keepends,
    unified_diff,
    unquote_path,
)

LINES = st.lists(st.sampled_from(["a\n", "b\n", "}\n", "x = 1\n", "\n", "c\r\n", "-- d\n"]))


def apply_opcodes(a: list[str], b: list[str], ops) -> list[str]:  # type: ignore[no-untyped-def]
    out: list[str] = []
    position = 0
    for tag, i1, i2, j1, j2 in ops:
        assert i1 == position, "opcodes must cover a in order"
        out.extend(a[i1:i2] if tag == "equal" else b[j1:j2])
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2]
        position = i2
    assert position == len(a)
    return out


def apply_diff(old: str, diff: str) -> str:
    """Apply a one-file unified diff to ``old`` by its rows (the way a reviewer reads it)."""
    lines = split_keepends(old)
    files = parse_unified(diff)
    if not files:
        return old
    out: list[str] = []
    position = 0
    for hunk in files[0].hunks:
        rows = [r for r in hunk.rows if r.role != "note"]
        first_old = next((r.old_line for r in rows if r.old_line is not None), None)
        if first_old is not None:
            out.extend(lines[position : first_old - 1])
            position = first_old - 1
        for row in rows:
            if row.role in ("context", "del"):
                original = lines[position]
                assert (
                    original.rstrip("\r\n") == row.text or original.removesuffix("\n") == row.text
                )
                if row.role == "context":
                    out.append(original)
                position += 1
            else:
                out.append(row.text + "\n")
    out.extend(lines[position:])
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(LINES, LINES, st.sampled_from([0, 4, 30, 250_000]))
def test_opcodes_always_turn_old_into_new(a, b, cells):
    assert apply_opcodes(a, b, line_opcodes(a, b, cells)) == b


@settings(max_examples=200, deadline=None)
@given(LINES, LINES)
def test_the_diff_read_back_by_role_rebuilds_the_new_text(a, b):
    old, new = "".join(a), "".join(b)
    if not new.endswith("\n") and new:  # the rebuild above writes every added line with "\n"
        new += "\n"
    rebuilt = apply_diff(old, unified_diff("f.txt", old, new).text)
    assert rebuilt.replace("\r\n", "\n") == new.replace("\r\n", "\n")


def test_replace_all_in_a_lock_file_diffs_in_bounded_time():
    block = '  "node_modules/pkg{n}": {{\n    "version": "1.0.0",\n    "dev": true\n  }},\n'
    old = "{\n" + "".join(block.format(n=n) for n in range(6_000)) + "}\n"
    new = old.replace('"version": "1.0.0"', '"version": "1.0.1"')
    started = time.monotonic()
    diff = unified_diff("package-lock.json", old, new)
    elapsed = time.monotonic() - started
    assert elapsed < 10, elapsed  # difflib alone: minutes
    assert len(diff.added) == 6_000 and diff.removed == 6_000
    assert apply_diff(old, diff.text) == new


def test_changes_that_shift_lines_in_a_huge_file_stay_exact_and_bounded():
    old = "".join(f"line {n % 7}\n" for n in range(40_000))
    new = old.replace("line 3\n", "line 3\nline 3b\n")
    started = time.monotonic()
    diff = unified_diff("big.txt", old, new)
    assert time.monotonic() - started < 10
    assert apply_diff(old, diff.text) == new


def test_grouping_keeps_context_around_each_change():
    a = [f"{n}\n" for n in range(20)]
    b = list(a)
    b[2], b[15] = "two\n", "fifteen\n"
    groups = group_opcodes(line_opcodes(a, b), 3)
    assert len(groups) == 2
    assert groups[0][0][1] == 0 and groups[1][-1][2] == 19


def test_quoted_paths_round_trip():
    for path in [
        "a/plain.py",
        'a/"q".py',
        "a/new\nline.py",
        "a/back\\slash",
        "a/tab\t",
        "a/\u202eevil",
    ]:
        quoted = quote_path(path)
        assert "\n" not in quoted and "\u202e" not in quoted
        assert unquote_path(quoted) == path
