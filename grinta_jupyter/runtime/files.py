"""Reading a file the model named, safely: regular files only, bounded in size.

Every tool reads files through :func:`read_regular`. It never opens a FIFO,
socket or device for reading (opening a FIFO blocks until a writer comes, and
``/dev/zero`` never ends): it stats the path first, opens with ``O_NONBLOCK``
and ``O_NOCTTY``, and stats the open descriptor again, so a file swapped for
a FIFO in between is caught too. Files over a byte limit are refused before a
byte is read, and a file that grows past it while being read is refused as
well. OS failures become ToolErrors by errno (``os_error``). Nothing here
writes.
"""

from __future__ import annotations

import os
import stat

from grinta_jupyter.runtime.errors import (
    FILE_TOO_LARGE,
    INVALID_ARGS,
    NOT_A_REGULAR_FILE,
    ToolError,
    ToolFailure,
    os_error,
)

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_CHUNK = 1 << 20
# What to do instead when a file is too large to read whole.
TOO_LARGE_ADVICE = (
    "read a part of it with run (e.g. `head -n 100`, `sed -n '100,200p'`, `grep -n`) instead"
)


class FileRefused(ToolFailure):
    """A ToolFailure that also says briefly why, for lists of skipped files."""

    def __init__(self, error: ToolError, reason: str):
        super().__init__(error)
        self.reason = reason  # e.g. "a FIFO, not a regular file", "48.0 MB, over the 2.0 MB limit"


def read_regular(
    path: str | os.PathLike[str], what: str, max_bytes: int, advice: str = TOO_LARGE_ADVICE
) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file ``path`` and its status, or a ToolFailure.

    ``what`` names the file in messages (a workspace-relative path). A folder
    is INVALID_ARGS, a FIFO, socket or device NOT_A_REGULAR_FILE (never opened
    for reading), a file over ``max_bytes`` FILE_TOO_LARGE (with ``advice``),
    and an OS failure its ``os_error`` code (SYMLINK_LOOP, PATH_TOO_LONG,
    PERMISSION_DENIED, FILE_NOT_FOUND, ...).
    """
    try:
        check_regular(os.stat(path), what, max_bytes, advice)
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise _refused(os_error(exc, what), what) from None
    try:
        status = os.fstat(fd)  # the file actually opened: it may have been swapped meanwhile
        check_regular(status, what, max_bytes, advice)
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:  # it grew while we read
                raise _too_large(what, size, max_bytes, advice)
        return b"".join(chunks), status
    except OSError as exc:
        raise _refused(os_error(exc, what), what) from None
    finally:
        os.close(fd)


def check_regular(
    status: os.stat_result, what: str, max_bytes: int, advice: str = TOO_LARGE_ADVICE
) -> None:
    """Raise a FileRefused unless ``status`` is a regular file of at most ``max_bytes``."""
    mode = status.st_mode
    if stat.S_ISDIR(mode):
        raise FileRefused(ToolError(INVALID_ARGS, f"{what!r} is a folder, not a file"), "a folder")
    if not stat.S_ISREG(mode):
        kind = file_kind(mode)
        raise FileRefused(
            ToolError(
                NOT_A_REGULAR_FILE,
                f"{what} is {kind}, not a regular file; tools read and edit regular files only",
            ),
            f"{kind}, not a regular file",
        )
    if status.st_size > max_bytes:
        raise _too_large(what, status.st_size, max_bytes, advice)


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words: 'a FIFO', 'a socket', 'a character device', ..."""
    for test, name in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "a special file"


def size_text(size: int) -> str:
    """A byte count for people: '812 bytes', '48.0 MB'."""
    if size < 1_000:
        return f"{size} bytes"
    if size < 1_000_000:
        return f"{size / 1_000:.1f} KB"
    return f"{size / 1_000_000:.1f} MB"


def _too_large(what: str, size: int, limit: int, advice: str) -> FileRefused:
    over = f"{size_text(size)}, over the {size_text(limit)} limit"
    return FileRefused(
        ToolError(FILE_TOO_LARGE, f"{what} is {over} for reading a file whole; {advice}"), over
    )


def _refused(error: ToolError, what: str) -> FileRefused:
    # os_error writes "<what>: <reason>" or "<what> does not exist".
    reason = error.message.removeprefix(what).lstrip(": ") or error.code.lower()
    return FileRefused(error, reason)
