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
import os
import stat
from pathlib import Path

from grinta_jupyter.runtime.tree import write_fd

FOLDER_MODE = 0o700
FILE_MODE = 0o600

_OPEN = os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def make_dir(path: Path, *, exist_ok: bool = True) -> None:
    """Create folder ``path`` owner-only; an existing one is left as it is (or FileExistsError)."""
    try:
        os.mkdir(path, FOLDER_MODE)
    except FileExistsError:
        if not exist_ok:
            raise
        return
    os.chmod(path, FOLDER_MODE)


def make_dirs(path: Path) -> None:
    """Create folder ``path`` and its missing parents, each owner-only."""
    missing = []
    folder = path
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        make_dir(folder)


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
