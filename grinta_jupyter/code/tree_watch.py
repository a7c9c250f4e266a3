"""Which files under a folder changed since the last look, from Linux inotify.

The symbol index asks on every tool call whether anything changed; walking and
stat'ing a 10,000-file tree for that costs tens to hundreds of milliseconds, reading
an empty inotify queue costs microseconds. :meth:`TreeWatch.start` watches every
folder under the root but the ones the index never lists (``skip``), and returns
``None`` where inotify cannot be trusted, so the caller falls back to stat'ing:

- not Linux, or ``inotify_init1`` failed (for example the per-user instance limit);
- the root, or a folder mounted anywhere under it (but under ``skip``), is on a file
  system whose changes may come from elsewhere (NFS, SMB, FUSE, 9p, virtiofs: a
  container's bind mount edited from the host sends no event);
- more folders than ``watch_budget()`` (at most an eighth of the user's kernel limit,
  which every editor and file watcher shares), or the kernel's limit is reached.

:meth:`TreeWatch.changes` returns the files that had events (content, metadata,
created, deleted, moved) or ``None`` when the watch lost track (a folder was
created, moved or deleted, the root went away, or the kernel queue overflowed):
then the caller rescans the tree and starts a new watch.

Not seen by inotify, and so not by this watch: writes through a shared memory map,
and a write through a file's other hard link (the event names that link only, if it is
watched at all; the index hashes files with several links at every look).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import struct
import sys
from dataclasses import dataclass, field

# inotify(7) constants
_IN_MODIFY = 0x002
_IN_ATTRIB = 0x004
_IN_CLOSE_WRITE = 0x008
_IN_MOVED_FROM = 0x040
_IN_MOVED_TO = 0x080
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ONLYDIR = 0x01000000
_IN_DONT_FOLLOW = 0x02000000
_IN_ISDIR = 0x40000000
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = 0o2000000
_MASK = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
    | _IN_ONLYDIR
    | _IN_DONT_FOLLOW
)
_LOST = _IN_Q_OVERFLOW | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_IGNORED
_NEW_NAME = _IN_CREATE | _IN_MOVED_TO
_EVENT = struct.Struct("iIII")

# More folders than this: stat'ing is the better deal (and the kernel limit is shared).
MAX_WATCHES = 20_000
# The kernel's watch limit is per user, shared with every editor and file watcher the
# user runs: a workspace never takes more than this share of it.
WATCH_SHARE = 8


def watch_budget() -> int:
    """How many folders one workspace may watch: ``MAX_WATCHES``, or less on a small limit."""
    try:
        with open("/proc/sys/fs/inotify/max_user_watches", encoding="ascii") as limit:
            return min(MAX_WATCHES, int(limit.read()) // WATCH_SHARE)
    except (OSError, ValueError):
        return min(MAX_WATCHES, 8192 // WATCH_SHARE)


# File systems whose every change passes through this kernel, so inotify sees it.
LOCAL_FILE_SYSTEMS = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "overlay", "zfs", "f2fs", "bcachefs"}
)


@dataclass
class Changes:
    """Files (workspace-relative posix paths) that had events since the last look."""

    files: set[str] = field(default_factory=set)
    created: set[str] = field(default_factory=set)  # names that are new in their folder


class TreeWatch:
    """An inotify watch on every folder under a root; see the module docstring."""

    def __init__(self, fd: int, root: str) -> None:
        self._fd = fd
        self._root = root
        self._folders: dict[int, str] = {}  # watch descriptor -> folder relative to root

    @classmethod
    def start(cls, root: str, skip: frozenset[str]) -> TreeWatch | None:
        """A watch on ``root`` and its folders (but names in ``skip``), or None (see above)."""
        libc = _libc()
        if libc is None or not _all_local(root, skip):
            return None
        fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            return None
        watch = cls(fd, root)
        if not watch._add_tree(libc, skip):
            watch.close()
            return None
        return watch

    def _add_tree(self, libc: ctypes.CDLL, skip: frozenset[str]) -> bool:
        pending = [""]
        budget = watch_budget()
        while pending:
            folder = pending.pop()
            path = os.path.join(self._root, folder) if folder else self._root
            wd = libc.inotify_add_watch(self._fd, os.fsencode(path), _MASK)
            if wd < 0:
                if folder == "" or ctypes.get_errno() not in (2, 13, 20):  # ENOENT EACCES ENOTDIR
                    return False  # the root itself, or a limit (ENOSPC, ENOMEM)
                continue  # gone or unreadable meanwhile: the lister cannot list it either
            self._folders[wd] = folder
            if len(self._folders) > budget:
                return False  # (the caller closes the descriptor: every watch is released)
            try:
                with os.scandir(path) as listing:
                    for entry in listing:
                        if entry.name not in skip and entry.is_dir(follow_symlinks=False):
                            pending.append(f"{folder}/{entry.name}" if folder else entry.name)
            except OSError:
                continue
        return True

    def changes(self) -> Changes | None:
        """What had events since the last call, or None when the watch lost track."""
        found = Changes()
        while True:
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return found
            except OSError:
                return None
            offset = 0
            while offset < len(data):
                wd, mask, _, size = _EVENT.unpack_from(data, offset)
                name = data[offset + 16 : offset + 16 + size].rstrip(b"\0")
                offset += 16 + size
                folder = self._folders.get(wd)
                if mask & _LOST or mask & _IN_ISDIR or folder is None:
                    return None  # folders changed: the caller rescans and watches anew
                rel = os.fsdecode(name)
                rel = f"{folder}/{rel}" if folder else rel
                found.files.add(rel)
                if mask & _NEW_NAME:
                    found.created.add(rel)

    def pending(self) -> bool:
        """Whether events wait to be read (without reading them)."""
        if self._fd < 0:
            return True
        return bool(select.select([self._fd], [], [], 0)[0])

    def close(self) -> None:
        """Stop watching (the descriptor counts against a per-user limit of instances)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    except (OSError, AttributeError):
        return None
    return libc


def _file_system(path: str, mounts: list[tuple[str, str]] | None = None) -> str:
    """The type of the file system ``path`` is on, from /proc/self/mountinfo ("" if unknown)."""
    real = os.path.realpath(path)
    best, kind = -1, ""
    for mount, fs in _mounts() if mounts is None else mounts:
        inside = real == mount or real.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) > best:
            best, kind = len(mount), fs
    return kind


def _all_local(root: str, skip: frozenset[str]) -> bool:
    """Whether ``root`` and every file system mounted under it (but under ``skip``) are
    local: a remote one mounted inside the tree would change unseen as well."""
    mounts = _mounts()
    if _file_system(root, mounts) not in LOCAL_FILE_SYSTEMS:
        return False
    below = os.path.join(os.path.realpath(root), "")
    return not any(
        mount.startswith(below)
        and fs not in LOCAL_FILE_SYSTEMS
        and not skip.intersection(mount[len(below) :].split("/"))
        for mount, fs in mounts
    )


def _mounts() -> list[tuple[str, str]]:
    """(mount point, file system type) of each mount, from /proc/self/mountinfo."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as mounts:
            lines = mounts.read().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        fields, _, tail = line.partition(" - ")
        parts = fields.split()
        if len(parts) < 5 or not tail:
            continue
        found.append((parts[4].replace("\\040", " "), tail.split()[0]))
    return found
