"""Reading a file the model named, safely: regular files only, bounded in size.

Every tool reads files through :func:`read_regular`. It never opens a FIFO,
socket or device for reading (opening a FIFO blocks until a writer comes, and
``/dev/zero`` never ends): it stats the path first, opens with ``O_NONBLOCK``
and ``O_NOCTTY``, and stats the open descriptor again, so a file swapped for
a FIFO in between is caught too. Files over a byte limit are refused before a
byte is read, and a file that grows past it while being read is refused as
well. OS failures become ToolErrors by errno (``os_error``). Nothing here
writes.

Given ``within`` (a workspace's resolved root), it also checks that the file it opened
lies inside that folder, by asking the OS which file the descriptor is
(``/proc/self/fd`` on Linux, ``F_GETPATH`` on macOS): a path is resolved before it is
read, and a folder on the way swapped for a link out of the workspace in between
made the read return a file outside it (a race another process can win; stop 43).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import sys
from collections.abc import Collection

from grinta_jupyter.runtime.errors import (
    FILE_TOO_LARGE,
    INVALID_ARGS,
    NOT_A_REGULAR_FILE,
    PATH_FORBIDDEN,
    PATH_OUTSIDE_WORKSPACE,
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
STATE_DIR = ".grinta"  # grinta's own state in a workspace
FORBIDDEN_DIRS = frozenset({".git", STATE_DIR})  # never read or written by a tool
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
    path: str | os.PathLike[str],
    what: str,
    max_bytes: int,
    advice: str = TOO_LARGE_ADVICE,
    *,
    within: str | os.PathLike[str] | None = None,
    keep_out: Collection[str] = FORBIDDEN_DIRS,
) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file ``path`` and its status, or a ToolFailure.

    ``what`` names the file in messages (a workspace-relative path). A folder
    is INVALID_ARGS, a FIFO, socket or device NOT_A_REGULAR_FILE (never opened
    for reading), a file over ``max_bytes`` FILE_TOO_LARGE (with ``advice``),
    and an OS failure its ``os_error`` code (SYMLINK_LOOP, PATH_TOO_LONG,
    PERMISSION_DENIED, FILE_NOT_FOUND, ...). With ``within`` (a resolved folder), a
    file opened outside it is PATH_OUTSIDE_WORKSPACE, and one opened inside a folder of
    it named in ``keep_out`` (by default ``.git`` and ``.grinta``; compared as
    ``folded_name`` does) PATH_FORBIDDEN; not a byte of either is read.
    """
    root = None if within is None else os.fspath(within)
    try:
        first = os.stat(path)
        try:
            check_regular(first, what, max_bytes, advice)
        except FileRefused:
            if root is not None:  # its size or kind is said only of the workspace's own file
                _check_path(_named_path(path, first), what, root, keep_out)
            raise
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise _refused(os_error(exc, what), what) from None
    try:
        status = os.fstat(fd)  # the file actually opened: it may have been swapped meanwhile
        if root is not None:
            _check_path(_opened_path(fd, status, path), what, root, keep_out)
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


def folded_name(name: str) -> str:
    """A name as a case-insensitive file system compares it: ``.GIT``, ``.git.`` and
    ``.git `` are all ``.git`` on Windows shares and many SMB and exFAT mounts."""
    return name.casefold().rstrip(" .") or name


def _check_path(opened: str | None, what: str, root: str, keep_out: Collection[str]) -> None:
    """FileRefused unless ``opened`` (a file's resolved path; None: not known) lies in
    ``root``, outside its folders named in ``keep_out``."""
    if opened is None or not _is_inside(opened, root):
        raise FileRefused(
            ToolError(
                PATH_OUTSIDE_WORKSPACE,
                f"{what} was not read: a folder on its path was replaced by a link out of "
                "the workspace while it was being opened; tools never read outside it",
            ),
            "moved out of the workspace while opened",
        )
    inside = opened[len(root.rstrip("/")) + 1 :].split("/")
    if any(folded_name(part) in keep_out for part in inside[:-1]):
        raise FileRefused(
            ToolError(
                PATH_FORBIDDEN,
                f"{what} was not read: a folder on its path was replaced by a link into "
                f"{' or '.join(sorted(keep_out))} while it was being opened; tools never read "
                "there",
            ),
            "moved into a protected folder while opened",
        )


def _named_path(path: str | os.PathLike[str], status: os.stat_result) -> str | None:
    """``path`` resolved now, if it still names the file ``status`` describes, else None."""
    try:
        again = os.path.realpath(path)
        found = os.stat(again)
    except OSError:
        return None
    return again if (found.st_dev, found.st_ino) == (status.st_dev, status.st_ino) else None


def entry_exists(path: str | os.PathLike[str], what: str, root: str) -> bool:
    """Whether ``path`` names an entry (a dangling link too), looked up in its folder opened
    and found inside the resolved folder ``root``; a FileRefused when that folder lies
    outside it (one on the way swapped for a link: whether a file is there is not the
    workspace's to tell)."""
    parent, name = os.path.split(os.fspath(path))
    try:
        fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        raise _refused(os_error(exc, what), what) from None
    try:
        _check_path(_opened_path(fd, os.fstat(fd), parent), what, root, ())
        os.stat(name, dir_fd=fd, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise _refused(os_error(exc, what), what) from None
    finally:
        os.close(fd)


def opened_within(fd: int, path: str | os.PathLike[str], root: str) -> bool:
    """Whether the file or folder open as ``fd`` (opened by ``path``) lies inside the
    resolved folder ``root``; False when that cannot be told."""
    try:
        opened = _opened_path(fd, os.fstat(fd), path)
    except OSError:
        return False
    return opened is not None and _is_inside(opened, root)


def _is_inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _opened_path(fd: int, status: os.stat_result, path: str | os.PathLike[str]) -> str | None:
    """The path of the file open as ``fd`` (opened by ``path``), or None when it cannot be told.

    The OS says it where it can; elsewhere ``path`` resolved again must be that same file."""
    told = _told_path(fd, status)
    return told if told is not None else _named_path(path, status)


def _told_path(fd: int, status: os.stat_result) -> str | None:
    """The path of the file open as ``fd`` as the OS knows it, or None when it does not say."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            name = os.readlink(f"/proc/self/fd/{fd}")
            if status.st_nlink == 0 and name.endswith(" (deleted)"):  # removed since opened
                name = name[: -len(" (deleted)")]
            return name if name.startswith("/") else None  # else not a path ("anon_inode:")
        return None
    getpath = getattr(fcntl, "F_GETPATH", None)  # macOS
    if getpath is not None:
        with contextlib.suppress(OSError):
            raw = fcntl.fcntl(fd, getpath, bytes(1024))
            return os.fsdecode(raw.split(b"\0", 1)[0])
    return None


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
