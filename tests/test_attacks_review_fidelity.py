"""Attacks on "what the reviewer sees is exactly what will happen", by a differential oracle.

For each edit, what a reviewer is shown (the proposal's diff, the card's payload, the
terminal's lines) is compared with what the commit does to the bytes on disk. Real
proposals through ``Runtime`` on temp workspaces; nothing is mocked.
"""

from __future__ import annotations

import io
import json
import unicodedata
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.agent.models.base import ToolCall
from grinta_jupyter.agent.step import Step
from grinta_jupyter.jupyter.mime import step_html, step_payload, step_text
from grinta_jupyter.runtime.hunks import hunks
from grinta_jupyter.runtime.proposal import Proposal
from grinta_jupyter.terminal import Console, diff_lines, hunk_lines

ESCAPE_MARKS_NOTE = "characters shown escaped, not typed text"  # runtime/display.py


def shown_in_terminal(p: Proposal) -> str:
    out = io.StringIO()
    Console(out, color=False).proposal(Step(1, ToolCall("c1", p.tool, json.dumps(p.args)), p))
    return out.getvalue()


def notebook(root: Path) -> None:
    cell = {
        "cell_type": "code",
        "id": "c0",
        "metadata": {},
        "execution_count": 3,
        "source": ["x = 1\n", "print(x)"],
        "outputs": [{"output_type": "stream", "name": "stdout", "text": ["1\n"]}],
    }
    nb = {
        "cells": [cell],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (root / "n.ipynb").write_text(json.dumps(nb, indent=1) + "\n")


def test_the_terminal_says_a_notebook_edit_clears_the_cells_outputs(tmp_path):
    """Attack: edit one line of a notebook code cell that has outputs, reviewed in the
    terminal. The cell view diff shows one changed line; the commit also deletes the cell's
    outputs and execution count. The card says so (its summary); the terminal printed the
    diff alone, so the reviewer approved a write that removed outputs it never mentioned."""
    notebook(tmp_path)
    rt = Runtime(tmp_path)
    p = rt.propose(
        "replace_string", {"path": "n.ipynb", "old_string": "x = 1", "new_string": "x = 2"}
    )
    assert p.ok, p.error
    shown = shown_in_terminal(p)
    assert rt.commit(p).ok
    written = json.loads((tmp_path / "n.ipynb").read_text())["cells"][0]
    assert written["outputs"] == [] and written["execution_count"] is None
    assert "clears the outputs and execution count of edited cell c0" in shown


def test_a_pending_command_is_on_its_card_whole(tmp_path):
    """Attack: a ``run`` whose command is 2,500 characters on its first line and
    ``rm -rf build`` on its second. A command has no diff: its arguments are all a card shows
    of what will run. The payload cut every string argument at 2,000 characters, so the card
    the reviewer approved from showed a command that was not the one that ran; and
    ``text/plain`` (what ``jupyter console`` shows before ``%grinta approve``) showed only the
    summary, the command's first line cut at 200 characters."""
    command = "echo " + "x" * 2_500 + "\nrm -rf build"
    rt = Runtime(tmp_path)
    p = rt.propose("run", {"command": command})
    assert p.ok, p.error
    assert p.command == command
    step = Step(1, ToolCall("c1", "run", json.dumps(p.args)), p)
    payload = step_payload(step, "s1")
    assert payload["status"] == "pending"
    assert payload["arguments"]["command"] == command
    assert "| > rm -rf build" in step_text(payload).split("\n")  # text/plain: every line
    assert "rm -rf build" in step_html(payload)


@pytest.mark.parametrize("before", ["x = 1  # done", "名前 = '日本'  # done"])
def test_a_real_carriage_return_reads_apart_from_a_typed_one(tmp_path, before):
    """Attack: add ``x = 1  # done<CR>import os; os.system(...)`` to a file that already has
    ``y = "a\\rb"`` (a backslash and an ``r``, typed). Python reads a lone carriage return as
    a line break, so the comment hides a statement that runs. The terminal and ``text/plain``
    showed both as the same ``\\r``, unstyled: the reviewer read a comment. (Wide characters
    before it: the carets marking it must still sit under it.)"""
    (tmp_path / "m.py").write_text('x = 1\ny = "a\\rb"\n')
    rt = Runtime(tmp_path)
    hidden = before + "\rimport os; os.system('echo pwned')"
    p = rt.propose("replace_string", {"path": "m.py", "old_string": "x = 1", "new_string": hidden})
    assert p.ok, p.error
    added = "+ " + before + "\\rimport os; os.system('echo pwned')"
    columns = len(before) + sum(unicodedata.east_asian_width(c) == "W" for c in before)
    marks = "\\ " + " " * columns + "^^ " + ESCAPE_MARKS_NOTE
    typed = '  y = "a\\rb"'
    step = Step(1, ToolCall("c1", p.tool, json.dumps(p.args)), p)
    for lines in (
        diff_lines(p.diff),
        [line for h in hunks(p) for line in hunk_lines(h)],
        step_text(step_payload(step, "s1")).split("\n"),
        [line.removeprefix("    ") for line in shown_in_terminal(p).split("\n")],
    ):
        assert lines[lines.index(added) + 1] == marks, lines
        assert typed in lines
        assert sum(line.endswith(ESCAPE_MARKS_NOTE) for line in lines) == 1, lines
    colored = [line for line in diff_lines(p.diff, color=True) if "pwned" in line]
    assert colored == [
        f"\x1b[32m+ {before}\x1b[33m\\r\x1b[32mimport os; os.system('echo pwned')\x1b[0m"
    ]
    assert rt.commit(p).ok
    assert (tmp_path / "m.py").read_bytes().startswith((before + "\rimport os;").encode())


def test_past_the_styled_escapes_a_real_carriage_return_still_reads_apart(tmp_path):
    """Attack: the same hidden statement in the saved HTML card, after 64 zero-width spaces
    on its line (one per word of a comment). The HTML styles only the first 64 escapes of a
    line, to keep a notebook small; the 65th, the real carriage return, was plain ``\\r``,
    as the typed one beside it."""
    from html.parser import HTMLParser

    (tmp_path / "m.py").write_text("x = 1\n")
    rt = Runtime(tmp_path)
    words = " ".join(["ok\u200b"] * 64)
    hidden = f"x = 1  # {words} '\\r' done\rimport os; os.system('echo pwned')"
    p = rt.propose("replace_string", {"path": "m.py", "old_string": "x = 1", "new_string": hidden})
    assert p.ok, p.error
    page = step_html(step_payload(Step(1, ToolCall("c1", p.tool, json.dumps(p.args)), p), "s1"))

    class Marked(HTMLParser):
        """The escapes of the page that read apart: text in a tag of its own."""

        def __init__(self) -> None:
            super().__init__()
            self.open: list[str] = []
            self.marked: list[str] = []

        def handle_starttag(self, tag: str, attrs: object) -> None:
            self.open.append(tag)

        def handle_endtag(self, tag: str) -> None:
            self.open.pop()

        def handle_data(self, data: str) -> None:
            if self.open[-1:] in (["span"], ["b"]) and "\\r" in data:
                self.marked.append(data)

    reader = Marked()
    reader.feed(page)
    assert reader.marked == ["\\r"], "the real one marked, the typed one not"


def test_a_carriage_return_in_code_that_runs_reads_apart_from_a_typed_one(tmp_path):
    """Attack: an ``execute`` whose code is ``x = 1  # note<CR>import os; ...`` beside a typed
    ``'\\r'``. Python runs what follows the carriage return; ``text/plain`` (what
    ``jupyter console`` shows before ``%grinta approve``) showed both as ``\\r``. The CLI's
    command lines had the same flaw."""
    from grinta_jupyter.runtime.proposal import CommandProposal

    code = "s = '\\r'  # note\rimport os; os.system('echo pwned')"
    marks = " " * len("s = '\\r'  # note") + "^^ " + ESCAPE_MARKS_NOTE
    step = Step(
        1,
        ToolCall("c1", "execute", json.dumps({"code": code})),
        CommandProposal("execute", {"code": code}, command=code),
    )
    text = step_text(step_payload(step, "s1")).split("\n")
    assert text[1:] == [
        "| $ s = '\\r'  # note\\rimport os; os.system('echo pwned')",
        "|   " + marks,
    ]
    p = Runtime(tmp_path).propose("run", {"command": "echo '\\r' # note\rtouch x"})
    out = io.StringIO()
    Console(out, color=False).proposal(Step(1, ToolCall("c2", "run", json.dumps(p.args)), p))
    assert out.getvalue().split("\n")[2:4] == [
        "    $ echo '\\r' # note\\rtouch x",
        "      " + " " * len("echo '\\r' # note") + "^^ " + ESCAPE_MARKS_NOTE,
    ]


class _Keyboard(io.StringIO):
    """Answers typed at a terminal: ``isatty`` is true, so an edit opens ``$VISUAL``."""

    def isatty(self) -> bool:
        return True


def test_editing_one_argument_in_review_keeps_the_others_as_the_model_sent_them(
    tmp_path, monkeypatch
):
    """Attack: the model's ``new_string`` holds a tag character (U+E0041, invisible, so the
    editor gets it as a JSON escape). The reviewer edits only ``old_string`` in $VISUAL and
    approves. The escape was written ``\\ue0041`` (five hex digits), which JSON reads as
    U+E004 and a "1": the re-staged edit wrote characters neither the model nor the reviewer
    wrote."""
    import sys

    from grinta_jupyter.agent import Session
    from grinta_jupyter.agent.models import ScriptedModel, call, reply
    from grinta_jupyter.terminal import steer

    root = tmp_path / "ws"
    root.mkdir()
    (root / "f.txt").write_text("a\nb\nc\n")
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nsed -i \'s/"old_string": "b"/"old_string": "c"/\' "$1"\n')
    editor.chmod(0o755)
    monkeypatch.setenv("VISUAL", str(editor))
    monkeypatch.setattr(sys, "stdin", _Keyboard("e\ny\n"))
    new = "B\U000e0041\U0001d173"
    turns = [
        reply("", call("replace_string", path="f.txt", old_string="b", new_string=new)),
        reply("", call("finish", summary="done")),
    ]
    session = Session("t", model=ScriptedModel(turns), root=root)
    out = io.StringIO()
    steer(session, Console(out, color=False))
    step = session.steps[0]
    assert step.edits == 1 and step.decision == "approve", out.getvalue()
    assert json.loads(step.call.arguments)["new_string"] == new
    assert (root / "f.txt").read_text() == f"a\nb\n{new}\n"


# -- the oracle over every write tool: what held ----------------------------------------------

HOSTILE_FILES = {
    "crlf": b"a\r\nb\r\nc\r\n",
    "mixed": b"a\r\nb\nc\r\nd\n",
    "lone_cr": b"a\rq\nb\nc\n",
    "no_final_newline": b"a\nb\nc",
    "bom_crlf": b"\xef\xbb\xbfa\r\nb\r\nc\r\n",
    "separators": "a\u2028x\nb\x85y\nc\x0cz\n".encode(),
    "lookalikes": b"--- a/x\n+++ b/x\n@@ -1 +1 @@\nb\n\\ No newline at end of file\n",
    "empty": b"",
}
NEW_TEXTS = ["B", "", "-B\n+C", "--- a/y\n@@ -1 +1 @@", "B\r", "\ufeffB\u202e\x1b[2K"]


def write_calls(text: str, new: str) -> list[tuple[str, str, dict[str, object]]]:
    from grinta_jupyter.runtime.diffs import unified_diff

    calls: list[tuple[str, str, dict[str, object]]] = [
        ("broad", "write_file", {"path": "f.txt", "content": new}),
        ("broad", "shell_write", {"command": f"cat >> f.txt <<'EOF'\n{new}\nEOF"}),
        ("intent", "create", {"path": "n.txt", "content": new + text}),
    ]
    if text.count("b") == 1:
        calls += [
            ("intent", "replace_string", {"path": "f.txt", "old_string": "b", "new_string": new}),
            ("broad", "str_replace", {"path": "f.txt", "old": "b", "new": new}),
            (
                "broad",
                "xml_edit",
                {"block": f'<edit path="f.txt"><old>b</old><new>{new}</new></edit>'},
            ),
            (
                "broad",
                "apply_patch",
                {"patch": unified_diff("f.txt", text, text.replace("b", new)).text},
            ),
            (
                "intent",
                "multiedit",
                {"edits": [{"path": "f.txt", "old_string": "b", "new_string": new}]},
            ),
        ]
    if text:
        calls += [
            (
                "broad",
                "replace_lines",
                {"path": "f.txt", "start_line": 1, "end_line": 1, "new_text": new},
            ),
            ("broad", "insert_at_line", {"path": "f.txt", "line": 1, "text": new}),
        ]
    return calls


@pytest.mark.parametrize("name", sorted(HOSTILE_FILES))
def test_every_write_tool_writes_exactly_the_rows_it_shows(tmp_path, name):
    """Oracle: for every write tool of both toolsets and hostile file content (CRLF, lone CR,
    mixed ends, no final newline, BOM, U+2028/U+0085/form feed, header lookalikes, an empty
    file), the diff's rows applied to the old text rebuild exactly the bytes written (this
    held), and the terminal shows every row by its role, escaped, with carets under its
    escapes (the carets are the fix of the carriage-return attack above)."""
    from grinta_jupyter.runtime.diffs import parse_unified
    from grinta_jupyter.runtime.display import escape_marks, visible
    from tests.test_review_attacks import crlf_only, rebuild

    data = HOSTILE_FILES[name]
    bom = data.startswith(b"\xef\xbb\xbf")
    text = data.decode("utf-8").removeprefix("\ufeff")
    marks = {"context": "  ", "add": "+ ", "del": "- ", "note": "\\ "}
    for case, new in enumerate(NEW_TEXTS):
        for toolset, tool, args in write_calls(text, new):
            root = tmp_path / f"{case}-{tool}"
            root.mkdir()
            (root / "f.txt").write_bytes(data)
            rt = Runtime(root, toolset=toolset)
            p = rt.propose(tool, args)
            if not p.ok:
                continue
            shown = diff_lines(p.diff)
            assert rt.commit(p).ok, (tool, args)
            (change,) = p.changes
            files = parse_unified(p.diff)
            expected = []
            for hunk in files[0].hunks:
                expected.append(visible(hunk.header, keep_newlines=False))
                for row in hunk.rows:
                    expected.append(marks[row.role] + visible(row.text, keep_newlines=False))
                    if row.role != "note" and escape_marks(row.text):
                        expected.append(f"\\ {escape_marks(row.text)} {ESCAPE_MARKS_NOTE}")
            assert shown[2:] == expected, (tool, args)
            old = change.before or ""
            newline = "\r\n" if "\n" in old and crlf_only(old, change.after or "") else "\n"
            rebuilt = rebuild(old, files[0].hunks, newline)
            prefix = b"\xef\xbb\xbf" if bom and change.before is not None else b""
            assert (root / change.path).read_bytes() == prefix + rebuilt.encode(), (tool, args)


def test_a_new_file_with_crlf_line_ends_shows_them(tmp_path):
    """Attack: `create` a shell script whose content has CRLF line ends. Bug: a diff showed
    CRLF as plain line ends when every line end on both sides was one, which a new file's
    empty old side always passed: the rows read as an ordinary script, and the file
    written then failed with `\\r: not found`. Now CRLF reads as a plain line end only in
    a file that had one already."""
    rt = Runtime(tmp_path)
    p = rt.propose("create", {"path": "s.sh", "content": "#!/bin/sh\r\necho hi\r\n"})
    assert p.ok
    shown = diff_lines(p.diff)
    assert "+ #!/bin/sh\\r" in shown and "+ echo hi\\r" in shown
    assert rt.commit(p).ok
    assert (tmp_path / "s.sh").read_bytes() == b"#!/bin/sh\r\necho hi\r\n"
    # A file that is CRLF already keeps its rows plain.
    (tmp_path / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    edit = rt.propose("replace_string", {"path": "w.txt", "old_string": "two", "new_string": "2"})
    assert edit.ok and "+ 2" in diff_lines(edit.diff)
