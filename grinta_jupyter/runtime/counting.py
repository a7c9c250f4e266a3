"""The counting helper: a process of its own that counts o200k tokens for this one, until this
one has loaded the encoding itself (``tools/tokens.py``).

Loading the encoding takes 0.5-0.8 s of the interpreter's lock (tiktoken parses 200,000
ranks in Python, then builds its Rust encoder without releasing the lock). A kernel's
warming would spend that on the same lock as grinta's imports and the first ``%grinta``
cell, so it starts this helper first (``start``): it loads the encoding on the machine's
other processor meanwhile and answers counts over a pipe. This module imports nothing but
the standard library, so the warming starts it before anything else.

Until this process has the encoding loaded, a count goes to a helper that is up; once it is
loaded (the warming loads it after the session's first card), the helper is stopped and
every count is made here. The helper counts the very text this process would (the same
string, lone surrogates included, goes over the pipe), with the same encoding file, read
and checked against its hash by tiktoken; only its parse is made in one pass
(``_RANKS``), for the same ranks. A helper that cannot start, is not up within
``_PATIENCE`` seconds, dies, answers a count it cannot have made, writes what nobody asked
for, or is asked for a text larger than its pipe holds (a write must never block) is not
asked again: the count is made here, loading the encoding as before. A caller waits at most
``_PATIENCE`` seconds for the helper's lock, then as long for its answer. A forked child
never asks its parent's helper.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import sys
import threading
import time
from importlib.util import find_spec
from pathlib import Path

from grinta_jupyter.runtime.pipes import capacity, readable

_PATIENCE = 10.0  # seconds a helper may take to come up, or to answer one count
ENCODING = "o200k_base"


def litellm_folder() -> Path:
    """Where litellm's wheel keeps tiktoken's encoding files (nothing is downloaded)."""
    spec = find_spec("litellm")
    if spec is None or spec.origin is None:
        raise RuntimeError("litellm is not installed; it carries the offline token encodings")
    return Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"


# The helper's reader of a rank file: tiktoken's own read (its cache folder, its hash check),
# then the lines' two fields (a token in base64, its rank) taken in one pass, which is what
# tiktoken's reader makes of them line by line. Only a file whose every line is two fields
# parted by one space is read so (the whitespace in it, in order, is " \n" per line); any
# other (a blank line, a line of more or fewer fields, a tab) goes to tiktoken's reader,
# ``original``. 10 ms for that check of o200k's file; the parse is 0.1-0.2 s the faster.
_RANKS = r"""
import binascii
SPACES = b" \t\n\r\x0b\x0c"
OTHERS = bytes(b for b in range(256) if b not in SPACES)
def ranks(location, expected_hash=None):
    from tiktoken.load import read_file_cached
    contents = read_file_cached(location, expected_hash)
    ended = contents.endswith(b"\n")
    lines = contents.count(b"\n") + (not ended)
    spaces = (b" \n" * lines)[: 2 * lines - (not ended)]
    fields = contents.split()
    if not contents or contents.translate(None, OTHERS) != spaces or len(fields) != 2 * lines:
        return original(location, expected_hash)
    return dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2])))
"""


# The helper: it imports the tiktoken this process would (its folder goes first on its path),
# reads the encoding from the folder it is given (its ranks parsed by ``_RANKS``), says it is
# up (one byte), then answers each
# text (4 bytes of length, then its UTF-8 with lone surrogates passed) with its count (4
# bytes). It ends when its input ends: this process closed it, or died.
_CHILD = (
    """
import os, sys
sys.path.insert(0, sys.argv[3])
os.environ["TIKTOKEN_CACHE_DIR"] = sys.argv[1]
import tiktoken
try:
    import tiktoken_ext.openai_public as public
    original = public.load_tiktoken_bpe
"""
    + "".join("    " + line + "\n" for line in _RANKS.strip().splitlines())
    + """
    public.load_tiktoken_bpe = ranks
except Exception:
    pass
encoding = tiktoken.get_encoding(sys.argv[2])
read, write = sys.stdin.buffer.read, sys.stdout.buffer
write.write(b"R")
write.flush()
while True:
    head = read(4)
    if len(head) < 4:
        break
    size = int.from_bytes(head, "little")
    data = read(size)
    if len(data) < size:
        break
    count = len(encoding.encode_ordinary(data.decode("utf-8", "surrogatepass")))
    write.write(count.to_bytes(4, "little"))
    write.flush()
"""
)


class _Helper:
    """The counting helper of this process: started at most once, asked by one thread at a
    time, never asked again once anything went wrong with it."""

    def __init__(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._started_at = 0.0
        self._up = False  # it said it is up
        self._capacity = 0
        self._tried = False
        self._retired = False  # the encoding is loaded here: the next count stops it

    def start(self) -> None:
        with self._lock:
            if self._tried or os.getpid() != self._pid:
                return
            self._tried = True
            try:
                folder = litellm_folder()
                spec = find_spec("tiktoken")
                if spec is None or spec.origin is None:
                    return
                where = str(Path(spec.origin).parent.parent)
                # Isolated (no user site, no PYTHON* variables) and given only what finding
                # programs and libraries needs: nothing of the user's environment (keys).
                env = {k: os.environ[k] for k in ("PATH", "LD_LIBRARY_PATH") if k in os.environ}
                self._process = subprocess.Popen(
                    [sys.executable, "-I", "-W", "ignore", "-c", _CHILD]
                    + [str(folder), ENCODING, where],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    env=env,
                    start_new_session=True,  # a Ctrl-C in a terminal is not its
                    close_fds=True,
                )
            except (OSError, ValueError, RuntimeError, subprocess.SubprocessError):
                self._process = None
                return
            assert self._process.stdin is not None
            self._capacity = capacity(self._process.stdin.fileno())
            self._started_at = time.monotonic()

    def count(self, text: str) -> int | None:
        """``text``'s count from the helper, or None: none up, it failed (then never
        again), or other threads kept it busy for ``_PATIENCE`` seconds. Waits for a helper
        still coming up, at most ``_PATIENCE`` seconds from its start."""
        if self._process is None or os.getpid() != self._pid:
            return None
        data = text.encode("utf-8", "surrogatepass")
        if not self._lock.acquire(timeout=_PATIENCE):
            return None
        try:
            process = self._process
            if process is None:
                return None
            if self._retired:
                self._stop()
                return None
            try:
                answer = self._ask(process, data)
            except BaseException:  # interrupted mid-answer: that answer must never be read
                self._stop()
                raise
            if answer is None:
                self._stop()
            return answer
        finally:
            self._lock.release()

    def _ask(self, process: subprocess.Popen[bytes], data: bytes) -> int | None:
        assert process.stdin is not None and process.stdout is not None
        out = process.stdout.fileno()
        if not self._up:
            left = self._started_at + _PATIENCE - time.monotonic()
            try:
                if not readable(out, max(0.0, left)) or os.read(out, 1) != b"R":
                    return None
            except OSError:
                return None
            self._up = True
        if len(data) + 4 > self._capacity:
            return None  # a write that could block: counted here
        try:
            if readable(out, 0):
                return None  # bytes nobody asked for: no answer from it can be trusted
        except OSError:
            return None
        try:
            process.stdin.write(len(data).to_bytes(4, "little") + data)
            process.stdin.flush()
        except (OSError, ValueError):
            return None
        answer = b""
        deadline = time.monotonic() + _PATIENCE
        while len(answer) < 4:
            if not readable(out, max(0.0, deadline - time.monotonic())):
                return None
            try:
                chunk = os.read(out, 4 - len(answer))
            except OSError:
                return None
            if not chunk:
                return None
            answer += chunk
        count = int.from_bytes(answer, "little")
        # A token stands for one byte or more, and a text of one byte or more has one.
        if count > len(data) or (count == 0) != (not data):
            return None
        return count

    def close(self, wait: float = _PATIENCE) -> None:
        """Stop the helper for good. It is killed at once (a count under way then reads the
        pipe's end and gives up); its pipe is closed by whoever holds the lock next, within
        ``wait`` seconds here (else by the next count, or the OS at exit): never under a
        reader."""
        self._tried = self._retired = True
        process = self._process
        if process is not None and os.getpid() == self._pid:
            with contextlib.suppress(OSError):
                process.kill()
        if self._lock.acquire(timeout=wait):
            try:
                self._stop()
            finally:
                self._lock.release()

    def _stop(self) -> None:
        """Kill the helper and close its pipe (this thread holds the lock). In a forked
        child, only forget it: it is the parent's."""
        process, self._process = self._process, None
        if process is None or os.getpid() != self._pid:
            return
        with contextlib.suppress(OSError):
            process.kill()
        for stream in (process.stdin, process.stdout):
            with contextlib.suppress(OSError, ValueError):
                if stream is not None:
                    stream.close()
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            process.wait(timeout=1)


HELPER = _Helper()


def start() -> None:
    """Start the counting helper, unless one was started before or the encoding is loaded
    here (loading it closes the helper for good: ``tools/tokens.py``). A kernel's warming
    calls it first thing."""
    HELPER.start()


@atexit.register
def _close() -> None:
    HELPER.close(wait=1)  # a daemon thread stuck mid-count leaves the pipe to the OS


def _forget_after_fork() -> None:
    global HELPER
    HELPER = _Helper()
    HELPER._tried = True  # a forked child loads the encoding itself when it needs it


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
