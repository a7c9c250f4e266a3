"""Nothing a file, a path or the model's pattern does freezes the kernel.

Real FIFOs, sockets, symlink loops, large and read-only files in a temporary
workspace. Every call that could hang runs in a daemon thread with a generous
bound, so a regression fails instead of hanging the suite; every refusal is a
ToolError with a stable code and leaves every byte on disk as it was.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.code.index import SymbolIndex, walk_files
from grinta_jupyter.runtime.errors import MAX_CANDIDATES
from grinta_jupyter.runtime.textfile import TextFile
from grinta_jupyter.runtime.workspace import Workspace
from grinta_jupyter.tools.base import Settings, StagedFile
from grinta_jupyter.tools.matching import near_misses
from tests.conftest import snapshot

T = TypeVar("T")
BOUND = 20.0  # seconds: far above what any of these takes; only a hang reaches it


def bounded(call: Callable[[], T], seconds: float = BOUND) -> T:
    """``call()``, failing the test (not hanging it) if it has not returned in ``seconds``."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # re-raised in the test's thread
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        pytest.fail(f"still running after {seconds} s: it hangs")
    if "error" in box:
        raise box["error"]
    return box["value"]


def code(rt: Runtime, tool: str, args: dict[str, Any]) -> str | None:
    proposal = bounded(lambda: rt.propose(tool, args))
    return proposal.error.code if proposal.error else None


# --- 1. regular expressions from the model cannot hang ----------------------------


def test_catastrophic_regex_stops_with_search_timeout(ws):
    (ws / "evil.txt").write_text("a" * 60 + "!\n")
    rt = Runtime(ws, settings=Settings(search_timeout=1.0))
    p = bounded(lambda: rt.propose("search", {"query": "(a|aa)+$", "regex": True}))
    assert p.error.code == "SEARCH_TIMEOUT"
    assert "evil.txt" in p.error.message and "incomplete" in p.error.message
    # The classic example finishes too, whichever way (the regex module may prune it).
    (ws / "classic.txt").write_text("a" * 30 + "!\n")
    bounded(lambda: rt.propose("search", {"query": "(a+)+$", "regex": True, "path": "classic.txt"}))


def test_search_timeout_lists_the_matches_found_before(ws):
    (ws / "a.txt").write_text("needle\n")
    (ws / "b.txt").write_text("a" * 60 + "!\n")
    rt = Runtime(ws, settings=Settings(search_timeout=1.0))
    p = bounded(lambda: rt.propose("search", {"query": "^needle$|(a|aa)+$", "regex": True}))
    assert p.error.code == "SEARCH_TIMEOUT"
    assert [(c.path, c.line) for c in p.error.candidates] == [("a.txt", 1)]


def test_regex_that_would_unroll_too_far_is_refused_before_compiling(rt):
    # The regex module unrolls counted repeats: this one would take gigabytes to compile.
    p = bounded(lambda: rt.propose("search", {"query": "(?:x{65535}){65535}", "regex": True}))
    assert p.error.code == "INVALID_ARGS" and "repeats" in p.error.message
    ok = bounded(
        lambda: rt.propose("search", {"query": r"[0-9a-f]{40}|\d{4}-\d{2}", "regex": True})
    )
    assert ok.ok


def test_a_slow_regex_does_not_hold_the_interpreter(ws):
    (ws / "evil.txt").write_text("a" * 60 + "!\n")
    rt = Runtime(ws, settings=Settings(search_timeout=1.5))
    worker = threading.Thread(
        target=rt.propose, args=("search", {"query": "(a|aa)+$", "regex": True}), daemon=True
    )
    worker.start()
    ticks = 0
    while worker.is_alive() and ticks < 2_000:
        time.sleep(0.01)  # would not get the GIL back while a match held it
        ticks += 1
    assert ticks >= 20, "the main thread stalled while the regex ran"


def test_plain_text_is_literal_and_smart_case(ws):
    (ws / "notes.txt").write_text("Needle here\nneedle there\nx.y(z\n")
    rt = Runtime(ws)
    assert "2 matching lines" in rt.call("search", {"query": "needle"}).output
    assert "1 matching line " in rt.call("search", {"query": "Needle"}).output
    assert "notes.txt:3: x.y(z" in rt.call("search", {"query": "x.y(z"}).output


def test_search_numbers_lines_as_read_does(ws):
    (ws / "odd.txt").write_text("form\x0cfeed\nnext\u2028line\nneedle\n")
    rt = Runtime(ws)
    assert "odd.txt:3: needle" in rt.call("search", {"query": "needle"}).output


# --- 2. FIFOs, sockets and devices are refused without being opened -----------------


def test_fifo_is_refused_unopened_by_reads_and_edits(ws):
    os.mkfifo(ws / "pipe.py")
    os.mkfifo(ws / "pkg" / "pipe.txt")
    rt = Runtime(ws)
    before = snapshot(ws)
    for path in ("pipe.py", "pkg/pipe.txt"):
        assert code(rt, "read", {"path": path}) == "NOT_A_REGULAR_FILE"
        assert code(rt, "read", {"path": path, "outline": True}) == "NOT_A_REGULAR_FILE"
        edit = {"path": path, "old_string": "a", "new_string": "b"}
        assert code(rt, "replace_string", edit) == "NOT_A_REGULAR_FILE"
        assert code(rt, "multiedit", {"edits": [edit]}) == "NOT_A_REGULAR_FILE"
    assert snapshot(ws) == before
    assert stat.S_ISFIFO(os.lstat(ws / "pipe.py").st_mode)


def test_socket_is_refused(ws):
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(ws / "s.sock"))
        rt = Runtime(ws)
        assert code(rt, "read", {"path": "s.sock"}) == "NOT_A_REGULAR_FILE"
        edit = {"path": "s.sock", "old_string": "a", "new_string": "b"}
        assert code(rt, "replace_string", edit) == "NOT_A_REGULAR_FILE"
    finally:
        server.close()


def test_device_through_a_symlink_stays_outside_the_workspace(ws):
    os.symlink("/dev/zero", ws / "zero")
    rt = Runtime(ws)
    assert code(rt, "read", {"path": "zero"}) == "PATH_OUTSIDE_WORKSPACE"
    out = bounded(lambda: rt.call("search", {"query": "anything"})).output
    assert "zero (a link to outside the workspace)" in out


def test_listing_search_and_symbols_pass_over_special_files_and_say_so(ws):
    os.mkfifo(ws / "pipe")
    os.mkfifo(ws / "pkg" / "stuck.py")  # a supported suffix: the symbol index must not open it
    os.mkfifo(ws / "pkg" / ".gitignore")  # read by every walk
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(ws / "sock"))
    try:
        rt = Runtime(ws)
        listing = bounded(lambda: rt.call("read", {"path": "."})).output
        assert "pkg/core.py" in listing
        assert "pipe (a FIFO" in listing and "sock (a socket" in listing
        found = bounded(lambda: rt.call("search", {"query": "return"})).output
        assert "pkg/core.py:5:" in found
        assert "skipped" in found and "pkg/stuck.py (a FIFO" in found
        symbol = bounded(lambda: rt.call("read", {"symbol": "add"}))
        assert symbol.ok and "def add" in symbol.output
        inside = bounded(lambda: rt.call("search", {"query": "x", "path": "pipe"})).output
        assert "pipe (a FIFO" in inside
    finally:
        server.close()


# --- 3. thousands of matches are refused in linear time with a bounded message -------


def _lockfile(ws: Path, entries: int = 6_000) -> str:
    text = "".join(
        f'    "node_modules/pkg{i}": {{\n      "version": "1.0.0",\n    }},\n'
        for i in range(entries)
    )
    (ws / "package-lock.json").write_text("{\n" + text + "}\n")
    return "package-lock.json"


def test_thousands_of_ambiguous_hits_come_back_fast_and_short(ws):
    path = _lockfile(ws)
    rt = Runtime(ws)
    before = snapshot(ws)
    edit = {"path": path, "old_string": '"version": "1.0.0",', "new_string": '"version": "2",'}
    p = bounded(lambda: rt.propose("replace_string", edit), seconds=10)
    assert p.error.code == "AMBIGUOUS_MATCH"
    assert "6000 times" in p.error.message
    assert p.error.candidates[0].line == 3 and p.error.candidates[1].line == 6
    assert '"version": "1.0.0"' in p.error.candidates[0].snippet
    assert len(p.error.candidates) + p.error.more == 6000
    text = p.error.render()
    assert len(text) < 10_000 and "more candidates" in text

    m = bounded(lambda: rt.propose("multiedit", {"edits": [edit]}), seconds=10)
    assert m.error.code == "AMBIGUOUS_MATCH" and m.error.message.startswith("edit 1 of 1")
    assert len(m.error.candidates) + m.error.more == 6000
    assert len(m.error.render()) < 10_000
    assert snapshot(ws) == before


def test_replace_all_on_thousands_of_hits_is_bounded(ws):
    # One line per hit (a lock file's repeated "},"-lines make the diff, not the match, slow).
    (ws / "versions.json").write_text(
        "{\n" + "".join(f'  "pkg{i}": "1.0.0",\n' for i in range(6_000)) + "}\n"
    )
    rt = Runtime(ws, settings=Settings(max_file_bytes=1_000_000))
    every = {
        "path": "versions.json",
        "old_string": "1.0.0",
        "new_string": "2.0.0",
        "replace_all": True,
    }
    p = bounded(lambda: rt.propose("replace_string", every))
    assert p.ok and "replaced 6000 occurrences" in p.summary, p.error
    before = snapshot(ws)
    # 6000 small hits times a large replacement would build a file far over the limit.
    huge = {**every, "new_string": "x" * 10_000}
    p = bounded(lambda: rt.propose("replace_string", huge))
    assert p.error.code == "FILE_TOO_LARGE" and "6000 occurrences" in p.error.message
    assert code(rt, "multiedit", {"edits": [huge]}) == "FILE_TOO_LARGE"
    assert snapshot(ws) == before


def test_near_misses_in_a_20_mb_file_are_bounded_and_say_so(ws):
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa"]
    lines = [f"{words[i % 8]} {words[i * 7 % 8]} {words[i * 3 % 8]} {i}" for i in range(900_000)]
    text = "\n".join(lines) + "\n"
    assert len(text) > 20_000_000
    staged = StagedFile(Workspace(ws).resolve("big.txt"), TextFile.decode(b"x"), text)
    for old in ("zebra crossing", "alpha  beta gamma 1\nno such line", "}}}\n" * 40):
        found, partial = bounded(lambda old=old: near_misses(staged, old))
        assert partial, "a file this long is searched in part, and the result says so"
        assert len(found) <= 3

    (ws / "big.txt").write_text(text)
    rt = Runtime(ws, settings=Settings(max_file_bytes=30_000_000))
    edit = {"path": "big.txt", "old_string": "zebra crossing", "new_string": "x"}
    p = bounded(lambda: rt.propose("replace_string", edit))
    assert p.error.code == "NOT_FOUND" and "part of the file" in p.error.message


def test_a_name_with_hundreds_of_definitions_is_refused_briefly(ws):
    (ws / "many.py").write_text(
        "".join(f"class C{i}:\n    def run(self):\n        return {i}\n\n\n" for i in range(300))
    )
    rt = Runtime(ws)
    p = bounded(lambda: rt.propose("read", {"symbol": "run"}))
    assert p.error.code == "AMBIGUOUS_SYMBOL" and "300 definitions" in p.error.message
    assert len(p.error.candidates) + p.error.more == 300
    assert len(p.error.candidates) < MAX_CANDIDATES
    assert len(p.error.render()) < 10_000
    assert len(p.resolutions[-1].candidates) == len(p.error.candidates)


def test_multiedit_with_too_many_edits_is_refused(rt, ws):
    edits = [{"path": "README.md", "old_string": "# demo", "new_string": "# x"}] * 1_000
    assert code(rt, "multiedit", {"edits": edits}) == "INVALID_ARGS"


# --- 4. symlink loops, long names, permissions ------------------------------------


def test_symlink_loops_are_skipped_by_walks_and_refused_by_reads(ws):
    os.symlink("b", ws / "a")
    os.symlink("a", ws / "b")
    os.symlink("self.py", ws / "self.py")
    os.symlink("..", ws / "pkg" / "up")  # a folder link to its parent
    os.symlink(ws, ws / "pkg" / "root")
    rt = Runtime(ws)
    before = snapshot(ws)
    listing = bounded(lambda: rt.call("read", {"path": "."}))
    assert listing.ok and "pkg/core.py" in listing.output
    assert "a (a symbolic link loop)" in listing.output
    found = bounded(lambda: rt.call("search", {"query": "return a"}))
    assert (
        found.ok
        and "pkg/core.py:5" in found.output
        and "self.py (a symbolic link loop)" in found.output
    )
    assert bounded(lambda: rt.call("read", {"symbol": "sub"})).ok
    assert bounded(lambda: rt.call("read", {"path": "pkg/up/pkg/core.py"})).ok  # a plain path
    for path in ("a", "self.py", "pkg/up/a"):
        assert code(rt, "read", {"path": path}) == "SYMLINK_LOOP"
        edit = {"path": path, "old_string": "x", "new_string": "y"}
        assert code(rt, "replace_string", edit) == "SYMLINK_LOOP"
    assert snapshot(ws) == before


def test_the_index_lister_skips_loops_and_never_opens_fifos(ws):
    os.symlink("b.py", ws / "a.py")
    os.symlink("a.py", ws / "b.py")
    os.symlink("..", ws / "pkg" / "up")
    os.mkfifo(ws / "pkg" / "stuck.py")
    listed = bounded(lambda: set(walk_files(ws)))
    assert "pkg/core.py" in listed and not {"a.py", "b.py", "pkg/up"} & listed
    index = SymbolIndex(ws)  # its own lister: the FIFO is listed, stat'ed, never opened
    assert [s.path for s in bounded(lambda: index.resolve("add")).matches] == ["pkg/core.py"]


def test_search_path_that_is_a_loop_or_missing_says_so(rt, ws):
    os.symlink("loop", ws / "loop")
    assert code(rt, "search", {"query": "x", "path": "loop"}) == "SYMLINK_LOOP"
    assert code(rt, "search", {"query": "x", "path": "nowhere"}) == "FILE_NOT_FOUND"


def test_a_deleted_workspace_is_workspace_missing(tmp_path):
    root = tmp_path / "gone"
    root.mkdir()
    rt = Runtime(root)
    shutil.rmtree(root)
    assert code(rt, "search", {"query": "x"}) == "WORKSPACE_MISSING"
    assert code(rt, "read", {"path": "."}) == "WORKSPACE_MISSING"


def test_a_deep_tree_is_walked_without_recursion():
    # Outside pytest's tmp_path: its clean-up (shutil.rmtree) recurses once per level.
    root = Path(tempfile.mkdtemp())
    chain = [root]
    try:
        for _ in range(1_100):  # deeper than Python's recursion limit
            chain.append(chain[-1] / "d")
            chain[-1].mkdir()
        (chain[-1] / "deep.py").write_text("def deep():\n    return 1\n")
        rt = Runtime(root)
        found = bounded(lambda: rt.call("search", {"query": "return 1"}))
        assert found.ok and "deep.py:2" in found.output
        assert bounded(lambda: rt.call("read", {"symbol": "deep"})).ok
    finally:
        (chain[-1] / "deep.py").unlink(missing_ok=True)
        for folder in reversed(chain[1:]):
            folder.rmdir()
        shutil.rmtree(root)


def test_names_and_paths_over_the_os_limits_are_path_too_long(rt, ws):
    before = snapshot(ws)
    long_name = "n" * 300 + ".py"
    long_path = "/".join(["abcdefgh"] * 600) + "/x.py"
    for path in (long_name, f"pkg/{long_name}", long_path):
        assert code(rt, "read", {"path": path}) == "PATH_TOO_LONG"
        assert code(rt, "create", {"path": path, "content": "x = 1\n"}) == "PATH_TOO_LONG"
        edit = {"path": path, "old_string": "a", "new_string": "b"}
        assert code(rt, "replace_string", edit) == "PATH_TOO_LONG"
        assert code(rt, "search", {"query": "a", "path": path}) == "PATH_TOO_LONG"
    assert snapshot(ws) == before


def test_the_os_saying_name_too_long_is_path_too_long(rt, ws):
    # The link's own path is short; what it names is not (only the OS can tell).
    os.symlink("x" * 300, ws / "short")
    assert code(rt, "read", {"path": "short"}) == "PATH_TOO_LONG"


def test_a_lone_surrogate_in_a_path_is_refused(rt):
    assert code(rt, "read", {"path": "bad\ud800.py"}) == "PATH_FORBIDDEN"


_AS_USER = """
import json, sys
from grinta_jupyter import Runtime
from grinta_jupyter.code.index import SymbolIndex, walk_files
rt = Runtime(sys.argv[1])
edit = {"path": "secret.txt", "old_string": "top", "new_string": "no"}
print(json.dumps({
    "read": rt.propose("read", {"path": "secret.txt"}).error.code,
    "edit": rt.propose("replace_string", edit).error.code,
    "listing": rt.call("read", {"path": "."}).output,
    "search": rt.call("search", {"query": "top"}).output,
}))
"""


def _unprivileged() -> list[str]:
    """A command prefix that runs as an unprivileged user (root is never denied), or skip."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: no unprivileged user to be denied")
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    try:
        probe = subprocess.run(
            [*prefix, sys.executable, "-c", "import grinta_jupyter"],
            capture_output=True,
            timeout=60,
        )
    except OSError as exc:
        pytest.skip(f"cannot run as an unprivileged user here: {exc}")
    if probe.returncode != 0:
        pytest.skip("the package cannot be imported as an unprivileged user here")
    return prefix


def test_permission_errors_are_permission_denied():
    prefix = _unprivileged()
    base = Path(tempfile.mkdtemp())  # not under pytest's tmp_path, which only root may enter
    ws = base / "ws"
    try:
        base.chmod(0o755)
        ws.mkdir()
        (ws / "readme.txt").write_text("top of the list\n")
        (ws / "secret.txt").write_text("top secret\n")
        (ws / "locked").mkdir()
        (ws / "locked" / "inner.txt").write_text("top\n")
        if prefix:  # the workspace belongs to the user; the two denied entries do not
            for path in (ws, ws / "readme.txt"):
                os.chown(path, 65534, 65534)
        (ws / "secret.txt").chmod(0)
        (ws / "locked").chmod(0)
        run = subprocess.run(
            [*prefix, sys.executable, "-c", _AS_USER, str(ws)],
            capture_output=True,
            text=True,
            timeout=BOUND,
        )
        assert run.returncode == 0, run.stderr
        seen = json.loads(run.stdout)
        assert seen["read"] == "PERMISSION_DENIED" and seen["edit"] == "PERMISSION_DENIED"
        assert "readme.txt" in seen["listing"] and "locked/ (permission denied)" in seen["listing"]
        assert "readme.txt:1" in seen["search"]
        assert "secret.txt (" in seen["search"] and "permission denied" in seen["search"]
        (ws / "secret.txt").chmod(0o644)
        assert (ws / "secret.txt").read_text() == "top secret\n"
    finally:
        if (ws / "locked").exists():
            (ws / "locked").chmod(0o755)
        shutil.rmtree(base, ignore_errors=True)


# --- 5. large files are refused with advice, and search names what it skipped -------


def test_large_files_are_refused_with_their_size_and_what_to_do(ws):
    with open(ws / "huge.log", "wb") as handle:
        handle.truncate(48_000_000)  # sparse: 48 MB on paper, nothing to write
    rt = Runtime(ws)
    before = snapshot(ws)
    p = bounded(lambda: rt.propose("read", {"path": "huge.log"}))
    assert p.error.code == "FILE_TOO_LARGE"
    assert "48.0 MB" in p.error.message and "8.0 MB" in p.error.message
    assert "head" in p.error.message
    edit = {"path": "huge.log", "old_string": "a", "new_string": "b"}
    assert code(rt, "replace_string", edit) == "FILE_TOO_LARGE"
    assert snapshot(ws) == before


def test_search_names_every_file_it_skipped(ws):
    (ws / "big.log").write_text("needle\n" * 400_000)  # 2.8 MB: over the 2 MB search limit
    (ws / "blob.bin").write_bytes(b"needle\x00\x01")
    os.mkfifo(ws / "pipe")
    rt = Runtime(ws)
    out = bounded(lambda: rt.call("search", {"query": "needle"})).output
    assert out.startswith("no matches")
    assert "skipped 3 files" in out
    assert "big.log (2.8 MB, over the 2.0 MB limit for search)" in out
    assert "blob.bin (binary)" in out and "pipe (a FIFO" in out


# --- 6. protected patterns ignore case ------------------------------------------------


@pytest.mark.parametrize("path", ["A.IPYNB", "x.IpYnB", "pkg/Notes.Ipynb"])
def test_protected_patterns_match_any_case(ws, path):
    (ws / path).write_text('{"cells": []}\n')
    rt = Runtime(ws, settings=Settings(protected=("*.ipynb",)))
    before = snapshot(ws)
    edit = {"path": path, "old_string": "cells", "new_string": "x"}
    assert code(rt, "replace_string", edit) == "PATH_FORBIDDEN"
    assert code(rt, "create", {"path": path.upper() + ".new.IPYNB", "content": "{}"}) == (
        "PATH_FORBIDDEN"
    )
    assert bounded(lambda: rt.call("read", {"path": path})).ok  # reading stays allowed
    assert snapshot(ws) == before


# --- 7. read-only files are respected --------------------------------------------------


def test_read_only_files_are_refused_at_propose_time(ws):
    target = ws / "pkg" / "core.py"
    target.chmod(0o444)
    rt = Runtime(ws)
    before = snapshot(ws)
    edit = {"path": "pkg/core.py", "old_string": "a + b", "new_string": "b + a"}
    p = bounded(lambda: rt.propose("replace_string", edit))
    assert p.error.code == "READ_ONLY_FILE"
    assert "0444" in p.error.message and "writable" in p.error.message
    assert code(rt, "multiedit", {"edits": [edit]}) == "READ_ONLY_FILE"
    by_symbol = {
        "symbol": "add",
        "action": "replace",
        "new_source": "def add(a, b):\n    return 0\n",
    }
    assert code(rt, "edit_symbols", {"edits": [by_symbol]}) == "READ_ONLY_FILE"
    assert bounded(lambda: rt.call("read", {"path": "pkg/core.py"})).ok
    assert snapshot(ws) == before
    assert stat.S_IMODE(target.stat().st_mode) == 0o444
