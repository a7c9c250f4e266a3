"""``grinta run`` starts without loading the token encoding and ends without waiting for
litellm's background import.

Loading o200k holds the interpreter's lock for 0.6-0.8 s, and a session counts every
request's tokens before sending it (the log records them). The commands that run a
session start the counting helper first (``runtime/counting.py``), which loads the
encoding in a process of its own meanwhile: the first request goes out without tiktoken
loaded in the command's process, and the counts logged are the encoding's.

A first call to a local server goes out before litellm is imported, and a thread then
imports it for the calls after; the command ends when its session has, not when that
import does (``cli.console``, ``litellm_model.end_without_import``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grinta_jupyter.agent.context import count_request_tokens
from grinta_jupyter.events import models as ev
from grinta_jupyter.events.log import read_log
from tests.openai_server import OpenAIServer, Reply, stall_reply, tool_reply
from tests.test_attacks_acp_exit import planned_import
from tests.test_cli_lasting import ENTRY

REPO = Path(__file__).resolve().parent.parent


def _env(tmp_path: Path, server: OpenAIServer) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("GRINTA_", "OPENAI_"))}
    return {
        **keep,
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO),
        "GRINTA_MODEL": "openai/test",  # unknown to litellm: its first call needs no litellm
        "GRINTA_API_BASE": server.url,
        "GRINTA_API_KEY": "sk-test",
        "GRINTA_LOG_DIR": str(tmp_path / "logs"),
    }


def _workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("X = 1\n")
    return root


def _mapped(pid: int, name: str) -> bool:
    return name in Path(f"/proc/{pid}/maps").read_text()


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/<pid>/maps")
def test_the_first_request_goes_out_before_the_process_loads_the_encoding(
    tmp_path: Path,
) -> None:
    root = _workspace(tmp_path)
    with OpenAIServer() as server:
        server.queue(stall_reply(30))
        process = subprocess.Popen(
            [sys.executable, "-m", "grinta_jupyter.cli", "run", "--auto", "read a.py"],
            cwd=root,
            env=_env(tmp_path, server),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while not server.requests and time.monotonic() < deadline:
                assert process.poll() is None, "grinta run ended before its first request"
                time.sleep(0.01)
            assert server.requests, "no request within a minute"
            # While the first reply stalls: tiktoken's extension is not in the process.
            assert not _mapped(process.pid, "_tiktoken"), "the encoding was loaded in-process"
            helpers = subprocess.run(
                ["pgrep", "-P", str(process.pid), "-f", "o200k_base"],
                capture_output=True,
                text=True,
                check=False,
            )
            assert helpers.stdout.strip(), "no counting helper beside the session"
        finally:
            process.kill()
            process.wait(timeout=30)


def test_the_counts_the_helper_makes_are_the_encoding_s(tmp_path: Path) -> None:
    """A whole session counted by the helper: each request's logged count is what this
    process's encoding counts for the request the server received."""
    root = _workspace(tmp_path)
    with OpenAIServer() as server:
        server.queue(
            tool_reply(("c1", "read", '{"path": "a.py"}'), text="Reading caf\u00e9 \U0001f600"),
            *[tool_reply(("c2", "finish", '{"summary": "read a.py"}'))] * 3,
        )
        done = subprocess.run(
            [sys.executable, "-m", "grinta_jupyter.cli", "run", "--auto", "read a.py"],
            cwd=root,
            env=_env(tmp_path, server),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        received = [r.body for r in server.requests]
    logs = sorted((tmp_path / "logs").rglob("*.jsonl"))
    assert len(logs) == 1, logs
    logged = [e.tokens for e in read_log(logs[0]) if isinstance(e, ev.ModelRequest)]
    assert len(logged) == len(received) >= 2
    expected = [count_request_tokens(body["messages"], body.get("tools", [])) for body in received]
    assert logged == expected


def _run_while_litellm_imports(
    tmp_path: Path, replies: list[Reply], *options: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``grinta run --auto OPTIONS "read a.py"`` with litellm's import taking a minute;
    what it did (it must end within 40 s), and the import's mark."""
    root = _workspace(tmp_path)
    variables, mark = planned_import(tmp_path, "60")
    with OpenAIServer() as server:
        server.queue(*replies)
        env = {**_env(tmp_path, server), **variables}
        env["PYTHONPATH"] = os.pathsep.join([variables["PYTHONPATH"], str(REPO)])
        try:
            done = subprocess.run(
                [*ENTRY, "run", "--auto", *options, "read a.py"],
                cwd=root,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=40,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise AssertionError("grinta run waited for litellm's import") from None
    assert mark.exists(), "litellm's import never started: the test saw nothing"
    assert not Path(f"{mark}.done").exists()
    return done, mark


def _ends(tmp_path: Path) -> list[ev.SessionEnd]:
    logs = sorted((tmp_path / "logs").rglob("*.jsonl"))
    assert len(logs) == 1, logs
    return [e for e in read_log(logs[0]) if isinstance(e, ev.SessionEnd)]


def test_a_short_session_ends_the_command_without_waiting_for_litellm_s_import(
    tmp_path: Path,
) -> None:
    """litellm's import takes a minute here; the command ends once the session has, with
    its status, its summary printed and its exit handlers run."""
    replies = [
        tool_reply(("c1", "read", '{"path": "a.py"}')),
        *[tool_reply(("c2", "finish", '{"summary": "read a.py"}'))] * 3,
    ]
    done, _ = _run_while_litellm_imports(tmp_path, replies)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "summary: read a.py" in done.stdout
    assert [e.reason for e in _ends(tmp_path)] == ["finished"]


def test_the_exit_status_is_kept_when_the_import_is_cut_short(tmp_path: Path) -> None:
    """A session that ends otherwise than finished (its step limit) exits with the status
    it would have had after the import."""
    replies = [tool_reply(("c1", "read", '{"path": "a.py"}'))] * 3
    done, _ = _run_while_litellm_imports(tmp_path, replies, "--max-steps", "1")
    assert done.returncode not in (0, -9), (done.returncode, done.stderr[-2000:])
    ends = _ends(tmp_path)
    assert len(ends) == 1 and ends[0].reason != "finished"
