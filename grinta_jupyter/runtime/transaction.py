"""Atomic multi-file commits with a journal, crash recovery and undo.

A commit of N files runs in phases, each made durable before the next:

1. ``prepare``: the journal folder ``.grinta/journal/<txid>/`` gets a manifest
   naming every file, its old and new sha256 and its temp file; then backups
   of the old bytes and, beside each target, a temp file with the new bytes
   (fsynced, mode copied).
2. ``commit``: the manifest is atomically replaced by one whose state is
   ``commit``. From here on the transaction is decided.
3. Every temp file is renamed over its target (or the target is removed).
4. The journal folder moves to ``.grinta/undo/``, where it serves ``undo``.

Opening a workspace recovers any journal left by a killed process: a
``prepare`` journal is rolled back (targets were never touched), a ``commit``
journal is rolled forward (temp files still present are renamed; the rest are
already in place). Either way every file ends all-old or all-new.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from grinta_jupyter.runtime.textfile import sha256

MANIFEST = "manifest.json"
UNDO_KEEP = 50

# Called with a label at every durable step of a commit; tests use it to kill
# the process at each point. None in production.
StepHook = Callable[[str], None] | None


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


class StaleError(Exception):
    """A file changed on disk since it was staged."""

    def __init__(self, path: str):
        super().__init__(path)
        self.path = path


class Journal:
    """Commits, recovers and undoes transactions for one workspace root."""

    def __init__(self, root: Path, state_dir: Path):
        self.root = root
        self.journal_dir = state_dir / "journal"
        self.undo_dir = state_dir / "undo"

    # -- commit ---------------------------------------------------------------

    def commit(
        self,
        writes: list[FileWrite],
        label: str,
        *,
        keep_undo: bool = True,
        undoes: str | None = None,
        hook: StepHook = None,
    ) -> CommitRecord:
        """Write every file in ``writes`` or none of them. Raises StaleError."""
        step = hook or (lambda _label: None)
        for write in writes:
            if _current_sha(self.root / write.path) != _sha_or_none(write.old):
                raise StaleError(write.path)
        txid = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
        folder = self.journal_dir / txid
        folder.mkdir(parents=True)
        entries = []
        for i, write in enumerate(writes):
            target = self.root / write.path
            entries.append(
                {
                    "path": write.path,
                    "old_sha": _sha_or_none(write.old),
                    "new_sha": _sha_or_none(write.new),
                    "backup": f"{i}.old" if write.old is not None else None,
                    "tmp": _tmp_name(target, txid) if write.new is not None else None,
                    "new_dirs": [
                        *write.prune_dirs,
                        *(
                            p.relative_to(self.root).as_posix()
                            for p in _missing_dirs(target.parent, self.root)
                        ),
                    ],
                }
            )
        manifest = {
            "id": txid,
            "label": label,
            "state": "prepare",
            "created": time.time(),
            "keep_undo": keep_undo,
            "undoes": undoes,
            "files": entries,
        }
        _write_json(folder / MANIFEST, manifest)
        _fsync_dir(folder)
        step("prepared-manifest")

        staged_dirs: set[Path] = set()
        for i, (write, entry) in enumerate(zip(writes, entries, strict=True)):
            target = self.root / write.path
            if write.old is not None:
                # Backups serve only undo, which checks their sha256 before using one,
                # so they need not be forced to disk before the commit decides.
                _write_plain(folder / f"{i}.old", write.old)
            if write.new is not None:
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = target.parent / entry["tmp"]
                _write_durable(tmp, write.new, mode=_mode(target))
                staged_dirs.add(tmp.parent)
            step(f"staged-{i}")
        for directory in staged_dirs:  # the temp files' names must survive a crash, too
            _fsync_dir(directory)

        for write in writes:  # last look before the point of no return
            if _current_sha(self.root / write.path) != _sha_or_none(write.old):
                self._roll_back(folder, manifest)
                raise StaleError(write.path)
        manifest["state"] = "commit"
        _write_json(folder / MANIFEST, manifest)
        _fsync_dir(folder)
        step("decided")

        return self._roll_forward(folder, manifest, step)

    # -- recovery -------------------------------------------------------------

    def recover(self) -> list[str]:
        """Finish or undo transactions interrupted by a crash; return what was done."""
        done = []
        if not self.journal_dir.is_dir():
            return done
        for folder in sorted(p for p in self.journal_dir.iterdir() if p.is_dir()):
            try:
                manifest = json.loads((folder / MANIFEST).read_text("utf-8"))
            except (OSError, ValueError):
                # Killed before the manifest was durable: no temp file exists yet.
                shutil.rmtree(folder, ignore_errors=True)
                done.append(f"discarded {folder.name}")
                continue
            if manifest.get("state") == "commit":
                self._roll_forward(folder, manifest, lambda _label: None)
                done.append(f"completed {folder.name}")
            else:
                self._roll_back(folder, manifest)
                done.append(f"rolled back {folder.name}")
        return done

    def _roll_back(self, folder: Path, manifest: dict) -> None:
        for entry in manifest["files"]:
            if entry["tmp"]:
                (self.root / entry["path"]).parent.joinpath(entry["tmp"]).unlink(missing_ok=True)
            for new_dir in reversed(entry.get("new_dirs", [])):
                _rmdir_if_empty(self.root / new_dir)
        shutil.rmtree(folder, ignore_errors=True)

    def _roll_forward(
        self, folder: Path, manifest: dict, step: Callable[[str], None]
    ) -> CommitRecord:
        for i, entry in enumerate(manifest["files"]):
            target = self.root / entry["path"]
            if entry["tmp"]:
                tmp = target.parent / entry["tmp"]
                if tmp.exists():
                    os.replace(tmp, target)
                    _fsync_dir(target.parent)
            else:
                if target.exists() and _current_sha(target) == entry["old_sha"]:
                    target.unlink()
                    _fsync_dir(target.parent)
                for new_dir in reversed(entry.get("new_dirs", [])):
                    _rmdir_if_empty(self.root / new_dir)
            step(f"renamed-{i}")
        record = CommitRecord(
            manifest["id"],
            manifest["label"],
            [e["path"] for e in manifest["files"]],
            manifest["created"],
        )
        if manifest.get("undoes"):
            shutil.rmtree(self.undo_dir / manifest["undoes"], ignore_errors=True)
        if manifest.get("keep_undo", True):
            self.undo_dir.mkdir(parents=True, exist_ok=True)
            destination = self.undo_dir / manifest["id"]
            os.replace(folder, destination)
            _fsync_dir(self.undo_dir)
            record.folder = destination
            self._prune()
        else:
            shutil.rmtree(folder, ignore_errors=True)
        step("done")
        return record

    # -- undo -----------------------------------------------------------------

    def history(self) -> list[CommitRecord]:
        """Commits that can be undone, oldest first."""
        if not self.undo_dir.is_dir():
            return []
        records = []
        for folder in sorted(p for p in self.undo_dir.iterdir() if p.is_dir()):
            try:
                manifest = json.loads((folder / MANIFEST).read_text("utf-8"))
            except (OSError, ValueError):
                continue
            records.append(
                CommitRecord(
                    manifest["id"],
                    manifest["label"],
                    [e["path"] for e in manifest["files"]],
                    manifest["created"],
                    folder,
                )
            )
        return records

    def undo_writes(self, record: CommitRecord) -> list[FileWrite]:
        """The writes that restore ``record``'s files to their old bytes.

        Raises StaleError when a file no longer holds what the commit wrote.
        """
        assert record.folder is not None
        manifest = json.loads((record.folder / MANIFEST).read_text("utf-8"))
        writes = []
        for i, entry in enumerate(manifest["files"]):
            target = self.root / entry["path"]
            if _current_sha(target) != entry["new_sha"]:
                raise StaleError(entry["path"])
            current = target.read_bytes() if target.exists() else None
            old = (record.folder / f"{i}.old").read_bytes() if entry["backup"] else None
            if old is not None and sha256(old) != entry["old_sha"]:
                raise OSError(
                    f"the undo record for {entry['path']} is damaged (its backup does not match)"
                )
            prune = tuple(entry.get("new_dirs", [])) if old is None else ()
            writes.append(FileWrite(entry["path"], current, old, prune))
        return writes

    def undo(self, record: CommitRecord, hook: StepHook = None) -> CommitRecord:
        """Restore ``record``'s files byte-for-byte, as one more atomic transaction."""
        writes = self.undo_writes(record)
        return self.commit(
            writes, f"undo {record.label}", keep_undo=False, undoes=record.id, hook=hook
        )

    def _prune(self) -> None:
        folders = sorted(p for p in self.undo_dir.iterdir() if p.is_dir())
        for folder in folders[:-UNDO_KEEP]:
            shutil.rmtree(folder, ignore_errors=True)


def _tmp_name(target: Path, txid: str) -> str:
    return f".{target.name}.grinta-{txid}.tmp"


def _missing_dirs(directory: Path, root: Path) -> list[Path]:
    missing = []
    while directory != root and not directory.exists():
        missing.append(directory)
        directory = directory.parent
    return list(reversed(missing))


def _rmdir_if_empty(directory: Path) -> None:
    with contextlib.suppress(OSError):
        directory.rmdir()


def _sha_or_none(data: bytes | None) -> str | None:
    return None if data is None else sha256(data)


def _current_sha(path: Path) -> str | None:
    try:
        return sha256(path.read_bytes())
    except FileNotFoundError:
        return None


def _mode(target: Path) -> int | None:
    try:
        return target.stat().st_mode & 0o7777
    except FileNotFoundError:
        return None


def _write_durable(path: Path, data: bytes, mode: int | None = None) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644 if mode is None else mode)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_plain(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    _write_durable(tmp, json.dumps(data, indent=1).encode("utf-8"))
    os.replace(tmp, path)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
