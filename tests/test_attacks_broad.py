"""Attacks on the broad toolset's own write tools: xml_edit, shell_write, write_file and the
ast_* symbol tools. Each write applies exactly what its arguments say, or is refused with
every byte on disk as it was."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.tools.base import Settings
from tests.conftest import snapshot


@pytest.fixture
def rt(ws: Path) -> Runtime:
    return Runtime(ws, toolset="broad")


def refused(rt: Runtime, ws: Path, tool: str, args: dict[str, object], code: str) -> str:
    """Propose ``tool``; assert it is refused with ``code`` and nothing changed; the message."""
    before = snapshot(ws)
    p = rt.propose(tool, args)
    assert p.error is not None and p.error.code == code, (tool, args, p.error)
    assert snapshot(ws) == before
    return p.error.message


# -- xml_edit ---------------------------------------------------------------------------


def test_xml_edit_refuses_an_unclosed_block_after_a_good_one(rt, ws):
    """The second block never closes: all or none, so the first is not applied alone."""
    block = (
        '<edit path="pkg/core.py"><old>a + b</old><new>b + a</new></edit>\n'
        '<edit path="README.md"><old># demo</old><new># edited</new>'
    )
    message = refused(rt, ws, "xml_edit", {"block": block}, "INVALID_ARGS")
    assert "line 2" in message


@pytest.mark.parametrize(
    "block",
    [
        # the new text holds "</new></edit>": the rest of it was dropped
        '<edit path="README.md"><old>demo</old><new>x</new></edit>y</new></edit>',
        # a second block with single quotes around its path was skipped
        '<edit path="README.md"><old>demo</old><new>x</new></edit>'
        "<edit path='pkg/core.py'><old>a + b</old><new>b + a</new></edit>",
    ],
    ids=["closing-tags-past-the-end", "unreadable-second-block"],
)
def test_xml_edit_refuses_tags_outside_the_blocks_it_read(rt, ws, block):
    refused(rt, ws, "xml_edit", {"block": block}, "INVALID_ARGS")


def test_xml_edit_refuses_a_block_that_reads_two_ways(rt, ws):
    """old could end at either </old><new>: never guessed."""
    (ws / "t.txt").write_text("p</old><new>q\n")
    block = '<edit path="t.txt"><old>p</old><new>q</old><new>Z</new></edit>'
    refused(rt, ws, "xml_edit", {"block": block}, "AMBIGUOUS_MATCH")


def test_xml_edit_trims_a_crlf_line_break_as_one(rt, ws):
    """A CRLF after <new> and before </new> is the line break the tool ignores, not a
    newline plus a lone carriage return written into the file."""
    (ws / "t.txt").write_bytes(b"one\ntwo\nthree\n")
    block = '<edit path="t.txt"><old>\ntwo\n</old><new>\r\nTWO\r\n</new></edit>'
    assert rt.call("xml_edit", {"block": block}).ok
    assert (ws / "t.txt").read_bytes() == b"one\nTWO\nthree\n"
    (ws / "c.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    block = '<edit path="c.txt">\r\n<old>\r\ntwo\r\n</old>\r\n<new>\r\n2\r\n</new>\r\n</edit>'
    assert rt.call("xml_edit", {"block": block}).ok
    assert (ws / "c.txt").read_bytes() == b"one\r\n2\r\nthree\r\n"


def test_xml_edit_takes_text_raw(rt, ws):
    """No entity is decoded, as the description says ("raw"); CDATA is text too."""
    (ws / "t.html").write_text("<p>a < b</p>\n")
    assert rt.call(
        "xml_edit", {"block": '<edit path="t.html"><old>a < b</old><new>a &lt; b</new></edit>'}
    ).ok
    assert (ws / "t.html").read_text() == "<p>a &lt; b</p>\n"
    refused(
        rt,
        ws,
        "xml_edit",
        {"block": '<edit path="t.html"><old><![CDATA[a &lt; b]]></old><new>c</new></edit>'},
        "NOT_FOUND",
    )


def test_xml_edit_bounds_the_blocks_in_one_call(rt, ws):
    """Each block costs time linear in its file: thousands of them on a large file took
    minutes. Bounded as multiedit is."""
    (ws / "t.txt").write_text("".join(f"line {i}\n" for i in range(201)))
    block = "".join(
        f'<edit path="t.txt"><old>line {i}\n</old><new>LINE {i}\n</new></edit>' for i in range(201)
    )
    assert "at most 200" in refused(rt, ws, "xml_edit", {"block": block}, "INVALID_ARGS")


# -- shell_write ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf pkg\ncat > n.txt <<'EOF'\nhi\nEOF",
        "cat > n.txt <<'EOF'\nhi\nEOF\npython n.txt",
        "cat > n.txt <<'EOF' && echo done\nhi\nEOF\ncat > m.txt <<'EOF'\nhi\nEOF",
        "cat > n.txt <<'EOF'\nhi\nEOF\ncat > m.txt <<'EOF'\nnever closed\n",
    ],
    ids=["command-before", "command-after", "header-with-more", "unterminated-second"],
)
def test_shell_write_refuses_what_it_would_not_do_instead_of_skipping_it(rt, ws, command):
    """A line that is not a heredoc write, or a heredoc that never ends, is refused: the
    model must not believe it ran."""
    refused(rt, ws, "shell_write", {"command": command}, "INVALID_ARGS")
    assert not (ws / "n.txt").exists()


def test_shell_write_keeps_comments_and_blank_lines_out(rt, ws):
    command = "#!/bin/sh\n# notes\n\ncat > n.txt <<'EOF'\n# kept\nEOF\n"
    assert rt.call("shell_write", {"command": command}).ok
    assert (ws / "n.txt").read_text() == "# kept\n"


def test_an_empty_heredoc_writes_an_empty_file(rt, ws):
    """The closing line right after the header ends an empty heredoc, as in the shell: it
    does not run on into the next heredoc and swallow it."""
    command = "cat > README.md <<'EOF'\nEOF\ncat > n.txt <<'EOF'\nhello\nEOF"
    assert rt.call("shell_write", {"command": command}).ok
    assert (ws / "README.md").read_text() == ""
    assert (ws / "n.txt").read_text() == "hello\n"


@pytest.mark.parametrize(
    "text", ["home=$HOME\n", "user=`whoami`\n", "$(touch pwned)\n", "a \\\\ b\n", "joined \\\n"]
)
def test_an_unquoted_delimiter_over_text_the_shell_expands_is_refused(rt, ws, text):
    refused(rt, ws, "shell_write", {"command": f"cat > n.txt <<EOF\n{text}EOF"}, "INVALID_ARGS")
    assert rt.call("shell_write", {"command": f"cat > n.txt <<'EOF'\n{text}EOF"}).ok
    assert (ws / "n.txt").read_text() == text
    assert not (ws / "pwned").exists()


def test_an_unquoted_delimiter_over_plain_text_writes_it(rt, ws):
    command = 'cat > n.txt << EOF\nprint("a\\n")\nEOF'
    assert rt.call("shell_write", {"command": command}).ok
    assert (ws / "n.txt").read_text() == 'print("a\\n")\n'


def test_a_dash_heredoc_strips_leading_tabs_as_the_shell_does(rt, ws):
    command = "cat > n.txt <<-'EOF'\n\t\tx = 1\n\t  y\n\tEOF\n"
    assert rt.call("shell_write", {"command": command}).ok
    assert (ws / "n.txt").read_text() == "x = 1\n  y\n"


@pytest.mark.parametrize("path", ["$HOME/x", "~/x", "*.md", "&2", '"$HOME/x"', "a;b"])
def test_a_path_the_shell_would_expand_is_refused(rt, ws, path):
    refused(rt, ws, "shell_write", {"command": f"cat > {path} <<'EOF'\nhi\nEOF"}, "INVALID_ARGS")


def test_a_single_quoted_path_is_literal(rt, ws):
    assert rt.call("shell_write", {"command": "cat > '$x.txt' <<'EOF'\nhi\nEOF"}).ok
    assert (ws / "$x.txt").read_text() == "hi\n"


def test_shell_write_bounds_the_heredocs_in_one_command(rt, ws):
    """Each append copies the file so far: twenty thousand on a 3.6 MB file took 28 s."""
    command = "cat >> README.md <<'EOF'\nx\nEOF\n" * 201
    assert "at most 200" in refused(rt, ws, "shell_write", {"command": command}, "INVALID_ARGS")


# -- write_file (and shell_write's overwrite) -------------------------------------------


@pytest.mark.parametrize("path", [".", "pkg", "pkg/"])
@pytest.mark.parametrize("tool", ["write_file", "shell_write"])
def test_writing_over_a_folder_is_refused_when_proposed(rt, ws, tool, path):
    """Staged as a new file, "." was committed "successfully": nothing written but a
    temporary file left in the workspace."""
    args = (
        {"path": path, "content": "x\n"}
        if tool == "write_file"
        else {"command": f"cat > {path} <<'EOF'\nx\nEOF"}
    )
    refused(rt, ws, tool, args, "INVALID_ARGS")


def test_writing_over_a_fifo_is_refused(rt, ws):
    os.mkfifo(ws / "pipe")
    refused(rt, ws, "write_file", {"path": "pipe", "content": "x"}, "NOT_A_REGULAR_FILE")


def test_whole_file_writes_keep_the_size_limit_create_keeps(ws):
    rt = Runtime(ws, toolset="broad", settings=Settings(max_file_bytes=1_000))
    big = "x" * 2_000 + "\n"
    refused(rt, ws, "write_file", {"path": "n.txt", "content": big}, "FILE_TOO_LARGE")
    refused(rt, ws, "write_file", {"path": "README.md", "content": big}, "FILE_TOO_LARGE")
    command = f"cat >> README.md <<'EOF'\n{big}EOF"
    refused(rt, ws, "shell_write", {"command": command}, "FILE_TOO_LARGE")


def test_whole_file_writes_keep_the_file_conventions(rt, ws):
    (ws / "w.txt").write_bytes(b"\xef\xbb\xbfa\r\nb\r\n")
    assert rt.call("write_file", {"path": "w.txt", "content": "x\ny"}).ok
    assert (ws / "w.txt").read_bytes() == b"\xef\xbb\xbfx\r\ny"
    command = "cat >> w.txt <<'EOF'\nz\u2028\x0c\rq\nEOF"
    assert rt.call("shell_write", {"command": command}).ok
    assert (ws / "w.txt").read_bytes() == "\ufeffx\r\ny\r\nz\u2028\x0c\rq\r\n".encode()


# -- ast_* symbol tools -----------------------------------------------------------------


def _notebook(ws: Path) -> None:
    cells = [
        ["import os\n", "\n", "def f():\n", "    return 1\n"],
        ["def g():\n", "    return 2"],
    ]
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": f"c{i}",
                "metadata": {},
                "outputs": [],
                "source": source,
            }
            for i, source in enumerate(cells, 1)
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (ws / "n.ipynb").write_text(json.dumps(nb, indent=1) + "\n")


def _sources(ws: Path) -> list[str]:
    return ["".join(c["source"]) for c in json.loads((ws / "n.ipynb").read_text())["cells"]]


@pytest.mark.parametrize(
    ("tool", "args", "cells"),
    [
        (
            "ast_replace_symbol",
            {"symbol": "g", "new_source": "def g():\n    return 3\n"},
            ["import os\n\ndef f():\n    return 1\n", "def g():\n    return 3"],
        ),
        (
            "ast_delete_symbol",
            {"symbol": "n.ipynb::g"},
            ["import os\n\ndef f():\n    return 1\n", ""],
        ),
        (
            "ast_insert_symbol",
            {"anchor": "g", "position": "before", "new_source": "def h():\n    return 0\n"},
            [
                "import os\n\ndef f():\n    return 1\n",
                "def h():\n    return 0\n\n\ndef g():\n    return 2",
            ],
        ),
    ],
    ids=["replace", "delete", "insert"],
)
def test_symbol_tools_edit_a_notebook_definition_inside_its_cell(rt, ws, tool, args, cells):
    """A definition at the top of a cell took the cell's marker along as an attached
    comment: replacing g merged its cell into the one before."""
    _notebook(ws)
    obs = rt.call(tool, args)
    assert obs.ok, obs.output
    assert _sources(ws) == cells


@pytest.mark.parametrize(
    ("address", "code"),
    [
        ("../x.py::f", "PATH_OUTSIDE_WORKSPACE"),
        ("/etc/x.py::f", "PATH_OUTSIDE_WORKSPACE"),
        ("nope.py::add", "FILE_NOT_FOUND"),
        ("pkg/::add", "FILE_NOT_FOUND"),
        (".git/x.py::f", "PATH_FORBIDDEN"),
    ],
)
def test_a_symbol_address_with_a_bad_path_is_refused_by_its_path(rt, ws, address, code):
    """Each of these was an INTERNAL_ERROR (a KeyError in the symbol index)."""
    refused(rt, ws, "ast_delete_symbol", {"symbol": address}, code)


def test_a_symbol_address_with_an_absolute_path_inside_works(rt, ws):
    address = f"{ws / 'pkg' / 'core.py'}::sub"
    assert rt.call("ast_delete_symbol", {"symbol": address}).ok
    assert "def sub" not in (ws / "pkg/core.py").read_text()


def test_ambiguous_and_missing_symbols_are_refused(rt, ws):
    (ws / "pkg/more.py").write_text("def add(a, b):\n    return 0\n")
    new = "def add(a, b):\n    return 1\n"
    refused(rt, ws, "ast_replace_symbol", {"symbol": "add", "new_source": new}, "AMBIGUOUS_SYMBOL")
    refused(rt, ws, "ast_delete_symbol", {"symbol": "mul"}, "SYMBOL_NOT_FOUND")
    assert rt.call("ast_replace_symbol", {"symbol": "pkg/more.py::add", "new_source": new}).ok
    assert (ws / "pkg/more.py").read_text() == new


# -- refusals name the arguments of the tool that was called ---------------------------------

XML = '<edit path="a.py"><old>{}</old><new>= 2</new></edit>'


@pytest.mark.parametrize(
    ("tool", "args", "code", "says"),
    [
        ("str_replace", {"path": "a.py", "old": "", "new": "x"}, "INVALID_ARGS", "old is empty"),
        (
            "str_replace",
            {"path": "a.py", "old": "x = 1", "new": "x = 1"},
            "NO_CHANGE",
            "old and new",
        ),
        ("str_replace", {"path": "a.py", "old": "nowhere", "new": "x"}, "NOT_FOUND", "old was not"),
        (
            "str_replace",
            {"path": "a.py", "old": "= 1", "new": "= 2"},
            "AMBIGUOUS_MATCH",
            "old occurs",
        ),
        ("xml_edit", {"block": XML.format("= 1")}, "AMBIGUOUS_MATCH", "the <old> text occurs"),
        ("xml_edit", {"block": XML.format("nowhere")}, "NOT_FOUND", "the <old> text was not"),
        ("xml_edit", {"block": XML.format("= 2")}, "NO_CHANGE", "the <old> text and the <new>"),
    ],
)
def test_a_refusal_names_the_arguments_of_the_tool_called(rt, ws, tool, args, code, says):
    """Attack: a broad-toolset edit the runtime refuses. Bug: the message spoke of
    `old_string`, `new_string`, `replace_all` and `create`, the intent tools' words, which
    this toolset does not have: the model was told to set an argument it cannot send."""
    (ws / "a.py").write_text("x = 1\ny = 1\n")
    message = refused(rt, ws, tool, args, code)
    assert says in message
    for word in ("old_string", "new_string", "replace_all", "use create"):
        assert word not in message


def test_the_intent_tools_keep_their_own_words(ws):
    (ws / "a.py").write_text("x = 1\ny = 1\n")
    p = Runtime(ws).propose(
        "replace_string", {"path": "a.py", "old_string": "= 1", "new_string": "= 2"}
    )
    assert p.error is not None and "old_string occurs 2 times" in p.error.message
    assert "set replace_all" in p.error.message
