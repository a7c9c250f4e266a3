"""Commands whose whole process tree ends with them, and their output read into a bounded buffer.

``run_command`` starts a supervisor, this module run as a script in a fresh
interpreter (``python -I -S process.py TIMEOUT PARENT_PID COMMAND``). It

1. makes itself a *child subreaper* (Linux, ``prctl(PR_SET_CHILD_SUBREAPER)``):
   a process the command starts stays its descendant after ``setsid``,
   ``nohup ... &`` or a double fork, since orphans are re-parented to it and
   not to init. It also asks for SIGTERM should its parent (the kernel) die;
2. starts ``/bin/sh -c COMMAND`` in a session of its own, stdin on
   ``/dev/null``, stdout and stderr on the one pipe the caller reads;
3. waits for the shell to exit, the deadline, or a stop signal (SIGTERM: the
   caller cancelling, or the kernel's death), whichever comes first; then
   SIGKILLs every live process below it (found by walking ``/proc``, again
   and again until none is left, reaping the dead), writes one status line
   to its stderr and exits. A subreaper with no child left has nothing below
   it, so a command that leaves nothing behind costs no walk at all.

Every process of the command also carries a marker in its environment
(``GRINTA_COMMAND``, random per command). It is the backstop: where the tree
cannot be trusted (no subreaper, a supervisor that was killed or did not
finish) whatever still carries the marker is killed too.

The caller reads that pipe in its own thread (``selectors``, no helper thread)
into an ``OutputBuffer`` that keeps the first third and the last two thirds of
``capture_bytes``, so memory stays bounded whatever the command prints. It
returns by ``timeout + KILL_GRACE`` at the latest, even when the supervisor
hangs or a process that got hold of the pipe outside the tree keeps it open:
it reads on for ``DRAIN_GRACE`` after the supervisor exits, stops a
supervisor still running (SIGTERM and SIGCONT; one the command keeps stopped or
traces has the tree below it ended by the caller, from ``/proc``, and is then
killed), kills whatever still carries the marker and closes its end. A stop
(``cancel``) is not kept waiting for the deadline. The status line is believed
only from a supervisor that ended by itself: the command can write to that pipe
too, and a forged line followed by ``kill -9 $PPID`` would say the tree was swept.

What is guaranteed. On Linux, when ``run_command`` returns, no process the
command started is still running: not when the command exits by itself (a
background job, ``server &``, ends with it), not on timeout, not when the
caller is interrupted or killed. Outside the guarantee: work the command hands
to a daemon that was already running (``tmux``, ``systemd-run``, ``docker``,
``at``), and a process that clears the marker from its environment when the
supervisor itself is killed (``kill -9 $PPID``).

Portable fallback. Where ``prctl`` is unavailable (macOS, BSD, a sandbox that
forbids it) the supervisor kills the shell's process group, and, where
``/proc`` exists, what it finds below itself or carrying the marker. A process
that leaves the group (``setsid``, a daemon) may outlive the command on a
system without ``/proc``.

Background services. A command cannot leave a service running: every process
it starts ends with it. Start long-running services (a dev server, a database)
outside the agent, in a terminal or a notebook cell, and let commands talk to
them; or start, use and end one within a single command
(``(server &); sleep 1; pytest``).

Cost: one short-lived interpreter per command, started with ``-I`` (no
``PYTHONPATH``, and not this folder on ``sys.path``, where ``secrets.py``
would shadow the standard module) and ``-S`` (no site-packages ``.pth`` files).
So that start-up stays short this module imports only cheap standard modules
at the top (``dataclasses`` alone would double it) and nothing from the
package; the caller's side imports what else it needs when it runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time

MARKER_VAR = "GRINTA_COMMAND"
SHELL = "/bin/sh"
# Linux MAX_ARG_STRLEN less the NUL: the longest single argument of exec, the command of ``sh -c``.
MAX_COMMAND_BYTES = 131_071
KILL_GRACE = 3.0  # seconds past the timeout the caller waits for the supervisor to end the tree
SWEEP_BUDGET = 2.0  # seconds the supervisor spends killing a tree before it reports what is left
DRAIN_GRACE = 0.5  # seconds the caller reads on after the supervisor exited
STATUS_PREFIX = "grinta-supervisor"
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_CHUNK = 1 << 16
_DRAIN_BYTES = 1 << 20  # the most read from a pipe once the supervisor has ended


# -- the caller's side ---------------------------------------------------------


class OutputBuffer:
    """The first third and the last two thirds of ``limit`` bytes of a stream of any length."""

    def __init__(self, limit: int) -> None:
        self.head_limit = max(limit, 0) // 3
        self.tail_limit = max(limit, 0) - self.head_limit
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        """Keep what ``chunk`` adds to the head and the tail. Costs memory in proportion to
        the limit, not to ``chunk``: executed code writes a whole string at once (``print``
        of 400 MB), and copying it here would raise the kernel's peak by twice its size."""
        self.total += len(chunk)
        rest = memoryview(chunk)  # slices of a view copy nothing
        room = self.head_limit - len(self._head)
        if room > 0:
            self._head += rest[:room]
            rest = rest[room:]
        if not rest or not self.tail_limit:
            return
        if len(rest) >= self.tail_limit:  # the chunk alone fills the tail
            self._tail[:] = rest[len(rest) - self.tail_limit :]
            return
        self._tail += rest
        if len(self._tail) > 2 * self.tail_limit:  # trimmed now and then: linear overall
            del self._tail[: -self.tail_limit]

    @property
    def head(self) -> bytes:
        return bytes(self._head)

    @property
    def tail(self) -> bytes:
        return bytes(self._tail[-self.tail_limit :]) if self.tail_limit else b""

    @property
    def omitted(self) -> int:
        """Bytes read but not kept (the middle)."""
        return self.total - len(self._head) - len(self.tail)


class CommandResult:
    """What a command did, once its whole process tree has ended."""

    def __init__(
        self,
        output: OutputBuffer,
        elapsed: float,
        exit_code: int | None = None,
        timed_out: bool = False,
        cancelled: bool = False,
        stopped: int = 0,
        left: int = 0,
        contained: bool = False,
        problem: str = "",
        detail: str = "",
    ) -> None:
        self.output = output
        self.elapsed = elapsed
        # The shell's exit code, negative for a signal; None when it did not exit by itself.
        self.exit_code = exit_code
        self.timed_out = timed_out
        self.cancelled = cancelled  # the supervisor was told to stop (SIGTERM) before the end
        self.stopped = stopped  # processes still running when the command ended, killed
        self.left = left  # processes that could not be killed within SWEEP_BUDGET
        self.contained = contained  # the subreaper held the tree (False: the fallback)
        self.problem = problem  # what went wrong with the supervisor itself, if anything
        # What its status pipe held instead of a status: the command can write there, so this
        # is the command's text, raw (terminal codes, secrets): clean and cut it before use.
        self.detail = detail


def _stop_when(cancel: threading.Event, supervisor: subprocess.Popen[bytes]) -> None:
    """SIGTERM the supervisor once ``cancel`` is set, unless it ended first; SIGCONT too,
    or one the command stopped (``kill -STOP $PPID``) would hear of it only at the deadline."""
    while supervisor.poll() is None:
        if cancel.wait(0.1):
            with contextlib.suppress(ProcessLookupError):
                supervisor.send_signal(signal.SIGTERM)
                supervisor.send_signal(signal.SIGCONT)
            return


def run_command(
    command: str,
    cwd: str | os.PathLike[str],
    env: dict[str, str],
    timeout: float,
    capture_bytes: int,
    *,
    subreaper: bool = True,
    cancel: threading.Event | None = None,
) -> CommandResult:
    """Run ``command`` with ``/bin/sh`` in ``cwd``; return once its whole process tree has ended.

    ``subreaper=False`` runs the portable fallback, as on a system without
    ``prctl``. Setting ``cancel`` asks the supervisor to end the tree now (SIGTERM),
    as the caller cancelling; the result then says ``cancelled``. Raises ``OSError`` when the command cannot be started (``cwd``
    missing, no processes or descriptors left, a command too long for exec);
    never for anything the command does.
    """
    marker = os.urandom(16).hex()
    argv = [sys.executable, "-I", "-S", _script(), repr(float(timeout)), str(os.getpid()), command]
    if not subreaper:
        argv.append("--no-subreaper")
    started = time.monotonic()
    supervisor = subprocess.Popen(
        argv,
        cwd=cwd,
        env={**env, MARKER_VAR: marker},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # a terminal's Ctrl-C does not reach it; the caller stops it
    )
    assert supervisor.stdout is not None and supervisor.stderr is not None
    if cancel is not None:
        threading.Thread(target=_stop_when, args=(cancel, supervisor), daemon=True).start()
    output, report = OutputBuffer(capture_bytes), OutputBuffer(16_384)
    drained = False
    try:
        drained = _collect(
            supervisor.stdout.fileno(),
            supervisor.stderr.fileno(),
            output,
            report,
            started + timeout + KILL_GRACE,
            cancel,
        )
    finally:  # also on KeyboardInterrupt: the tree must end with the call
        forced = _finish(supervisor)
        # What it wrote after we stopped reading: its status, when we had to stop it.
        drained = _drain(supervisor.stdout.fileno(), output) or drained
        _drain(supervisor.stderr.fileno(), report)
        supervisor.stdout.close()
        supervisor.stderr.close()
        # The command can write to the status pipe too (``/proc/$PPID/fd/2``): a status line
        # is the supervisor's only when it ended by itself, after its sweep. A forged one
        # followed by ``kill -9 $PPID`` would otherwise say the tree was swept, and what it
        # left running (its output elsewhere) was never looked for.
        trusted = supervisor.returncode == 0 and not forced
        status = _parse_status(report.head + report.tail) if trusted else {}
        if not drained or status.get("left", "0") != "0" or status.get("contained") != "1":
            _end_marked(marker)  # the backstop: whatever still carries the marker
    elapsed = time.monotonic() - started
    if "error" in status:
        errno = int(status["error"])
        raise OSError(errno, os.strerror(errno), SHELL)
    if "exit" not in status:  # killed or crashed: no word from the supervisor
        detail = (report.tail if report.omitted else report.head + report.tail).decode(
            errors="replace"
        )
        return CommandResult(
            output,
            elapsed,
            timed_out=elapsed >= timeout,
            cancelled=cancel is not None and cancel.is_set(),
            problem=_HELD if forced else _ended(supervisor.returncode),
            detail="" if forced else detail.strip(),
        )
    exit_code = None if status["exit"] == "-" else int(status["exit"])
    return CommandResult(
        output,
        elapsed,
        exit_code=exit_code,
        # Ours too when we stopped a supervisor that overran (or was stopped) past the deadline.
        timed_out=status.get("timeout") == "1" or (exit_code is None and elapsed >= timeout),
        cancelled=status.get("cancelled") == "1",
        stopped=int(status.get("stopped", "0")),
        left=int(status.get("left", "0")),
        contained=status.get("contained") == "1",
    )


def _finish(supervisor: subprocess.Popen[bytes]) -> bool:
    """Make sure the supervisor has ended, and its tree with it. True when we ended the tree
    ourselves: then its status, if it wrote one, does not say what the command did (a shell
    we killed is no exit code of the command's).

    One still running now overran its deadline, was stopped or traced by the command, or
    the call was interrupted: it is asked to end the tree (SIGTERM, and SIGCONT for one that
    was stopped). One that does not end then has its tree ended by us, from ``/proc`` (it is
    alive, so everything the command started is still below it), and is killed.
    """
    if supervisor.poll() is not None:
        return False
    with contextlib.suppress(ProcessLookupError):
        supervisor.send_signal(signal.SIGTERM)
        supervisor.send_signal(signal.SIGCONT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        supervisor.wait(DRAIN_GRACE)
        return False
    swept = False
    end = time.monotonic() + SWEEP_BUDGET
    while time.monotonic() < end and supervisor.poll() is None:
        live = _survivors(supervisor.pid, "")
        if not live:
            break
        _kill(live)
        swept = True
        time.sleep(0.01)
    with contextlib.suppress(ProcessLookupError):
        supervisor.send_signal(signal.SIGCONT)  # whatever stopped it last is gone now
    with contextlib.suppress(subprocess.TimeoutExpired):
        supervisor.wait(DRAIN_GRACE)  # freed (its tracer killed), or done sweeping: it reports
        return swept
    supervisor.kill()
    # A traced process that was killed is reaped only once its tracer lets go of it: one
    # outside the tree would hold this call for as long as it likes.
    with contextlib.suppress(subprocess.TimeoutExpired):
        supervisor.wait(DRAIN_GRACE)
    return True


def _drain(fd: int, sink: OutputBuffer) -> bool:
    """Read what ``fd`` holds now into ``sink`` without waiting, at most ``_DRAIN_BYTES``
    (a holder outside the tree may write on). True when it ended (no writer left)."""
    os.set_blocking(fd, False)
    read = 0
    while read < _DRAIN_BYTES:
        try:
            chunk = os.read(fd, _CHUNK)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:  # closed already
            return False
        if not chunk:
            return True
        sink.feed(chunk)
        read += len(chunk)
    return False


def _script() -> str:
    """This module for the supervisor to run: its cached bytecode when that was compiled from
    the source as it is now (compiling the source costs about as much again as starting the
    interpreter), else the source.

    A cache is run as it is, never checked against the source: with ``PYTHONDONTWRITEBYTECODE``
    a stale one is not rewritten on import, and would run an older supervisor than the caller.
    """
    source = os.path.abspath(__file__)
    cached = __spec__.cached if __spec__ is not None else None
    return cached if cached and _compiled_from(cached, source) else source


def _compiled_from(cached: str, source: str) -> bool:
    """Whether the bytecode file ``cached`` records ``source``'s current time and size
    (a timestamp-checked ``.pyc`` of this interpreter's magic number)."""
    from importlib.util import MAGIC_NUMBER

    try:
        with open(cached, "rb") as file:
            header = file.read(16)
        info = os.stat(source)
    except OSError:
        return False
    fields = [int.from_bytes(header[i : i + 4], "little") for i in (4, 8, 12)]
    mask = 0xFFFF_FFFF
    return header[:4] == MAGIC_NUMBER and fields == [
        0,
        int(info.st_mtime) & mask,
        info.st_size & mask,
    ]


_HELD = (
    "its supervisor did not end the command in time (the command stopped or traced it),"
    " so the caller ended every process below it"
)


def _ended(code: int) -> str:
    if code < 0:
        return f"its supervisor was killed (signal {-code})"
    return f"its supervisor ended with code {code}"


def _collect(
    out: int,
    err: int,
    output: OutputBuffer,
    report: OutputBuffer,
    deadline: float,
    cancel: threading.Event | None = None,
) -> bool:
    """Read the output and status pipes until both end, ``DRAIN_GRACE`` after the status pipe
    ends or ``cancel`` is set, or ``deadline``. True when the output pipe ended (no one holds
    it any more)."""
    import selectors

    sinks = {out: output, err: report}
    until = deadline
    with selectors.DefaultSelector() as selector:
        for fd in sinks:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            if cancel is not None and cancel.is_set():  # a stop is not kept to the deadline
                until, cancel = min(until, time.monotonic() + DRAIN_GRACE), None
            wait = until - time.monotonic()
            if wait <= 0:
                break
            if cancel is not None:
                wait = min(wait, 0.1)
            for key, _ in selector.select(wait):
                chunk = os.read(key.fd, _CHUNK)
                if chunk:
                    sinks[key.fd].feed(chunk)
                    continue
                selector.unregister(key.fd)
                if key.fd == err:  # the supervisor is gone; a holder of the output pipe escaped it
                    until = min(deadline, time.monotonic() + DRAIN_GRACE)
        return out not in selector.get_map()


def _parse_status(report: bytes) -> dict[str, str]:
    """The supervisor's last status line as fields (``exit=0 timeout=0 ...``), or {}."""
    for line in reversed(report.decode(errors="replace").splitlines()):
        words = line.split()
        if words and words[0] == STATUS_PREFIX:
            return dict(word.partition("=")[::2] for word in words[1:])
    return {}


def _end_marked(marker: str) -> None:
    """Kill every process that carries ``marker`` (the caller cannot reap them; init does).

    A walk of ``/proc`` lists the pids first: a process that forks and lets its parent exit
    without pause (a "pid hopper", in a session of its own each time) has a new pid, higher
    than any listed, by the time the walk reads it, and a walk finds nothing. So each walk is
    followed by a chase at the frontier of pid allocation: the next pids are read as they
    appear, and a carrier of the marker among them is killed, until the frontier has been
    quiet for ``_QUIET`` seconds.
    """
    end = time.monotonic() + SWEEP_BUDGET
    entry = f"{MARKER_VAR}={marker}\0".encode()
    while time.monotonic() < end:
        live = _survivors(None, marker)
        _kill(live)
        if not _chase(entry, end) and not live:
            return
        time.sleep(0.001)


_QUIET = 0.15  # seconds without a carrier at the pid frontier before a chase ends
_AHEAD = 64  # pids read past the newest one seen, each round of a chase


def _chase(entry: bytes, end: float) -> bool:
    """Kill carriers of ``entry`` at the frontier of pid allocation (the newest pid and the
    ``_AHEAD`` after it, read again and again as the frontier moves) until no carrier has
    been there for ``_QUIET`` seconds (or ``end``). True when one was found."""
    limit = _pid_max()
    found = False
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < _QUIET and time.monotonic() < end:
        newest = _newest_pid()
        if newest <= 0:
            return found
        seen = False
        for step in range(-2, _AHEAD):
            pid = (newest + step - 1) % limit + 1 if limit else newest + step
            if entry in _read(f"/proc/{pid}/environ"):
                _kill([pid])
                seen = True
        if seen:
            found, quiet_since = True, time.monotonic()
    return found


def _newest_pid() -> int:
    """The pid allocated last (``/proc/loadavg``'s last field), 0 where it cannot be read."""
    try:
        return int(_read("/proc/loadavg").split()[-1])
    except (ValueError, IndexError):
        return 0


def _pid_max() -> int:
    try:
        return int(_read("/proc/sys/kernel/pid_max").strip() or 0)
    except ValueError:
        return 0


# -- the supervisor's side (a fresh interpreter) -------------------------------


# Signals that ask for the tree to end now: the caller cancelling (SIGTERM), the kernel dying
# (the parent-death signal), a terminal. Kept blocked and taken by ``_pause`` with SIGCHLD, never
# by a handler, so no exception can cut the final sweep short.
_STOP = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})


def supervise(
    command: bytes, timeout: float, parent: int, marker: str, subreaper: bool
) -> dict[str, str]:
    """Run ``command`` to its end, its deadline or a stop signal, then end its whole tree.

    Returns the status fields: ``exit`` (code or ``-``), ``timeout``,
    ``cancelled``, ``contained``, ``stopped``, ``left``, and ``error`` (an
    errno) when the shell could not be started.
    """
    deadline = time.monotonic() + timeout
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # an inherited SIG_IGN would reap behind our back
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD, *_STOP})
    contained = subreaper and _become_subreaper()
    status = {"exit": "-", "timeout": "0", "cancelled": "0", "contained": str(int(contained))}
    shell = 0
    if os.getppid() != parent:  # it died before it could have asked for SIGTERM: run nothing
        status["cancelled"] = "1"
    else:
        try:
            shell = _spawn(command)
        except OSError as exc:
            status["error"] = str(exc.errno or 0)
    if shell:
        code, stop = _wait(shell, deadline)
        status["exit"] = "-" if code is None else str(code)
        status["timeout"] = str(int(code is None and not stop))
        status["cancelled"] = str(int(stop))
    stopped, left = _end_tree(shell, marker, contained)
    status.update(stopped=str(stopped), left=str(left))
    return status


def _spawn(command: bytes) -> int:
    """Start ``sh -c command`` in a session of its own, stderr on stdout. OSError if exec fails.

    Fork and exec rather than ``posix_spawn``: glibc's leaves its internal
    signals 32 and 33 ignored in the child, and the command would inherit that.
    """
    read_end, write_end = os.pipe()  # close-on-exec: it carries an exec failure, and only that
    pid = os.fork()  # this process has a single thread, so forking it is safe
    if pid == 0:
        try:
            os.setsid()
            os.dup2(1, 2)
            for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores these; commands must not
                signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, ())  # exec keeps the mask: unblock all
            os.execv(SHELL, (SHELL, "-c", command))
        except OSError as exc:
            os.write(write_end, str(exc.errno or 0).encode())
        finally:
            os._exit(127)
    os.close(write_end)
    try:
        failure = os.read(read_end, 64)  # nothing once exec succeeded
    finally:
        os.close(read_end)
    if failure:
        os.waitpid(pid, 0)
        raise OSError(int(failure), os.strerror(int(failure)))
    return pid


def _become_subreaper() -> bool:
    """Orphans below us come to us, not to init; and SIGTERM comes should our parent die."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
        zero = ctypes.c_ulong(0)
        if prctl(_PR_SET_CHILD_SUBREAPER, ctypes.c_ulong(1), zero, zero, zero) != 0:
            return False
        prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGTERM), zero, zero, zero)
    except (OSError, AttributeError):  # no libc to load, or no prctl in it
        return False
    return True


def _wait(shell: int, deadline: float) -> tuple[int | None, bool]:
    """Reap children until the shell exits, the deadline passes or a stop signal comes.

    Returns (the shell's exit code, or None; whether a stop signal came).
    """
    while True:
        code, _ = _reap(shell)
        if code is not None:
            return code, False
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None, False
        if _pause(remaining):
            return None, True


def _pause(seconds: float) -> bool:
    """Sleep until a child changes state or a stop signal comes, at most ``seconds``.
    True when a stop signal came."""
    if hasattr(signal, "sigtimedwait"):
        info = signal.sigtimedwait({signal.SIGCHLD, *_STOP}, seconds)
        return info is not None and info.si_signo in _STOP
    time.sleep(min(seconds, 0.02))  # no sigtimedwait (macOS): poll
    return bool(_STOP & signal.sigpending())


def _reap(shell: int = 0) -> tuple[int | None, bool]:
    """Reap every dead child: the shell's exit code if it was one of them, and whether a
    child is left."""
    code = None
    while True:
        try:
            pid, wait_status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return code, False
        if pid == 0:
            return code, True
        if pid == shell:
            code = os.waitstatus_to_exitcode(wait_status)


def _end_tree(shell: int, marker: str, contained: bool) -> tuple[int, int]:
    """SIGKILL every live process below us (or, uncontained, carrying ``marker``) until none is
    left. Returns (processes killed, the shell not counted; processes still alive when
    ``SWEEP_BUDGET`` ran out).

    A subreaper without children has no descendants either (orphans come to it), so
    a command that left nothing behind costs no walk of ``/proc``.
    """
    killed: set[int] = set()
    end = time.monotonic() + SWEEP_BUDGET
    me = os.getpid()
    while True:
        _, children = _reap()
        # Contained, the tree is complete (the marker adds nothing), and empty with no child.
        live = _survivors(me, "" if contained else marker) if children or not contained else []
        if not contained and shell:  # the fallback, all there is without /proc: -pid is the group
            _kill([-shell])
        # A child we still have is alive even when no walk saw it: one that forks and exits
        # again and again is younger than a walk, and only ever seen by a lucky one.
        hidden = contained and children and not live
        if not (live or hidden) or time.monotonic() > end:
            return len(killed - {shell}), len(live) or int(hidden)
        _kill(live)
        killed.update(live)
        _pause(0.01)


def _kill(pids: list[int]) -> None:
    # A pid may be reused between the scan and the kill. That only lets a command kill
    # another process of its own user, which it could do directly anyway.
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:  # gone already
            continue


def _survivors(root: int | None, marker: str) -> list[int]:
    """Live processes (zombies excluded) below ``root`` or whose environment holds the marker.

    A child of ``root`` or a carrier of the marker is SIGKILLed the moment the walk sees it,
    newest first: a process that forks and lets its parent exit, again and again, is gone by
    the end of a walk, and is only ever a child of ours (a subreaper) or a carrier of the
    marker in between. The rest is for the caller to kill. Empty where there is no ``/proc``.
    """
    try:
        names = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    entry = f"{MARKER_VAR}={marker}\0".encode() if marker else b""  # b"": none to match
    me = os.getpid()
    parents: dict[int, int] = {}
    struck: set[int] = set()
    for pid in sorted(names, reverse=True):
        stat = _read(f"/proc/{pid}/stat")
        fields = stat[stat.rfind(b")") + 2 :].split()  # the name in () may hold anything
        if len(fields) < 2:
            continue
        # A first thread that called pthread_exit shows the whole process as a zombie while
        # its other threads run on: alive ("hollow"), and killed like any other.
        hollow = fields[0] in (b"Z", b"X", b"x")
        if hollow and not _other_threads(pid):
            continue
        parents[pid] = int(fields[1])
        if parents[pid] == root or (entry and pid != me and entry in _environ(pid, hollow)):
            _kill([pid])
            struck.add(pid)
    below: set[int] = set()
    if root is not None:
        children: dict[int, list[int]] = {}
        for pid, parent in parents.items():
            children.setdefault(parent, []).append(pid)
        todo = list(children.get(root, ()))
        while todo:
            pid = todo.pop()
            if pid not in below:
                below.add(pid)
                todo.extend(children.get(pid, ()))
    return sorted(below | struck)


def _other_threads(pid: int) -> bool:
    """Whether process ``pid`` has a thread besides its first (a zombie has none)."""
    try:
        return len(os.listdir(f"/proc/{pid}/task")) > 1
    except OSError:
        return False


def _environ(pid: int, hollow: bool) -> bytes:
    """The environment of process ``pid``; read through a live thread when its first has
    exited (the process's own ``environ`` then reads as nothing)."""
    if not hollow:
        return _read(f"/proc/{pid}/environ")
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return b""
    for tid in threads:
        found = _read(f"/proc/{pid}/task/{tid}/environ")
        if found:
            return found
    return b""


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError:  # gone, or not ours to read
        return b""


def main(argv: list[str]) -> int:
    """The supervisor: ``process.py TIMEOUT PARENT_PID COMMAND [--no-subreaper]``; it reports
    one status line on stderr."""
    status = supervise(
        os.fsencode(argv[3]),
        float(argv[1]),
        int(argv[2]),
        os.environ.get(MARKER_VAR, ""),
        subreaper="--no-subreaper" not in argv[4:],
    )
    line = " ".join([STATUS_PREFIX, *(f"{key}={value}" for key, value in status.items())])
    # On a line of its own: the command can write to this pipe too (``/proc/$PPID/fd/2``),
    # and a line it left unfinished must not lend its fields (``error=2``) to ours.
    os.write(2, b"\n" + line.encode() + b"\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
