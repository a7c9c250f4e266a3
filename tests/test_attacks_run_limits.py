"""Attacks on ``run``'s limits that the tests of ``test_run_limits.py`` do not cover.

Every process a test starts ends by itself within seconds even when the product
fails (a deadline in its own code), so a failing test leaves the machine clean.
"""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime.process import run_command
from grinta_jupyter.tools.run import strip_ansi

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the process tree is found through /proc"
)
PYTHON = sys.executable

# A process that forks and lets its parent exit, again and again: at any moment it is a
# different process, younger than a walk of /proc. It writes a heartbeat now and then, and
# gives up by itself after ``LIFE`` seconds.
HOPPER = textwrap.dedent(
    """
    import os, sys, time
    beat, end, setsid = sys.argv[1], time.monotonic() + float(sys.argv[2]), sys.argv[3] == "1"
    n = 0
    while time.monotonic() < end:
        if os.fork():
            os._exit(0)
        if setsid:
            os.setsid()
        n += 1
        if n % 20 == 0:
            with open(beat, "a") as file:
                file.write(".")
    """
)
LIFE = 25.0


def _still_beating(beat: Path, seconds: float = 1.5) -> bool:
    """Whether ``beat`` grows within ``seconds`` (its writer still runs)."""
    before = beat.stat().st_size if beat.exists() else 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.1)
        if (beat.stat().st_size if beat.exists() else 0) != before:
            return True
    return False


@pytest.mark.parametrize("setsid", [False, True], ids=["same-group", "setsid-each-time"])
@pytest.mark.parametrize("wait", [False, True], ids=["exits", "times-out"])
def test_a_process_that_changes_pid_all_the_time_ends_with_the_command(tmp_path, setsid, wait):
    script, beat = tmp_path / "hopper.py", tmp_path / "beat"
    script.write_text(HOPPER)
    hop = f"{PYTHON} {script} {beat} {LIFE} {int(setsid)}"
    # It has to be hopping before the command ends: wait for its first heartbeat.
    started = f"while [ ! -s {beat} ]; do sleep 0.05; done"
    command = f"{hop} & {started}; echo hopping" + ("; sleep 60" if wait else "")
    result = run_command(command, tmp_path, dict(os.environ), 2 if wait else 30, 10_000)
    assert b"hopping" in result.output.head
    assert result.timed_out == wait
    assert result.elapsed < 15
    assert not _still_beating(beat), "a process of the command outlived it"


def test_a_process_that_changes_pid_all_the_time_ends_when_the_supervisor_is_killed(tmp_path):
    # No subreaper holds it then: the caller's backstop finds it by the marker alone.
    script, beat = tmp_path / "hopper.py", tmp_path / "beat"
    script.write_text(HOPPER)
    command = (
        f"{PYTHON} {script} {beat} {LIFE} 1 & while [ ! -s {beat} ]; do sleep 0.05; done;"
        " echo hopping; kill -9 $PPID; sleep 60"
    )
    result = run_command(command, tmp_path, dict(os.environ), 30, 10_000)
    assert b"hopping" in result.output.head and "supervisor was killed" in result.problem
    assert result.elapsed < 15
    assert not _still_beating(beat), "a process of the command outlived it"


# Escapes besides CSI and OSC: a character set (``ESC ( 0`` draws letters as lines), the
# cursor saved and restored (``ESC 7``, ``ESC 8``: what follows is written over what came
# before), a full reset (``ESC c``), a screen filled with E (``ESC # 8``), the keypad mode.
OTHER_ESCAPES = r"printf '\033(0lqk\033(B \0337saved\0338 \033cok \033#8\033= \033'"


def test_no_terminal_escape_of_any_kind_reaches_the_output(rt: Runtime) -> None:
    obs = rt.call("run", {"command": OTHER_ESCAPES})
    assert obs.ok, obs.output
    assert "\x1b" not in obs.output
    assert obs.output.endswith("lqk saved ok")
    codes = "\x1b[38;5;196mred\x1b[0m \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1b]0;title\x07done"
    assert strip_ansi(codes) == "red link done"  # what was stripped before still is


def test_stripping_any_run_of_escapes_takes_linear_time() -> None:
    for hostile in ("\x1b( " * 200_000, "\x1b" * 400_000, "\x1b[1" * 200_000):
        started = time.monotonic()
        stripped = strip_ansi(hostile + "\nend")
        assert time.monotonic() - started < 5
        assert "\x1b" not in stripped and stripped.endswith("end")
