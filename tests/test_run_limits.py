"""``run`` stays inside its limits: time, process tree, memory, input, environment.

Every test uses real processes. Each one that starts a process gives it a
unique tag in its command line (``sleep 1000.123456``) and asserts, through
the ``tag`` fixture, that no process carrying it is alive afterwards.
Upper bounds on time (``< 10`` s) prove "does not hang", not speed.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime.process import (
    MARKER_VAR,
    MAX_COMMAND_BYTES,
    OutputBuffer,
    run_command,
)
from grinta_jupyter.runtime.proposal import CommandProposal
from grinta_jupyter.tools.base import Settings
from grinta_jupyter.tools.run import execute, render_output, strip_ansi

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the process tree is found through /proc"
)
PYTHON = sys.executable


def alive(tag: str) -> list[int]:
    """Live processes (zombies have no command line) whose command line holds ``tag``."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            except OSError:
                continue
            if tag.encode() in cmdline:
                found.append(int(name))
    return found


def marked(marker: str) -> list[int]:
    """Live processes whose environment carries this command's marker."""
    entry = f"{MARKER_VAR}={marker}".encode()
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if entry in Path(f"/proc/{name}/environ").read_bytes():
                    found.append(int(name))
            except OSError:
                continue
    return found


def wait_for(condition, seconds: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return bool(condition())


@pytest.fixture
def tag() -> Iterator[str]:
    """A unique sleep length: a process with it in its command line is ours."""
    value = f"{1000 + random.random():.6f}"
    yield value
    leftovers = alive(value)
    for pid in leftovers:  # leave the machine clean even when the test failed
        os.kill(pid, signal.SIGKILL)
    assert leftovers == [], f"processes outlived their command: {leftovers}"


def timed(rt: Runtime, args: dict[str, object]):  # type: ignore[no-untyped-def]
    started = time.monotonic()
    obs = rt.call("run", args)
    return obs, time.monotonic() - started


def daemon(tag: str, then: str = "") -> str:
    """A classic double-forked daemon that keeps stdout open, then ``then``."""
    code = (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(float(sys.argv[1]))\n"
        "    os._exit(0)\n"
        "os.wait()\n"
        "print('daemon started', flush=True)\n"
    )
    return f'{PYTHON} -c "{code}" {tag}; {then}'


# -- 1. the whole tree ends with the command -------------------------------------------


def test_timeout_kills_children_that_left_the_group(rt, tag):
    command = (
        f"setsid sleep {tag} & nohup sleep {tag} >/dev/null 2>&1 & sleep {tag} &"
        f" echo started; setsid sleep {tag}"
    )
    obs, elapsed = timed(rt, {"command": command, "timeout": 1})
    assert not obs.ok and obs.error.code == "COMMAND_TIMEOUT"
    assert "killed" in obs.error.message and "started" in obs.output
    assert elapsed < 10


def test_background_jobs_end_when_the_command_exits(rt, tag):
    obs, elapsed = timed(rt, {"command": f"sleep {tag} & (sleep {tag} &); echo done"})
    assert obs.ok and obs.exit_code == 0 and obs.output.endswith("done")
    assert "2 background process" in obs.output
    assert elapsed < 10  # not held by the sleep, which keeps stdout open


def test_double_forked_daemon_holding_stdout_ends_with_the_command(rt, tag):
    obs, elapsed = timed(rt, {"command": daemon(tag, "echo after")})
    assert obs.ok and "daemon started" in obs.output and obs.output.endswith("after")
    assert elapsed < 10


def test_double_forked_daemon_is_killed_on_timeout(rt, tag):
    obs, elapsed = timed(rt, {"command": daemon(tag, f"sleep {tag}"), "timeout": 1})
    assert obs.error.code == "COMMAND_TIMEOUT" and "daemon started" in obs.output
    assert elapsed < 10


def test_many_children_in_sessions_of_their_own(rt, tag):
    command = f"for i in $(seq 40); do setsid sleep {tag} & done; wait"
    obs, elapsed = timed(rt, {"command": command, "timeout": 1})
    assert obs.error.code == "COMMAND_TIMEOUT" and elapsed < 10


def test_a_pipe_held_outside_the_tree_does_not_hang_the_call(rt, tag):
    # The command hands its stdout to a process outside its tree (this test) and exits;
    # the pipe never reaches end of file, yet the call returns.
    path = str(Path(rt.root).parent / "holder.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(1)
    held: list[int] = []

    def hold() -> None:
        conn, _ = server.accept()
        held.extend(socket.recv_fds(conn, 16, 4)[1])
        conn.close()

    holder = threading.Thread(target=hold)
    holder.start()
    send = (
        "import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]);"
        " socket.send_fds(s, [b'x'], [1])"
    )
    try:
        obs, elapsed = timed(rt, {"command": f'{PYTHON} -c "{send}" {path}; echo sent {tag}'})
        holder.join(10)
        assert held, "the command did not hand over its stdout"
        assert obs.ok and "sent" in obs.output and elapsed < 10
    finally:
        for fd in held:
            os.close(fd)
        server.close()


def test_the_command_killing_its_supervisor_still_ends_the_tree(rt, tag):
    obs, elapsed = timed(rt, {"command": f"kill -9 $PPID; echo alone; sleep {tag}", "timeout": 5})
    assert not obs.ok and obs.error.code == "COMMAND_FAILED"
    assert "supervisor was killed" in obs.error.message
    assert elapsed < 10  # the marker found the shell and the sleep


def test_the_command_cancelling_its_supervisor_ends_the_tree(rt, tag):
    obs, elapsed = timed(rt, {"command": f"sleep {tag} & kill -TERM $PPID; sleep {tag}"})
    assert not obs.ok and obs.error.code == "COMMAND_FAILED"
    assert "told to stop" in obs.error.message and elapsed < 10


def test_the_command_stopping_its_supervisor_still_ends_on_time(rt, tag):
    obs, elapsed = timed(rt, {"command": f"kill -STOP $PPID; sleep {tag}", "timeout": 1})
    assert not obs.ok and obs.error.code == "COMMAND_TIMEOUT"
    assert elapsed < 15


def running(tag: str) -> bool:
    """The command ``sleep TAG`` itself runs (not only its supervisor or shell)."""
    return any(
        Path(f"/proc/{pid}/cmdline").read_bytes() == f"sleep\0{tag}\0".encode()
        for pid in alive(tag)
    )


def _caller(tmp_path: Path, tag: str, started: Callable[[str], bool]) -> subprocess.Popen[str]:
    """A process calling ``run_command`` (as a kernel would), waiting in it."""
    script = tmp_path / "caller.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import os
            from grinta_jupyter.runtime.process import run_command
            run_command("sleep {tag}", ".", dict(os.environ), 60, 10_000)
            """
        )
    )
    caller = subprocess.Popen(
        [PYTHON, str(script)], cwd=tmp_path, stderr=subprocess.PIPE, text=True
    )
    assert wait_for(lambda: started(tag)), "the command did not start"
    return caller


def test_an_interrupted_call_ends_the_tree(tmp_path, tag):
    caller = _caller(tmp_path, tag, running)
    caller.send_signal(signal.SIGINT)  # Jupyter's interrupt: KeyboardInterrupt in the call
    _, err = caller.communicate(timeout=10)
    assert "KeyboardInterrupt" in err
    assert alive(tag) == []  # gone by the time the call has let the interrupt through


@pytest.mark.parametrize("when", [running, alive], ids=["running", "starting"])
def test_a_killed_caller_still_ends_the_tree(tmp_path, tag, when):
    caller = _caller(tmp_path, tag, when)
    caller.kill()  # a kernel restart: no finally runs; the supervisor hears of it
    caller.communicate(timeout=10)
    assert wait_for(lambda: not alive(tag))


def test_the_fallback_without_a_subreaper_finds_escapees_by_marker(ws, tag):
    result = run_command(
        f"setsid sleep {tag} & echo id=${MARKER_VAR}",
        ws,
        dict(os.environ),
        10,
        10_000,
        subreaper=False,
    )
    assert not result.contained and result.exit_code == 0
    marker = result.output.head.decode().strip().removeprefix("id=")
    assert len(marker) == 32 and result.stopped == 1
    assert marked(marker) == []


def test_the_fallback_kills_escapees_on_timeout(ws, tag):
    result = run_command(
        f"setsid sleep {tag} & sleep {tag}", ws, dict(os.environ), 1, 10_000, subreaper=False
    )
    assert result.timed_out and result.exit_code is None and result.elapsed < 10


def test_timeout_reports_the_output_so_far(rt, tag):
    obs = rt.call("run", {"command": f"echo before; sleep {tag}; echo later", "timeout": 0.5})
    assert obs.error.code == "COMMAND_TIMEOUT"
    assert obs.output.startswith(
        "ERROR COMMAND_TIMEOUT: command timed out after 0.5s and was killed"
    )
    assert obs.output.endswith("before")


def test_timeout_is_capped(ws):
    rt = Runtime(ws, settings=Settings(run_max_timeout=30))
    assert rt.propose("run", {"command": "true", "timeout": 1e9}).timeout == 30
    assert rt.propose("run", {"command": "true", "timeout": float("inf")}).timeout == 30
    assert rt.propose("run", {"command": "true", "timeout": 0}).error.code == "INVALID_ARGS"
    for bad in (float("nan"), -1.0):  # a hand-made proposal: the default applies
        proposal = CommandProposal("run", {}, command="echo ok", timeout=bad)
        assert execute(proposal, rt.workspace, rt.settings).output.endswith("ok")


# -- 2. memory stays bounded whatever the command prints ----------------------------------

FLOOD = """
import re, sys
from grinta_jupyter import Runtime

def peak_kb():
    return int(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1))

rt = Runtime(sys.argv[1])
rt.call("run", {"command": "true"})  # everything imported: what follows is the capture alone
before = peak_kb()
obs = rt.call("run", {"command": sys.argv[2]})
print(peak_kb() - before, obs.ok, len(obs.output))
print(obs.output)
"""


@pytest.mark.parametrize(
    "command",
    [
        "yes | head -c 400000000",
        f"{PYTHON} -c \"import sys\nfor _ in range(400): sys.stdout.write('x' * 1_000_000)\"",
    ],
    ids=["yes", "python"],
)
def test_a_flood_of_output_keeps_memory_bounded(ws, tmp_path, command):
    script = tmp_path / "flood.py"
    script.write_text(FLOOD)
    done = subprocess.run(
        [PYTHON, str(script), str(ws), command], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    growth_kb, ok, length, *_ = done.stdout.split(maxsplit=3)
    assert int(growth_kb) < 50 * 1024, f"peak memory grew by {growth_kb} kB"
    assert ok == "True" and int(length) < Settings().run_output_chars + 200
    assert "the command printed 400000000 bytes" in done.stdout


def test_capture_keeps_head_and_tail(ws):
    rt = Runtime(ws, settings=Settings(run_capture_bytes=3_000, run_output_chars=100_000))
    code = "print('HEAD'); print('x' * 1_000_000); print('TAIL')"
    obs = rt.call("run", {"command": f'{PYTHON} -c "{code}"'})
    assert obs.ok and "HEAD" in obs.output and obs.output.endswith("TAIL")
    assert "middle omitted: the command printed 1000011 bytes" in obs.output
    assert len(obs.output) < 3_200


def test_output_buffer_bounds():
    buffer = OutputBuffer(9)
    for chunk in (b"abcd", b"efgh" * 10, b"", b"XYZ"):
        buffer.feed(chunk)
    assert buffer.head == b"abc" and buffer.tail == b"ghefghXYZ"[-6:]
    assert buffer.total == 47 and buffer.omitted == 47 - 9
    empty = OutputBuffer(0)
    empty.feed(b"anything")
    assert empty.head == b"" and empty.tail == b"" and empty.omitted == 8
    small = OutputBuffer(100)
    small.feed(b"short")
    assert small.head + small.tail == b"short" and small.omitted == 0


def test_endless_output_until_the_timeout(rt):
    obs, elapsed = timed(rt, {"command": "yes", "timeout": 1})
    assert obs.error.code == "COMMAND_TIMEOUT" and elapsed < 10
    assert "middle omitted" in obs.output and len(obs.output) < Settings().run_output_chars + 300


def test_no_descriptors_leak(rt, tag):
    before = len(os.listdir("/proc/self/fd"))
    for command in ("true", f"sleep {tag} & echo x", "exit 4"):
        rt.call("run", {"command": command})
    rt.call("run", {"command": f"sleep {tag}", "timeout": 0.2})
    assert len(os.listdir("/proc/self/fd")) == before


def test_non_utf8_output_is_decoded_with_replacement(rt):
    obs = rt.call("run", {"command": r"printf '\377\376 ok \303\n'"})
    assert obs.ok and "\ufffd\ufffd ok \ufffd" in obs.output


def test_terminal_codes_are_stripped_in_linear_time(rt):
    hostile = "\x1b]" * 300_000 + "end"  # OSC openers and never a BEL: quadratic before
    started = time.monotonic()
    stripped = strip_ansi(hostile)
    assert time.monotonic() - started < 5 and stripped.endswith("end")
    codes = "\x1b[38;5;196mred\x1b[0m \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1b]0;title\x07done"
    assert strip_ansi(codes) == "red link done"
    obs = rt.call("run", {"command": "for i in $(seq 20000); do printf '\\033]'; done; echo end"})
    assert obs.ok and obs.output.endswith("end")


def test_render_output_marks_what_was_cut():
    buffer = OutputBuffer(30)
    raw = b"\x1b[1mHEAD\x1b[0m" + b"." * 1000 + b"\xffTAIL"
    buffer.feed(raw)
    text = render_output(buffer, 12)
    assert text.startswith("HEAD") and text.endswith("\ufffdTAIL")
    assert f"the command printed {len(raw)} bytes" in text


# -- 3. bad input is a value, never an exception -----------------------------------------


def _direct(ws: Path, command: str, settings: Settings | None = None):  # type: ignore[no-untyped-def]
    """``execute`` on a proposal that skipped staging (a replayed or hand-made one)."""
    rt = Runtime(ws, settings=settings)
    proposal = CommandProposal("run", {"command": command}, command=command)
    return execute(proposal, rt.workspace, rt.settings)


def test_nul_byte_is_refused(rt, ws):
    p = rt.propose("run", {"command": "echo a\x00b"})
    assert p.error.code == "INVALID_ARGS" and "NUL" in p.error.message
    obs = _direct(ws, "echo a\x00b")
    assert not obs.ok and obs.error.code == "INVALID_ARGS"


def test_overlong_commands_are_refused(ws):
    rt = Runtime(ws)
    limit = rt.settings.run_max_command_chars
    p = rt.propose("run", {"command": "echo " + "x" * limit})
    assert p.error.code == "INVALID_ARGS" and str(limit) in p.error.message
    # More characters allowed than exec takes bytes in one argument.
    wide = Runtime(ws, settings=Settings(run_max_command_chars=10 * MAX_COMMAND_BYTES))
    p = wide.propose("run", {"command": "echo " + "é" * MAX_COMMAND_BYTES})
    assert p.error.code == "INVALID_ARGS" and "bytes" in p.error.message
    assert rt.propose("run", {"command": "echo \ud800"}).error.code == "INVALID_ARGS"
    assert _direct(ws, "echo " + "x" * limit).error.code == "INVALID_ARGS"


def test_a_long_command_within_the_limits_runs(rt):
    command = "echo " + "😀" * 30_000  # 120,005 bytes: one exec argument holds it
    obs = rt.call("run", {"command": command})
    assert obs.ok and "😀😀😀" in obs.output


def test_a_deleted_workspace_is_a_value(ws):
    rt = Runtime(ws)
    p = rt.propose("run", {"command": "echo hi"})
    shutil.rmtree(ws)
    obs = rt.commit(p)
    assert not obs.ok and obs.error.code == "WORKSPACE_MISSING"
    ws.write_text("a file where the folder was")
    obs = rt.commit(rt.propose("run", {"command": "echo hi"}))
    assert obs.error.code == "WORKSPACE_MISSING"


def test_a_failure_to_start_is_a_value(rt, monkeypatch):
    # One environment string longer than exec accepts: the start itself fails (E2BIG).
    monkeypatch.setenv("HUGE_VALUE", "x" * (MAX_COMMAND_BYTES + 10))
    obs = rt.call("run", {"command": "echo hi"})
    assert not obs.ok and obs.error.code == "IO_ERROR"
    assert "starting the command" in obs.error.message


def test_exit_status_and_closed_stdin(rt):
    obs = rt.call("run", {"command": "cat; pwd; kill -TERM $$"})
    assert obs.ok and obs.exit_code == -signal.SIGTERM
    assert str(rt.root) in obs.output


# -- 4. secrets stay out of commands -----------------------------------------------------


def test_secrets_do_not_reach_commands(ws, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_0123456789abcdef")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Ada Lovelace")
    rt = Runtime(ws, settings=Settings(run_pass_env=("GITHUB_TOKEN",)))
    obs = rt.call("run", {"command": 'echo "[$OPENAI_API_KEY] [$GIT_AUTHOR_NAME] [$GITHUB_TOKEN]"'})
    assert obs.ok and "[] [Ada Lovelace] [ghp_0123456789abcdef]" in obs.output
    assert "sk-test" not in rt.call("run", {"command": "env"}).output
    assert Path(PYTHON).parent.as_posix() in rt.call("run", {"command": "echo $PATH"}).output
