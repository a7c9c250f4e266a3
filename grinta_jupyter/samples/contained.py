"""Running a task's test command so that nothing it starts outlives it or holds it.

    ended = run_contained([python, "-m", "pytest"], cwd=root, env=env, timeout=120)
    ended.exit_code     # None when the timeout ended it
    ended.output        # the end of what it printed (stdout and stderr), at most keep_chars

Used by every check that runs a test suite: the bundled tasks' (``samples.core``) and the
built tasks' (``experiment.taskdir``). The command runs in a session of its own, its output
goes to a file (a process it left behind holding a pipe could keep a reader waiting for
ever), and when it ends, at the timeout, or on an interrupt, everything it started ends:
its process group, and every process that carries the run's mark in its environment
(``end_marked``), a daemon that left the group (``setsid``, a double fork) included.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

__all__ = ["MARKED_END_SECONDS", "RUN_MARK", "Ended", "end_marked", "run_contained"]

# The environment variable that marks every process a test run starts (``end_marked``).
RUN_MARK = "GRINTA_TEST_RUN"
MARKED_END_SECONDS = 5.0  # at most, to end what a test run left running


@dataclass(frozen=True)
class Ended:
    """How a contained command ended: ``exit_code`` None when its timeout ended it."""

    exit_code: int | None
    output: str
    seconds: float


def run_contained(
    command: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    keep_chars: int,
) -> Ended:
    """Run ``command`` in ``cwd`` with ``env`` (plus the run's mark) for at most ``timeout``
    seconds; keep the last ``keep_chars`` characters of its output. Raises what ``Popen``
    raises when the command cannot start (no such program)."""
    env = {**env, RUN_MARK: uuid.uuid4().hex}
    mark = f"{RUN_MARK}={env[RUN_MARK]}"
    started = time.monotonic()
    with tempfile.TemporaryFile(prefix="grinta-output-") as output:
        child = subprocess.Popen(
            list(command),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            child.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:  # also on Ctrl-C: the group has a session of its own, the terminal's
            # interrupt never reaches it, and a mutant that loops would loop on, orphaned
            with contextlib.suppress(ProcessLookupError):  # and whatever it left running
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            end_marked(mark)  # a daemon (setsid, a double fork) left the group, not the mark
        text = tail(output, keep_chars)
    return Ended(None if timed_out else child.returncode, text, time.monotonic() - started)


def end_marked(mark: str, limit: float = MARKED_END_SECONDS) -> list[int]:
    """Kill every process whose environment holds ``mark`` (``RUN_MARK=<token>``); return their ids.

    A test command's processes inherit the mark, and keep it when they leave its process group
    or session (``setsid``, a double fork) and when their parent dies; so the mark, not the
    process tree, says what the run started. (A subreaper, the other way to keep hold of
    orphans, is a property of the whole process: it cannot tell apart the orphans of two test
    runs going at once in one process, as ``grinta tasks build`` runs them, and in a notebook's
    kernel it would collect every orphan of the kernel.) Processes are listed again until none
    carries the mark, so one forked while the others were killed ends too, within ``limit``
    seconds. A process that clears its environment before it execs is not found. Without
    ``/proc`` (not Linux) nothing is found: only the process group ends there.
    """
    needle = mark.encode()
    ended: list[int] = []
    deadline = time.monotonic() + limit
    while True:
        marked = [pid for pid in _process_ids() if _carries(pid, needle)]
        if not marked:
            return ended
        for pid in marked:
            _kill(pid, needle)
            ended.append(pid)
        if time.monotonic() > deadline:
            return ended
        time.sleep(0.005)  # let the killed die before they are listed again


def _process_ids() -> list[int]:
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    return [int(name) for name in names if name.isdigit() and int(name) != os.getpid()]


def _carries(pid: int, needle: bytes) -> bool:
    """Whether process ``pid`` runs with ``needle`` among its environment variables."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return needle in environ.read().split(b"\0")
    except OSError:  # gone, or another user's
        return False


def _kill(pid: int, needle: bytes) -> None:
    """SIGKILL ``pid``, through a pidfd where there is one: the id is checked again once held,
    so an id reused by an unrelated process in between is never killed."""
    try:
        if hasattr(os, "pidfd_open"):
            handle = os.pidfd_open(pid)
            try:
                if _carries(pid, needle):
                    signal.pidfd_send_signal(handle, signal.SIGKILL)
            finally:
                os.close(handle)
        else:
            os.kill(pid, signal.SIGKILL)
    except OSError:  # ended in between
        pass


def tail(file: BinaryIO, chars: int) -> str:
    """The last ``chars`` characters of ``file``, read from its end only."""
    size = file.seek(0, os.SEEK_END)
    file.seek(max(0, size - 4 * chars))  # a character is at most four bytes
    return file.read().decode(errors="replace")[-chars:]
