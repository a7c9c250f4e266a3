"""Where ``print`` goes while ``execute`` runs code: each executing thread's writes to its buffers.

``ROUTER.install()`` replaces ``sys.stdout`` and ``sys.stderr`` by stand-ins
(``Routed``) for as long as any execution runs; ``uninstall()`` puts the
originals back after the last one, unless someone else replaced the streams
in between (then theirs stay). A thread registered with ``capture(ident,
stdout, stderr)`` writes into its two ``OutputBuffer``s; every other thread
(the kernel's, the threads the code starts) writes where it wrote before, and
the stand-in answers everything else (``encoding``, ``fileno``, ...) from the
stream it replaced. ``capturing()`` tells whether the calling thread is one
being captured, which is how the kernel's own hooks recognise executed code.

Writes straight to a file descriptor (a C library, a subprocess) pass by
``sys.stdout`` and are not captured.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from grinta_jupyter.runtime.process import OutputBuffer

__all__ = ["ROUTER", "Routed", "Router"]


class Routed:
    """A stand-in for ``sys.stdout`` or ``sys.stderr``: an executing thread's writes go to its
    buffer, every other thread's to the stream it replaced (which answers everything else)."""

    def __init__(self, original: Any, index: int) -> None:
        self.original = original
        self.index = index

    def write(self, text: str) -> int:
        buffers = ROUTER.captures.get(threading.get_ident())
        if buffers is None:
            written: int = self.original.write(text)
            return written
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        buffers[self.index].feed(text.encode("utf-8", "backslashreplace"))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if threading.get_ident() not in ROUTER.captures:
            self.original.flush()

    def isatty(self) -> bool:
        if threading.get_ident() in ROUTER.captures:
            return False
        return bool(self.original.isatty())

    def __getattr__(self, name: str) -> Any:
        return getattr(self.original, name)


class Router:
    """Installs the stand-ins while any execution runs and keeps which thread writes where."""

    def __init__(self) -> None:
        self.captures: dict[int, tuple[OutputBuffer, OutputBuffer]] = {}
        self._lock = threading.Lock()
        self._users = 0

    def install(self) -> None:
        with self._lock:
            self._users += 1
            if not isinstance(sys.stdout, Routed):
                sys.stdout = Routed(sys.stdout, 0)
            if not isinstance(sys.stderr, Routed):
                sys.stderr = Routed(sys.stderr, 1)

    def uninstall(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users:
                return
            for name in ("stdout", "stderr"):
                stream = getattr(sys, name)
                if isinstance(stream, Routed):
                    setattr(sys, name, stream.original)

    def capture(self, ident: int, stdout: OutputBuffer, stderr: OutputBuffer) -> None:
        self.captures[ident] = (stdout, stderr)

    def release(self, ident: int) -> None:
        self.captures.pop(ident, None)

    def capturing(self) -> bool:
        """Whether the calling thread's output is being captured (it runs executed code)."""
        return threading.get_ident() in self.captures


ROUTER = Router()
