"""The workspace reached by folder descriptors, so no link leads a write outside.

Contract: every target is reached one component at a time from the root, each
folder opened with ``O_NOFOLLOW|O_DIRECTORY`` relative to its parent's
descriptor, and every ``mkdir``, ``open``, ``rename`` and ``unlink`` is made
relative to the descriptor of the target's folder. Files are read with
``O_NOFOLLOW|O_NONBLOCK``: never through a link, never blocking (a FIFO is
refused before it is opened). A folder that is a symlink or a file, or a
symlink, FIFO, socket, device or folder where a file should be, is a
StaleError naming the target.

``runtime/transaction.py`` checks, stages and renames through a ``Tree``;
nothing here knows about journals.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import stat
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

from grinta_jupyter.runtime.textfile import sha256

# How files are opened for reading: never through a link, and a FIFO must not block.
READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class StaleError(Exception):
    """A file (or a folder on its path) changed on disk since it was staged."""

    def __init__(self, path: str):
        super().__init__(path)
        self.path = path


@dataclass(frozen=True)
class Found:
    """What a target's path holds now."""

    data: bytes | None  # None when absent, or when its size alone tells it differs
    mode: int | None
    locked: str | None  # why it may not be written, or None
    folder: tuple[int, int] | None  # (st_dev, st_ino) of its folder; None when that is missing
    other_size: int | None = None  # the size, when it differs from the one expected

    @functools.cached_property
    def sha(self) -> str | None:
        """sha256 of the bytes (None when absent; ``size N`` when only the size was read)."""
        if self.other_size is not None:
            return f"size {self.other_size}"
        return None if self.data is None else sha256(self.data)

    def holds(self, expected: bytes | None) -> bool:
        """True when the path holds exactly ``expected`` (None: nothing is there)."""
        if self.other_size is not None:
            return False
        return self.data == expected  # bytes equality: no hashing on the hot path


class Tree:
    """Folders under the root, opened one component at a time without following links."""

    def __init__(self, root: Path):
        self._fds: dict[str, int] = {"": os.open(root, _DIR)}

    def __enter__(self) -> Tree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def folder(self, rel: str, *, create: bool = False, for_path: str = "") -> int:
        """A descriptor of folder ``rel`` ("" is the root).

        Raises StaleError(for_path) when a component is a symlink or not a
        folder, FileNotFoundError when one is missing (unless ``create``).
        """
        fd = self._fds.get(rel)
        if fd is not None:
            return fd
        head, _, name = rel.rpartition("/")
        parent = self.folder(head, create=create, for_path=for_path)
        try:
            fd = _open_dir(name, parent, for_path or rel)
        except FileNotFoundError:
            if not create:
                raise
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=parent)
            fd = _open_dir(name, parent, for_path or rel)
        self._fds[rel] = fd
        return fd

    def missing(self, rel: str) -> list[str]:
        """The folders of ``rel`` (itself included) that do not exist, outermost first."""
        prefixes = [rel.rsplit("/", k)[0] for k in range(rel.count("/"), -1, -1)] if rel else []
        for i, prefix in enumerate(prefixes):
            try:
                self.folder(prefix)
            except (FileNotFoundError, StaleError):
                return prefixes[i:]
        return []


def _open_dir(name: str, parent: int, for_path: str) -> int:
    try:
        return os.open(name, _DIR, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # a symlink, or a file, where a folder was
            raise StaleError(for_path) from None
        raise


def look(tree: Tree, rel: str, size: int | None) -> Found:
    """What ``rel`` holds. ``size``: read only a file of that size (-1: none expected).

    Raises StaleError for anything but a regular file (never opened blocking).
    """
    parent_rel, name = split(rel)
    try:
        parent = tree.folder(parent_rel, for_path=rel)
    except FileNotFoundError:
        return Found(None, None, None, None)
    folder = identity(parent)
    try:
        if not stat.S_ISREG(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
            raise StaleError(rel)  # a symlink, FIFO, socket, device or folder: never opened
        fd = os.open(name, READ, dir_fd=parent)
    except FileNotFoundError:
        return Found(None, None, None, folder)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):  # swapped since the stat
            raise StaleError(rel) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise StaleError(rel)
        mode = stat.S_IMODE(info.st_mode)
        locked = _why_locked(fd, mode)
        if size is not None and info.st_size != size:
            return Found(None, mode, locked, folder, other_size=info.st_size)
        data = read_fd(fd, info.st_size if size is None else size)
        return Found(data, mode, locked, folder)
    finally:
        os.close(fd)


def stage(
    tree: Tree, path: str, data: bytes, tmp: str, mode: int | None
) -> tuple[int, tuple[int, int], int]:
    """Write ``data`` to the temp file ``tmp`` beside ``path``, made durable.

    Returns the descriptor and identity of its folder (made if missing), and its inode.
    """
    parent_rel, _ = split(path)
    parent = tree.folder(parent_rel, create=True, for_path=path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o644 if mode is None else mode, dir_fd=parent)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        write_fd(fd, data)
        os.fsync(fd)
        inode = os.fstat(fd).st_ino
    finally:
        os.close(fd)
    return parent, identity(parent), inode


def chmod_temp(parent: int, tmp: str, mode: int) -> None:
    """Give the temp file ``tmp`` in folder ``parent`` the ``mode`` its target has now."""
    fd = os.open(tmp, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def rmdir_if_empty(tree: Tree, rel: str) -> None:
    """Remove folder ``rel`` if it is empty; anything else leaves it (never raises)."""
    head, name = split(rel)
    with contextlib.suppress(OSError, StaleError):
        os.rmdir(name, dir_fd=tree.folder(head))


# FS_IOC_GETFLAGS and the inode flags that make rename and unlink fail (Linux).
_GETFLAGS = 0x80086601 if struct.calcsize("l") == 8 else 0x80046601
_IMMUTABLE, _APPEND_ONLY = 0x10, 0x20


def _why_locked(fd: int, mode: int) -> str | None:
    if not mode & 0o222:
        return f"read-only (mode {mode:04o})"
    if sys.platform.startswith("linux"):
        try:
            flags = struct.unpack("i", fcntl.ioctl(fd, _GETFLAGS, bytes(8))[:4])[0]
        except OSError:  # a file system without inode flags
            return None
        if flags & _IMMUTABLE:
            return "marked immutable (chattr +i)"
        if flags & _APPEND_ONLY:
            return "marked append-only (chattr +a)"
    return None


def split(rel: str) -> tuple[str, str]:
    """A workspace-relative path as (its folder, its name); the root folder is ""."""
    head, _, name = rel.rpartition("/")
    return head, name


def identity(fd: int) -> tuple[int, int]:
    """(st_dev, st_ino) of an open folder: whether it is still the same folder."""
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def read_fd(fd: int, size: int) -> bytes:
    """Up to ``size`` + 1 bytes (one more shows the file grew meanwhile)."""
    chunks = []
    left = size + 1
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def write_fd(fd: int, data: bytes) -> None:
    """All of ``data``, however many writes it takes."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
