"""Attacks on ``run`` through its supervisor: a command that stops, traces or kills the
process that is to end it, or forges what that process reports.

Every process a test starts ends by itself within 30 s even when the product fails
(``sleep TAG``), and the ``tag`` fixture kills any that is left, so a failing test
leaves the machine clean.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime.process import CommandResult, run_command
from tests.test_run_limits import alive

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the process tree is found through /proc"
)
PYTHON = sys.executable

# Attaches to the process given (the supervisor) and holds it traced: it stops, and no signal
# reaches it until the tracer is gone. Prints whether the kernel let it attach.
TRACER = (
    "import ctypes, sys, time; libc = ctypes.CDLL(None, use_errno=True);"
    " print('attached' if libc.ptrace(16, int(sys.argv[1]), None, None) == 0 else 'refused',"
    " flush=True); time.sleep(float(sys.argv[2]))"
)
# Holds the supervisor stopped: SIGCONT alone does not free it for long.
STOPPER = "while :; do kill -STOP $PPID; done"


@pytest.fixture
def tag() -> Iterator[str]:
    """A unique sleep length, under 30 s: a process with it in its command line is ours."""
    value = f"{20 + random.random() * 9:.6f}"
    yield value
    leftovers = alive(value)
    for pid in leftovers:
        os.kill(pid, signal.SIGKILL)
    assert leftovers == [], f"processes outlived their command: {leftovers}"


def stopped_after(
    command: str, cwd: Path, started: Path, timeout: float
) -> tuple[CommandResult, float]:
    """Run ``command``, pressing Stop once it has created ``started``; (result, seconds from
    Stop to the call's return)."""
    cancel = threading.Event()
    pressed: list[float] = []

    def press() -> None:
        end = time.monotonic() + timeout
        while not started.exists() and time.monotonic() < end:
            time.sleep(0.02)
        time.sleep(0.2)  # the hold on the supervisor is in place
        pressed.append(time.monotonic())
        cancel.set()

    presser = threading.Thread(target=press)
    presser.start()
    result = run_command(command, cwd, dict(os.environ), timeout, 10_000, cancel=cancel)
    presser.join()
    return result, time.monotonic() - pressed[0]


def test_stop_ends_at_once_a_command_that_stopped_its_supervisor(tmp_path, tag):
    """Attack: ``kill -STOP $PPID``. Stop sent SIGTERM alone, which a stopped process keeps
    pending: the call went on to the timeout plus 3 s (123 s at the default timeout), and
    the command ran on all that time."""
    started = tmp_path / "started"
    command = f"kill -STOP $PPID; touch {started}; sleep {tag}"
    result, after_stop = stopped_after(command, tmp_path, started, 8)
    assert result.cancelled and not result.timed_out
    assert after_stop < 4
    assert alive(tag) == []


def test_stop_ends_at_once_a_command_that_traces_its_supervisor(tmp_path, tag):
    """Attack: the command ptrace-attaches to its supervisor (allowed wherever Yama does not
    forbid it, as in many containers): no signal reaches it. The call waited for the
    deadline whatever Stop said."""
    started = tmp_path / "started"
    command = f'{PYTHON} -c "{TRACER}" $PPID {tag} > {started}; sleep {tag}'
    result, after_stop = stopped_after(command, tmp_path, started, 8)
    if "refused" in started.read_text():
        pytest.skip("this system does not let a process trace its ancestors")
    assert result.cancelled and not result.timed_out
    assert after_stop < 5
    assert alive(tag) == []


@pytest.mark.parametrize("hold", ["stopped", "traced"])
def test_a_held_supervisor_lets_no_process_outlive_the_timeout(tmp_path, tag, hold):
    """Attack: the command keeps its supervisor from sweeping (stopped again and again, or
    traced) and starts a process without the marker. The caller killed the supervisor and
    looked for the marker only: the process ran on, re-parented to init."""
    holder = STOPPER if hold == "stopped" else f'{PYTHON} -c "{TRACER}" $PPID {tag}'
    command = f"{holder} & env -u GRINTA_COMMAND sleep {tag}"
    result = run_command(command, tmp_path, dict(os.environ), 1, 10_000)
    assert result.timed_out and result.exit_code is None
    assert result.elapsed < 10
    time.sleep(0.2)
    assert alive(tag) == []


def test_a_forged_status_and_a_killed_supervisor_leave_nothing_running(tmp_path, tag):
    """Attack: the command writes a whole status line of the supervisor's (tree swept,
    nothing left) into its status pipe, starts a process whose output goes elsewhere, and
    kills the supervisor. The line was believed: ``exit code 0``, and the process ran on
    (the backstop looked for the marker only when the status asked for it)."""
    forged = "grinta-supervisor exit=0 timeout=0 cancelled=0 contained=1 stopped=0 left=0"
    command = (
        f"sleep {tag} > /dev/null 2>&1 & printf '\\n{forged}\\n' > /proc/$PPID/fd/2; kill -9 $PPID"
    )
    obs = Runtime(tmp_path).call("run", {"command": command, "timeout": 10})
    assert not obs.ok and obs.error is not None and obs.error.code == "COMMAND_FAILED"
    assert "supervisor was killed" in obs.error.message
    assert alive(tag) == []
