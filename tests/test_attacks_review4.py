"""Attacks on "what the reviewer sees is exactly what will happen", round four.

A write's diff too long for its card, and a write that creates a file reviewed hunk by
hunk. Real proposals through ``Runtime`` on temp workspaces; nothing is mocked.
"""

from __future__ import annotations

import html
import io
import json
import re

from grinta_jupyter import Runtime
from grinta_jupyter.agent.models.base import ToolCall
from grinta_jupyter.agent.step import Step
from grinta_jupyter.jupyter.mime import MAX_LIVE_DIFF_CHARS, STEP_MIME, step_bundle
from grinta_jupyter.runtime.hunks import hunks
from grinta_jupyter.terminal import Console


def test_a_waiting_write_cut_short_names_the_file_its_cut_hides(tmp_path):
    """Attack: one multiedit rewrites 2,000 long lines of ``big.txt`` and turns
    ``DEBUG = False`` into ``True`` in ``small.py``. Its diff is past the 1,000,000
    characters a waiting card keeps, so the cut falls inside ``big.txt`` and
    ``small.py``'s change is on no surface. The card's ``text/plain`` and HTML said only
    "the diff was cut short to keep the notebook small": Approve committed a change to a
    file the reviewer was never shown, nor told of. Now both say that approving commits
    all of it, and name every file with its counts, ``small.py`` as not shown."""
    long = "a" * 300
    (tmp_path / "big.txt").write_text("".join(f"{long} {i}\n" for i in range(2_000)))
    (tmp_path / "small.py").write_text("DEBUG = False\n")
    rt = Runtime(tmp_path)
    edits = [
        {"path": "big.txt", "old_string": long, "new_string": "b" * 300, "replace_all": True},
        {"path": "small.py", "old_string": "False", "new_string": "True"},
    ]
    p = rt.propose("multiedit", {"edits": edits})
    assert p.ok, p.error
    assert len(p.diff) > MAX_LIVE_DIFF_CHARS
    bundle = step_bundle(Step(1, ToolCall("c1", p.tool, json.dumps(p.args)), p), "s", live=True)
    assert bundle[STEP_MIME]["diff_truncated"] is True
    assert "DEBUG = True" not in bundle[STEP_MIME]["diff"]  # the cut hides it
    text = bundle["text/plain"]
    shown_html = html.unescape(re.sub(r"<[^>]+>", "", bundle["text/html"]))
    for surface in (text, shown_html):
        assert "approving commits all of it" in surface
        assert "small.py (+1 -1, not shown above)" in surface
        assert "big.txt (+2,000 -2,000, cut short above)" in surface
    assert rt.commit(p).ok
    assert (tmp_path / "small.py").read_text() == "DEBUG = True\n"


def test_hunk_by_hunk_says_which_hunk_creates_a_file(tmp_path):
    """Attack: an ``apply_patch`` that edits ``a.txt`` and creates ``new.sh``, answered
    hunk by hunk in the terminal. The second hunk was shown as ``--- hunk 2 of 2 in new.sh``
    and ``@@ -0,0 +1,2 @@``: lines added at the top of a file, though there is no such file
    and answering y creates it. Now the hunk's heading says it creates the file."""
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    rt = Runtime(tmp_path, toolset="broad")
    patch = (
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"
        "--- /dev/null\n+++ b/new.sh\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+echo hi\n"
    )
    p = rt.propose("apply_patch", {"patch": patch})
    assert p.ok, p.error
    out = io.StringIO()
    every = hunks(p)
    for hunk in every:
        Console(out, color=False).hunk(hunk, len(every))
    shown = out.getvalue().split("\n")
    assert "--- hunk 1 of 2 in a.txt" in shown
    assert "--- hunk 2 of 2 in new.sh (a new file: this hunk creates it)" in shown
    chosen = rt.select_hunks(p, [1])
    assert chosen.ok, chosen.error
    assert rt.commit(chosen).ok
    assert (tmp_path / "new.sh").read_text() == "#!/bin/sh\necho hi\n"
    assert (tmp_path / "a.txt").read_text() == "one\ntwo\n"
