"""apply_patch, replace_lines and insert_at_line (the broad toolset) apply exactly what they
say, number lines as ``read`` does, and refuse a patch they cannot apply whole."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from tests.conftest import snapshot


@pytest.fixture
def rt(tmp_path: Path) -> Runtime:
    return Runtime(tmp_path, toolset="broad")


def patch(path: str, *hunks: str) -> str:
    return f"--- a/{path}\n+++ b/{path}\n" + "".join(hunks)


def applied(rt: Runtime, text: str) -> None:
    obs = rt.call("apply_patch", {"patch": text})
    assert obs.ok, obs.error


def refused(rt: Runtime, root: Path, text: str, code: str) -> str:
    before = snapshot(root)
    obs = rt.call("apply_patch", {"patch": text})
    assert obs.error is not None and obs.error.code == code, obs.error
    assert snapshot(root) == before
    return obs.error.message


@pytest.mark.parametrize("odd", ["\u2028", "\x0c", "\x0b", "\x85", "\r"])
def test_a_line_break_python_splits_at_stays_inside_a_context_line(
    rt: Runtime, tmp_path: Path, odd: str
) -> None:
    """Attack: a context line holding U+2028 (or a form feed...) was two lines to the tool,
    and the first half got a newline: the file was changed where the patch kept it."""
    (tmp_path / "m.txt").write_bytes(f"x = a{odd}b\ny = 1\nz = 2\n".encode())
    applied(rt, patch("m.txt", "@@ -1,3 +1,3 @@\n", f" x = a{odd}b\n", "-y = 1\n+y = 3\n z = 2\n"))
    assert (tmp_path / "m.txt").read_bytes() == f"x = a{odd}b\ny = 3\nz = 2\n".encode()


def test_a_blank_context_line_does_not_end_the_hunk(rt: Runtime, tmp_path: Path) -> None:
    """Attack: a model leaves an empty context line without its space. The hunk ended there:
    the first change was applied and reported done, the second silently dropped."""
    (tmp_path / "t.txt").write_text("a\nb\n\nc\nd\n")
    applied(rt, patch("t.txt", "@@ -1,5 +1,5 @@\n-a\n+A\n b\n\n c\n-d\n+D\n"))
    assert (tmp_path / "t.txt").read_text() == "A\nb\n\nc\nD\n"


def test_blank_lines_past_the_counts_are_not_part_of_the_hunk(rt: Runtime, tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text("a\nb\n")
    applied(rt, patch("t.txt", "@@ -1,2 +1,2 @@\n-a\n+A\n b\n\n\n"))
    assert (tmp_path / "t.txt").read_text() == "A\nb\n"


def test_a_stray_line_inside_a_hunk_refuses_the_whole_patch(rt: Runtime, tmp_path: Path) -> None:
    """Attack: a context line that lost its leading space, with more of the hunk after it.
    Nothing is applied, and the message names the line."""
    (tmp_path / "t.txt").write_text("a\nb\nc\nd\n")
    message = refused(
        rt, tmp_path, patch("t.txt", "@@ -1,4 +1,4 @@\n-a\n+A\nb\n c\n-d\n+D\n"), "INVALID_ARGS"
    )
    assert "line 6 of the patch" in message and "'b'" in message


def test_a_stray_line_before_a_second_hunk_refuses_the_patch(rt: Runtime, tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text("".join(f"l{i}\n" for i in range(20)))
    text = patch("t.txt", "@@ -2 +2 @@\n-l1\n+L1\n", "and then\n", "@@ -15 +15 @@\n-l14\n+L14\n")
    refused(rt, tmp_path, text, "INVALID_ARGS")


def test_prose_or_a_fence_after_the_last_hunk_is_ignored(rt: Runtime, tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text("a\nb\n")
    applied(rt, "```diff\n" + patch("t.txt", "@@ -1,2 +1,2 @@\n-a\n+A\n b\n") + "```\nDone.\n")
    assert (tmp_path / "t.txt").read_text() == "A\nb\n"


def test_a_removed_sql_comment_and_an_added_one_are_lines_not_a_header(
    rt: Runtime, tmp_path: Path
) -> None:
    (tmp_path / "q.txt").write_text("select 1;\n-- old note\nselect 2;\n")
    text = patch("q.txt", "@@ -1,3 +1,3 @@\n select 1;\n--- old note\n+++ new note\n select 2;\n")
    applied(rt, text)
    assert (tmp_path / "q.txt").read_text() == "select 1;\n++ new note\nselect 2;\n"


def test_a_hunk_whose_context_repeats_away_from_its_header_is_ambiguous(
    rt: Runtime, tmp_path: Path
) -> None:
    (tmp_path / "t.txt").write_text("x\ny\nq\nx\ny\n")
    message = refused(
        rt, tmp_path, patch("t.txt", "@@ -3,2 +3,2 @@\n x\n-y\n+Y\n"), "AMBIGUOUS_MATCH"
    )
    assert "lines 1 and 4" in message
    applied(rt, patch("t.txt", "@@ -4,2 +4,2 @@\n x\n-y\n+Y\n"))  # where the header says
    assert (tmp_path / "t.txt").read_text() == "x\ny\nq\nx\nY\n"


def test_a_hunk_is_placed_at_its_one_match_when_its_header_is_off(
    rt: Runtime, tmp_path: Path
) -> None:
    (tmp_path / "t.txt").write_text("".join(f"l{i}\n" for i in range(30)))
    applied(rt, patch("t.txt", "@@ -3,2 +3,2 @@\n l20\n-l21\n+L21\n"))
    assert "l20\nL21\nl22\n" in (tmp_path / "t.txt").read_text()


def test_hunks_apply_in_order_and_never_overlap(rt: Runtime, tmp_path: Path) -> None:
    """A second hunk that could only match before the first one's lines is refused, not
    applied where the first one already changed the file."""
    (tmp_path / "t.txt").write_text("a\nb\nc\nd\n")
    text = patch("t.txt", "@@ -3,2 +3,2 @@\n c\n-d\n+D\n", "@@ -1,2 +1,2 @@\n-a\n+A\n b\n")
    refused(rt, tmp_path, text, "NOT_FOUND")


def test_renames_and_a_file_named_twice_are_refused(rt: Runtime, tmp_path: Path) -> None:
    """Attack: '--- a/x.py' '+++ b/y.py' edited x.py in place, a rename the diff did not make."""
    (tmp_path / "x.txt").write_text("a\n")
    text = "--- a/x.txt\n+++ b/y.txt\n@@ -1 +1 @@\n-a\n+b\n"
    assert "renaming" in refused(rt, tmp_path, text, "INVALID_ARGS")
    twice = patch("x.txt", "@@ -1 +1 @@\n-a\n+b\n") + patch("x.txt", "@@ -1 +1 @@\n-b\n+c\n")
    assert "twice" in refused(rt, tmp_path, twice, "INVALID_ARGS")


def test_a_crlf_file_keeps_crlf_and_its_context_lines_as_they_are(
    rt: Runtime, tmp_path: Path
) -> None:
    (tmp_path / "w.txt").write_bytes(b"a\r\nb\r\nc\r\n")
    applied(rt, patch("w.txt", "@@ -1,3 +1,4 @@\n a\n-b\n+B\n+B2\n c\n"))
    assert (tmp_path / "w.txt").read_bytes() == b"a\r\nB\r\nB2\r\nc\r\n"


def test_a_file_without_a_final_newline_keeps_none_unless_the_patch_says(
    rt: Runtime, tmp_path: Path
) -> None:
    target = tmp_path / "n.txt"
    target.write_text("a\nb")
    applied(rt, patch("n.txt", "@@ -1,2 +1,2 @@\n a\n-b\n+c\n"))  # the marker left out
    assert target.read_text() == "a\nc"
    applied(rt, patch("n.txt", "@@ -1,2 +1,3 @@\n a\n c\n+d\n"))  # appended after it
    assert target.read_text() == "a\nc\nd"
    marked = "@@ -2,2 +2,2 @@\n c\n-d\n\\ No newline at end of file\n+e\n"
    applied(rt, patch("n.txt", marked))  # git's way of adding the final newline
    assert target.read_text() == "a\nc\ne\n"
    applied(rt, patch("n.txt", "@@ -3 +3 @@\n-e\n+f\n\\ No newline at end of file\n"))
    assert target.read_text() == "a\nc\nf"


def test_lines_added_after_a_last_line_without_newline_start_on_their_own_line(
    rt: Runtime, tmp_path: Path
) -> None:
    target = tmp_path / "n.txt"
    target.write_text("a\nb")
    applied(rt, patch("n.txt", "@@ -2,0 +3,1 @@\n+c\n"))
    assert target.read_text() == "a\nb\nc"


def test_a_pure_insertion_goes_after_the_line_its_header_names(rt: Runtime, tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text("a\nb\nc\n")
    applied(rt, patch("t.txt", "@@ -1,0 +2,1 @@\n+new\n"))
    assert (tmp_path / "t.txt").read_text() == "a\nnew\nb\nc\n"
    applied(rt, patch("t.txt", "@@ -0,0 +1 @@\n+top\n"))
    assert (tmp_path / "t.txt").read_text() == "top\na\nnew\nb\nc\n"
    refused(rt, tmp_path, patch("t.txt", "@@ -2 +2,2 @@\n+where?\n"), "INVALID_ARGS")


def test_a_new_file_is_exactly_its_added_lines(rt: Runtime, tmp_path: Path) -> None:
    applied(rt, "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two")
    assert (tmp_path / "new.txt").read_text() == "one\ntwo\n"
    applied(rt, "--- /dev/null\n+++ b/open.txt\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n")
    assert (tmp_path / "open.txt").read_text() == "x"
    text = "--- /dev/null\n+++ b/mixed.txt\n@@ -0,0 +1,2 @@\n+one\n two\n"
    refused(rt, tmp_path, text, "INVALID_ARGS")


def test_a_long_file_of_equal_lines_is_patched_where_the_header_says(
    rt: Runtime, tmp_path: Path
) -> None:
    (tmp_path / "e.txt").write_text("x\n" * 50_000)
    applied(rt, patch("e.txt", "@@ -30000,3 +30000,3 @@\n x\n-x\n+y\n x\n"))
    lines = (tmp_path / "e.txt").read_text().split("\n")
    assert lines.index("y") == 30_000 and lines.count("y") == 1
    refused(
        rt, tmp_path, patch("e.txt", "@@ -60000,2 +60000,2 @@\n x\n-x\n+z\n"), "AMBIGUOUS_MATCH"
    )


# -- replace_lines and insert_at_line ----------------------------------------------------------


def test_line_numbers_are_the_ones_read_shows(rt: Runtime, tmp_path: Path) -> None:
    """Attack: a form feed inside line 2 (an old file's page break). ``read`` shows three
    lines; replace_lines counted four and replaced the wrong one."""
    (tmp_path / "p.txt").write_text("one\ntwo\x0cpage\nthree\n")
    shown = rt.call("read", {"path": "p.txt"}).output
    assert "3\tthree" in shown
    assert rt.call(
        "replace_lines", {"path": "p.txt", "start_line": 3, "end_line": 3, "new_text": "THREE"}
    ).ok
    assert (tmp_path / "p.txt").read_text() == "one\ntwo\x0cpage\nTHREE\n"
    assert rt.call("insert_at_line", {"path": "p.txt", "line": 3, "text": "2.5"}).ok
    assert (tmp_path / "p.txt").read_text() == "one\ntwo\x0cpage\n2.5\nTHREE\n"
    before = snapshot(tmp_path)
    past = rt.call(
        "replace_lines", {"path": "p.txt", "start_line": 5, "end_line": 5, "new_text": "x"}
    )
    assert past.error is not None and past.error.code == "INVALID_ARGS"
    assert snapshot(tmp_path) == before


def test_line_edits_keep_a_missing_final_newline_and_crlf(rt: Runtime, tmp_path: Path) -> None:
    (tmp_path / "n.txt").write_text("a\nb")
    assert rt.call(
        "replace_lines", {"path": "n.txt", "start_line": 2, "end_line": 2, "new_text": "c\n"}
    ).ok
    assert (tmp_path / "n.txt").read_text() == "a\nc"
    assert rt.call("insert_at_line", {"path": "n.txt", "line": 3, "text": "d"}).ok
    assert (tmp_path / "n.txt").read_text() == "a\nc\nd"
    (tmp_path / "w.txt").write_bytes(b"a\r\nb\r\n")
    assert rt.call(
        "replace_lines", {"path": "w.txt", "start_line": 1, "end_line": 1, "new_text": "x\ny"}
    ).ok
    assert (tmp_path / "w.txt").read_bytes() == b"x\r\ny\r\nb\r\n"


def test_one_file_under_two_spellings_is_named_twice(rt: Runtime, tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_text("a\n")
    text = (
        "--- x.txt\n+++ x.txt\n@@ -1 +1 @@\n-a\n+b\n--- ./x.txt\n+++ ./x.txt\n@@ -1 +1 @@\n-b\n+c\n"
    )
    assert "twice" in refused(rt, tmp_path, text, "INVALID_ARGS")


LINES = ["a", "b", "", "x = 1", "\x0c", "d\u2028e", "  ", "-- q", "++ r", "@@ x", "\\ z"]
LINES += ["--- a/f.txt", "+++ b/f.txt"]


@pytest.mark.parametrize("seed", range(4))
def test_what_git_diff_says_is_what_apply_patch_does(tmp_path: Path, seed: int) -> None:
    """git's own diffs of random edits (CRLF files, files without a final newline and its
    marker, lines that look like headers or hunks, -U0 to -U3) apply to exactly git's new
    side, or are refused as ambiguous, never applied otherwise."""
    rng = random.Random(seed)
    for case in range(40):
        nl = rng.choice(["\n", "\r\n"])
        old = [rng.choice(LINES) for _ in range(rng.randint(2, 12))]
        new = list(old)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(new))
            choice = rng.random()
            if choice < 0.4:
                new[at] = rng.choice(LINES) + "!"
            elif choice < 0.7:
                new.insert(at, rng.choice(LINES) + "+")
            elif len(new) > 1:
                del new[at]
        before = nl.join(old) + (nl if rng.random() < 0.7 else "")
        after = nl.join(new) + (nl if rng.random() < 0.7 else "")
        if before == after:
            continue
        sides = tmp_path / f"sides{case}"
        sides.mkdir()
        (sides / "a").write_bytes(before.encode())
        (sides / "b").write_bytes(after.encode())
        context = f"-U{rng.choice([0, 1, 3])}"
        diff = subprocess.run(
            ["git", "diff", "--no-index", "--text", context, "a", "b"],
            cwd=sides,
            capture_output=True,
            check=False,
        ).stdout.decode()
        text = "--- a/f.txt\n+++ b/f.txt\n" + diff[diff.index("\n@@") + 1 :]
        ws = tmp_path / f"ws{case}"
        ws.mkdir()
        (ws / "f.txt").write_bytes(before.encode())
        obs = Runtime(ws, toolset="broad").call("apply_patch", {"patch": text})
        if obs.ok:
            assert (ws / "f.txt").read_bytes() == after.encode(), (before, after, text)
        else:
            assert obs.error is not None and obs.error.code == "AMBIGUOUS_MATCH", obs.error
            assert (ws / "f.txt").read_bytes() == before.encode()
