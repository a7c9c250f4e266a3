"""The snapshot store: content-addressed, bounded, private, atomic, cleaned with its sessions."""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

import pytest

from grinta_jupyter.events import models as ev
from grinta_jupyter.events.log import EventLog, LogError
from grinta_jupyter.events.snapshots import (
    MAX_FILE_BYTES,
    SnapshotStore,
    clean,
    differences,
    first_snapshots,
)
from grinta_jupyter.tools.base import Settings


def blobs(root: Path) -> list[Path]:
    folder = root / ".grinta" / "blobs"
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def age(root: Path, seconds: float = 3600) -> None:
    """Make every blob look written ``seconds`` ago (clean spares young ones)."""
    then = time.time() - seconds
    for blob in blobs(root):
        os.utime(blob, (then, then))


def write_log(
    root: Path, name: str, snapshots: list[ev.FileSnapshot], *, ended: bool = True
) -> Path:
    """A real session log (EventLog) holding ``snapshots``, ended or not."""
    path = root / ".grinta" / "sessions" / f"{name}.jsonl"
    log = EventLog(path, name)
    log.emit(ev.SessionStart(task="t", model="m", toolset="intent", root=str(root), policy="ask"))
    for snap in snapshots:
        log.emit(snap, 1)
    if ended:
        log.emit(ev.SessionEnd(reason="finished", steps=1))
    log.close()
    return path


# -- keeping ------------------------------------------------------------------------------------


def test_the_same_bytes_are_stored_once_and_never_rewritten(tmp_path):
    store = SnapshotStore(tmp_path)
    a = store.keep("a.py", b"print(1)\n")
    b = store.keep("pkg/b.py", b"print(1)\n")
    (blob,) = blobs(tmp_path)
    before = os.stat(blob)

    again = SnapshotStore(tmp_path).keep("c.py", b"print(1)\n")  # another session

    assert a.sha256 == b.sha256 == again.sha256 == blob.parent.name + blob.name
    assert a.stored and a.size == 9 and a.path == "a.py" and b.path == "pkg/b.py"
    assert blob.read_bytes() == b"print(1)\n"
    assert os.stat(blob).st_ino == before.st_ino, "an existing blob is kept, not replaced"
    assert store.kept_bytes == 18


def test_a_file_that_did_not_exist_is_a_snapshot_without_a_blob(tmp_path):
    snap = SnapshotStore(tmp_path).keep("new.py", None)
    assert snap.sha256 is None and snap.stored and snap.size == 0
    assert blobs(tmp_path) == []


def test_the_per_file_bound_is_the_largest_file_a_tool_edits(tmp_path):
    assert Settings().max_file_bytes == MAX_FILE_BYTES
    store = SnapshotStore(tmp_path, max_file_bytes=10)
    snap = store.keep("big.txt", b"x" * 11)
    assert not snap.stored and snap.sha256 is not None and snap.size == 11
    assert "over the bound of 10 per file" in snap.reason
    assert blobs(tmp_path) == [] and store.kept_bytes == 0
    assert store.keep("ok.txt", b"x" * 10).stored


def test_the_per_session_bound_stops_keeping_and_says_so(tmp_path):
    store = SnapshotStore(tmp_path, max_session_bytes=25)
    kept = [store.keep(f"f{i}.txt", bytes([65 + i]) * 10) for i in range(3)]
    assert [s.stored for s in kept] == [True, True, False]
    assert "already kept 20 of 25 bytes" in kept[2].reason
    assert len(blobs(tmp_path)) == 2
    assert SnapshotStore(tmp_path, max_session_bytes=25).keep("g.txt", b"C" * 10).stored


def test_blobs_are_private_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        SnapshotStore(tmp_path).keep("a.py", b"secret = 1\n")
    finally:
        os.umask(old)
    (blob,) = blobs(tmp_path)
    assert stat.S_IMODE(os.stat(blob).st_mode) == 0o600
    for folder in (blob.parent, blob.parent.parent, tmp_path / ".grinta"):
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700, folder


def test_a_symlinked_state_folder_is_never_written_through(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "ws"
    (root / ".grinta").mkdir(parents=True)
    (root / ".grinta" / "blobs").symlink_to(outside)

    snap = SnapshotStore(root).keep("a.py", b"x = 1\n")

    assert not snap.stored and "cannot write its blob" in snap.reason
    assert list(outside.iterdir()) == []


def test_a_damaged_blob_is_replaced_whole_and_no_temporary_file_is_left(tmp_path):
    store = SnapshotStore(tmp_path)
    snap = store.keep("a.py", b"x = 1\n")
    assert snap.sha256 is not None
    blob = store.blob_path(snap.sha256)
    blob.write_bytes(b"x =")  # torn by an earlier crash: the wrong size

    SnapshotStore(tmp_path).keep("b.py", b"x = 1\n")

    assert blob.read_bytes() == b"x = 1\n"
    assert [p.name for p in blob.parent.iterdir()] == [blob.name]


def test_concurrent_keeps_of_the_same_bytes_make_one_whole_blob(tmp_path):
    data = os.urandom(1 << 20)
    store = SnapshotStore(tmp_path)
    snaps: list[ev.FileSnapshot] = []
    threads = [
        threading.Thread(target=lambda i=i: snaps.append(store.keep(f"f{i}", data)))
        for i in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert all(s.stored for s in snaps) and len({s.sha256 for s in snaps}) == 1
    (blob,) = blobs(tmp_path)
    assert blob.read_bytes() == data
    assert store.kept_bytes == 8 << 20


def test_a_hash_that_is_not_one_never_becomes_a_path(tmp_path):
    with pytest.raises(ValueError):
        SnapshotStore(tmp_path).blob_path("../../etc/passwd" + "0" * 48)


# -- reading back ----------------------------------------------------------------------------


def snapshots_of(store: SnapshotStore, files: dict[str, bytes | None]) -> list[ev.FileSnapshot]:
    return [store.keep(path, data) for path, data in files.items()]


def test_materialize_writes_every_file_as_first_found(tmp_path):
    store = SnapshotStore(tmp_path / "ws")
    events = snapshots_of(
        store, {"a.py": b"a\n", "pkg/sub/b.py": b"b\n", "gone.py": None, "empty.txt": b""}
    )
    later = store.keep("a.py", b"changed\n")  # a second snapshot of a path: the first wins

    dest = tmp_path / "dest"
    failed = store.materialize([*events, later], dest)

    assert failed == []
    assert (dest / "a.py").read_bytes() == b"a\n"
    assert (dest / "pkg/sub/b.py").read_bytes() == b"b\n"
    assert (dest / "empty.txt").read_bytes() == b""
    assert not (dest / "gone.py").exists()
    assert first_snapshots([*events, later])["a.py"].sha256 == events[0].sha256


def test_materialize_names_what_it_cannot_restore(tmp_path):
    store = SnapshotStore(tmp_path / "ws", max_file_bytes=100)
    events = snapshots_of(
        store, {"ok.py": b"ok\n", "missing.py": b"m\n", "tampered.py": b"t\n", "big": b"x" * 101}
    )
    missing, tampered = events[1].sha256, events[2].sha256
    assert missing is not None and tampered is not None
    store.blob_path(missing).unlink()
    store.blob_path(tampered).write_bytes(b"T\n")  # same size, other bytes

    dest = tmp_path / "dest"
    failed = store.materialize(events, dest)

    assert (dest / "ok.py").read_bytes() == b"ok\n"
    assert not (dest / "tampered.py").exists(), "a blob whose hash does not match is refused"
    assert failed == [
        f"missing.py (its snapshot {missing[:12]} is missing)",
        f"tampered.py (its snapshot {tampered[:12]} is damaged (its bytes no longer match "
        "their hash))",
        "big (not kept: 101 bytes, over the bound of 100 per file)",
    ]


@pytest.mark.parametrize(
    "path", ["../escape.txt", "/tmp/abs.txt", "a/../../escape.txt", ".git/hooks/pre-commit", ""]
)
def test_a_hostile_path_in_a_log_never_leaves_the_folder(tmp_path, path):
    store = SnapshotStore(tmp_path / "ws")
    snap = store.keep("fine.txt", b"payload\n").model_copy(update={"path": path})
    dest = tmp_path / "deep" / "dest"

    failed = store.materialize([snap], dest)

    assert failed == [f"{path!r} (not a path inside the workspace)"]
    assert list(dest.iterdir()) == []
    assert not (tmp_path / "deep" / "escape.txt").exists()


def test_a_hostile_hash_in_a_log_is_refused(tmp_path):
    store = SnapshotStore(tmp_path / "ws")
    snap = ev.FileSnapshot(path="a.txt", sha256="../../../../etc/passwd", size=1)
    assert store.materialize([snap], tmp_path / "dest") == [
        "a.txt (the log names no valid sha256 for it)"
    ]


def test_materialize_finds_a_blob_in_another_store_and_wants_an_empty_folder(tmp_path):
    first = SnapshotStore(tmp_path / "a")
    snap = first.keep("x.txt", b"x\n")
    elsewhere = SnapshotStore(tmp_path / "b")
    assert elsewhere.materialize([snap], tmp_path / "d1", others=[first]) == []
    assert (tmp_path / "d1" / "x.txt").read_bytes() == b"x\n"
    with pytest.raises(ValueError, match="new or empty folder"):
        first.materialize([snap], tmp_path / "d1")


def test_differences_names_files_not_as_the_session_found_them(tmp_path):
    store = SnapshotStore(tmp_path / "ws")
    events = snapshots_of(store, {"same.py": b"s\n", "changed.py": b"c\n", "new.py": None})
    root = tmp_path / "other"
    root.mkdir()
    (root / "same.py").write_bytes(b"s\n")
    (root / "changed.py").write_bytes(b"C\n")
    (root / "new.py").write_bytes(b"here already\n")
    assert differences(events, root) == ["changed.py differs", "new.py exists"]
    (root / "changed.py").unlink()
    assert differences(events, root) == ["changed.py is missing", "new.py exists"]


# -- cleaning -----------------------------------------------------------------------------------


def test_deleting_a_log_keeps_the_blobs_another_log_still_needs(tmp_path):
    store = SnapshotStore(tmp_path)
    shared, only_old = store.keep("a.py", b"shared\n"), store.keep("b.py", b"old only\n")
    only_new = store.keep("c.py", b"new only\n")
    old = write_log(tmp_path, "old", [shared, only_old])
    new = write_log(tmp_path, "new", [shared, only_new])
    age(tmp_path)

    done = clean(tmp_path, logs=[old])

    assert done.logs == [old] and done.blobs == 1 and done.bytes == len(b"old only\n")
    assert not old.exists() and new.exists()
    assert assert_blobs(tmp_path) == {shared.sha256, only_new.sha256}


def assert_blobs(root: Path) -> set[str | None]:
    return {b.parent.name + b.name for b in blobs(root)}


def test_keep_n_deletes_the_oldest_ended_sessions_and_spares_unfinished_ones(tmp_path):
    store = SnapshotStore(tmp_path)
    paths = []
    for i, ended in enumerate([True, False, True, True]):
        paths.append(write_log(tmp_path, f"s{i}", [store.keep(f"f{i}", b"%d\n" % i)], ended=ended))
        then = time.time() - 1000 + i  # s3 is the newest
        os.utime(paths[-1], (then, then))
    age(tmp_path)

    preview = clean(tmp_path, keep=1, dry_run=True)
    assert preview.logs == [paths[2], paths[0]] and preview.unfinished == [paths[1]]
    assert all(p.exists() for p in paths) and len(blobs(tmp_path)) == 4, "a dry run deletes nothing"

    done = clean(tmp_path, keep=1)
    assert [p.exists() for p in paths] == [False, True, False, True]
    assert done.kept == 2 and done.blobs == 2

    assert clean(tmp_path, keep=0, unfinished=True).logs == [paths[3], paths[1]]
    assert list((tmp_path / ".grinta" / "blobs").iterdir()) == [], "no empty fan-out folder left"


def test_a_young_blob_is_spared_a_running_session_writes_it_before_logging_it(tmp_path):
    SnapshotStore(tmp_path).keep("a.py", b"just written\n")
    assert clean(tmp_path, keep=0).blobs == 0
    age(tmp_path)
    assert clean(tmp_path, keep=0).blobs == 1


def test_clean_never_follows_a_symlink_out_of_the_state_folder(tmp_path):
    outside = tmp_path / "outside"
    (outside / "ab").mkdir(parents=True)
    victim = outside / "ab" / ("c" * 62)
    victim.write_text("not grinta's\n")
    root = tmp_path / "ws"
    (root / ".grinta").mkdir(parents=True)
    (root / ".grinta" / "blobs").symlink_to(outside)
    with pytest.raises(NotADirectoryError, match="symbolic link"):
        clean(root, keep=0)
    assert victim.exists()

    (root / ".grinta" / "blobs").unlink()
    (root / ".grinta" / "blobs").mkdir()
    (root / ".grinta" / "blobs" / "ab").symlink_to(outside / "ab")
    other_log = tmp_path / "elsewhere.jsonl"
    other_log.write_text("{}\n")
    (root / ".grinta" / "sessions").mkdir()
    (root / ".grinta" / "sessions" / "link.jsonl").symlink_to(other_log)
    done = clean(root, keep=0)
    assert victim.exists() and other_log.exists() and done.logs == [] and done.blobs == 0


def test_clean_refuses_a_log_that_is_not_one_of_the_workspace(tmp_path):
    stray = tmp_path / "stray.jsonl"
    stray.write_text("{}\n")
    kept = write_log(tmp_path, "s", [])
    with pytest.raises(LogError, match="not a session log of this workspace"):
        clean(tmp_path, logs=[kept, stray])
    assert kept.exists() and stray.exists(), "nothing half-done"


def test_the_log_of_a_running_session_is_never_deleted(tmp_path):
    from grinta_jupyter.agent.models import ScriptedModel
    from grinta_jupyter.agent.session import Session

    running = Session("t", model=ScriptedModel([]), root=tmp_path)  # holds its log
    assert running.log_path is not None
    done = clean(tmp_path, keep=0, unfinished=True)
    assert done.logs == [] and done.unfinished == [running.log_path]
    with pytest.raises(LogError, match="still running; nothing was cleaned"):
        clean(tmp_path, logs=[running.log_path])
    running.stop()
    running.log.close()
    assert clean(tmp_path, keep=0).logs == [running.log_path]
