"""Grinta's own state is the owner's only: folders 0700, files 0600, whatever the umask.

Everything grinta creates for itself under ``.grinta/`` (the workspace lock,
journals, undo records, session logs) is created here. The umask filters the
modes ``mkdir`` and ``open`` are given, so a folder made here is chmod'ed
afterwards and a file whose mode differs is fchmod'ed. A file is never opened
through a symlink, and a FIFO planted where one should be fails (``ENXIO``)
instead of blocking. Nothing here reads.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
from pathlib import Path

from grinta_jupyter.runtime.tree import write_fd

FOLDER_MODE = 0o700
FILE_MODE = 0o600

_OPEN = os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


STATE_NAME = ".grinta"  # the state folder's name (runtime/files.py: STATE_DIR)


def make_dir(path: Path, *, exist_ok: bool = True) -> None:
    """Create folder ``path`` owner-only; an existing one must be a real folder and is tightened.

    A symbolic link (or a file) where a state folder should be raises
    NotADirectoryError: a repository could ship ``.grinta/undo -> /elsewhere``, and
    following it would let grinta move or delete things outside the workspace.
    """
    try:
        os.mkdir(path, FOLDER_MODE)
    except FileExistsError:
        if not exist_ok or not real_dir(path):
            raise
        tighten(path)
        return
    os.chmod(path, FOLDER_MODE)


def real_dir(path: Path) -> bool:
    """True for a real folder, False when nothing is there; NotADirectoryError otherwise."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(mode):
        what = "a symbolic link" if stat.S_ISLNK(mode) else "not a folder"
        raise NotADirectoryError(
            errno.ENOTDIR,
            f"{path} is {what}; grinta keeps its state only in real folders (remove it)",
        )
    return True


def make_dirs(path: Path) -> None:
    """Create folder ``path`` and its missing parents, each owner-only.

    Every existing folder from the last ``.grinta`` component down must be a real folder
    (the last: a workspace may itself lie under a folder named ``.grinta``, such as
    ``~/.grinta/projects/ws``, whose folders are not grinta's to check or tighten).
    """
    missing = []
    folder = path
    while not os.path.lexists(folder):
        missing.append(folder)
        folder = folder.parent
    state = _state_folder(path)
    if state is not None and (folder == state or state in folder.parents):
        checked = [state, *(p for p in reversed(folder.parents) if state in p.parents), folder]
        for existing in dict.fromkeys(checked):
            real_dir(existing)
            tighten(existing)
    for folder in reversed(missing):
        make_dir(folder)


def _state_folder(path: Path) -> Path | None:
    """The state folder ``path`` lies in: up to its last ``.grinta`` component."""
    if STATE_NAME not in path.parts:
        return None
    last = len(path.parts) - 1 - path.parts[::-1].index(STATE_NAME)
    return Path(*path.parts[: last + 1])


def tighten(path: Path) -> None:
    """Make an existing state folder owner-only (one made by an older version, say)."""
    with contextlib.suppress(OSError):  # not ours to change: then leave it
        if stat.S_IMODE(os.lstat(path).st_mode) != FOLDER_MODE:
            os.chmod(path, FOLDER_MODE)


def open_file(path: Path, flags: int) -> int:
    """A descriptor of ``path`` opened with ``flags``, created 0600 if missing."""
    fd = os.open(path, flags | _OPEN, FILE_MODE)
    if stat.S_IMODE(os.fstat(fd).st_mode) != FILE_MODE:
        with contextlib.suppress(OSError):  # not ours to change: then leave it
            os.fchmod(fd, FILE_MODE)
    return fd


def write_file(path: Path, data: bytes, *, durable: bool) -> None:
    """Replace the contents of ``path`` with ``data``; ``durable``: fsync before returning."""
    fd = open_file(path, os.O_WRONLY | os.O_TRUNC)
    try:
        write_fd(fd, data)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)


def lock(fd: int, wait: float) -> bool:
    """Take an exclusive ``flock`` on ``fd``, waiting up to ``wait`` seconds (0: not at all);
    False when another holder keeps it that long. OSError: a file system without locks."""
    deadline = time.monotonic() + wait
    delay = 0.0005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
        time.sleep(delay)
        delay = min(delay * 2, 0.02)
