"""Attacks on "what the reviewer sees is what will be written", in the terminal: lines that
read the same removed and added.

Each edit changes only what a terminal draws as nothing or as something else: a space
at the end of a heredoc's terminator, a tab turned into spaces, a no-break space for a
space, an accent written as a combining character. The cards draw such whitespace
(labextension/src/render/diffView.ts); the terminal showed the removed and the added
line alike, so a reviewer approved a change they could not see. Real proposals through
``Runtime`` on temp workspaces and the real ``grinta run`` entry point; nothing mocked.
"""

from __future__ import annotations

import html
import io
import json
import re

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.agent.models.base import ToolCall
from grinta_jupyter.agent.step import Step
from grinta_jupyter.runtime.hunks import hunks
from grinta_jupyter.runtime.proposal import Proposal
from grinta_jupyter.terminal import Console, diff_lines, hunk_lines
from tests.openai_server import OpenAIServer, tool_call, tool_reply
from tests.test_cli_hostile import grinta

NOTE = "characters shown escaped, not typed text"  # runtime/display.ESCAPE_MARKS_NOTE


def shown_in_terminal(p: Proposal) -> list[str]:
    out = io.StringIO()
    Console(out, color=False).proposal(Step(1, ToolCall("c1", p.tool, json.dumps(p.args)), p))
    return [line.removeprefix("    ") for line in out.getvalue().split("\n")]


# (file, its bytes, old_string, new_string, the removed row shown, the added row shown)
CASES = {
    # The heredoc no longer ends at "EOF ": the rest of the script becomes its text.
    "a space after a heredoc terminator": (
        "s.sh",
        b"#!/bin/sh\ncat > out.txt <<EOF\nhello\nEOF\nrm -rf build\n",
        "EOF\nrm",
        "EOF \nrm",
        ["- EOF"],
        ["+ EOF\\x20", "\\    ^^^^ " + NOTE],
    ),
    # YAML needs a space after the colon: a no-break space makes the line one string.
    "a no-break space for a space": (
        "c.yaml",
        b"debug: false\n",
        "debug: false",
        "debug:\u00a0false",
        ["- debug: false"],
        ["+ debug:\\xa0false", "\\       ^^^^ " + NOTE],
    ),
    # A tab-separated file loses a column.
    "a tab turned into spaces": (
        "t.tsv",
        b"name\tage\nbob\t3\n",
        "bob\t3",
        "bob     3",
        ["- bob\\t3", "\\    ^^ " + NOTE],
        ["+ bob     3"],
    ),
    # The same word to a person, another string to Python.
    "an accent as a combining character": (
        "roles.py",
        "ADMIN = 'gérant'\n".encode(),
        "gérant",
        "ge\u0301rant",
        ["- ADMIN = 'g\\xe9rant'", "\\ " + " " * 10 + "^^^^ " + NOTE],
        ["+ ADMIN = 'ge\\u0301rant'", "\\ " + " " * 11 + "^^^^^^ " + NOTE],
    ),
    # A variation selector after a letter draws nothing: another key to every dict.
    "a variation selector after a letter": (
        "keys.py",
        b"KEY = 'admin'\n",
        "'admin'",
        "'ad\ufe0fmin'",
        ["- KEY = 'admin'"],
        ["+ KEY = 'ad\\ufe0fmin'", "\\ " + " " * 9 + "^^^^^^ " + NOTE],
    ),
    # A blank braille cell draws as a space, and is none to a shell or a parser.
    "a blank braille cell for a space": (
        "run.sh",
        b"rm -rf build\n",
        "rm -rf build",
        "rm -rf\u2800build",
        ["- rm -rf build"],
        ["+ rm -rf\\u2800build", "\\ " + " " * 6 + "^^^^^^ " + NOTE],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_change_the_terminal_would_draw_as_nothing_is_shown_escaped(tmp_path, name):
    """Attack: each edit of CASES, reviewed in the terminal (whole diff, and hunk by hunk).
    Before, the removed and the added row were drawn alike (``- EOF`` / ``+ EOF``), and the
    approved commit wrote what nobody saw. Now the characters that make the difference are
    escaped and marked, and they are the bytes written."""
    path, data, old, new, removed, added = CASES[name]
    (tmp_path / path).write_bytes(data)
    rt = Runtime(tmp_path)
    p = rt.propose("replace_string", {"path": path, "old_string": old, "new_string": new})
    assert p.ok, p.error
    for lines in (
        shown_in_terminal(p),
        diff_lines(p.diff),
        [line for h in hunks(p) for line in hunk_lines(h)],
    ):
        at = lines.index(removed[0])
        assert lines[at : at + len(removed) + len(added)] == removed + added, lines
    assert rt.commit(p).ok
    assert (tmp_path / path).read_bytes() == data.replace(old.encode(), new.encode())


def test_with_colour_the_escaped_whitespace_is_styled_as_an_escape(tmp_path):
    """Attack: the no-break space of CASES in a colour terminal (no carets there: escapes are
    yellow). It was drawn as a space inside the green row."""
    (tmp_path / "c.yaml").write_bytes(b"debug: false\n")
    p = Runtime(tmp_path).propose(
        "replace_string",
        {"path": "c.yaml", "old_string": "debug: false", "new_string": "debug:\u00a0false"},
    )
    assert p.ok, p.error
    assert "\x1b[32m+ debug:\x1b[33m\\xa0\x1b[32mfalse\x1b[0m" in diff_lines(p.diff, color=True)


def test_grinta_run_shows_the_trailing_space_it_then_writes(tmp_path):
    """Attack, end to end: a model (a local OpenAI-compatible server) adds a space after a
    heredoc's ``EOF``; the person answers Enter at ``grinta run``'s prompt. The terminal
    printed ``- EOF`` and ``+ EOF ``, which read the same, and the script's last command
    became text of the heredoc."""
    root = tmp_path / "ws"
    root.mkdir()
    script = b"#!/bin/sh\ncat > out.txt <<EOF\nhello\nEOF\nrm -rf build\n"
    (root / "s.sh").write_bytes(script)
    edit = {"path": "s.sh", "old_string": "EOF\nrm", "new_string": "EOF \nrm"}
    with OpenAIServer() as server:
        server.queue(
            tool_reply(tool_call("replace_string", edit)),
            tool_reply(tool_call("finish", {"summary": "done"})),
        )
        done = grinta(
            "run",
            "tidy the script",
            "--root",
            str(root),
            answers="\n",
            GRINTA_MODEL="openai/test",
            GRINTA_API_BASE=server.url,
            GRINTA_API_KEY="sk-test",
        )
    rows = [line.strip() for line in done.stdout.split("\n")]
    assert "+ EOF\\x20" in rows, done.stdout
    assert (root / "s.sh").read_bytes() == script.replace(b"EOF\nrm", b"EOF \nrm")


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_cards_text_and_html_show_the_same_escapes(tmp_path, name):
    """Attack: the same edits in a card's ``text/plain`` and in its HTML (the saved notebook,
    front ends without the labextension). Both drew the removed and the added row alike."""
    from grinta_jupyter.jupyter.mime import diff_rows_html, diff_text_lines

    path, data, old, new, removed, added = CASES[name]
    (tmp_path / path).write_bytes(data)
    p = Runtime(tmp_path).propose(
        "replace_string", {"path": path, "old_string": old, "new_string": new}
    )
    assert p.ok, p.error
    text = diff_text_lines(p.diff)
    at = text.index(removed[0])
    assert text[at : at + len(removed) + len(added)] == removed + added, text
    rows = diff_rows_html(p.diff).split("</tr>")
    shown = [r for r in rows if "grinta-diff-add" in r or "grinta-diff-del" in r]
    # The code cell of each row, its tags dropped: the text the terminal shows, marker aside.
    cells = [
        html.unescape(re.sub("<[^>]+>", "", r.rsplit("<td", 1)[1].split(">", 1)[1])) for r in shown
    ]
    assert cells == ["-" + removed[0][2:], "+" + added[0][2:]], cells
    assert all('class="grinta-escape"' in r for r in shown if "\\" in r), shown
