"""Two questions about a pipe to a helper process, asked by the processes that use one
(``runtime/halves.py``'s compiles, ``tools/tokens.py``'s counts): is there something to read
within a time, and how much can be written without blocking."""

from __future__ import annotations

import select

PIPE_BYTES = 1 << 20  # asked of the OS for a pipe to a helper (F_SETPIPE_SZ)


def readable(fd: int, seconds: float) -> bool:
    """Whether ``fd`` has bytes (or its end) to read within ``seconds`` (``poll``: no limit
    on descriptor numbers, unlike ``select``)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(int(seconds * 1000)))


def capacity(fd: int) -> int:
    """How many bytes the pipe ``fd`` holds, enlarged when the OS allows; 0 when it cannot
    tell (not Linux): then nothing is sent, since a write could block."""
    try:
        import fcntl

        try:
            return int(fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES))
        except OSError:  # over the user's pipe quota: what it has
            return int(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))
    except (ImportError, AttributeError, OSError):
        return 0
