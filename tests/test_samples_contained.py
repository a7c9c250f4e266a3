"""A bundled task's check owns what its tests start.

The check of a bundled task (``samples.core.run_suite``, ``run_node_suite``) runs the
workspace's suite as the agent left it. Code under test that starts a daemon (a server the
tests forgot to stop, ``setsid``, a double fork) must not outlive the check, hold its ports
and files, or keep the check waiting on a pipe it holds open.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from grinta_jupyter.samples.contained import run_contained
from grinta_jupyter.samples.core import copy_workspace, run_node_suite, run_suite

DAEMON_TEST = """
import os, subprocess


def test_starts_a_daemon_and_passes():
    # Leaves its process group and session (a server the tests forgot to stop).
    subprocess.Popen(
        ["sh", "-c", "echo $$ > {pid}; exec sleep 300"],
        start_new_session=True,
    )
    for _ in range(500):
        if os.path.exists("{pid}") and open("{pid}").read().strip():
            break
        __import__("time").sleep(0.01)
"""


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def wait_gone(pid: int, seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not alive(pid)


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux's /proc")
def test_a_daemon_the_bundled_suite_starts_ends_with_the_check(tmp_path: Path) -> None:
    root = copy_workspace("raft_kv", tmp_path / "raft_kv")
    pid_file = tmp_path / "daemon.pid"
    (root / "tests" / "test_zz_daemon.py").write_text(DAEMON_TEST.format(pid=pid_file))
    run = run_suite(root, "tests/test_zz_daemon.py", timeout=60)
    assert run.exit_code == 0, run.output
    pid = int(pid_file.read_text())
    assert wait_gone(pid), f"the daemon {pid} outlived the check"


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux's /proc")
def test_a_grandchild_holding_the_output_open_does_not_keep_the_check_waiting(
    tmp_path: Path,
) -> None:
    """A pipe held by what the command left behind is no reason to wait: the command ended."""
    pid_file = tmp_path / "held.pid"
    script = f"setsid sh -c 'echo $$ > {pid_file}; exec sleep 300' & sleep 0.2; echo done"
    started = time.monotonic()
    ended = run_contained(
        ["sh", "-c", script], cwd=tmp_path, env=dict(os.environ), timeout=30, keep_chars=100
    )
    assert ended.exit_code == 0 and ended.output.strip() == "done"
    assert time.monotonic() - started < 20  # not the 30 s timeout: the pipe holder is no wait
    assert wait_gone(int(pid_file.read_text()))


@pytest.mark.skipif(shutil.which("node") is None, reason="the ledger_js tasks need Node 20")
def test_a_daemon_a_node_suite_starts_ends_with_the_check(tmp_path: Path) -> None:
    root = copy_workspace("ledger_js", tmp_path / "ledger_js")
    pid_file = tmp_path / "node-daemon.pid"
    (root / "test" / "zz_daemon.test.js").write_text(
        "import { test } from 'node:test';\n"
        "import { spawn } from 'node:child_process';\n"
        "import { existsSync } from 'node:fs';\n"
        "test('starts a daemon', () => {\n"
        f"  const child = spawn('sh', ['-c', 'echo $$ > {pid_file}; exec sleep 300'],"
        " { detached: true, stdio: 'ignore' });\n"
        "  child.unref();\n"
        "  const until = Date.now() + 3000;\n"
        f"  while (!existsSync('{pid_file}') && Date.now() < until) {{}}\n"
        "});\n"
    )
    run = run_node_suite(root, "test/zz_daemon.test.js", timeout=60)
    assert run.exit_code == 0, run.output
    assert wait_gone(int(pid_file.read_text())), "the daemon outlived the check"
