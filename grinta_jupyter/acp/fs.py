"""The editor's buffers, asked through the ACP client's ``fs/read_text_file``: grinta's
``OpenDocuments`` (runtime/documents.py) for an ACP session.

How the client's file system and grinta's commits fit:

- **The disk is the truth.** grinta reads, stages, validates and commits
  files on disk, atomically, as in every front end. It never writes through
  the client (``fs/write_text_file``): the client would rewrite a file grinta
  has just committed, not atomically, maybe with other line endings or
  encoding, and nothing would have validated what it wrote.
- **An editor buffer that differs from the disk counts as unsaved.** Before a
  write is committed, the runtime asks ``unsaved(paths)``: each file is read
  through the client (an editor answers with its buffer, unsaved typing
  included) and compared with the disk. When they differ, the whole commit is
  refused (DOCUMENT_UNSAVED, nothing written) and the model is told to ask the
  user to save: the agent never overwrites what a person is typing, and never
  commits an edit staged from text the person no longer sees. This is the
  stale check extended to the editor: grinta's own (the staged base bytes
  against the disk) still runs at commit.
- **Reads say so.** A read of a file whose buffer differs from the disk shows
  that on its tool call (``differs``): the agent read the saved file.
- **The client is told what changed** by the tool call itself: its diff
  content (old and new text per file) and its ``completed`` status, sent once
  the commit landed. Editors that watch the disk reload a clean buffer; a
  dirty one never gets here (its commit was refused). ``changed`` therefore
  sends nothing more.

Comparison ignores what an editor changes on load and not on save: line
endings (``\\r\\n`` and ``\\r`` read as ``\\n``) and a UTF-8 byte order mark.

Threads and bounds: the runtime asks from the worker thread that commits;
the question goes to the event loop that owns the connection and waits at
most ``timeout`` seconds for all the files. A client that fails to answer,
or answers with an error for a file that exists, makes ``unsaved`` raise, and
the runtime then refuses the write (nobody knows what the editor holds).
Asked on the loop's own thread, where no answer could arrive, it raises too.
A cancelled turn does not wait for the client: ``stop_asking`` ends the questions in
flight and refuses new ones (a commit that needed an answer is refused, nothing
written) until ``ask_again``, when the next turn starts; a client that never answers
held a cancelled turn for the whole ``timeout``.
Files are read from disk up to ``MAX_FILE_BYTES`` (the tools' own cap).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import stat
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

MAX_FILE_BYTES = 8 * 1024 * 1024
DEFAULT_TIMEOUT = 10.0  # seconds for one question about all the files of a commit

# Reads one file through the client: its absolute path -> the text the editor holds.
ReadText = Callable[[str], Awaitable[str]]


class ClientBuffers:
    """``OpenDocuments`` over the client's ``fs/read_text_file`` (see the module docstring)."""

    def __init__(
        self,
        read_text: ReadText,
        root: Path,
        loop: asyncio.AbstractEventLoop,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self._read_text = read_text
        self._root = root
        self._loop = loop
        self._timeout = timeout
        self._stopped = asyncio.Event()  # the turn was cancelled: nothing waits for the client

    def unsaved(self, paths: Sequence[str]) -> list[str]:
        """Those of ``paths`` (workspace-relative) whose editor text differs from the disk."""
        if _on_thread_of(self._loop):
            raise RuntimeError(
                "asked on the event loop that talks to the client, where its answer cannot arrive"
            )
        on_disk = {path: disk_text(self._root / path) for path in paths}
        present = [path for path, text in on_disk.items() if text is not None]
        if not present:
            return []  # new files: no editor holds unsaved text of them
        asked = asyncio.run_coroutine_threadsafe(self._buffers(present), self._loop)
        try:
            held = asked.result(self._timeout)
        except concurrent.futures.TimeoutError:  # TimeoutError itself from Python 3.11
            asked.cancel()
            raise TimeoutError(
                f"the editor did not say within {self._timeout:g} s what it holds of "
                f"{', '.join(present)}"
            ) from None
        return [path for path in present if normalized(held[path]) != on_disk[path]]

    def stop_asking(self) -> None:
        """The turn was cancelled: end the questions in flight, ask none until ``ask_again``
        (each raises ``AskingStopped``). Called on the loop's thread."""
        self._stopped.set()

    def ask_again(self) -> None:
        """A new turn starts: the client is asked again. Called on the loop's thread."""
        self._stopped.clear()

    def changed(self, paths: Sequence[str]) -> None:
        """Nothing to send: the tool call's diff and status tell the client (module docstring)."""

    async def differs(self, path: str) -> bool:
        """Whether the editor holds other text for ``path`` than the disk; False if unknown."""
        text = await asyncio.to_thread(disk_text, self._root / path)
        if text is None:
            return False
        try:
            held = await asyncio.wait_for(self._ask(path), timeout=self._timeout)
        except Exception:  # only a note on a read depends on it
            return False
        return normalized(held) != text

    async def _buffers(self, paths: list[str]) -> dict[str, str]:
        return {path: await self._ask(path) for path in paths}

    async def _ask(self, path: str) -> str:
        """The editor's text of ``path``, unless the turn is cancelled first."""
        if self._stopped.is_set():
            raise AskingStopped(path)
        read = asyncio.ensure_future(self._read_text(str(self._root / path)))
        stopped = asyncio.ensure_future(self._stopped.wait())
        try:
            await asyncio.wait({read, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
            answered = read.done()
            if not answered:
                read.cancel()  # a late answer is dropped by the SDK
        if not answered or read.cancelled():
            raise AskingStopped(path)
        return read.result()


class AskingStopped(RuntimeError):
    """The turn was cancelled before the client said what it holds of a file."""

    def __init__(self, path: str) -> None:
        super().__init__(f"the turn was cancelled before the editor said what it holds of {path}")


def disk_text(path: Path) -> str | None:
    """The file's text as an editor would load it (normalized), None when it does not exist
    or is no regular file.

    Opened without blocking and checked once open: a file swapped for a FIFO after it was
    staged would block a plain ``open`` until something writes to it, and this runs in the
    commit's thread (a commit in flight is waited for, never cut) or in the prompt's turn.
    Nobody holds an editor buffer of a FIFO; the commit's own check refuses the swap.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, IsADirectoryError):
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = handle.read(MAX_FILE_BYTES + 1)
    return normalized(data.decode("utf-8", errors="replace"))


def normalized(text: str) -> str:
    """``text`` without a byte order mark, with ``\\n`` line endings."""
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _on_thread_of(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:  # no loop runs on this thread
        return False
