"""The broad toolset: each tool works, and safety is the runtime's, the same as for intent tools."""

from __future__ import annotations

import pytest

from grinta_jupyter import Runtime
from tests.conftest import snapshot

CORE = "import os\n\n\ndef add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


@pytest.fixture
def rt(ws):
    return Runtime(ws, toolset="broad")


def test_every_write_tool_refuses_paths_outside_and_protected(rt, ws):
    before = snapshot(ws.parent)
    calls = [
        ("write_file", {"path": "../x.py", "content": "x = 1\n"}),
        ("apply_patch", {"patch": "--- /dev/null\n+++ b/../x.py\n@@ -0,0 +1 @@\n+x = 1\n"}),
        ("replace_lines", {"path": "../x.py", "start_line": 1, "end_line": 1, "new_text": "x"}),
        ("insert_at_line", {"path": ".git/config", "line": 1, "text": "x"}),
        ("str_replace", {"path": "/etc/hosts", "old": "a", "new": "b"}),
        ("xml_edit", {"block": '<edit path="../x.py"><old>a</old><new>b</new></edit>'}),
        ("shell_write", {"command": "cat > ../x.py <<'EOF'\nx = 1\nEOF"}),
    ]
    for tool, args in calls:
        p = rt.propose(tool, args)
        assert p.error is not None and p.error.code in (
            "PATH_OUTSIDE_WORKSPACE",
            "PATH_FORBIDDEN",
        ), (tool, p.error)
    assert snapshot(ws.parent) == before


def test_every_write_tool_is_validated(rt, ws):
    broken = [
        ("write_file", {"path": "pkg/core.py", "content": "def f(:\n"}),
        (
            "apply_patch",
            {
                "patch": "--- a/pkg/core.py\n+++ b/pkg/core.py\n@@ -4,2 +4,2 @@\n def add(a, b):\n-    return a + b\n+    return (a + b\n"
            },
        ),
        (
            "replace_lines",
            {"path": "pkg/core.py", "start_line": 5, "end_line": 5, "new_text": "    return (a"},
        ),
        ("insert_at_line", {"path": "pkg/core.py", "line": 5, "text": "    if\n"}),
        ("str_replace", {"path": "pkg/core.py", "old": "a - b", "new": "a -"}),
        ("ast_replace_symbol", {"symbol": "add", "new_source": "def add(a, b):\n    return (\n"}),
        ("xml_edit", {"block": '<edit path="pkg/core.py"><old>a + b</old><new>a +</new></edit>'}),
        ("shell_write", {"command": "cat > pkg/core.py <<'EOF'\ndef (\nEOF"}),
    ]
    before = snapshot(ws)
    for tool, args in broken:
        p = rt.propose(tool, args)
        assert p.error is not None and p.error.code == "SYNTAX_ERROR", (tool, p.error)
    assert snapshot(ws) == before


def test_write_file_creates_and_overwrites(rt, ws):
    assert rt.call("write_file", {"path": "n/new.py", "content": "x = 1\n"}).ok
    assert rt.call("write_file", {"path": "n/new.py", "content": "x = 2\n"}).ok
    assert (ws / "n/new.py").read_text() == "x = 2\n"


def test_apply_patch(rt, ws):
    patch = (
        "--- a/pkg/core.py\n+++ b/pkg/core.py\n@@ -8,2 +8,3 @@\n def sub(a, b):\n-    return a - b\n"
        "+    result = a - b\n+    return result\n--- /dev/null\n+++ b/pkg/extra.py\n@@ -0,0 +1 @@\n+Y = 2\n"
    )
    obs = rt.call("apply_patch", {"patch": patch})
    assert obs.ok, obs.output
    assert (ws / "pkg/core.py").read_text() == CORE.replace(
        "    return a - b\n", "    result = a - b\n    return result\n"
    )
    assert (ws / "pkg/extra.py").read_text() == "Y = 2\n"
    stale = "--- a/pkg/core.py\n+++ b/pkg/core.py\n@@ -8,2 +8,2 @@\n def sub(a, b):\n-    return a - b\n+    return 0\n"
    p = rt.propose("apply_patch", {"patch": stale})
    assert p.error.code == "NOT_FOUND" and "hunk 1" in p.error.message


def test_line_tools(rt, ws):
    assert rt.call(
        "replace_lines",
        {"path": "pkg/core.py", "start_line": 1, "end_line": 1, "new_text": "import sys"},
    ).ok
    assert rt.call("insert_at_line", {"path": "pkg/core.py", "line": 2, "text": "import re"}).ok
    assert (ws / "pkg/core.py").read_text().startswith("import sys\nimport re\n\n\ndef add")
    assert (
        rt.propose(
            "replace_lines",
            {"path": "pkg/core.py", "start_line": 3, "end_line": 99, "new_text": "x"},
        ).error.code
        == "INVALID_ARGS"
    )


def test_symbol_tools(rt, ws):
    assert rt.call(
        "ast_insert_symbol",
        {"anchor": "sub", "position": "after", "new_source": "def mul(a, b):\n    return a * b\n"},
    ).ok
    assert rt.call("ast_delete_symbol", {"symbol": "add"}).ok
    assert rt.call(
        "ast_replace_symbol", {"symbol": "mul", "new_source": "def mul(a, b):\n    return b * a\n"}
    ).ok
    assert (
        (ws / "pkg/core.py").read_text()
        == "import os\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return b * a\n"
    )


def test_xml_edit_and_heredoc_are_parsed_not_executed(rt, ws):
    block = (
        '<edit path="pkg/core.py"><old>a + b</old><new>b + a</new></edit>\n'
        '<edit path="README.md"><old>\n# demo\n</old><new>\n# edited\n</new></edit>'
    )
    assert rt.call("xml_edit", {"block": block}).ok
    assert (
        "b + a" in (ws / "pkg/core.py").read_text()
        and (ws / "README.md").read_text() == "# edited\n"
    )
    command = (
        "cat > notes.txt <<'EOF'\nline one\n$(touch pwned)\nEOF\ncat >> README.md << EOF\nmore\nEOF"
    )
    assert rt.call("shell_write", {"command": command}).ok
    assert (ws / "notes.txt").read_text() == "line one\n$(touch pwned)\n"
    assert (ws / "README.md").read_text() == "# edited\nmore\n"
    assert not (ws / "pwned").exists()
    assert rt.propose("shell_write", {"command": "rm -rf /"}).error.code == "INVALID_ARGS"


def test_str_replace_overlaps_replace_string_semantics(rt):
    p = rt.propose("str_replace", {"path": "pkg/core.py", "old": "(a, b)", "new": "(x, y)"})
    assert p.error.code == "AMBIGUOUS_MATCH" and len(p.error.candidates) == 2
