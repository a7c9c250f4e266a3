"""Attacks on the warming's hold of litellm's import and on the cold scan's use of grep.

(B) A cold first resolve parses only the files ``grep`` says hold the name: its answer
must be the full index's (every definition of an ambiguous name), whatever the tree
holds and whatever ``grep`` the PATH finds. (A) ``%grinta`` holds litellm's import
while an early first call is out: in every case litellm ends up imported, nothing waits
longer than the hold's cap, and the session behaves as usual.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import time
from pathlib import Path

import pytest

from grinta_jupyter.code import index as index_module
from grinta_jupyter.code.index import SymbolIndex, _files_holding
from tests.kernels import execute, running_kernel, wait_for
from tests.openai_server import OpenAIServer, Reply, stall_reply, tool_call, tool_reply

GREP = shutil.which("grep")
DEF = b"def wanted_name():\n    pass\n"


def _notebook(source: str) -> str:
    cell = {"cell_type": "code", "execution_count": None, "id": "c1", "metadata": {}}
    cell |= {"outputs": [], "source": source.splitlines(keepends=True)}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def _shape(resolution) -> tuple:
    def rows(symbols):
        return sorted(f"{s.path}::{s.qualname}" for s in symbols)

    return rows(resolution.matches), rows(resolution.passed_over)


def _cold(root: Path, name: str, monkeypatch, grep_answers: bool = False) -> tuple:
    calls = []
    real = index_module._files_holding

    def spy(*args):
        calls.append(real(*args))
        return calls[-1]

    monkeypatch.setattr(index_module, "_files_holding", spy)
    index = SymbolIndex(root)
    try:
        answer = _shape(index.resolve(name))
    finally:
        index.close()
        monkeypatch.setattr(index_module, "_files_holding", real)
    assert calls, "the cold scan was not used"
    assert not grep_answers or None not in calls, "grep handed back"
    return answer


def _full(root: Path, name: str) -> tuple:
    index = SymbolIndex(root)
    try:
        index.refresh()
        return _shape(index.resolve(name))
    finally:
        index.close()


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "ignored").mkdir(parents=True)
    outside = tmp_path / "outside.py"
    outside.write_bytes(DEF)
    files = {
        "a.py": DEF,
        "line\nbreak.py": DEF,
        "-dash.py": b"class wanted_name:\n    pass\n",
        "--.py": DEF,
        "l" * 240 + ".py": DEF,
        "ignored/x.py": DEF,
        ".gitignore": b"ignored/\n",
        "mention.py": b"x = wanted_name  # only a use\n",
        "dollar1.js": b"function $foo() { return 1; }\n",
        "dollar2.js": b"function $foo() { return 2; }\n",
        "nb.ipynb": _notebook("def wanted_name():\n    return 3\n").encode(),
    }
    for name, data in files.items():
        (root / name).write_bytes(data)
    with contextlib.suppress(OSError, UnicodeError):  # a name not UTF-8 (some refuse it)
        (root / os.fsdecode(b"bad\xff.py")).write_bytes(DEF)
    (root / "inside_link.py").symlink_to(root / "a.py")
    (root / "outside_link.py").symlink_to(outside)
    (root / "loop.py").symlink_to(root / "loop.py")
    (root / "dangling.py").symlink_to(root / "missing.py")
    os.mkfifo(root / "fifo.py")
    os.mkfifo(root / "pipe")
    (root / "fifo_link.py").symlink_to(root / "pipe")
    return root


@pytest.mark.parametrize("unreadable", [True, False])
@pytest.mark.parametrize("name", ["wanted_name", "$foo", "nowhere_at_all"])
def test_cold_answer_on_a_hostile_tree_is_the_full_indexs(hostile, name, unreadable, monkeypatch):
    if not unreadable:  # without them grep answers (else the read here does)
        (hostile / "loop.py").unlink()
        (hostile / "dangling.py").unlink()
    assert _cold(hostile, name, monkeypatch, not unreadable) == _full(hostile, name)


def test_a_definition_written_right_after_grep_answered_is_not_missed(tmp_path, monkeypatch):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "one.py").write_bytes(DEF)
    (root / "late.py").write_bytes(b"x = 1\n")
    real = index_module._files_holding

    def then_write(*args):
        found = real(*args)
        (root / "late.py").write_bytes(b"x = 1\n" + DEF)  # after grep read it
        return found

    monkeypatch.setattr(index_module, "_files_holding", then_write)
    index = SymbolIndex(root)
    try:
        answer = _shape(index.resolve("wanted_name"))
    finally:
        index.close()
    assert answer[0] == ["late.py::wanted_name", "one.py::wanted_name"]


def test_grep_skips_links_to_fifos_and_reports_loops_as_unknown(hostile):
    names = ["a.py", "fifo_link.py", "fifo.py", "inside_link.py"]
    assert _files_holding(str(hostile), names, b"wanted_name") == {"a.py", "inside_link.py"}
    # A link loop, a dangling link: grep cannot read them, the read here decides.
    assert _files_holding(str(hostile), ["a.py", "loop.py"], b"wanted_name") is None
    assert _files_holding(str(hostile), ["a.py", "dangling.py"], b"wanted_name") is None


def test_very_long_paths_either_scan_right_or_hand_back(tmp_path):
    # 500 paths of ~3.9 KB: one batch over the kernel's limit on arguments (E2BIG).
    deep = tmp_path / "/".join(["d" * 200] * 18)
    deep.mkdir(parents=True)
    names = []
    for i in range(500):
        (deep / f"f{i:03}.py").write_bytes(DEF if i % 50 == 0 else b"x = 1\n")
        names.append(os.path.relpath(deep / f"f{i:03}.py", tmp_path))
    found = _files_holding(str(tmp_path), names, b"wanted_name")
    assert found is None or found == {n for n in names if int(n[-6:-3]) % 50 == 0}


def _fake_grep(folder: Path, body: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "grep"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def test_a_grep_whose_Z_is_not_null_cannot_hide_definitions(tmp_path, monkeypatch):
    # BSD grep (macOS, FreeBSD): -Z is --decompress, names end in newlines, not NULs.
    # A grep answering in a format the scan does not expect must hand back, not drop.
    root = tmp_path / "ws"
    root.mkdir()
    (root / "one.py").write_bytes(DEF)
    (root / "two.py").write_bytes(DEF)
    (root / "nb.ipynb").write_text(_notebook("def wanted_name():\n    return 3\n"))
    full = _full(root, "wanted_name")
    assert len(full[0]) == 3
    _fake_grep(tmp_path / "bin", f'shift\nexec {GREP} -lF "$@"')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert _cold(root, "wanted_name", monkeypatch) == full


def test_a_grep_in_the_workspace_is_never_run(tmp_path, monkeypatch):
    # An empty PATH entry (or ".") means the current folder: a kernel's is the workspace.
    root = tmp_path / "ws"
    root.mkdir()
    (root / "one.py").write_bytes(DEF)
    marker = tmp_path / "ran"
    _fake_grep(root, f"touch {marker}\nexit 1")
    monkeypatch.chdir(root)
    monkeypatch.setenv("PATH", f"{os.pathsep}{os.environ['PATH']}")
    _files_holding(str(root), ["one.py"], b"wanted_name")
    assert not marker.exists(), "a file of the workspace ran as grep"


# -- (A) in a kernel: the hold always ends, litellm always loads --------------------------

KEY = "sk-test-attack-0000000000000000"


def _env(server: OpenAIServer, model: str = "openai/test-model") -> dict[str, str]:
    return {
        "GRINTA_MODEL": model,
        "GRINTA_API_BASE": server.url,
        "GRINTA_API_KEY": KEY,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


def _flag(kc, expression: str) -> bool:
    return execute(kc, f"import grinta_jupyter; print(bool({expression}))").strip() == "True"


def _wait_request(server: OpenAIServer, count: int = 1, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while len(server.requests) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(server.requests) >= count, "the session sent no request"


def test_stop_during_a_stalled_first_call_releases_the_hold_at_once(tmp_path):
    (tmp_path / "README.md").write_text("# hello\n")
    with OpenAIServer() as server:
        server.queue(stall_reply(40, before_headers=True))
        with running_kernel(tmp_path, _env(server)) as kc:
            execute(kc, "%load_ext grinta_jupyter")
            execute(kc, "%grinta read the README")
            _wait_request(server)
            assert not _flag(kc, "grinta_jupyter._model_released.is_set()")
            stopped = time.monotonic()
            execute(kc, "%grinta stop")
            wait_for(kc, "grinta_jupyter.current().done", timeout=30)
            # Released by the session's end, not by the 10 s cap.
            assert _flag(kc, "grinta_jupyter._model_released.is_set()")
            assert time.monotonic() - stopped < 8
            wait_for(kc, "grinta_jupyter._warmed.is_set()")
            assert _flag(kc, "'litellm' in __import__('sys').modules")


def test_a_server_that_never_answers_holds_litellm_for_ten_seconds_at_most(tmp_path):
    with OpenAIServer() as server:
        server.queue(stall_reply(60, before_headers=True))
        with running_kernel(tmp_path, _env(server)) as kc:
            execute(kc, "%load_ext grinta_jupyter")
            execute(kc, "%grinta greet me")
            _wait_request(server)
            started = time.monotonic()
            assert not _flag(kc, "'litellm' in __import__('sys').modules")  # held
            # litellm is in sys.modules from its import's first line: this times the hold
            # alone, not the import after it (seconds on a loaded machine), nor the warming's
            # later wait for a first card that never comes (MODEL_HOLD_S again).
            wait_for(kc, "'litellm' in __import__('sys').modules", timeout=40)
            assert time.monotonic() - started < 25  # 10 s, and the checks' own time
            wait_for(kc, "'model' in grinta_jupyter._warming_times", timeout=120)  # it loads
            assert not _flag(kc, "grinta_jupyter.current().done")  # the call still waits
            execute(kc, "%grinta stop")


def test_a_second_session_replacing_a_waiting_one_gets_its_card_and_litellm(tmp_path):
    (tmp_path / "README.md").write_text("# hello\n")
    with OpenAIServer() as server:
        server.queue(
            stall_reply(40, before_headers=True),
            Reply(tool_calls=[tool_call("read", {"path": "README.md"})]),
            tool_reply(tool_call("finish", {"summary": "read it"})),
        )
        with running_kernel(tmp_path, _env(server)) as kc:
            execute(kc, "%load_ext grinta_jupyter")
            execute(kc, "%grinta first task")
            _wait_request(server)
            execute(kc, "import grinta_jupyter; first = grinta_jupyter.current()")
            execute(kc, "%grinta read the README")
            wait_for(kc, "first.done and grinta_jupyter.current() is not first")
            wait_for(kc, "grinta_jupyter.current().steps")
            wait_for(kc, "grinta_jupyter._warmed.is_set()")
            assert _flag(kc, "grinta_jupyter._model_released.is_set()")


@pytest.mark.parametrize(
    "line,env_model",
    [
        ("%grinta --root /nonexistent/nowhere fix it", "openai/test-model"),  # errors
        ("%grinta --manual read the README", "openai/test-model"),  # no loop follows
        ("%grinta status", "openai/test-model"),  # no session at all
        ("%grinta read the README", "openai/gpt-4o-mini"),  # a model litellm knows
        ("%grinta read the README", "ollama_chat/llama3"),  # not openai/: litellm's
        ("%grinta fix the failing test", ""),  # the demo model
    ],
)
def test_a_cell_whose_session_does_not_call_early_releases_at_its_end(tmp_path, line, env_model):
    (tmp_path / "README.md").write_text("# hello\n")
    with OpenAIServer() as server:
        server.queue(tool_reply(tool_call("finish", {"summary": "done"})))
        with running_kernel(tmp_path, _env(server, env_model)) as kc:
            execute(kc, "%load_ext grinta_jupyter")
            execute(kc, "import grinta_jupyter; grinta_jupyter.settle()")
            try:
                execute(kc, line)
            except AssertionError as exc:  # a usage error is the cell's error
                assert "nonexistent" in line, exc
            assert _flag(kc, "grinta_jupyter._model_released.is_set()")
            wait_for(kc, "grinta_jupyter._warmed.is_set()", timeout=30)
