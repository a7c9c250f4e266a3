"""Attacks on "what the reviewer sees is exactly what will happen".

Each test compares what a reviewer is shown (the diff a card and the terminal
read, ``parse_unified``'s rows, the terminal's printed lines, the hunks offered
for choosing) with the bytes that land on disk. Real proposals through
``Runtime`` and ``Session`` on temp workspaces; nothing is mocked.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grinta_jupyter import Runtime
from grinta_jupyter.agent import ApproveHunks, Edit, Session
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.models.base import ToolCall
from grinta_jupyter.agent.step import Step
from grinta_jupyter.jupyter.mime import step_payload, step_text
from grinta_jupyter.runtime.diffs import DiffHunk, parse_unified
from grinta_jupyter.runtime.hunks import hunks
from grinta_jupyter.runtime.proposal import Proposal, WriteProposal
from grinta_jupyter.runtime.secrets import Secrets
from grinta_jupyter.terminal import diff_lines, hunk_lines
from tests.conftest import drive
from tests.test_render_hostile import RAW, diff_rows

# -- reading a diff as a reviewer does -------------------------------------------------------

_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def shown_hunks(diff: str) -> list[tuple[str | None, DiffHunk]]:
    """(path, hunk) for every hunk a card numbers, in order: the card's reading of the diff."""
    return [(f.path, h) for f in parse_unified(diff) for h in f.hunks]


def rebuild(old: str, shown: list[DiffHunk], newline: str = "\n") -> str:
    """``old`` with the ``shown`` hunks applied from their header and rows alone.

    A row is a line ending in ``newline`` unless a "No newline" note follows it; its
    removed and context rows must be the old lines, character for character.
    """
    lines = old.split("\n")
    ends = ["\n"] * (len(lines) - 1) + [""]
    if lines[-1] == "":
        lines.pop()
        ends.pop()
    old_lines = list(zip(lines, ends, strict=True))
    out: list[str] = []
    at = 0
    for hunk in shown:
        match = _HEADER.match(hunk.header)
        assert match, hunk.header
        start, count = int(match[1]), 1 if match[2] is None else int(match[2])
        first = start - 1 if count else start
        out.extend(text + end for text, end in old_lines[at:first])
        at = first
        rows = hunk.rows
        for i, row in enumerate(rows):
            if row.role == "note":
                continue
            last = i + 1 < len(rows) and rows[i + 1].role == "note"
            if row.role in ("context", "del"):
                text, end = old_lines[at]
                bare = text.removesuffix("\r") if newline == "\r\n" and end else text
                assert bare == row.text, (at, text, row)
                assert (end == "") is last, (at, row)
                if row.role == "context":
                    out.append(text + end)
                at += 1
            else:
                out.append(row.text + ("" if last else newline))
    out.extend(text + end for text, end in old_lines[at:])
    return "".join(out)


def crlf_only(*texts: str) -> bool:
    return all(t.count("\n") == t.count("\r\n") for t in texts)


def written(root: Path, path: str) -> str:
    return (root / path).read_bytes().decode("utf-8")


# -- line endings ------------------------------------------------------------------------------


def test_a_carriage_return_added_before_a_line_end_is_shown(tmp_path):
    """Attack: an edit that only adds "\\r" before a "\\n" in an LF file. The diff showed
    "-b" and "+b", identical rows, while "b\\r\\n" was written."""
    (tmp_path / "f.txt").write_bytes(b"a\nb\nc\n")
    rt = Runtime(tmp_path)
    p = rt.propose("replace_string", {"path": "f.txt", "old_string": "b", "new_string": "b\r"})
    assert p.ok, p.error
    assert diff_rows(p.diff) == [
        ("context", "a"),
        ("del", "b"),
        ("add", "b\r"),
        ("context", "c"),
    ]
    assert "+ b\\r" in diff_lines(p.diff)  # the terminal shows it escaped
    assert rt.commit(p).ok
    assert (tmp_path / "f.txt").read_bytes() == b"a\nb\r\nc\n"
    assert rebuild("a\nb\nc\n", [h for _, h in shown_hunks(p.diff)]) == "a\nb\r\nc\n"


def test_a_new_file_with_mixed_line_endings_shows_each_carriage_return(tmp_path):
    """Attack: ``create`` with "x\\r\\ny\\n" (written as given). Both rows read "x" and "y",
    so a reviewer could not tell which line ends in CRLF."""
    rt = Runtime(tmp_path)
    p = rt.propose("create", {"path": "n.txt", "content": "x\r\ny\n"})
    assert p.ok, p.error
    assert diff_rows(p.diff) == [("add", "x\r"), ("add", "y")]
    step = Step(1, ToolCall("c1", "create", json.dumps(p.args)), p)
    assert "+ x\\r" in step_text(step_payload(step, "s1")).split("\n")
    assert p.changes[0].new_bytes == b"x\r\ny\n"


def test_a_mixed_file_shows_which_lines_end_in_crlf(tmp_path):
    """Attack: a mostly-CRLF file with one LF line; the edit keeps it LF. Every row looked
    alike, so the LF line (and any ending an edit changes) was invisible."""
    (tmp_path / "m.txt").write_bytes(b"a\r\nb\nc\r\nd\r\n")
    rt = Runtime(tmp_path)
    p = rt.propose("replace_string", {"path": "m.txt", "old_string": "b", "new_string": "B"})
    assert p.ok, p.error
    assert diff_rows(p.diff) == [
        ("context", "a\r"),
        ("del", "b"),
        ("add", "B"),
        ("context", "c\r"),
        ("context", "d\r"),
    ]
    assert rt.commit(p).ok
    assert (tmp_path / "m.txt").read_bytes() == b"a\r\nB\nc\r\nd\r\n"


def test_a_crlf_file_still_shows_its_line_ends_as_line_ends(tmp_path):
    """Guard for the fix above: in an all-CRLF file (and BOM, no final newline) the "\\r" of
    each CRLF is a line end, not noise on every row; the written bytes stay CRLF."""
    (tmp_path / "w.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\nthree")
    rt = Runtime(tmp_path)
    p = rt.propose(
        "replace_string", {"path": "w.txt", "old_string": "two\nthree", "new_string": "2\n3"}
    )
    assert p.ok, p.error
    assert diff_rows(p.diff) == [
        ("context", "one"),
        ("del", "two"),
        ("del", "three"),
        ("note", "No newline at end of file"),
        ("add", "2"),
        ("add", "3"),
        ("note", "No newline at end of file"),
    ]
    assert rt.commit(p).ok
    assert (tmp_path / "w.txt").read_bytes() == b"\xef\xbb\xbfone\r\n2\r\n3"


# -- every row a reviewer sees, and nothing else, is written ---------------------------------

PIECES = [
    "a",
    "b",
    "",
    " x",
    "-y",
    "+z",
    "--- a/x",
    "+++ b/x",
    "@@ -1 +1 @@",
    "\\ No newline at end of file",
    "x\r",
    "\r",
    "p\x0cq",
    "p\x0bq",
    "u\u2028v",
    "u\u2029v",
    "w\x85",
    "\x1b[2Kred",
    "\x1b]8;;http://e\x07link\x1b]8;;\x07",
    "\u202eevil",
    "zero\u200bwidth",
    "tab\tx",
    "m\ufeffid",
]
TEXTS = st.tuples(
    st.lists(st.sampled_from(PIECES), max_size=14), st.sampled_from(["\n", "\r\n"]), st.booleans()
).map(lambda t: t[1].join(t[0]) + (t[1] if t[2] and t[0] else ""))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=TEXTS, after=TEXTS, create=st.booleans(), data=st.data())
def test_the_rows_shown_rebuild_exactly_the_bytes_written(before, after, create, data):
    """Attack: contents that make a diff lie (header and note lookalikes, CR-only and mixed
    line ends, a final newline gained or lost, form feed, vertical tab, U+2028/2029/0085,
    escapes, OSC 8, bidi, zero-width, tab, an inner BOM), with any choice of hunks. The
    accepted hunks, read from the diff as a card reads it, must rebuild the written bytes."""
    root = Path(tempfile.mkdtemp())
    try:
        rt = Runtime(root)
        if create:
            old = None
            p = rt.propose("create", {"path": "f.txt", "content": after})
        else:
            if not before or before == after:
                return
            (root / "f.txt").write_bytes(before.encode())
            old = before
            p = rt.propose(
                "replace_string", {"path": "f.txt", "old_string": before, "new_string": after}
            )
        if not p.ok:
            return  # a refusal writes nothing
        shown = shown_hunks(p.diff)
        assert [h.header for _, h in shown] == [h.header for h in hunks(p)]
        accepted = sorted(data.draw(st.sets(st.integers(0, len(shown) - 1), min_size=1)))
        chosen = rt.select_hunks(p, accepted)
        assert chosen.ok, chosen.error
        assert rt.commit(chosen).ok
        result = written(root, "f.txt")
        newline = (
            "\r\n"
            if "\n" in (old or "") and crlf_only(old or "", p.changes[0].after or "")
            else "\n"
        )
        assert result == rebuild(old or "", [shown[k][1] for k in accepted], newline)
        for line in diff_lines(p.diff) + [x for h in hunks(p) for x in hunk_lines(h)]:
            assert not RAW.search(line), repr(line)
    finally:
        shutil.rmtree(root)


def test_approving_first_last_and_adjacent_hunks_writes_exactly_those(tmp_path):
    """Attack: hunks at the first and the last line, two hunks as close as they come, and the
    last line gaining its final newline; every choice of them."""
    lines = [f"line {i}" for i in range(25)]
    before = "\n".join(lines)  # no final newline
    (tmp_path / "e.txt").write_text(before)
    rt = Runtime(tmp_path)
    edits = [
        ("line 0\n", "first\n"),
        ("line 8\n", "line 8 changed\n"),
        ("line 16\n", "line 16 changed\n"),  # seven equal lines from the one above
        ("line 24", "line 24\n"),
    ]
    p = rt.propose(
        "multiedit",
        {"edits": [{"path": "e.txt", "old_string": a, "new_string": b} for a, b in edits]},
    )
    assert p.ok, p.error
    shown = shown_hunks(p.diff)
    assert len(shown) == 4
    for mask in range(1, 16):
        accepted = [k for k in range(4) if mask >> k & 1]
        chosen = rt.select_hunks(p, accepted)
        assert chosen.ok, chosen.error
        expected = rebuild(before, [shown[k][1] for k in accepted])
        assert chosen.changes[0].new_bytes == expected.encode(), accepted
    assert rt.commit(rt.select_hunks(p, [0, 3])).ok
    assert written(tmp_path, "e.txt") == "first\n" + "\n".join(lines[1:]) + "\n"


# -- notebooks: the cell a hunk names -------------------------------------------------------


def notebook(root: Path, source: list[str]) -> None:
    cell = {
        "cell_type": "code",
        "id": "real1",
        "metadata": {},
        "execution_count": None,
        "outputs": [],
        "source": source,
    }
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (root / "n.ipynb").write_text(json.dumps(nb, indent=1) + "\n")


def test_a_notebook_hunk_names_its_own_cell_not_a_source_line_like_a_header(tmp_path):
    """Attack: a source line "#%% cell fake (markdown)" (the view then uses "#%%%"). The hunk
    header named that line as the hunk's cell, so an edit looked like it was elsewhere."""
    body = [f"y{i} = {i}\n" for i in range(10)]
    notebook(tmp_path, ["x = 1\n", "#%% cell fake (markdown)\n", *body, "z = 0"])
    rt = Runtime(tmp_path)
    p = rt.propose("replace_string", {"path": "n.ipynb", "old_string": "y8 = 8", "new_string": "8"})
    assert p.ok, p.error
    (hunk,) = hunks(p)
    assert hunk.header == "@@ -9,6 +9,6 @@ #%%% cell real1 (code)"
    assert [h.header for _, h in shown_hunks(p.diff)] == [hunk.header]


def test_the_hunk_by_hunk_view_shows_no_raw_escape_in_a_header(tmp_path):
    """Attack: an OSC 8 hyperlink and a clear-line in a source line that looks like a cell
    header. The terminal's hunk-by-hunk view printed the hunk header raw."""
    fake = "#%% cell \x1b]8;;http://evil\x07X\x1b[2K (code)\n"
    notebook(tmp_path, ["x = 1\n", fake, *[f"y{i} = {i}\n" for i in range(10)], "z = 0"])
    rt = Runtime(tmp_path)
    p = rt.propose("replace_string", {"path": "n.ipynb", "old_string": "y8 = 8", "new_string": "8"})
    assert p.ok, p.error
    for hunk in hunks(p):
        for color in (False, True):
            shown = "\n".join(hunk_lines(hunk, color))
            assert not RAW.search(re.sub(r"\x1b\[(?:3[1236]|0)m", "", shown)), shown


# -- an empty new file ----------------------------------------------------------------------


def test_an_empty_new_file_is_in_the_diff_and_numbered_as_the_card_numbers_it(tmp_path):
    """Attack: one patch creating an empty file and editing another. The empty file was not
    in the diff, yet was hunk 0 of the runtime: the card's "hunk 0" (the first edit of a.txt)
    wrote the empty file instead, and its "hunk 1" wrote the other edit."""
    (tmp_path / "a.txt").write_text("".join(f"l{i}\n" for i in range(20)))
    rt = Runtime(tmp_path, toolset="broad")
    patch = (
        "--- /dev/null\n+++ b/empty.txt\n"
        "--- a/a.txt\n+++ b/a.txt\n@@ -2 +2 @@\n-l1\n+L1\n@@ -15 +15 @@\n-l14\n+L14\n"
    )
    p = rt.propose("apply_patch", {"patch": patch})
    assert p.ok and p.paths == ["empty.txt", "a.txt"], p.error
    assert "+++ b/empty.txt" in p.diff  # what will be created is shown
    shown = shown_hunks(p.diff)
    assert [(path, h.header) for path, h in shown] == [(h.path, h.header) for h in hunks(p)]
    chosen = rt.select_hunks(p, [1])  # the card's second hunk: l1 -> L1
    assert chosen.ok and chosen.paths == ["a.txt"], chosen.error
    assert rt.commit(chosen).ok
    assert not (tmp_path / "empty.txt").exists()
    assert written(tmp_path, "a.txt").startswith("l0\nL1\nl2\n")
    assert "l14\n" in written(tmp_path, "a.txt")


def test_an_empty_file_created_alone_is_shown(tmp_path):
    """Attack: ``create`` with empty content showed no diff at all (the terminal printed
    nothing under the call); the file it creates is now named with an empty hunk."""
    rt = Runtime(tmp_path)
    p = rt.propose("create", {"path": "empty.txt", "content": ""})
    assert p.ok, p.error
    assert p.diff == "--- /dev/null\n+++ b/empty.txt\n@@ -0,0 +0,0 @@\n"
    assert diff_lines(p.diff) == ["--- /dev/null", "+++ b/empty.txt", "@@ -0,0 +0,0 @@"]
    assert rt.commit(p).ok and (tmp_path / "empty.txt").read_bytes() == b""


# -- decisions through a session --------------------------------------------------------------


def session_on(root: Path, *calls: ToolCall) -> Session:
    turns = [reply("", c) for c in calls] + [reply("", call("finish", summary="done"))]
    return Session("change the file", model=ScriptedModel(turns), root=root)


LONG = "".join(f"v{i} = {i}\n" for i in range(30))


def test_an_edited_call_shows_and_commits_the_restaged_diff(tmp_path):
    """Attack: the reviewer edits the arguments, then approves. The card must show the
    re-staged diff, not the model's, and exactly that diff must be written."""
    (tmp_path / "v.py").write_text(LONG)
    first = call("replace_string", path="v.py", old_string="v1 = 1\n", new_string="v1 = -1\n")
    session = session_on(tmp_path, first)
    edited = {"path": "v.py", "old_string": "v25 = 25\n", "new_string": "v25 = 'x'\nv26b = 0\n"}
    seen: list[dict[str, Any]] = []
    proposals: list[Proposal] = []

    def decide(s: Session) -> None:
        step = s.pending
        assert step is not None
        proposals.append(step.proposal)
        if not step.edits:
            s.decide(Edit(edited))
            return
        seen.append(step_payload(step, s.id))
        s.approve()

    drive(session, decide)
    original, restaged = proposals
    (payload,) = seen
    assert original is not restaged and payload["diff"] == restaged.diff
    assert "v1 = -1" not in payload["diff"] and "+v25 = 'x'" in payload["diff"]
    assert payload["edits"] == 1
    assert written(tmp_path, "v.py") == rebuild(LONG, [h for _, h in shown_hunks(payload["diff"])])


def test_hunks_chosen_after_an_edit_are_the_edited_proposals(tmp_path):
    """Attack: the original call had one hunk, the edited call two. ``ApproveHunks([1])``
    must pick the edited call's second hunk, as its card numbers it."""
    (tmp_path / "v.py").write_text(LONG)
    first = call(
        "multiedit", edits=[{"path": "v.py", "old_string": "v1 = 1\n", "new_string": "v1 = 0\n"}]
    )
    session = session_on(tmp_path, first)
    edited = {
        "edits": [
            {"path": "v.py", "old_string": "v2 = 2\n", "new_string": "v2 = 'two'\n"},
            {"path": "v.py", "old_string": "v25 = 25\n", "new_string": "v25 = 'x'\n"},
        ]
    }
    shown: list[str] = []

    def decide(s: Session) -> None:
        step = s.pending
        assert step is not None
        if not step.edits:
            s.decide(Edit(edited))
            return
        shown.append(step_payload(step, s.id)["diff"])
        chosen = s.decide(ApproveHunks([1], "only v25"))
        assert isinstance(chosen, WriteProposal) and chosen.ok, chosen

    drive(session, decide)
    (diff,) = shown
    card = shown_hunks(diff)
    assert len(card) == 2 and "v25 = 'x'" in "\n".join(r.text for r in card[1][1].rows)
    assert written(tmp_path, "v.py") == rebuild(LONG, [card[1][1]])
    assert "v1 = 0" not in written(tmp_path, "v.py")


def test_a_file_changed_after_the_hunks_were_chosen_is_not_written(tmp_path):
    """Attack: the user saves the file in JupyterLab between choosing hunks and the commit.
    The stale selection must be refused and the user's bytes kept."""
    (tmp_path / "v.py").write_text(LONG)
    edits = [
        {"path": "v.py", "old_string": "v2 = 2\n", "new_string": "v2 = 'two'\n"},
        {"path": "v.py", "old_string": "v25 = 25\n", "new_string": "v25 = 'x'\n"},
    ]
    session = session_on(tmp_path, call("multiedit", edits=edits))
    mine = LONG.replace("v10 = 10\n", "v10 = 'mine'\n")

    def decide(s: Session) -> None:
        chosen = s.decide(ApproveHunks([0]))
        assert chosen is not None and chosen.ok
        (tmp_path / "v.py").write_text(mine)  # after the choice, before the commit

    drive(session, decide)
    assert written(tmp_path, "v.py") == mine
    step = session.steps[0]
    assert step.observation is not None and step.observation.error is not None
    assert step.observation.error.code == "STALE_FILE"


# -- redaction ------------------------------------------------------------------------------


def test_a_redacted_secret_never_changes_the_role_of_a_row(tmp_path):
    """Attack: a secret (here the model's key, given in code) equal to "-" plus a line the
    edit removes. Redacting the card's diff turned the row "-<line>" into "[REDACTED]", and
    every later row of the hunk, added lines that look like a diff included, lost its role."""
    (tmp_path / "c.txt").write_text("keep\nQx9Zk2Lm7Pw\nkeep2\n")
    rt = Runtime(tmp_path)
    new = "keep2\n--- a/c.txt\n+++ b/evil\n@@ -1 +1 @@\n+injected\n"
    p = rt.propose(
        "replace_string",
        {"path": "c.txt", "old_string": "Qx9Zk2Lm7Pw\nkeep2\n", "new_string": new},
    )
    assert p.ok, p.error
    step = Step(1, ToolCall("c1", "replace_string", json.dumps(p.args)), p)
    payload = step_payload(step, "s1", Secrets.from_env(extra=["-Qx9Zk2Lm7Pw"]))
    assert "Qx9Zk2Lm7Pw" not in payload["diff"]
    roles = [role for role, _ in diff_rows(payload["diff"])]
    assert roles == [role for role, _ in diff_rows(p.diff)]
    assert all(not f.notes for f in parse_unified(payload["diff"]))
