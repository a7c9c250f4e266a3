"""Atomic multi-file commits with a journal, locks, crash recovery and undo.

State lives in ``.grinta/``; everything the journal creates there is owner-only
(folders 0700, files 0600, whatever the umask: ``runtime/private.py``):
``lock`` (the workspace lock), ``journal/<txid>/`` (one commit in flight:
``lock``, ``manifest.json``, the backups ``<i>.old``) and ``undo/<txid>/``
(finished commits, the last 50).

Locks are ``flock``s, so the OS releases them when their process dies:

- The *workspace lock* ``.grinta/lock`` serialises, across processes, threads
  and ``Runtime`` objects, the moments that decide what a file holds: making a
  journal folder, and a commit's last check, decision and renames. It is
  waited for at most ``LOCK_WAIT`` seconds (then CommitError, nothing written).
  It is taken on the file and then on the ``.grinta`` folder, so a lock file
  deleted by hand while held does not let a second commit in.
- Each transaction holds its *own lock* ``journal/<txid>/lock`` from the
  moment its folder is made (under the workspace lock) until the folder is
  gone. So whoever holds the workspace lock tells an orphan (own lock free:
  its process died) from a commit in progress (held), and touches only orphans.

A commit of N files runs in phases, each made durable before the next:

0. ``check`` (no lock): each target still holds the bytes the proposal was
   staged from (else StaleError) and may be written (else ReadOnlyError: a
   mode without write bits, or an immutable file). Nothing is created yet.
1. ``prepare`` (own lock): the folder gets a manifest naming every file, its
   old and new sha256 and size, its temp file and the folders made for it;
   then backups of the old bytes and, beside each target, a temp file with
   the new bytes (fsynced, the target's mode).
2. ``commit`` (workspace lock, held through step 4): orphans are recovered
   first (below); every target is checked again, its folder must be the one
   its temp file was staged in, and the manifest is atomically replaced by one
   whose state is ``commit`` and which records each folder's identity. From
   here on the transaction is decided. (A commit of one file does not wait for
   that new name to reach the disk, see ``_one_rename``: its rename is atomic
   on its own, so a power cut that loses the decision leaves the file all-old or
   all-new and a journal that recovery rolls back.)
3. Every temp file is renamed over its target (or the target is removed).
4. The journal folder moves to ``.grinta/undo/``, where it serves ``undo``.

A failure before the decision (a stale file, a full disk, a read-only
folder, an unwritable ``.grinta``) removes the temp files, the folders made
for them and the journal folder at once; no target byte changes. A fault
after it leaves the journal for the next recovery to finish (CommitError with
``decided``). A journal folder loses its manifest last, an undo record first,
so a crash while deleting one leaves nothing that looks damaged. Undo is one
more commit, of the backups, with the same locks, checks and path walk; its
manifest names the undo records it consumes (``undoes``; a rewind's several:
``consumes``), which are dropped once its files are in place, by the commit or
by the recovery that finishes it, so no crash leaves a record that would
restore again what is already restored; a record gone by the decision (undone
meanwhile by another process) makes the undo a StaleError. A temp file takes
its target's owner, group and extended attributes (where the OS allows; a new
file gets 0666 less the umask), and a forked child closes
its copies of the lock descriptors (a flock is shared across ``fork``).

Targets are reached only through folder descriptors opened one component at a
time from the root with ``O_NOFOLLOW|O_DIRECTORY`` (``mkdir``, ``open``,
``rename`` and ``unlink`` relative to them), and read with
``O_NOFOLLOW|O_NONBLOCK``. A folder that became a symlink or a file, a
symlink, FIFO or folder where a file was, or a folder replaced since its
temp file was staged is a StaleError, so no write lands outside the
workspace. Recovery and undo walk paths the same way (``runtime/tree.py``).

Recovery runs when a ``Runtime`` opens (if the workspace lock is free; else
its holder does it) and at the start of every commit's step 2, on orphans only:
a ``prepare`` journal is rolled back (targets were never touched); a
``commit`` journal is rolled forward (temp files still present are renamed
after checking their folder's identity; the rest are already in place),
unless a file whose temp file is still there no longer holds its old bytes (a
person saved it after the crash): that journal is left, with a note, the files
it had renamed keeping their new bytes and the others theirs (a person's save
outranks the commit's atomicity, as it outranks an undo). Otherwise every file
ends all-old or all-new. A folder holding nothing but
its lock and a half-written manifest (the owner died before the manifest was
durable, so no temp file exists) is discarded. Anything else that cannot be
read for certain (a damaged manifest, an unknown state, a decided commit that
cannot finish) is left in place with a ``note.txt`` and reported, never guessed;
so is a manifest whose id is no plain name, whose temp file is not named as the
commit's temp files are, or whose path lies in ``.git`` or ``.grinta`` (a
journal planted in a repository must not move, delete or rename a person's file).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import stat
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from grinta_jupyter.runtime import private
from grinta_jupyter.runtime.textfile import sha256
from grinta_jupyter.runtime.tree import (
    READ,
    Found,
    StaleError,
    Tree,
    chmod_temp,
    identity,
    look,
    read_fd,
    rmdir_if_empty,
    split,
    stage,
)

__all__ = [
    "LOCK_WAIT",
    "MANIFEST",
    "Manifest",
    "ManifestFile",
    "UNDO_KEEP",
    "CommitError",
    "CommitRecord",
    "DamagedJournal",
    "FileWrite",
    "Journal",
    "ReadOnlyError",
    "StaleError",
    "StepHook",
    "parse_manifest",
]

MANIFEST = "manifest.json"
UNDO_KEEP = 50
LOCK_WAIT = 5.0  # seconds a commit waits for another process's commit to finish

MAX_OWNER = 1_000  # characters in a commit's owner; longer is no name of ours

# Called with a label at every durable step of a commit; tests use it to kill
# the process at each point. None in production.
StepHook = Callable[[str], None] | None

_OWN_LOCK = "lock"
_NOTE = "note.txt"
_LOCK = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_STATE_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NAME_MAX = 255
_NOT_WRITTEN = frozenset({".git", private.STATE_NAME})  # folders no commit writes into


@dataclass(frozen=True)
class FileWrite:
    """One file's part in a transaction. ``None`` bytes mean "the file is absent"."""

    path: str  # workspace-relative POSIX
    old: bytes | None
    new: bytes | None
    prune_dirs: tuple[
        str, ...
    ] = ()  # folders to remove when empty after a deletion (undo of a create)


@dataclass
class CommitRecord:
    """A finished commit, as kept for undo."""

    id: str
    label: str
    files: list[str]
    created: float
    folder: Path | None = field(default=None, repr=False)
    owner: str | None = None  # who made it, as its caller named it (a session's call)


ManifestState = Literal["prepare", "commit"]


@dataclass(frozen=True)
class ManifestFile:
    """One file of a journal's manifest (``manifest.json``, field names as on disk)."""

    path: str  # workspace-relative POSIX, inside the workspace
    old_sha: str | None  # None: the file was absent
    new_sha: str | None  # None: the commit removes it
    old_size: int | None
    new_size: int | None
    mode: int | None  # the target's mode, given to its temp file
    backup: str | None  # "<i>.old" in the journal folder, the old bytes (for undo)
    tmp: str | None  # the temp file's name beside the target
    new_dirs: tuple[str, ...] = ()  # folders made for it (or removed with it), outermost first
    folder: tuple[int, int] | None = None  # (st_dev, st_ino) of its folder, from the decision on


@dataclass(frozen=True)
class Manifest:
    """A journal's manifest: what one transaction writes, and whether it is decided."""

    id: str
    label: str
    state: ManifestState  # "prepare": roll back on recovery; "commit": decided, roll forward
    created: float
    keep_undo: bool
    undoes: str | None  # the undo record this transaction consumes (an undo's)
    files: tuple[ManifestFile, ...]
    # More undo records it consumes (a rewind's): dropped once the files are in place, by
    # the commit or by the recovery that finishes it, so a crash cannot leave them to restore
    # again what is already restored.
    consumes: tuple[str, ...] = ()
    # Who made it, as the caller named it (a session names its call, so that a session
    # resumed after a crash does not take another's commit of the same bytes for its own).
    owner: str | None = None

    def to_json(self) -> dict[str, Any]:
        # Field by field rather than ``asdict``, whose deep copy cost a commit 0.1 ms.
        data: dict[str, Any] = dict(vars(self))
        data["files"] = [_file_json(entry) for entry in self.files]
        data["consumes"] = list(self.consumes)
        return data


def _file_json(entry: ManifestFile) -> dict[str, Any]:
    data: dict[str, Any] = dict(vars(entry))
    data["new_dirs"] = list(entry.new_dirs)
    data["folder"] = None if entry.folder is None else list(entry.folder)
    return data


def parse_manifest(data: object, name: str) -> Manifest:
    """The manifest in ``data`` (parsed JSON); DamagedJournal naming what is wrong.

    Paths must stay inside the workspace and names inside their folder, so a
    tampered manifest cannot make recovery touch anything else. Optional fields
    written by older versions (``keep_undo``, ``undoes``, ``created``,
    ``new_dirs``, ``tmp``, ``backup``, ``folder``) take their old defaults.
    """

    def damaged(why: str) -> DamagedJournal:
        return DamagedJournal(f"{name}: its manifest is damaged ({why})")

    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        raise damaged("no list of files")
    for key in ("id", "label", "state"):
        if not isinstance(data.get(key), str):
            raise damaged(f"{key} is not a string")
    if not _plain_name(data["id"]):
        raise damaged("id is not a plain name")  # finishing moves the folder to undo/<id>
    state = data["state"]
    if state not in ("prepare", "commit"):
        raise damaged(f"its state {state!r} is unknown")
    created = data.get("created", 0.0)
    if isinstance(created, bool) or not isinstance(created, int | float):
        raise damaged("created is not a time")
    keep_undo = data.get("keep_undo", True)
    if not isinstance(keep_undo, bool):
        raise damaged("keep_undo is not true or false")
    undoes = data.get("undoes")
    if undoes is not None and not _plain_name(undoes):
        raise damaged("undoes is not a record name")
    consumes = data.get("consumes", [])
    if not isinstance(consumes, list) or not all(_plain_name(name) for name in consumes):
        raise damaged("consumes is not a list of record names")
    files = tuple(_parse_file(entry, data["id"], damaged) for entry in data["files"])
    owner = data.get("owner")  # advisory (whose commit): anything but a name is nobody's
    return Manifest(
        data["id"],
        data["label"],
        state,
        float(created),
        keep_undo,
        undoes,
        files,
        tuple(consumes),
        owner if isinstance(owner, str) and len(owner) <= MAX_OWNER else None,
    )


def _parse_file(entry: object, txid: str, damaged: Callable[[str], DamagedJournal]) -> ManifestFile:
    if not isinstance(entry, dict) or not _relative(entry.get("path")):
        raise damaged("a file entry has no path inside the workspace")
    path = entry["path"]
    if _NOT_WRITTEN.intersection(path.split("/")):
        # No commit writes there (runtime/files.py: FORBIDDEN_DIRS); a planted journal
        # could otherwise delete a file of known bytes, such as a fresh clone's .git/HEAD.
        raise damaged(f"{path} lies in a folder grinta never writes")
    new_dirs = entry.get("new_dirs", [])
    if not isinstance(new_dirs, list) or not all(_relative(d) for d in new_dirs):
        raise damaged(f"new_dirs of {path} leave the workspace")
    texts = {key: entry.get(key) for key in ("old_sha", "new_sha", "backup", "tmp")}
    if any(value is not None and not isinstance(value, str) for value in texts.values()):
        raise damaged(f"a hash or a name of {path} is not a string")
    if texts["tmp"] is not None and not _plain_name(texts["tmp"]):
        raise damaged(f"the temp file of {path} is not a plain name")
    if texts["tmp"] is not None and not _temp_of(texts["tmp"], txid):
        # Recovery deletes a temp file (roll back) or renames it over its target (roll
        # forward): a name that is not one of this commit's would be a person's file.
        raise damaged(f"the temp file of {path} is not named as this commit's temp files")
    if texts["backup"] is not None and not re.fullmatch(r"\d+\.old", texts["backup"]):
        raise damaged(f"the backup of {path} is not named <n>.old")
    numbers = {key: entry.get(key) for key in ("old_size", "new_size", "mode")}
    if any(value is not None and not _natural(value) for value in numbers.values()):
        raise damaged(f"a size or the mode of {path} is not a natural number")
    folder = entry.get("folder")
    if folder is not None and not (
        isinstance(folder, list) and len(folder) == 2 and all(map(_natural, folder))
    ):
        raise damaged(f"the folder identity of {path} is not two natural numbers")
    return ManifestFile(
        path,
        texts["old_sha"],
        texts["new_sha"],
        numbers["old_size"],
        numbers["new_size"],
        numbers["mode"],
        texts["backup"],
        texts["tmp"],
        tuple(new_dirs),
        None if folder is None else (folder[0], folder[1]),
    )


class ReadOnlyError(Exception):
    """A target may not be written: ``why`` says so (read-only mode, immutable)."""

    def __init__(self, path: str, why: str):
        super().__init__(f"{path} is {why}")
        self.path = path
        self.why = why


class CommitError(OSError):
    """An OS fault stopped a commit or an undo; ``cause`` is the OSError.

    ``what`` names where: a workspace path or grinta's state folder. Unless
    ``decided``, nothing was written and nothing was left behind; a decided
    commit is completed by the next recovery (next commit or next open).
    """

    def __init__(self, what: str, cause: OSError, *, decided: bool = False):
        super().__init__(cause.errno, f"{what}: {cause.strerror or cause}")
        self.what = what
        self.cause = cause
        self.decided = decided


class DamagedJournal(Exception):
    """A journal or undo record cannot be trusted (a bad manifest or backup)."""


class Journal:
    """Commits, recovers and undoes transactions for one workspace root."""

    def __init__(self, root: Path, state_dir: Path, *, lock_wait: float = LOCK_WAIT):
        self.root = root
        self.state_dir = state_dir
        self.journal_dir = state_dir / "journal"
        self.undo_dir = state_dir / "undo"
        self.lock_path = state_dir / "lock"
        self.lock_wait = lock_wait

    # -- commit ---------------------------------------------------------------

    def commit(
        self,
        writes: list[FileWrite],
        label: str,
        *,
        keep_undo: bool = True,
        undoes: str | None = None,
        hook: StepHook = None,
        consumes: tuple[str, ...] = (),
        owner: str | None = None,
    ) -> CommitRecord:
        """Write every file in ``writes`` or none of them.

        ``undoes`` and ``consumes`` name undo records this commit replaces: they are dropped
        once it is in place (by the recovery that finishes it, after a crash). ``owner``
        names who made it (kept with its undo record; ``find`` tells owners apart).
        Raises StaleError or ReadOnlyError (nothing written) and CommitError.
        """
        step = hook or _no_step
        txid = self._next_txid()
        with _faults("the workspace folder"):
            tree = Tree(self.root)  # checks and stages through these folder descriptors
        try:
            modes = [self._mode(tree, write) for write in writes]
            manifest = self._manifest(txid, label, writes, modes, tree, keep_undo, undoes)
            manifest = replace(manifest, consumes=consumes, owner=owner)
            own_lock = self._begin(txid)
            try:
                return self._prepare_and_decide(manifest, writes, tree, step)
            finally:
                _close_lock(own_lock)  # after the folder is gone or in undo/
        finally:
            tree.close()

    def _prepare_and_decide(
        self,
        manifest: Manifest,
        writes: list[FileWrite],
        tree: Tree,
        step: Callable[[str], None],
    ) -> CommitRecord:
        folder = self.journal_dir / manifest.id
        staged: dict[int, tuple[int, tuple[int, int], int]] = {}  # i: (folder fd, id, temp inode)
        decided = False
        try:
            with _faults(".grinta/journal"):
                _write_json(folder / MANIFEST, manifest)
                _fsync_dir(folder)
            step("prepared-manifest")
            for i, (write, entry) in enumerate(zip(writes, manifest.files, strict=True)):
                if write.old is not None and entry.backup is not None:
                    # Backups serve only undo, which checks their sha256 before using one,
                    # so they need not be forced to disk before the commit decides.
                    with _faults(".grinta/journal"):
                        private.write_file(folder / entry.backup, write.old, durable=False)
                if write.new is not None and entry.tmp is not None:
                    with _faults(write.path):
                        staged[i] = stage(tree, write.path, write.new, entry.tmp, entry.mode)
                        _take_owner(staged[i][0], write.path, entry.tmp, entry.mode)
                        _keep_xattrs(staged[i][0], write.path, entry.tmp)
                step(f"staged-{i}")
            with _faults("the workspace folder"):
                for parent in {fd for fd, _, _ in staged.values()}:
                    os.fsync(parent)  # the temp files' names must survive a crash, too

            with _faults(".grinta (grinta's state folder)"), self._workspace_lock():
                self._recover_orphans(skip=manifest.id)
                self._check_consumed(manifest)
                with _faults("the workspace folder"), Tree(self.root) as fresh:
                    files = tuple(
                        replace(entry, folder=self._check_again(fresh, write, entry, staged.get(i)))
                        for i, (write, entry) in enumerate(zip(writes, manifest.files, strict=True))
                    )
                    manifest = replace(manifest, state="commit", files=files)
                    with _faults(".grinta/journal"):
                        _write_json(folder / MANIFEST, manifest)
                        decided = True  # from here on, recovery rolls forward
                        if not _one_rename(manifest):
                            _fsync_dir(folder)
                    step("decided")
                    return self._roll_forward(folder, manifest, step, fresh)
        except CommitError as exc:
            exc.decided = exc.decided or decided
            raise
        finally:
            if not decided:
                self._roll_back(folder, manifest, tree)

    def _next_txid(self) -> str:
        """A new transaction's id: the clock, but past every id in the journal and the undo
        records. Ids order the history (``undo`` restores the highest, pruning drops the
        lowest), so a clock set back (a VM resumed, NTP stepping) must not file a new commit
        before older ones."""
        now = time.time_ns()
        for folder in (self.undo_dir, self.journal_dir):
            try:
                names = os.listdir(folder)
            except OSError:
                continue  # none yet, or unreadable: the commit's own checks say so
            for name in names:
                stamp = name.partition("-")[0]
                if len(stamp) == 20 and stamp.isascii() and stamp.isdigit():
                    now = max(now, int(stamp) + 1)
        return f"{now:020d}-{uuid.uuid4().hex[:8]}"

    def _check_consumed(self, manifest: Manifest) -> None:
        """StaleError unless every undo record ``manifest`` consumes is still kept.

        An undo reads its record before it takes the workspace lock: another process may
        undo that record meanwhile and commit the same bytes again, and restoring then would
        undo that other commit, whose record would stay to restore what is no longer there.
        """
        for name in filter(None, (manifest.undoes, *manifest.consumes)):
            if not os.path.lexists(self.undo_dir / name / MANIFEST):
                raise StaleError(manifest.files[0].path if manifest.files else name)

    def _check(self, tree: Tree, write: FileWrite) -> Found:
        """The target as it is now; raise StaleError or ReadOnlyError."""
        with _faults(write.path):
            found = look(tree, write.path, -1 if write.old is None else len(write.old))
        if not found.holds(write.old):
            raise StaleError(write.path)
        if found.locked:
            raise ReadOnlyError(write.path, found.locked)
        return found

    def _mode(self, tree: Tree, write: FileWrite) -> int | None:
        """The mode for ``write``'s temp file: its target's; for a file it creates, the one any
        program's new file gets (0666 less the umask), unless a default ACL of its folder
        decides that (None: the temp file's own default, which the ACL then filters)."""
        found = self._check(tree, write)
        if found.mode is not None or write.new is None:
            return found.mode
        umask = _umask()
        if umask is None or not hasattr(os, "getxattr"):  # not Linux: as before
            return None
        parent_rel, _ = split(write.path)
        missing = tree.missing(parent_rel)
        existing = split(missing[0])[0] if missing else parent_rel  # inherits its default ACL
        try:
            os.getxattr(tree.folder(existing), _DEFAULT_ACL)
        except StaleError:
            return None  # the last check says so
        except OSError as exc:
            if exc.errno not in (errno.ENODATA, errno.EOPNOTSUPP, errno.ENOTSUP):
                return None
        else:
            return None
        return 0o666 & ~umask

    def _check_again(
        self,
        tree: Tree,
        write: FileWrite,
        entry: ManifestFile,
        staged: tuple[int, tuple[int, int], int] | None,
    ) -> tuple[int, int] | None:
        """The last look before the decision; the identity of the target's folder."""
        found = self._check(tree, write)
        if staged is not None and entry.tmp is not None:
            staged_fd, staged_id, temp_inode = staged
            if found.folder != staged_id:
                raise StaleError(write.path)  # the folder was replaced since staging
            try:
                temp = os.stat(entry.tmp, dir_fd=staged_fd, follow_symlinks=False)
            except FileNotFoundError:
                raise StaleError(write.path) from None
            if temp.st_ino != temp_inode:
                raise StaleError(write.path)
            if found.mode is not None and found.mode != entry.mode:
                chmod_temp(staged_fd, entry.tmp, found.mode)  # chmod'ed since staging
        return found.folder

    def _manifest(
        self,
        txid: str,
        label: str,
        writes: list[FileWrite],
        modes: list[int | None],
        tree: Tree,
        keep_undo: bool,
        undoes: str | None,
    ) -> Manifest:
        entries = []
        for i, (write, mode) in enumerate(zip(writes, modes, strict=True)):
            parent, name = split(write.path)
            entries.append(
                ManifestFile(
                    path=write.path,
                    old_sha=_sha_or_none(write.old),
                    new_sha=_sha_or_none(write.new),
                    old_size=None if write.old is None else len(write.old),
                    new_size=None if write.new is None else len(write.new),
                    mode=mode,
                    backup=f"{i}.old" if write.old is not None else None,
                    tmp=_tmp_name(name, txid, i) if write.new is not None else None,
                    new_dirs=(*write.prune_dirs, *tree.missing(parent)),
                )
            )
        return Manifest(txid, label, "prepare", time.time(), keep_undo, undoes, tuple(entries))

    def _begin(self, txid: str) -> int:
        """Make the journal folder and take its own lock, under the workspace lock."""
        folder = self.journal_dir / txid
        with _faults(".grinta (grinta's state folder)"):
            for directory in (self.state_dir, self.journal_dir, self.undo_dir):
                private.make_dir(directory)
            with self._workspace_lock():
                private.make_dir(folder, exist_ok=False)
                fd = -1
                try:
                    fd = _open_lock(
                        lambda: private.open_file(folder / _OWN_LOCK, os.O_RDWR | os.O_EXCL)
                    )
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BaseException:
                    if fd != -1:
                        _close_lock(fd)
                    shutil.rmtree(folder, ignore_errors=True)
                    raise
        return fd

    @contextlib.contextmanager
    def _workspace_lock(self) -> Iterator[None]:
        fds: list[int] = []
        try:
            if not self._take_workspace_lock(fds, self.lock_wait):
                raise CommitError(
                    ".grinta/lock",
                    TimeoutError(
                        errno.ETIMEDOUT,
                        f"another process has been committing in this workspace for "
                        f"{self.lock_wait:g} s; try again",
                    ),
                )
            yield
        finally:
            for fd in reversed(fds):
                _close_lock(fd)  # releases the lock

    def _take_workspace_lock(self, fds: list[int], wait: float) -> bool:
        """Lock ``.grinta/lock`` and then the ``.grinta`` folder itself, waiting up to ``wait``
        seconds in all; False when another holder keeps them. ``fds`` gets each descriptor
        opened, for the caller to close (which releases the locks).

        The file alone is not enough: a person who deletes a lock file they take for stale
        (while a commit holds it) lets the next process create and lock a new one, and two
        commits then renamed into the same files at once, the later one's bytes lost while it
        reported success. The folder cannot be deleted while it holds the journals; the file
        is kept too, for an older version working in the same folder.
        """
        deadline = time.monotonic() + wait
        fds.append(_open_lock(lambda: private.open_file(self.lock_path, os.O_RDWR)))
        if not private.lock(fds[-1], wait):
            return False
        fds.append(_open_lock(lambda: os.open(self.state_dir, _STATE_DIR)))
        return private.lock(fds[-1], max(0.0, deadline - time.monotonic()))

    # -- recovery -------------------------------------------------------------

    def recover(self) -> list[str]:
        """Finish or undo the orphaned transactions; return what was done.

        Never raises for an OS fault: a problem is one more line of the result.
        Returns at once, doing nothing, while another process holds the
        workspace lock (it recovers orphans itself before committing).
        """
        try:
            if not private.real_dir(self.state_dir):
                return []
            private.tighten(self.state_dir)  # made loose by an older version, say
            if not private.real_dir(self.journal_dir):
                return []
            with os.scandir(self.journal_dir) as entries:
                if next(entries, None) is None:
                    return []
        except FileNotFoundError:
            return []
        except OSError as exc:
            return [f"recovery skipped: {exc.strerror or exc}"]
        fds: list[int] = []
        try:
            if not self._take_workspace_lock(fds, 0):
                return []
        except OSError as exc:
            for fd in reversed(fds):
                _close_lock(fd)
            return [f"recovery skipped: {self.lock_path} cannot be opened ({exc.strerror})"]
        try:
            return self._recover_orphans()
        finally:
            for fd in reversed(fds):
                _close_lock(fd)

    def _recover_orphans(self, skip: str | None = None) -> list[str]:
        """Recover every journal whose own lock is free. Call with the workspace lock held."""
        try:
            names = sorted(os.listdir(self.journal_dir))
        except OSError as exc:
            return [f"recovery skipped: {self.journal_dir} cannot be read ({exc.strerror})"]
        notes = []
        for name in names:
            if name == skip:
                continue
            folder = self.journal_dir / name
            try:
                note = self._recover_if_orphan(folder)
            except OSError as exc:
                note = _leave(folder, f"it cannot be read ({exc.strerror or exc})")
            if note:
                notes.append(note)
        return notes

    def _recover_if_orphan(self, folder: Path) -> str | None:
        try:
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                return None  # not a journal
        except FileNotFoundError:
            return None  # finished meanwhile
        try:
            fd: int | None = _open_lock(lambda: os.open(folder / _OWN_LOCK, _LOCK))
        except FileNotFoundError:
            fd = None  # its owner died before making the lock, or after dropping it
        try:
            if fd is not None and not private.lock(fd, 0):
                return None  # a commit in progress in a live process
            return self._recover_one(folder)
        finally:
            if fd is not None:
                _close_lock(fd)

    def _recover_one(self, folder: Path) -> str:
        try:
            manifest = _load_manifest(folder)
        except FileNotFoundError:
            # Killed before the manifest was durable: no temp file exists yet.
            extra = set(os.listdir(folder)) - {_OWN_LOCK, "manifest.tmp"}
            if extra:
                return _leave(folder, f"it has no manifest but holds {', '.join(sorted(extra))}")
            _remove(folder, manifest_first=False)
            return f"discarded {folder.name}"
        except DamagedJournal as exc:
            return _leave(folder, str(exc))
        if manifest.state == "commit":
            try:
                with Tree(self.root) as tree:
                    changed = _changed_since(tree, manifest)
                    if changed is not None:
                        return _leave(
                            folder,
                            f"decided, but {changed} changed since; finishing would overwrite it",
                        )
                    self._roll_forward(folder, manifest, _no_step, tree)
            except StaleError as exc:
                return _leave(folder, f"decided, but {exc.path} moved or its folder changed")
            except CommitError as exc:
                return _leave(folder, f"decided, but it could not finish ({exc})")
            return f"completed {folder.name}: {_names(manifest)} as it decided"
        with Tree(self.root) as tree:
            missed = self._roll_back(folder, manifest, tree)
        where = f" (temp files left: {', '.join(missed)})" if missed else ""
        return f"rolled back {folder.name}: {_names(manifest)} as before it{where}"

    def _roll_back(self, folder: Path, manifest: Manifest, tree: Tree) -> list[str]:
        """Remove the temp files, the folders made for them and the journal; never raises."""
        missed = []
        for entry in manifest.files:
            if entry.tmp:
                parent, _ = split(entry.path)
                try:
                    os.unlink(entry.tmp, dir_fd=tree.folder(parent, for_path=entry.path))
                except FileNotFoundError:
                    pass
                except (OSError, StaleError):
                    missed.append(f"{parent}/{entry.tmp}".lstrip("/"))
            for new_dir in reversed(entry.new_dirs):
                rmdir_if_empty(tree, new_dir)
        _remove(folder, manifest_first=False)
        return missed

    def _roll_forward(
        self, folder: Path, manifest: Manifest, step: Callable[[str], None], tree: Tree
    ) -> CommitRecord:
        for i, entry in enumerate(manifest.files):
            path = entry.path
            parent_rel, name = split(path)
            with _faults(path, decided=True):
                if entry.tmp:
                    parent = tree.folder(parent_rel, for_path=path)
                    if entry.folder not in (None, identity(parent)):
                        raise StaleError(path)  # not the folder the temp file was staged in
                    with contextlib.suppress(FileNotFoundError):  # renamed before a crash
                        os.replace(entry.tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
                    os.fsync(parent)
                else:
                    found = look(tree, path, entry.old_size)
                    if found.sha is not None and found.sha == entry.old_sha:
                        parent = tree.folder(parent_rel, for_path=path)
                        if entry.folder not in (None, identity(parent)):
                            raise StaleError(path)
                        os.unlink(name, dir_fd=parent)
                        os.fsync(parent)
                    for new_dir in reversed(entry.new_dirs):
                        rmdir_if_empty(tree, new_dir)
            step(f"renamed-{i}")
        record = _record(manifest)
        # Every file is in place: a fault from here on costs the undo record, not the commit
        # (the journal folder stays, and the next recovery moves it on).
        with contextlib.suppress(OSError):
            private.make_dir(self.undo_dir)  # a real folder, never a link to elsewhere
            for consumed in filter(None, (manifest.undoes, *manifest.consumes)):
                _remove(self.undo_dir / consumed, manifest_first=True)
            if manifest.keep_undo:
                (folder / _OWN_LOCK).unlink(missing_ok=True)
                destination = self.undo_dir / manifest.id
                # Not fsynced: lost to a power cut, the move leaves a decided journal, which
                # the next recovery rolls forward again (its renames are durable) and moves.
                os.replace(folder, destination)
                record.folder = destination
                self._prune()
            else:
                _remove(folder, manifest_first=False)
        step("done")
        return record

    # -- undo -----------------------------------------------------------------

    def history(self) -> list[CommitRecord]:
        """Commits that can be undone, oldest first (unreadable records are skipped)."""
        try:
            if not (private.real_dir(self.state_dir) and private.real_dir(self.undo_dir)):
                return []
            names = sorted(os.listdir(self.undo_dir))
        except OSError:
            return []
        records = []
        for name in names:
            folder = self.undo_dir / name
            try:
                if not stat.S_ISDIR(os.lstat(folder).st_mode):
                    continue  # a link planted among the records: never read or undone through
                manifest = _load_manifest(folder)
            except (OSError, DamagedJournal):
                continue
            records.append(_record(manifest, folder))
        return records

    def undo_writes(self, record: CommitRecord) -> list[FileWrite]:
        """The writes that restore ``record``'s files to their old bytes.

        Raises StaleError when a file no longer holds what the commit wrote (or
        the record was undone meanwhile), DamagedJournal, and CommitError.
        """
        if record.folder is None:
            raise ValueError("this commit has no undo record")
        try:
            manifest = _load_manifest(record.folder)
        except FileNotFoundError:  # undone meanwhile, by another session
            raise StaleError(record.files[0] if record.files else record.id) from None
        except OSError as exc:
            raise CommitError("the undo record", exc) from exc
        writes = []
        with _faults("the workspace folder"), Tree(self.root) as tree:
            for entry in manifest.files:
                size = -1 if entry.new_sha is None else entry.new_size
                with _faults(entry.path):
                    found = look(tree, entry.path, size)
                if found.sha != entry.new_sha:
                    raise StaleError(entry.path)
                old = self._backup(record.folder, entry) if entry.backup else None
                prune = entry.new_dirs if old is None else ()
                writes.append(FileWrite(entry.path, found.data, old, prune))
        return writes

    def find(
        self, files: dict[str, tuple[str | None, str | None]], owner: str | None = None
    ) -> CommitRecord | None:
        """The newest commit that can be undone whose files went exactly from the first to
        the second sha256 of ``files`` (None: absent), if one is kept; with ``owner``, one
        that ``owner`` made or that names no owner (made by an older version).

        A session names by this a commit that landed before the crash that lost its id.
        """
        for record in reversed(self.history()):
            if record.folder is None or sorted(record.files) != sorted(files):
                continue
            if owner is not None and record.owner not in (None, owner):
                continue
            try:
                manifest = _load_manifest(record.folder)
            except (OSError, DamagedJournal):
                continue
            if all(files[e.path] == (e.old_sha, e.new_sha) for e in manifest.files):
                return record
        return None

    def undo_many(
        self, records: list[CommitRecord], label: str, hook: StepHook = None
    ) -> CommitRecord:
        """Restore the files of ``records`` (oldest first) to their bytes before the first of
        them, as one atomic transaction, which drops their undo records (``consumes``: a
        crash leaves the files and the records consistent, all-old or all-new).

        Refused (StaleError, nothing written) when a file no longer holds what the last of
        them wrote, or when it changed between two of them (something else wrote it then:
        restoring would lose that change); DamagedJournal and CommitError as ``undo_writes``.
        """
        # path -> (the first record's entry and folder: the old bytes; the last entry)
        plan: dict[str, tuple[ManifestFile, Path, ManifestFile]] = {}
        for record in records:
            if record.folder is None:
                raise ValueError("this commit has no undo record")
            try:
                manifest = _load_manifest(record.folder)
            except FileNotFoundError:  # undone meanwhile
                raise StaleError(record.files[0] if record.files else record.id) from None
            except OSError as exc:
                raise CommitError("the undo record", exc) from exc
            for entry in manifest.files:
                found = plan.get(entry.path)
                if found is None:
                    plan[entry.path] = (entry, record.folder, entry)
                    continue
                if found[2].new_sha != entry.old_sha:
                    raise StaleError(entry.path)
                plan[entry.path] = (found[0], found[1], entry)
        writes = []
        with _faults("the workspace folder"), Tree(self.root) as tree:
            for path, (first, folder, last) in plan.items():
                size = -1 if last.new_sha is None else last.new_size
                with _faults(path):
                    found_now = look(tree, path, size)
                if found_now.sha != last.new_sha:
                    raise StaleError(path)
                old = self._backup(folder, first) if first.backup else None
                prune = first.new_dirs if old is None else ()
                writes.append(FileWrite(path, found_now.data, old, prune))
        consumed = tuple(record.id for record in records)
        return self.commit(writes, label, keep_undo=False, hook=hook, consumes=consumed)

    def _backup(self, folder: Path, entry: ManifestFile) -> bytes:
        damaged = DamagedJournal(
            f"the undo record for {entry.path} is damaged (its backup does not match)"
        )
        if entry.backup is None:
            raise damaged
        try:
            old = _read_state(folder / entry.backup)
        except (FileNotFoundError, DamagedJournal):
            raise damaged from None
        except OSError as exc:
            raise CommitError("the undo record", exc) from exc
        if sha256(old) != entry.old_sha:
            raise damaged
        return old

    def undo(self, record: CommitRecord, hook: StepHook = None) -> CommitRecord:
        """Restore ``record``'s files byte-for-byte, as one more atomic transaction."""
        writes = self.undo_writes(record)
        return self.commit(
            writes, f"undo {record.label}", keep_undo=False, undoes=record.id, hook=hook
        )

    def _prune(self) -> None:
        if not private.real_dir(self.undo_dir):
            return
        names = sorted(os.listdir(self.undo_dir))  # txids: oldest first
        for name in names[:-UNDO_KEEP]:
            _remove(self.undo_dir / name, manifest_first=True)


# -- the manifest and the journal's folders ------------------------------------------


def _changed_since(tree: Tree, manifest: Manifest) -> str | None:
    """The first file of a decided ``manifest`` whose temp file is still there while the file
    no longer holds its old bytes (a person wrote it after the crash), or None.

    Renaming that temp file would lose their change; recovery leaves the journal instead.
    """
    for entry in manifest.files:
        if entry.tmp is None:
            continue  # a deletion: roll forward removes only a file that holds its old bytes
        parent_rel, _ = split(entry.path)
        try:
            parent = tree.folder(parent_rel, for_path=entry.path)
            os.stat(entry.tmp, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            continue  # renamed before the crash
        found = look(tree, entry.path, -1 if entry.old_size is None else entry.old_size)
        if found.sha != entry.old_sha:
            return entry.path
    return None


def _one_rename(manifest: Manifest) -> bool:
    """Whether ``manifest`` decides a single rename (or removal) and nothing else.

    Such a commit needs its decision to reach the disk before the rename only as far as
    the manifest's bytes go (``_write_json`` forces them): a power cut that loses the
    replaced name leaves a ``prepare`` journal, which recovery rolls back, and the one
    rename, atomic on its own, has left the file all-old or all-new either way. A commit
    of several files needs the name on disk first (it orders their renames), and so does
    one that consumes undo records (rolled back, it would leave them to restore again).
    """
    return len(manifest.files) == 1 and manifest.undoes is None and not manifest.consumes


def _tmp_name(name: str, txid: str, index: int) -> str:
    tmp = f".{name}.grinta-{txid}.tmp"
    if len(os.fsencode(tmp)) > _NAME_MAX:  # a long target name must not make its temp fail
        tmp = f".grinta-{txid}-{index}.tmp"
    return tmp


def _temp_of(tmp: str, txid: str) -> bool:
    """Whether ``tmp`` is named as a temp file of commit ``txid`` (``_tmp_name``'s forms)."""
    mark = f"grinta-{txid}"
    return (tmp.startswith(".") and tmp.endswith(f".{mark}.tmp")) or bool(
        re.fullmatch(rf"\.{re.escape(mark)}-\d+\.tmp", tmp)
    )


def _sha_or_none(data: bytes | None) -> str | None:
    return None if data is None else sha256(data)


def _read_state(path: Path) -> bytes:
    """A manifest or a backup; DamagedJournal when it is not a regular file."""
    fd = os.open(path, READ)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise DamagedJournal(
                f"{path.parent.name} is damaged: {path.name} is not a regular file"
            )
        return read_fd(fd, info.st_size)
    finally:
        os.close(fd)


def _write_json(path: Path, manifest: Manifest) -> None:
    tmp = path.with_suffix(".tmp")
    data = json.dumps(manifest.to_json(), separators=(",", ":")).encode("utf-8")
    private.write_file(tmp, data, durable=True)
    os.replace(tmp, path)


def _load_manifest(folder: Path) -> Manifest:
    """A manifest checked for shape; raises FileNotFoundError or DamagedJournal."""
    try:
        data = json.loads(_read_state(folder / MANIFEST))
    except ValueError:
        raise DamagedJournal(f"{folder.name}: its manifest is not valid JSON") from None
    return parse_manifest(data, folder.name)


def _record(manifest: Manifest, folder: Path | None = None) -> CommitRecord:
    return CommitRecord(
        manifest.id,
        manifest.label,
        [e.path for e in manifest.files],
        manifest.created,
        folder,
        manifest.owner,
    )


def _relative(path: Any) -> bool:
    """A workspace-relative POSIX path that stays inside (no "..", no absolute path)."""
    return (
        isinstance(path, str)
        and "\x00" not in path
        and all(part not in ("", ".", "..") for part in path.split("/"))
    )


def _natural(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _plain_name(name: Any) -> bool:
    return _relative(name) and "/" not in name


def _remove(folder: Path, *, manifest_first: bool) -> None:
    """Delete a journal or undo folder so that a crash midway leaves nothing misleading.

    A journal keeps its manifest to the end (recovery reads it and finishes the
    job); an undo record loses it first (it is no longer listed, not damaged).

    The folder is opened without following a link and emptied through that descriptor: a
    repository can ship ``.grinta/undo/<old id>`` as a link to a folder elsewhere, and
    pruning it by name deleted every file in that folder. A link or file planted where a
    record should be is removed itself, never what it points to.
    """
    try:
        fd = os.open(folder, _STATE_DIR)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # not a folder of ours: drop the name
            with contextlib.suppress(OSError):
                os.unlink(folder)
        return
    try:
        with contextlib.suppress(OSError):
            if manifest_first:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(MANIFEST, dir_fd=fd)
            for name in os.listdir(fd):
                if name != MANIFEST:
                    os.unlink(name, dir_fd=fd)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(MANIFEST, dir_fd=fd)
            folder.rmdir()
    finally:
        os.close(fd)
    shutil.rmtree(folder, ignore_errors=True)  # whatever a fault left (never follows a link)


def _names(manifest: Manifest, most: int = 5) -> str:
    """The files of a transaction, for a person: the first ``most`` and how many more."""
    paths = [entry.path for entry in manifest.files]
    more = f" and {len(paths) - most} more" if len(paths) > most else ""
    return ", ".join(paths[:most]) + more


def _leave(folder: Path, reason: str) -> str:
    """Keep a journal folder we cannot read for certain, with a note saying why."""
    with contextlib.suppress(OSError):
        private.write_file(
            folder / _NOTE, f"left in place by recovery: {reason}\n".encode(), durable=False
        )
    return f"left {folder.name} in place: {reason}"


# -- low level ---------------------------------------------------------------------

# The lock descriptors this process has open. A flock belongs to the open file, not to the
# process: a process forked meanwhile (multiprocessing's workers, a data loader's) would
# share it and hold the workspace lock long after we let go, so every commit in the folder
# would wait and fail. A forked child closes its copies at once.
_held: set[int] = set()
_held_guard = threading.Lock()  # taken around a fork, so no descriptor is opened unlisted


def _open_lock(open_it: Callable[[], int]) -> int:
    with _held_guard:
        fd = open_it()
        _held.add(fd)
    return fd


def _close_lock(fd: int) -> None:
    with _held_guard:
        _held.discard(fd)
        os.close(fd)


def _drop_held_locks() -> None:
    global _held_guard
    for fd in _held:
        with contextlib.suppress(OSError):
            os.close(fd)
    _held.clear()
    _held_guard = threading.Lock()


os.register_at_fork(
    before=lambda: _held_guard.acquire(),
    after_in_parent=lambda: _held_guard.release(),
    after_in_child=_drop_held_locks,
)


def _no_step(_label: str) -> None:
    return None


@contextlib.contextmanager
def _faults(what: str, *, decided: bool = False) -> Iterator[None]:
    """Turn an OSError into a CommitError naming ``what`` (the innermost name wins)."""
    try:
        yield
    except CommitError:
        raise
    except OSError as exc:
        raise CommitError(what, exc, decided=decided) from exc


def _take_owner(parent: int, path: str, tmp: str, mode: int | None) -> None:
    """Give the temp file ``tmp`` the owner and group of its target ``path``, if it has one.

    The rename puts the temp file in the target's place: without this, a commit made as
    root (a kernel in a container) hands the user's file to root. Where the OS does not
    allow it (another user's file, not root), the file is committed as before.
    """
    try:
        target = os.stat(split(path)[1], dir_fd=parent, follow_symlinks=False)
        temp = os.stat(tmp, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return  # a new file (or one gone since: the last check says so)
    if (target.st_uid, target.st_gid) == (temp.st_uid, temp.st_gid):
        return
    with contextlib.suppress(PermissionError):
        os.chown(tmp, target.st_uid, target.st_gid, dir_fd=parent, follow_symlinks=False)
        if mode is not None:
            chmod_temp(parent, tmp, mode)  # chown drops set-user-ID and set-group-ID bits


# Extended attributes a rewrite must not carry to new bytes: file capabilities (a write
# clears them) and integrity hashes of the old bytes.
_XATTRS_NOT_KEPT = frozenset({"security.capability", "security.ima", "security.evm"})
_DEFAULT_ACL = "system.posix_acl_default"


def _keep_xattrs(parent: int, path: str, tmp: str) -> None:
    """Give the temp file ``tmp`` the extended attributes of its target ``path``, if it has one:
    its POSIX ACL (``system.posix_acl_access``), ``user.*`` tags, its SELinux label.

    The rename puts the temp file in the target's place: without this, a colleague whom an
    ACL let edit the file lost that right at the agent's first edit. An attribute the OS
    refuses to set (another user's label, not root) is left out; nothing else changes.
    """
    if not hasattr(os, "listxattr"):  # Linux only
        return
    try:
        source = os.open(split(path)[1], READ, dir_fd=parent)
    except OSError:
        return  # a new file (or one gone or replaced since: the last check says so)
    try:
        if not stat.S_ISREG(os.fstat(source).st_mode):
            return
        names = [name for name in os.listxattr(source) if name not in _XATTRS_NOT_KEPT]
        if not names:
            return
        target = os.open(tmp, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        try:
            for name in names:
                with contextlib.suppress(OSError):
                    os.setxattr(target, name, os.getxattr(source, name))
        finally:
            os.close(target)
    except OSError:
        return  # a file system without extended attributes
    finally:
        os.close(source)


def _umask() -> int | None:
    """This process's umask, read without changing it (``os.umask`` sets it, and a file
    another thread creates meanwhile would get mode 0666); None where it cannot be read."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        return None
    return None


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
