"""Each tool, and each error code a tool can return."""

from __future__ import annotations

import json

from grinta_jupyter import Runtime
from tests.conftest import snapshot


def test_read_numbers_lines_and_ranges(rt):
    obs = rt.call("read", {"path": "pkg/core.py", "start_line": 4, "end_line": 5})
    assert obs.ok
    assert obs.output.splitlines() == [
        "pkg/core.py (lines 4-5 of 9)",
        "     4\tdef add(a, b):",
        "     5\t    return a + b",
    ]


def test_read_is_bounded_and_says_how_to_continue(ws):
    (ws / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 1001)))
    from grinta_jupyter.tools.base import Settings

    rt = Runtime(ws, settings=Settings(read_max_lines=100))
    out = rt.call("read", {"path": "big.txt"}).output
    assert "lines 1-100 of 1000" in out
    assert "continue with start_line=101" in out
    assert "line 101\n" not in out


def test_read_missing_file_and_folder_listing(rt):
    assert rt.propose("read", {"path": "nope.py"}).error.code == "FILE_NOT_FOUND"
    listing = rt.call("read", {"path": "."}).output
    assert "pkg/core.py" in listing and "README.md" in listing


def test_read_range_past_end(rt):
    assert (
        rt.propose("read", {"path": "pkg/core.py", "start_line": 99}).error.code == "INVALID_ARGS"
    )


def test_create_refuses_existing_file(rt, ws):
    p = rt.propose("create", {"path": "README.md", "content": "x"})
    assert p.error.code == "FILE_EXISTS"
    assert (ws / "README.md").read_text() == "# demo\n"


def test_create_stages_a_diff_from_dev_null(rt):
    p = rt.propose("create", {"path": "hello.py", "content": "print('hi')\n"})
    assert p.ok
    assert p.diff.startswith("--- /dev/null\n+++ b/hello.py\n@@ -0,0 +1 @@\n+print('hi')")


def test_replace_string_unique_match(rt, ws):
    p = rt.propose(
        "replace_string", {"path": "pkg/core.py", "old_string": "a - b", "new_string": "b - a"}
    )
    assert p.ok and "-    return a - b\n+    return b - a" in p.diff
    assert "a - b" in (ws / "pkg/core.py").read_text(), "propose must not write"
    assert rt.commit(p).ok
    assert "b - a" in (ws / "pkg/core.py").read_text()


def test_ambiguous_match_lists_every_candidate_with_context(rt):
    p = rt.propose(
        "replace_string", {"path": "pkg/core.py", "old_string": "(a, b)", "new_string": "(x, y)"}
    )
    assert p.error.code == "AMBIGUOUS_MATCH"
    assert [(c.path, c.line) for c in p.error.candidates] == [
        ("pkg/core.py", 4),
        ("pkg/core.py", 8),
    ]
    assert (
        "     3\t\n     4\tdef add(a, b):\n     5\t    return a + b"
        in p.error.candidates[0].snippet
    )


def test_replace_all(rt, ws):
    obs = rt.call(
        "replace_string",
        {
            "path": "pkg/core.py",
            "old_string": "(a, b)",
            "new_string": "(x, y)",
            "replace_all": True,
        },
    )
    assert obs.ok
    assert (ws / "pkg/core.py").read_text().count("(x, y)") == 2


def test_not_found_reports_indentation_near_miss(rt):
    p = rt.propose(
        "replace_string",
        {"path": "pkg/core.py", "old_string": "def add(a, b):\n  return a + b", "new_string": "x"},
    )
    assert p.error.code == "NOT_FOUND"
    assert p.error.candidates[0].line == 4
    assert "indentation" in p.error.candidates[0].note


def test_not_found_reports_escapes(rt):
    p = rt.propose(
        "replace_string",
        {
            "path": "pkg/core.py",
            "old_string": "def add(a, b):\\n    return a + b",
            "new_string": "x",
        },
    )
    assert p.error.code == "NOT_FOUND" and "escapes" in p.error.candidates[0].note


def test_not_found_reports_up_to_three_similar_regions(ws):
    body = "".join(
        f"def handler_{i}(event):\n    return process(event, {i})\n\n" for i in range(10)
    )
    (ws / "h.py").write_text(body)
    rt = Runtime(ws)
    p = rt.propose(
        "replace_string",
        {
            "path": "h.py",
            "old_string": "def handler_3(event):\n    return proces(event, 3)",
            "new_string": "x",
        },
    )
    assert p.error.code == "NOT_FOUND"
    assert 1 <= len(p.error.candidates) <= 3
    assert p.error.candidates[0].line == 10
    assert "similar" in p.error.candidates[0].note


def test_not_found_with_nothing_similar_has_no_candidates(rt):
    p = rt.propose(
        "replace_string", {"path": "pkg/core.py", "old_string": "zebra crossing", "new_string": "x"}
    )
    assert p.error.code == "NOT_FOUND" and p.error.candidates == ()


def test_no_change(rt):
    p = rt.propose(
        "replace_string", {"path": "pkg/core.py", "old_string": "a + b", "new_string": "a + b"}
    )
    assert p.error.code == "NO_CHANGE"


def test_multiedit_is_one_transaction(rt, ws):
    p = rt.propose(
        "multiedit",
        {
            "edits": [
                {"path": "pkg/core.py", "old_string": "def add", "new_string": "def plus"},
                {
                    "path": "pkg/core.py",
                    "old_string": "def plus(a, b):",
                    "new_string": "def plus(a, b):  # sum",
                },
                {"path": "README.md", "old_string": "# demo", "new_string": "# plus"},
            ]
        },
    )
    assert p.ok, p.error
    assert p.paths == ["pkg/core.py", "README.md"]
    assert rt.commit(p).ok
    assert "def plus(a, b):  # sum" in (ws / "pkg/core.py").read_text()
    assert (ws / "README.md").read_text() == "# plus\n"
    assert rt.undo().ok
    assert "def add(a, b):\n" in (ws / "pkg/core.py").read_text()
    assert (ws / "README.md").read_text() == "# demo\n"


def test_multiedit_refused_whole_naming_the_failing_part(rt, ws):
    before = snapshot(ws)
    p = rt.propose(
        "multiedit",
        {
            "edits": [
                {"path": "README.md", "old_string": "# demo", "new_string": "# x"},
                {"path": "pkg/core.py", "old_string": "no such text", "new_string": "y"},
            ]
        },
    )
    assert p.error.code == "NOT_FOUND"
    assert p.error.message.startswith("edit 2 of 2 (pkg/core.py)")
    assert not rt.commit(p).ok
    assert snapshot(ws) == before


def test_search_text_regex_and_bounds(ws):
    (ws / ".gitignore").write_text("ignored/\n")
    (ws / "ignored").mkdir()
    (ws / "ignored" / "x.py").write_text("def add(): pass\n")
    for i in range(80):
        (ws / f"f{i}.txt").write_text("needle\n")
    rt = Runtime(ws)
    out = rt.call("search", {"query": "def add", "path": "pkg"}).output
    assert "pkg/core.py:4: def add(a, b):" in out
    assert "ignored/" not in rt.call("search", {"query": "def add"}).output
    out = rt.call("search", {"query": "needle"}).output
    assert "80 matching lines in 80 files (30 not shown" in out
    out = rt.call("search", {"query": r"return a [+-] b", "regex": True}).output
    assert "2 matching lines" in out
    assert rt.propose("search", {"query": "(", "regex": True}).error.code == "INVALID_ARGS"


def test_run_reports_exit_code_and_bounds_output(ws):
    from grinta_jupyter.tools.base import Settings

    rt = Runtime(ws, settings=Settings(run_output_chars=300))
    p = rt.propose("run", {"command": "python3 -c \"print('x'*2000); print('TAIL')\"; exit 3"})
    assert p.ok and p.needs_approval
    obs = rt.commit(p)
    assert obs.ok and obs.exit_code == 3
    assert (
        "exit code 3" in obs.output and "TAIL" in obs.output and "characters omitted" in obs.output
    )


def test_run_timeout_kills_the_process_group(rt, ws):
    marker = ws / "survived"
    command = f"(sleep 3; touch {marker}) & sleep 30"
    obs = rt.call("run", {"command": command, "timeout": 0.5})
    assert not obs.ok and obs.error.code == "COMMAND_TIMEOUT"
    import time

    time.sleep(3.5)
    assert not marker.exists(), "the background child should have been killed with its group"


def test_finish_and_unknown_tool_and_bad_args(rt):
    assert rt.call("finish", {"summary": "done"}).output == "done"
    p = rt.propose("replace_strin", {})
    assert p.error.code == "UNKNOWN_TOOL" and "replace_string" in p.error.message
    p = rt.propose(
        "replace_string", {"path": "a", "old_string": "x", "new_string": "y", "bogus": 1}
    )
    assert p.error.code == "INVALID_ARGS" and "bogus" in p.error.message
    p = rt.propose("replace_string", '{"path": "a", "old_string": ')
    assert p.error.code == "INVALID_ARGS" and "JSON" in p.error.message
    p = rt.propose(
        "replace_string",
        json.dumps({"path": "pkg/core.py", "old_string": "a - b", "new_string": "a-b"}),
    )
    assert p.ok


def test_errors_render_for_the_model(rt):
    p = rt.propose(
        "replace_string", {"path": "pkg/core.py", "old_string": "(a, b)", "new_string": "(x, y)"}
    )
    text = p.error.render()
    assert text.startswith("ERROR AMBIGUOUS_MATCH:")
    assert "[1] pkg/core.py:4" in text and "[2] pkg/core.py:8" in text


def test_run_strips_terminal_colours(rt):
    obs = rt.call("run", {"command": "printf '\\033[32m\\033[1m44 passed\\033[0m in 0.1s\\n'"})
    assert obs.output.endswith("44 passed in 0.1s")
