"""Compiling a large Python file in two halves at once: one here, one in a helper process.

A whole-file ``compile()`` of a 3,000-line module takes 20-30 ms on a slow machine, and a
new file (``create``) or an edit the region check cannot prove (``runtime/regions.py``)
needs one before anything is written. ``compiles`` cuts the text where a top-level
``def``, ``class`` or decorator follows a blank line, sends the second half to a helper
process and compiles the first half here meanwhile. It answers True only when that proves
the whole text compiles; anything else (an error in a half, a cut it cannot trust, no
helper) answers False, and the caller compiles the whole text as before, which also gives
the exact error to report.

Why two halves that compile make a whole that compiles, and what is kept out:

- The second half starts at column 0 with a statement's first character, after a blank
  line. The first half compiled on its own, so at its end no string, bracket or line
  continuation is open, and the tokenizer reads the second half inside the whole file
  exactly as it reads it alone (the indentation it was at only closes there).
- A module is a sequence of statements, and each statement lies in one half (a block
  that ran past the cut would leave the first half unfinished). What one statement's
  validity can depend on in another is: the ``__future__`` imports, which must come first
  and change how the rest is read; and a ``global`` statement in the module's scope, which
  makes a use, an assignment or an annotation of its names *before* it an error (after it,
  or in a function, they are fine). So the second half may not mention ``__future__`` in
  any spelling; it is compiled with the features the first half's text names, and the
  answer stands only when the first half's own code object reports exactly those (so a
  ``barry_as_FLUFL`` import, which the compiler notes and the parser ignores, sends the
  check to the whole file); and it is compiled with a use of every name that follows a
  ``global`` in it put in front: if the module's scope declares one of them global, that
  use comes before the declaration and the second half fails, as the whole file would
  have if the first half used the name.
- A text declaring a coding (``compile`` reads such a file's bytes by it), holding a
  character UTF-8 cannot encode, or with no cut near its middle is compiled whole.

The helper is a plain ``python -I -S -W ignore`` started on first use (that first compile is made
here, whole, not waiting for it), in a session of its own and deaf to Ctrl-C, which reads
a half from a pipe and answers one byte. A second half never exceeds what the pipe holds,
so sending one never blocks; an answer that does not come within ``_PATIENCE`` seconds
kills the helper, and a helper that died is started again at most ``_RESTARTS`` times.
One caller at a time uses it; another thread meanwhile compiles whole. A forked child starts
a helper of its own. The helper exits when this process closes its pipe (at exit, or when it
dies).
"""

from __future__ import annotations

import atexit
import contextlib
import keyword
import os
import re
import select
import subprocess
import sys
import threading
import unicodedata

from grinta_jupyter.runtime import pyast, regions

SPLIT_MIN_CHARS = 24_000  # below it (about 600 lines) a half saves less than the pipe costs
_SHARE = 0.5  # where the cut is sought: the first half is compiled here
_PATIENCE = 5.0  # seconds to wait for the helper's answer
_RESTARTS = 3
_PIPE_BYTES = 1 << 20  # asked of the OS for the pipe to the helper (F_SETPIPE_SZ)

_CUT = re.compile(r"\n\r?\n(?=(?:def|class|async[ \t]+def)[ \t]|@)")
# The rest of a global statement's logical line: it holds no brackets, strings or comments,
# and may go on over backslash continuations.
_GLOBAL_TAIL = re.compile(r"(?:[^\n\r;#\\]|\\(?:\r\n|\r|\n))*")
_NAME = re.compile(r"[A-Za-z0-9_\x80-\U0010ffff]+")  # the characters a NAME token may hold

_ANNOTATIONS = 0x1000000  # CO_FUTURE_ANNOTATIONS
_FUTURE_MASK = 0x1FE0010  # every __future__ compiler flag


def compiles(text: str) -> bool:
    """True when ``text`` was proven to compile in two halves at once; False means "not
    proven" (compile it whole to know, and to get its first error)."""
    if len(text) < SPLIT_MIN_CHARS or regions.declares_coding(text):
        return False
    cut = _cut(text)
    if cut is None:
        return False
    first, second = text[:cut], text[cut:]
    if _mentions_future(second):
        return False
    flags = _ANNOTATIONS if _mentions_future(first) and "annotations" in first else 0
    try:
        payload = (_uses_of_globals(second) + second).encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: the whole compile says where
        return False
    ask = _HELPER.send(payload, flags)
    if ask is None:
        return False
    with ask:
        try:
            with pyast.quietly():
                code = compile(first, "<first half>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
        # The features the whole file has are the first half's: the second was compiled
        # with the ones guessed from its text, so a wrong guess proves nothing.
        return code.co_flags & _FUTURE_MASK == flags and ask.ok()


def _cut(text: str) -> int | None:
    """Where the second half starts: the cut nearest ``_SHARE`` of the text, else None."""
    target = int(len(text) * _SHARE)
    after = _CUT.search(text, target)
    earlier = list(_CUT.finditer(text, max(0, target - len(text) // 4), target))
    before = earlier[-1] if earlier else None
    best = min(
        (m for m in (after, before) if m is not None),
        key=lambda m: abs(m.start() - target),
        default=None,
    )
    if best is None or not len(text) // 4 <= best.end() <= len(text) * 3 // 4:
        return None
    return best.end()


def _mentions_future(text: str) -> bool:
    """Whether ``text`` may name ``__future__`` (the compiler reads names NFKC-normalized)."""
    if "__future__" in text:
        return True
    return not text.isascii() and "__future__" in unicodedata.normalize("NFKC", text)


def _uses_of_globals(text: str) -> str:
    """A use of every name that may follow a ``global`` in ``text``, one per line."""
    names: dict[str, None] = {}
    start = text.find("global")
    while start >= 0:
        end = start + len("global")
        if _is_word(text, start - 1) or _is_word(text, end):
            start = text.find("global", end)
            continue  # part of a longer name
        tail = _GLOBAL_TAIL.match(text, end)
        assert tail is not None  # the pattern matches the empty string
        for name in _NAME.findall(tail.group()):
            if not unicodedata.normalize("NFKC", name).isidentifier():
                continue  # a number, or prose in a string: not a name
            if keyword.iskeyword(name):
                continue  # not a name either: a statement cannot declare it
            names[name] = None
        start = text.find("global", end)
    return "".join(f"{name}\n" for name in names)


def _is_word(text: str, at: int) -> bool:
    """Whether ``text[at]`` exists and may be part of a NAME token."""
    return 0 <= at < len(text) and _NAME.fullmatch(text[at]) is not None


_CHILD = r"""
import signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
source, answer = sys.stdin.buffer, sys.stdout.buffer
while True:
    head = source.read(12)
    if len(head) < 12:
        break
    size, flags = int.from_bytes(head[:8], "little"), int.from_bytes(head[8:], "little")
    data = source.read(size)
    if len(data) < size:
        break
    ok = False
    try:
        compile(data.decode("utf-8"), "<second half>", "exec", flags, dont_inherit=True)
        ok = True
    except Exception:
        pass
    answer.write(b"1" if ok else b"0")
    answer.flush()
"""


class _Ask:
    """One half sent to the helper: ``ok()`` waits for its answer. Leaving the ``with``
    block reads the answer if nobody did (the next caller must not read this one's) and
    lets the next caller in."""

    def __init__(self, helper: _Helper, process: subprocess.Popen[bytes]) -> None:
        self._helper, self._process = helper, process
        self._answer: bool | None = None
        self._read = False

    def ok(self) -> bool:
        if not self._read:
            self._read = True
            self._answer = self._helper.answer(self._process)
        return bool(self._answer)

    def __enter__(self) -> _Ask:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.ok()
        finally:
            self._helper.release()


class _Helper:
    """The helper process, started on first use, shared by the process's threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._capacity = 0  # what the pipe to the helper holds
        self._starts = 0

    def send(self, payload: bytes, flags: int) -> _Ask | None:
        """Send a half, or None (helper busy, not started yet, gone, or the half too large
        for its pipe): then compile whole."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            process = self._running()
            if process is None or len(payload) + 12 > self._capacity:
                self._lock.release()
                return None
            assert process.stdin is not None
            head = len(payload).to_bytes(8, "little") + flags.to_bytes(4, "little")
            process.stdin.write(head + payload)  # fits in the pipe: never blocks
            process.stdin.flush()
        except OSError:  # it died: start again next time
            self._stop()
            self._lock.release()
            return None
        except BaseException:
            self._lock.release()
            raise
        return _Ask(self, process)

    def answer(self, process: subprocess.Popen[bytes]) -> bool:
        """The helper's answer to the half it was sent (False on silence or death)."""
        assert process.stdout is not None
        try:
            ready, _, _ = select.select([process.stdout], [], [], _PATIENCE)
            byte = os.read(process.stdout.fileno(), 1) if ready else b""
        except (OSError, ValueError):
            byte = b""
        if byte not in (b"0", b"1"):
            self._stop()  # silent or dead: a half-read answer must not reach the next caller
            return False
        return byte == b"1"

    def release(self) -> None:
        self._lock.release()

    def _running(self) -> subprocess.Popen[bytes] | None:
        """The live helper; None while there is none, after starting one for next time."""
        if self._process is not None and self._process.poll() is None:
            return self._process
        self._stop()
        if self._starts < _RESTARTS and sys.executable:
            self._starts += 1
            self._start()
        return None  # a fresh helper is used from the next call on

    def _start(self) -> None:
        env = {key: os.environ[key] for key in ("PATH", "LD_LIBRARY_PATH") if key in os.environ}
        try:
            process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-W", "ignore", "-c", _CHILD],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
        except (OSError, ValueError, subprocess.SubprocessError):
            return
        assert process.stdin is not None
        self._capacity = _capacity(process.stdin.fileno())
        self._process = process

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            process.kill()
        for stream in (process.stdin, process.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            process.wait(timeout=1)

    def close(self) -> None:
        """Stop the helper (at exit), even if a thread is stuck holding it."""
        locked = self._lock.acquire(timeout=1)
        try:
            self._stop()
        finally:
            if locked:
                self._lock.release()


def _capacity(fd: int) -> int:
    """How many bytes the pipe ``fd`` holds, enlarged when the OS allows; 0 when it cannot
    tell (not Linux): then nothing is sent, since a write could block."""
    try:
        import fcntl

        try:
            return int(fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES))
        except OSError:  # over the user's pipe quota: what it has
            return int(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))
    except (ImportError, AttributeError, OSError):
        return 0


_HELPER = _Helper()


@atexit.register
def _close() -> None:
    _HELPER.close()  # this process's own: a forked child's is not its parent's


def _forget_after_fork() -> None:
    """A forked child must not share its parent's helper (the two would read each other's
    answers): it starts its own when it needs one."""
    global _HELPER
    _HELPER = _Helper()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
