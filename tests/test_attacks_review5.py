"""The review surfaces against answers given before their question and names that look alike.

The real ``grinta`` entry in a subprocess, its standard input a real pseudo-terminal
(what a person types at), against the offline demo model; then the session log and
the files on disk.
"""

from __future__ import annotations

import html
import io
import os
import re
import select
import subprocess
import time
from pathlib import Path

from grinta_jupyter import Runtime
from grinta_jupyter.jupyter.mime import diff_rows_html, diff_text_lines
from grinta_jupyter.runtime.diffs import quote_path, unified_diff, unquote_path
from grinta_jupyter.runtime.hunks import hunks
from grinta_jupyter.runtime.proposal import WriteProposal
from grinta_jupyter.terminal import TYPED_AHEAD, Console, diff_lines
from tests.conftest import snapshot
from tests.test_cli_hostile import ENTRY, REPO, cli_env, decisions, pristine

CTRL_D = b"\x04"  # at the start of a line: the end of input


class TerminalSession:
    """``grinta demo`` reading its answers from a pseudo-terminal, as a person's shell runs it.

    ``typed_ahead`` is in the terminal's input before the program starts: keys pressed
    while the model thinks, before any question was asked.
    """

    def __init__(self, root: Path, typed_ahead: bytes = b"") -> None:
        self.master, slave = os.openpty()
        if typed_ahead:
            os.write(self.master, typed_ahead)
        self.child = subprocess.Popen(
            [*ENTRY, "demo", "--root", str(root)],
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=cli_env(),
            cwd=REPO,
        )
        os.close(slave)
        self.out = b""

    def wait_for(self, text: bytes, count: int = 1, timeout: float = 60) -> None:
        """Read the program's output until ``text`` appeared ``count`` times."""
        assert self.child.stdout is not None
        deadline = time.monotonic() + timeout
        while self.out.count(text) < count and time.monotonic() < deadline:
            ready, _, _ = select.select([self.child.stdout], [], [], 1)
            if ready:
                piece = os.read(self.child.stdout.fileno(), 65536)
                if not piece:
                    break
                self.out += piece
        assert self.out.count(text) >= count, self.out.decode(errors="replace")[-2000:]

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def finish(self) -> str:
        out, err = self.child.communicate(timeout=60)
        os.close(self.master)
        assert b"Traceback" not in err, err.decode(errors="replace")
        return (self.out + out).decode(errors="replace")


# -- answers typed before their question ------------------------------------------------------


def test_an_enter_pressed_while_the_model_thinks_does_not_approve(tmp_path):
    # Before: the Enter waiting in the terminal answered the first question the moment it
    # was asked, and the write was committed before its diff had been read.
    root = tmp_path / "demo"
    session = TerminalSession(root, typed_ahead=b"\n")
    session.wait_for(b"approve?", count=2)  # the Enter dropped, the question asked again
    session.type(CTRL_D)
    out = session.finish()

    assert decisions(root) == [("veto", "no answer: standard input closed")]
    assert snapshot(root) == pristine(tmp_path)
    assert out.count(TYPED_AHEAD) == 1


def test_the_rest_of_a_pasted_block_does_not_answer_the_next_question(tmp_path):
    # A veto and its reason pasted from notes with a trailing newline: before, that last
    # empty line approved the model's next proposal, which nobody had seen.
    root = tmp_path / "demo"
    session = TerminalSession(root)
    session.wait_for(b"approve?")
    session.type(b"n\nnot the tests\n\n")
    session.wait_for(b"approve?", count=3)  # the next question, asked again
    session.type(CTRL_D)
    out = session.finish()

    assert decisions(root) == [
        ("veto", "not the tests"),
        ("veto", "no answer: standard input closed"),
    ]
    assert snapshot(root) == pristine(tmp_path)
    assert out.count(TYPED_AHEAD) == 1


# -- file names that look like another file's ----------------------------------------------------

LOOKALIKE_NAME = "c\u043enfig.py"  # a Cyrillic "о": another file than config.py
LOOKALIKE_SHOWN = '"b/c\\u043enfig.py"'


def lookalike_write(root: Path) -> WriteProposal:
    """A write of two hunks to ``cоnfig.py`` in a workspace that also holds ``config.py``."""
    root.mkdir()
    lines = [f"setting_{i} = {i}\n" for i in range(20)]
    (root / "config.py").write_text("".join(lines))
    (root / LOOKALIKE_NAME).write_text("".join(lines))
    edits = [
        {"path": LOOKALIKE_NAME, "old_string": f"setting_{i} = {i}\n", "new_string": "x = 0\n"}
        for i in (1, 18)
    ]
    p = Runtime(root).propose("multiedit", {"edits": edits})
    assert p.ok, p.error
    return p  # type: ignore[return-value]


def test_a_look_alike_file_name_is_shown_escaped_in_the_terminal(tmp_path):
    # Before: the header read "+++ b/cоnfig.py", which no eye tells from config.py.
    p = lookalike_write(tmp_path / "ws")

    shown = diff_lines(p.diff)
    assert shown[:2] == [f"--- {LOOKALIKE_SHOWN.replace('b/', 'a/')}", f"+++ {LOOKALIKE_SHOWN}"]
    out = io.StringIO()
    console = Console(out, color=False)
    every = hunks(p)
    console.hunk(every[0], len(every))
    assert out.getvalue().startswith(f"--- hunk 1 of 2 in {LOOKALIKE_SHOWN.replace('b/', '')}\n")


def test_a_look_alike_file_name_is_shown_escaped_on_the_card(tmp_path):
    p = lookalike_write(tmp_path / "ws")

    text = diff_text_lines(p.diff)
    assert text[:2] == [f"--- {LOOKALIKE_SHOWN.replace('b/', 'a/')}", f"+++ {LOOKALIKE_SHOWN}"]
    header = re.search(r'<tr class="grinta-diff-file">.*?</tr>', diff_rows_html(p.diff))
    assert header is not None
    assert html.escape(LOOKALIKE_SHOWN.replace("b/", "")) in header.group()


def test_a_plain_ascii_name_reads_as_before_and_escapes_read_back():
    # Guards: an ASCII name keeps its plain header; every escaped name reads back whole.
    diff = unified_diff("config.py", "a\n", "b\n").text
    assert (
        diff_lines(diff)[:2] == diff_text_lines(diff)[:2] == ["--- a/config.py", "+++ b/config.py"]
    )
    for name in (LOOKALIKE_NAME, "caf\u00e9 \U0001f600.md", 'q"\\\u202e\n.txt'):
        assert quote_path(name, ascii_only=True).isascii()
        assert unquote_path(quote_path(name, ascii_only=True)) == name
