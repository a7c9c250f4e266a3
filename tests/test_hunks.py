"""Per-hunk approval, runtime side: ``hunks(p)`` and ``rt.select_hunks(p, accepted)``.

The expected bytes are computed independently of the runtime's own code: a
small patch applier below reads each hunk's rows (the text the reviewer sees)
and applies the accepted ones to the original text, checking that every
removed and context row matches the file.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grinta_jupyter import Runtime
from grinta_jupyter.runtime.diffs import HunkSpan, split_keepends, unified_diff
from grinta_jupyter.runtime.hunks import Hunk, apply_hunks, hunks
from grinta_jupyter.runtime.proposal import WriteProposal
from grinta_jupyter.tools.base import Settings

_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$")


def patch(original: str, chosen: list[Hunk] | list[HunkSpan], newline: str = "\n") -> str:
    """Apply hunks (all of one file) to ``original`` from their header and rows alone."""
    lines = original.splitlines(keepends=True)
    parsed = []
    for hunk in chosen:
        match = _HEADER.match(hunk.header)
        assert match, hunk.header
        start, count = int(match[1]), 1 if match[2] is None else int(match[2])
        parsed.append((start - 1 if count else start, count, hunk.lines))
    for first, count, rows in sorted(parsed, reverse=True):  # bottom up: offsets stay valid
        old, new = [], []
        for i, row in enumerate(rows):
            if row.startswith("\\"):
                continue
            last = i + 1 < len(rows) and rows[i + 1].startswith("\\")
            text = row[1:] + ("" if last else newline)
            if row[0] in " -":
                old.append(text)
            if row[0] in " +":
                new.append(text)
        assert lines[first : first + count] == old, (first, rows)
        lines[first : first + count] = new
    return "".join(lines)


def numbered(count: int, prefix: str = "line") -> list[str]:
    return [f"{prefix}_{i} = {i}" for i in range(count)]


@pytest.fixture
def rt(ws: Path) -> Runtime:
    a = numbered(30)
    (ws / "a.py").write_text("\n".join(a) + "\n")
    (ws / "b.py").write_text("\n".join(numbered(5, "b")) + "\n")
    return Runtime(ws)


def three_hunks(rt: Runtime) -> WriteProposal:
    """Two hunks in a.py (lines 2 and 25), one in b.py."""
    p = rt.propose(
        "multiedit",
        {
            "edits": [
                {"path": "a.py", "old_string": "line_1 = 1\n", "new_string": "line_1 = 100\n"},
                {
                    "path": "a.py",
                    "old_string": "line_24 = 24\n",
                    "new_string": "inserted = 0\nline_24 = 24\n",
                },
                {"path": "b.py", "old_string": "b_2 = 2\n", "new_string": ""},
            ]
        },
    )
    assert isinstance(p, WriteProposal) and p.ok, p.error
    return p


# -- listing ----------------------------------------------------------------------------


def test_hunks_are_numbered_across_files_in_diff_order(rt):
    p = three_hunks(rt)
    listed = hunks(p)
    assert [(h.index, h.path) for h in listed] == [(0, "a.py"), (1, "a.py"), (2, "b.py")]
    assert [h.header for h in listed] == re.findall(r"^@@ .* @@$", p.diff, re.MULTILINE)
    assert listed[0].header == "@@ -1,5 +1,5 @@"
    assert "-line_1 = 1" in listed[0].lines and "+line_1 = 100" in listed[0].lines
    assert listed[2].lines == (" b_0 = 0", " b_1 = 1", "-b_2 = 2", " b_3 = 3", " b_4 = 4")
    body = "".join(h.diff for h in listed)  # the diff is its file headers plus these hunks
    assert re.sub(r"^(---|\+\+\+) .*\n", "", p.diff, flags=re.MULTILINE) == body


def test_non_write_proposals_have_no_hunks(rt):
    assert hunks(rt.propose("read", {"path": "a.py"})) == []
    assert hunks(rt.propose("run", {"command": "true"})) == []


# -- selecting ----------------------------------------------------------------------------


def test_a_subset_gives_exactly_the_patched_bytes_and_commits_them(rt, ws):
    p = three_hunks(rt)
    listed = hunks(p)
    before_a = (ws / "a.py").read_text()
    before_b = (ws / "b.py").read_text()
    chosen = rt.select_hunks(p, [2, 0])  # order does not matter
    assert isinstance(chosen, WriteProposal) and chosen.ok, chosen.error
    assert chosen.id != p.id and chosen.selected_from == p.id
    assert [h.index for h in chosen.declined] == [1] and chosen.declined[0].path == "a.py"
    assert chosen.tool == "multiedit" and chosen.args == p.args
    assert chosen.summary.endswith("(2 of 3 hunks accepted by the reviewer)")
    expected_a = patch(before_a, [listed[0]])
    expected_b = patch(before_b, [listed[2]])
    assert [c.new_bytes for c in chosen.changes] == [expected_a.encode(), expected_b.encode()]
    assert [h.header for h in hunks(chosen)] == [listed[0].header, listed[2].header]
    obs = rt.commit(chosen)
    assert obs.ok, obs.error
    assert (ws / "a.py").read_text() == expected_a and "inserted" not in expected_a
    assert (ws / "b.py").read_text() == expected_b
    assert rt.undo().ok  # one commit, restored byte for byte
    assert (ws / "a.py").read_text() == before_a and (ws / "b.py").read_text() == before_b


def test_a_file_without_an_accepted_hunk_is_not_touched(rt, ws):
    p = three_hunks(rt)
    chosen = rt.select_hunks(p, [1])
    assert chosen.ok and chosen.paths == ["a.py"]
    (ws / "b.py").write_text("the user rewrote b.py meanwhile\n")  # not ours to check any more
    assert rt.commit(chosen).ok
    assert (ws / "b.py").read_text() == "the user rewrote b.py meanwhile\n"


def test_accepting_every_hunk_is_the_original_proposal(rt):
    p = three_hunks(rt)
    chosen = rt.select_hunks(p, range(3))
    assert chosen.ok and chosen.declined == ()
    assert chosen.diff == p.diff
    assert [(c.path, c.old_bytes, c.new_bytes, c.base_sha256) for c in chosen.changes] == [
        (c.path, c.old_bytes, c.new_bytes, c.base_sha256) for c in p.changes
    ]


def test_crlf_bom_and_a_missing_final_newline_are_kept(ws):
    text = "\r\n".join(numbered(20)) + "\r\nlast = 0"  # no final newline
    raw = b"\xef\xbb\xbf" + text.encode()
    (ws / "c.py").write_bytes(raw)
    rt = Runtime(ws)
    p = rt.propose(
        "multiedit",
        {
            "edits": [
                {"path": "c.py", "old_string": "line_2 = 2\n", "new_string": "line_2 = 'two'\n"},
                {"path": "c.py", "old_string": "last = 0", "new_string": "last = 1\nextra = 2"},
            ]
        },
    )
    assert p.ok and len(hunks(p)) == 2, p.error
    listed = hunks(p)
    assert listed[1].lines[-5:] == (
        "-last = 0",
        "\\ No newline at end of file",
        "+last = 1",
        "+extra = 2",
        "\\ No newline at end of file",
    )
    for accepted in ([0], [1], [0, 1]):
        chosen = rt.select_hunks(p, accepted)
        assert chosen.ok, chosen.error
        expected = patch(text, [listed[k] for k in accepted], newline="\r\n")
        assert chosen.changes[0].new_bytes == b"\xef\xbb\xbf" + expected.encode()
    only_first = rt.select_hunks(p, [0]).changes[0].new_bytes
    assert only_first.endswith(b"\r\nlast = 0") and b"\r\n" in only_first
    assert b"line_2 = 'two'\r\n" in only_first and only_first.count(b"\n") == only_first.count(
        b"\r\n"
    )
    assert rt.commit(rt.select_hunks(p, [1])).ok
    on_disk = (ws / "c.py").read_bytes()
    assert on_disk.startswith(b"\xef\xbb\xbf") and on_disk.endswith(b"\r\nlast = 1\r\nextra = 2")
    assert b"line_2 = 2\r\n" in on_disk


def test_the_closest_hunks_are_separate_and_each_applies_alone(ws):
    lines = numbered(20)
    (ws / "d.py").write_text("\n".join(lines) + "\n")
    rt = Runtime(ws)
    # Changes at lines 3 and 11, seven equal lines between: as close as two hunks come (their
    # context lines leave one line out); one line closer and they merge into one hunk.
    p = rt.propose(
        "multiedit",
        {
            "edits": [
                {"path": "d.py", "old_string": "line_2 = 2\n", "new_string": "line_2 = -2\n"},
                {"path": "d.py", "old_string": "line_10 = 10\n", "new_string": "line_10 = -10\n"},
            ]
        },
    )
    spans = unified_diff("d.py", p.changes[0].before, p.changes[0].after).hunks
    assert len(spans) == 2 and spans[0].old_end + 1 == spans[1].old_start
    before = p.changes[0].before
    for accepted in ([0], [1]):
        chosen = rt.select_hunks(p, accepted)
        expected = patch(before, [hunks(p)[accepted[0]]])
        assert chosen.changes[0].after == expected
    merged = rt.propose(
        "multiedit",
        {
            "edits": [
                {"path": "d.py", "old_string": "line_2 = 2\n", "new_string": "line_2 = -2\n"},
                {"path": "d.py", "old_string": "line_9 = 9\n", "new_string": "line_9 = -9\n"},
            ]
        },
    )
    assert len(hunks(merged)) == 1


def test_a_new_file_is_one_hunk(ws):
    rt = Runtime(ws)
    p = rt.propose("create", {"path": "new.py", "content": "a = 1\n\n\n\n\n\n\n\n\nb = 2\n"})
    assert [h.header for h in hunks(p)] == ["@@ -0,0 +1,10 @@"]
    chosen = rt.select_hunks(p, [0])
    assert chosen.ok and chosen.changes[0].new_bytes == p.changes[0].new_bytes
    assert chosen.changes[0].old_bytes is None
    empty = rt.propose("create", {"path": "empty.txt", "content": ""})
    assert [(h.header, h.lines) for h in hunks(empty)] == [("@@ -0,0 +0,0 @@", ())]
    assert rt.commit(rt.select_hunks(empty, [0])).ok and (ws / "empty.txt").read_bytes() == b""


# -- stale files ----------------------------------------------------------------------------


def test_a_file_changed_since_the_original_staging_is_refused_at_commit(rt, ws):
    p = three_hunks(rt)
    (ws / "a.py").write_text((ws / "a.py").read_text() + "# the user typed this\n")
    chosen = rt.select_hunks(p, [0, 2])
    assert chosen.ok  # staged from the original base bytes, not from the disk
    assert chosen.changes[0].old_bytes == p.changes[0].old_bytes
    assert chosen.changes[0].base_sha256 == p.changes[0].base_sha256
    obs = rt.commit(chosen)
    assert obs.error.code == "STALE_FILE" and "a.py" in obs.error.message
    assert (ws / "b.py").read_text() == "\n".join(numbered(5, "b")) + "\n"  # all or nothing
    assert (ws / "a.py").read_text().endswith("# the user typed this\n")


def test_a_file_changed_after_selecting_is_refused_too(rt, ws):
    p = three_hunks(rt)
    chosen = rt.select_hunks(p, [2])
    (ws / "b.py").write_text("changed\n")
    assert rt.commit(chosen).error.code == "STALE_FILE"


# -- re-validation ----------------------------------------------------------------------------


def test_half_an_edit_can_break_the_syntax_and_is_refused(ws):
    comments = [f"# note {i}" for i in range(8)]
    (ws / "e.py").write_text("\n".join(["x = 1", *comments, "y = 2"]) + "\n")
    rt = Runtime(ws)
    p = rt.propose(
        "multiedit",
        {
            "edits": [
                {"path": "e.py", "old_string": "x = 1\n", "new_string": "x = (1,\n"},
                {"path": "e.py", "old_string": "y = 2\n", "new_string": "     2)\n"},
            ]
        },
    )
    assert p.ok and len(hunks(p)) == 2, p.error
    for accepted in ([0], [1]):
        chosen = rt.select_hunks(p, accepted)
        assert isinstance(chosen, WriteProposal) and chosen.error.code == "SYNTAX_ERROR"
        assert "e.py" in chosen.error.message and chosen.paths == ["e.py"]
        assert rt.commit(chosen).error.code == "SYNTAX_ERROR"
    assert rt.select_hunks(p, [0, 1]).ok
    assert (ws / "e.py").read_text().startswith("x = 1\n")  # nothing was written


def test_protected_paths_are_checked_again(ws):
    p = three_hunks_in(ws)
    guarded = Runtime(ws, settings=Settings(protected=("b.py",)))
    chosen = guarded.select_hunks(p, [0, 2])
    assert chosen.error.code == "PATH_FORBIDDEN" and not chosen.changes
    assert guarded.select_hunks(p, [0]).ok  # a.py alone is allowed


def three_hunks_in(ws: Path) -> WriteProposal:
    (ws / "a.py").write_text("\n".join(numbered(30)) + "\n")
    (ws / "b.py").write_text("\n".join(numbered(5, "b")) + "\n")
    return three_hunks(Runtime(ws))


# -- what cannot be selected ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("accepted", "words"),
    [
        ([3], "hunk 3 does not exist; valid hunks: 0..2"),
        ([-1], "hunk -1 does not exist; valid hunks: 0..2"),
        ([0, 0], "hunk 0 is listed twice; valid hunks: 0..2"),
        ([True], "True is not a hunk number"),
        (["1"], "'1' is not a hunk number"),
        ([], "approving none is a veto"),
    ],
)
def test_bad_indexes_are_invalid_args(rt, accepted, words):
    p = three_hunks(rt)
    chosen = rt.select_hunks(p, accepted)
    assert isinstance(chosen, WriteProposal) and chosen.error.code == "INVALID_ARGS"
    assert words in chosen.error.message
    assert not chosen.changes and rt.commit(chosen).error.code == "INVALID_ARGS"


def test_only_a_valid_uncommitted_write_has_hunks_to_select(rt):
    read = rt.propose("read", {"path": "a.py"})
    assert rt.select_hunks(read, [0]).error.code == "INVALID_ARGS"
    assert (
        "only a write proposal has hunks; this is a read"
        in rt.select_hunks(read, [0]).error.message
    )
    refused = rt.propose("replace_string", {"path": "a.py", "old_string": "zz", "new_string": "y"})
    assert "a refused proposal cannot be approved" in rt.select_hunks(refused, [0]).error.message
    p = three_hunks(rt)
    assert rt.commit(p).ok
    assert rt.select_hunks(p, [0]).error.code == "ALREADY_COMMITTED"


# -- properties ------------------------------------------------------------------------------

WORDS = ["a", "b", "c", "def f():", "    return 1", "", "x = 1"]
texts = st.tuples(st.lists(st.sampled_from(WORDS), max_size=30), st.booleans()).map(
    lambda parts: "\n".join(parts[0]) + ("\n" if parts[1] and parts[0] else "")
)


@settings(max_examples=400, deadline=None)
@given(before=texts, after=texts, data=st.data())
def test_any_choice_keeps_declined_old_lines_and_accepted_new_lines(before, after, data):
    spans = unified_diff("f.txt", before, after).hunks
    accepted = data.draw(
        st.sets(st.integers(0, max(len(spans) - 1, 0))) if spans else st.just(set())
    )
    result = apply_hunks(before, after, spans, accepted)
    assert result == patch(before, [spans[k] for k in accepted])
    assert apply_hunks(before, after, spans, range(len(spans))) == after
    assert apply_hunks(before, after, spans, ()) == before
    # Where each hunk lands in the result: its new lines if accepted, else its old lines.
    old, new, out = split_keepends(before), split_keepends(after), split_keepends(result)
    shift = 0
    for k, span in enumerate(spans):
        want = (
            new[span.new_start : span.new_end]
            if k in accepted
            else old[span.old_start : span.old_end]
        )
        at = span.old_start + shift
        assert out[at : at + len(want)] == want
        shift += len(want) - (span.old_end - span.old_start)
    assert len(out) == len(old) + shift


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=texts, after=texts, crlf=st.booleans(), data=st.data())
def test_the_runtime_commits_exactly_the_chosen_hunks(before, after, crlf, data):
    if not before or before == after:
        return  # replace_string needs text to replace, and a change
    newline = "\r\n" if crlf and "\n" in before else "\n"  # a file with no line end is LF
    root = Path(tempfile.mkdtemp())
    try:
        disk = before.replace("\n", newline)
        (root / "f.txt").write_bytes(disk.encode())
        rt = Runtime(root)
        p = rt.propose(
            "replace_string", {"path": "f.txt", "old_string": before, "new_string": after}
        )
        assert p.ok, p.error
        listed = hunks(p)
        accepted = data.draw(st.sets(st.integers(0, len(listed) - 1), min_size=1))
        chosen = rt.select_hunks(p, accepted)
        assert chosen.ok, chosen.error
        expected = patch(disk, [listed[k] for k in accepted], newline)
        assert rt.commit(chosen).ok
        assert (root / "f.txt").read_bytes() == expected.encode()
        if len(accepted) == len(listed):
            assert expected.encode() == p.changes[0].new_bytes
    finally:
        shutil.rmtree(root)
