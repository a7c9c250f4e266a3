"""Content-addressed snapshots of the files a session touched, so any session can be replayed.

The first time a session reads or stages a file, it hands the file's bytes to
``SnapshotStore.keep`` (in a worker thread) and logs the ``FileSnapshot`` it
returns. The bytes are stored once, under ``<root>/.grinta/blobs/<2 hex>/<62 hex>``,
named by their sha256; a file that did not exist is a snapshot with
``sha256`` None and no blob. ``materialize`` writes the first snapshot of every
path of a log into a new folder: the workspace as the session found it, which
``grinta replay`` runs on when the session did not run on a bundled sample.

Bounds: a file over ``MAX_FILE_BYTES`` (the largest file a tool reads or edits,
``Settings.max_file_bytes``) is not kept, nor anything once a store (one per
session) has kept ``MAX_SESSION_BYTES``; the snapshot then says ``stored``
False and why, and such a file cannot be restored.

Trust: blobs are private like the logs (folders 0700, files 0600,
``runtime/private.py``: never through a symlink, never a FIFO), written to a
temporary name and renamed into place, and never rewritten: an existing blob of
the right size is kept as it is (only its time is touched, see ``clean``). A
blob is read back only when its bytes hash to its name: a tampered one is
refused, never restored. A hash from a log must be 64 hex digits and a path
must stay inside the new folder, so a hostile log cannot reach outside either.

Cleaning: ``clean`` deletes session logs (the oldest ended ones beyond a number
kept, or the ones named; never one a running session holds) and then every blob
that no remaining log under ``.grinta/sessions/`` references. Nothing is deleted when a remaining log
cannot be read (its references are unknown). A blob younger than
``BLOB_GRACE_SECONDS`` is kept even when unreferenced: a running session
writes its blob just before its log names it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import stat
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from grinta_jupyter.events.log import LogError
from grinta_jupyter.events.models import Event, FileSnapshot
from grinta_jupyter.runtime import private
from grinta_jupyter.runtime.textfile import sha256
from grinta_jupyter.runtime.tree import READ, read_fd

__all__ = [
    "BLOB_GRACE_SECONDS",
    "MAX_FILE_BYTES",
    "MAX_SESSION_BYTES",
    "Cleaned",
    "SnapshotStore",
    "clean",
    "differences",
    "first_snapshots",
]

MAX_FILE_BYTES = 8_000_000  # = Settings.max_file_bytes: every file a tool may edit is kept
MAX_SESSION_BYTES = 64_000_000  # per store, i.e. per session (shared blobs count for each)
BLOB_GRACE_SECONDS = 600.0
BLOBS = "blobs"
SESSIONS = "sessions"
LOG_SUFFIX = ".jsonl"

_HEX = re.compile(r"[0-9a-f]{64}")
_FORBIDDEN_PARTS = frozenset({private.STATE_NAME, ".git", "..", "."})


class _Unavailable(Exception):
    """A blob that cannot be restored; the message says why, in a few words."""


class SnapshotStore:
    """The blobs of the workspace ``root``; one instance per session (it counts the bound)."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        max_file_bytes: int = MAX_FILE_BYTES,
        max_session_bytes: int = MAX_SESSION_BYTES,
    ):
        self.root = Path(root)
        self.folder = self.root / private.STATE_NAME / BLOBS
        self.max_file_bytes = max_file_bytes
        self.max_session_bytes = max_session_bytes
        self.kept_bytes = 0  # bytes of the snapshots this store kept (deduplicated or not)
        self._lock = threading.Lock()

    # -- keeping ------------------------------------------------------------------------

    def keep(self, path: str, data: bytes | None) -> FileSnapshot:
        """The snapshot of workspace file ``path`` holding ``data`` (None: it did not exist).

        An event for the session to emit; over a bound, or when the blob cannot be
        written (a full disk, a symlink planted in ``.grinta``), it says ``stored``
        False and why instead of raising: a snapshot never stops a session.
        """
        if data is None:
            return FileSnapshot(path=path, sha256=None)
        digest = sha256(data)
        size = len(data)
        if size > self.max_file_bytes:
            why = f"{size:,} bytes, over the bound of {self.max_file_bytes:,} per file"
            return FileSnapshot(path=path, sha256=digest, size=size, stored=False, reason=why)
        with self._lock:  # keep() may run in several worker threads at once
            if self.kept_bytes + size > self.max_session_bytes:
                why = f"the session already kept {self.kept_bytes:,} of {self.max_session_bytes:,} bytes"
                return FileSnapshot(path=path, sha256=digest, size=size, stored=False, reason=why)
            self.kept_bytes += size
        try:
            self._write(digest, data)
        except OSError as exc:
            with self._lock:
                self.kept_bytes -= size
            why = f"cannot write its blob: {exc.strerror or exc}"
            return FileSnapshot(path=path, sha256=digest, size=size, stored=False, reason=why)
        return FileSnapshot(path=path, sha256=digest, size=size)

    def blob_path(self, digest: str) -> Path:
        """Where the blob of ``digest`` lives (``digest``: 64 lower-case hex digits)."""
        if not _HEX.fullmatch(digest):
            raise ValueError(f"not a sha256 in hex: {digest!r}")
        return self.folder / digest[:2] / digest[2:]

    def _write(self, digest: str, data: bytes) -> None:
        target = self.blob_path(digest)
        private.make_dirs(target.parent)
        with contextlib.suppress(FileNotFoundError):
            info = os.lstat(target)
            if stat.S_ISREG(info.st_mode) and info.st_size == len(data):
                # Never rewritten; touched so that a concurrent clean sees it as new.
                with contextlib.suppress(OSError):
                    os.utime(target, follow_symlinks=False)
                return
        # Missing, or damaged (its size is wrong): written whole under a temporary name and
        # renamed over, so a reader sees the old entry or the right bytes, never a part.
        tmp = target.parent / f".{digest[2:12]}-{uuid.uuid4().hex[:8]}.tmp"
        try:
            private.write_file(tmp, data, durable=False)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    # -- reading back -------------------------------------------------------------------

    def load(self, digest: str) -> bytes:
        """The bytes of blob ``digest``; ``_Unavailable`` when missing, damaged or not a file."""
        try:
            where = self.blob_path(digest)
        except ValueError:
            raise _Unavailable("the log names no valid sha256 for it") from None
        try:
            private.real_dir(self.folder.parent)  # never through a symlinked .grinta
            private.real_dir(self.folder)
            private.real_dir(where.parent)
            fd = os.open(where, READ)
        except FileNotFoundError:
            raise _Unavailable(f"its snapshot {digest[:12]} is missing") from None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise _Unavailable(f"its snapshot {digest[:12]} is not a regular file") from None
            raise _Unavailable(
                f"its snapshot {digest[:12]} cannot be read: {exc.strerror or exc}"
            ) from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise _Unavailable(f"its snapshot {digest[:12]} is not a regular file")
            data = read_fd(fd, min(info.st_size, self.max_file_bytes))
        finally:
            os.close(fd)
        if sha256(data) != digest:
            raise _Unavailable(
                f"its snapshot {digest[:12]} is damaged (its bytes no longer match their hash)"
            )
        return data

    def materialize(
        self,
        events: Iterable[Event],
        dest: str | os.PathLike[str],
        *,
        others: Sequence[SnapshotStore] = (),
    ) -> list[str]:
        """Write into ``dest`` every file of ``events`` as the session first found it.

        ``dest`` must be a new or empty folder. A blob missing here is looked for in
        ``others`` (the store of the workspace the log names, when it moved). Returns
        one ``"path (why)"`` per file that could not be restored: not kept, its blob
        missing or damaged, or a path that leaves the workspace. A file that did not
        exist is simply not written.
        """
        target = Path(dest)
        if target.exists() and (not target.is_dir() or any(target.iterdir())):
            raise ValueError(f"materialize needs a new or empty folder, not {target}")
        target.mkdir(parents=True, exist_ok=True)
        failed: list[str] = []
        for snap in first_snapshots(events).values():
            parts = _safe_parts(snap.path)
            if parts is None:
                failed.append(f"{snap.path!r} (not a path inside the workspace)")
                continue
            if snap.sha256 is None:
                continue
            if not snap.stored:
                failed.append(f"{snap.path} (not kept: {snap.reason or 'over a bound'})")
                continue
            try:
                data = self._load_anywhere(snap.sha256, others)
                _write_new(target, parts, data)
            except _Unavailable as exc:
                failed.append(f"{snap.path} ({exc})")
            except OSError as exc:
                failed.append(f"{snap.path} (cannot write it: {exc.strerror or exc})")
        return failed

    def _load_anywhere(self, digest: str, others: Sequence[SnapshotStore]) -> bytes:
        first: _Unavailable | None = None
        for store in (self, *others):
            try:
                return store.load(digest)
            except _Unavailable as exc:
                first = first or exc
        assert first is not None
        raise first


def first_snapshots(events: Iterable[Event]) -> dict[str, FileSnapshot]:
    """The first snapshot of each path (any branch): the file as the session found it."""
    found: dict[str, FileSnapshot] = {}
    for event in events:
        if isinstance(event, FileSnapshot):
            found.setdefault(_normal(event.path), event)
    return found


def differences(events: Iterable[Event], root: str | os.PathLike[str]) -> list[str]:
    """The snapshotted paths whose file in ``root`` is not as the session first found it."""
    differ: list[str] = []
    for snap in first_snapshots(events).values():
        parts = _safe_parts(snap.path)
        if parts is None or not snap.stored or snap.size > MAX_FILE_BYTES:
            continue
        where = Path(root, *parts)
        try:
            fd = os.open(where, READ)
        except FileNotFoundError:
            if snap.sha256 is not None:
                differ.append(f"{snap.path} is missing")
            continue
        except OSError:
            differ.append(f"{snap.path} cannot be read")
            continue
        try:
            info = os.fstat(fd)
            same = (
                snap.sha256 is not None
                and stat.S_ISREG(info.st_mode)
                and info.st_size == snap.size
                and sha256(read_fd(fd, info.st_size)) == snap.sha256
            )
        finally:
            os.close(fd)
        if not same:
            differ.append(f"{snap.path} " + ("exists" if snap.sha256 is None else "differs"))
    return differ


def _normal(path: str) -> str:
    return str(PurePosixPath(path))


def _safe_parts(path: str) -> tuple[str, ...] | None:
    """The components of a workspace-relative path, or None when it could leave the folder."""
    if not path or "\x00" in path or "\\" in path or path.startswith("/"):
        return None
    parts = PurePosixPath(path).parts
    if not parts or any(part in _FORBIDDEN_PARTS for part in parts):
        return None
    return parts


def _write_new(dest: Path, parts: tuple[str, ...], data: bytes) -> None:
    """Create ``dest/parts`` holding ``data``; never through a link, never over a file."""
    folder = dest
    for part in parts[:-1]:
        folder = folder / part
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder)
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            raise OSError(errno.ENOTDIR, "a file is where its folder should be")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(folder / parts[-1], flags, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


# -- cleaning -------------------------------------------------------------------------------


@dataclass
class Cleaned:
    """What ``clean`` removed (or, in a dry run, would remove)."""

    logs: list[Path] = field(default_factory=list)  # session logs deleted
    unfinished: list[Path] = field(default_factory=list)  # kept: their last task did not end
    kept: int = 0  # session logs left
    blobs: int = 0  # blobs deleted
    bytes: int = 0  # bytes freed by those blobs


@dataclass
class _Facts:
    refs: set[str]
    unfinished: bool
    mtime: int
    live: bool  # a running session holds it (``EventLog``'s lock): never deleted


def clean(
    root: str | os.PathLike[str],
    *,
    keep: int | None = None,
    logs: Sequence[str | os.PathLike[str]] | None = None,
    unfinished: bool = False,
    dry_run: bool = False,
    grace: float = BLOB_GRACE_SECONDS,
) -> Cleaned:
    """Delete session logs of workspace ``root`` and the blobs only they referenced.

    Which logs: those named in ``logs`` (files of ``.grinta/sessions/``), else every
    ended session beyond the ``keep`` most recently written. A session whose last
    task did not end (it may be resumed) is kept unless ``unfinished``; one that
    a running session holds is always kept (and refused when named). ``dry_run`` says what would go and deletes nothing. Raises
    ``LogError`` (nothing deleted) when a log is not one of the workspace's or a
    remaining log cannot be read; never follows a symlink out of ``.grinta``.
    """
    if (keep is None) == (logs is None):
        raise ValueError("clean takes keep=N or logs=[...], one of the two")
    if keep is not None and keep < 0:
        raise ValueError(f"keep must be 0 or more, not {keep}")
    state = Path(root) / private.STATE_NAME
    sessions = state / SESSIONS
    result = Cleaned()
    facts: dict[Path, _Facts] = {}
    if _real_dir(state) and _real_dir(sessions):
        for entry in os.scandir(sessions):
            if entry.name.endswith(LOG_SUFFIX) and entry.is_file(follow_symlinks=False):
                facts[Path(entry.path)] = _scan(Path(entry.path))
    if logs is not None:
        chosen = [_own_log(Path(p), sessions, facts) for p in logs]
        for path in chosen:
            if facts[path].live:
                raise LogError(
                    f"{path} is the log of a session that is still running; nothing was cleaned"
                )
    else:
        assert keep is not None
        newest = sorted(facts, key=lambda p: (facts[p].mtime, p.name), reverse=True)
        chosen = []
        for path in newest[keep:]:
            fact = facts[path]
            if fact.live or (fact.unfinished and not unfinished):
                result.unfinished.append(path)
            else:
                chosen.append(path)
    chosen = list(dict.fromkeys(chosen))
    needed: set[str] = set()
    for path, fact in facts.items():
        if path not in chosen:
            needed |= fact.refs
    result.logs = chosen
    result.kept = len(facts) - len(chosen)
    doomed = _unreferenced(state / BLOBS, needed, grace) if _real_dir(state) else []
    result.blobs = len(doomed)
    result.bytes = sum(size for _, size in doomed)
    if dry_run:
        return result
    for path in chosen:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    for blob, _ in doomed:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(blob)
        with contextlib.suppress(OSError):  # only an empty fan-out folder goes
            os.rmdir(blob.parent)
    return result


def _real_dir(path: Path) -> bool:
    """True for a real folder, False when absent; a symlink or file raises NotADirectoryError."""
    return private.real_dir(path)


def _own_log(path: Path, sessions: Path, facts: dict[Path, _Facts]) -> Path:
    for known in facts:
        if known == path or (path.exists() and known.exists() and os.path.samefile(known, path)):
            return known
    raise LogError(
        f"{path} is not a session log of this workspace ({sessions}); nothing was cleaned"
    )


_MARKERS = (
    b'"type": "snapshot"',
    b'"type": "session_end"',
    b'"type": "session_start"',
    b'"type": "task_start"',
    b'"type": "rewind"',
)


def _scan(path: Path) -> _Facts:
    """The blobs a log references and whether its last task ended, read line by line.

    Only the lines naming one of the few types that matter are parsed (a log line
    is ``json.dumps`` of an event, its ``type`` first). LogError when unreadable.
    """
    refs: set[str] = set()
    opened = ended = 0
    try:
        fd = os.open(path, READ)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise OSError(errno.EINVAL, "not a regular file")
        live = False
        try:  # released when the file is closed below
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            live = True
        except OSError:
            pass  # a file system without locks: nothing to learn
        with os.fdopen(fd, "rb") as handle:
            for number, line in enumerate(handle, 1):
                if not any(marker in line[:40] for marker in _MARKERS):
                    continue
                try:
                    data = json.loads(line)
                except (ValueError, RecursionError):
                    continue  # a torn line from a crash, or nesting no event has
                kind = data.get("type") if isinstance(data, dict) else None
                if kind == "snapshot":
                    digest = data.get("sha256")
                    if isinstance(digest, str):
                        refs.add(digest)
                elif kind == "session_end":
                    ended = number
                elif kind in ("session_start", "task_start", "rewind"):
                    opened = number
    except OSError as exc:
        raise LogError(
            f"cannot read {path}: {exc.strerror or exc}; nothing was cleaned (its snapshots "
            "might still be needed)"
        ) from None
    return _Facts(refs, opened > ended, info.st_mtime_ns, live)


def _unreferenced(blobs: Path, needed: set[str], grace: float) -> list[tuple[Path, int]]:
    """The blobs (and stale temporary files) that no remaining log needs, with their sizes."""
    if not _real_dir(blobs):
        return []
    now = time.time()
    found: list[tuple[Path, int]] = []
    for fan in os.scandir(blobs):
        if not (len(fan.name) == 2 and fan.is_dir(follow_symlinks=False)):
            continue  # not ours: a symlinked fan-out folder is never entered
        for entry in os.scandir(fan.path):
            if not entry.is_file(follow_symlinks=False):
                continue
            info = entry.stat(follow_symlinks=False)
            if now - info.st_mtime < grace:
                continue
            digest = fan.name + entry.name
            if _HEX.fullmatch(digest) and digest in needed:
                continue
            if _HEX.fullmatch(digest) or entry.name.endswith(".tmp"):
                found.append((Path(entry.path), info.st_size))
    return found
