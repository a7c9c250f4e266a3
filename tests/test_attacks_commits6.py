"""Attacks on commits and recovery: planted journals, and a lock file deleted while held.

Real processes and real files throughout: a journal is planted as a cloned repository
could ship it, and the lock is deleted by hand, as a person does with a lock file they
take for stale, while another process is in the middle of a commit.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import time
from pathlib import Path

import pytest

from grinta_jupyter.runtime.transaction import FileWrite, Journal, StaleError


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _plant(ws: Path, name: str, manifest: dict[str, object]) -> Path:
    folder = ws / ".grinta" / "journal" / name
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_a_planted_journal_whose_id_is_a_path_moves_nothing_outside_the_workspace(tmp_path):
    """Finishing a decided journal moves its folder to undo/<id>: an id such as an absolute
    path moved the folder (with whatever it held) anywhere on the disk."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_bytes(b"a\n")
    (ws / ".a.py.grinta-x.tmp").write_bytes(b"new\n")
    outside = tmp_path / "planted"
    entry = {
        "path": "a.py",
        "old_sha": _sha(b"a\n"),
        "new_sha": _sha(b"new\n"),
        "old_size": 2,
        "new_size": 4,
        "backup": None,
        "tmp": ".a.py.grinta-x.tmp",
    }
    folder = _plant(
        ws, "0001-x", {"id": str(outside), "label": "l", "state": "commit", "files": [entry]}
    )
    notes = Journal(ws, ws / ".grinta").recover()
    assert not outside.exists()
    assert notes == [
        "left 0001-x in place: 0001-x: its manifest is damaged (id is not a plain name)"
    ]
    assert (folder / "manifest.json").is_file() and (folder / "note.txt").is_file()
    assert (ws / "a.py").read_bytes() == b"a\n"


@pytest.mark.parametrize("state", ["prepare", "commit"])
def test_recovery_never_deletes_or_moves_a_file_a_planted_journal_calls_its_temp(tmp_path, state):
    """Rolling back deletes a journal's temp files and rolling forward renames them: a
    manifest naming a person's file as a temp deleted it (or moved it over another)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".env").write_bytes(b"TOKEN=precious\n")
    entry = {
        "path": "other.txt",
        "old_sha": None,
        "new_sha": _sha(b"TOKEN=precious\n"),
        "tmp": ".env",
    }
    _plant(ws, "0002-y", {"id": "0002-y", "label": "l", "state": state, "files": [entry]})
    notes = Journal(ws, ws / ".grinta").recover()
    assert (ws / ".env").read_bytes() == b"TOKEN=precious\n"
    assert not (ws / "other.txt").exists()
    assert len(notes) == 1 and "not named as this commit's temp files" in notes[0]


def test_a_planted_journal_cannot_delete_a_file_in_dot_git(tmp_path):
    """A decided deletion removes a file holding its old bytes: a repository shipping such a
    journal deleted the fresh clone's .git/HEAD, whose bytes everyone knows."""
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    head = b"ref: refs/heads/main\n"
    (ws / ".git" / "HEAD").write_bytes(head)
    entry = {"path": ".git/HEAD", "old_sha": _sha(head), "new_sha": None, "old_size": len(head)}
    _plant(ws, "0003-z", {"id": "0003-z", "label": "l", "state": "commit", "files": [entry]})
    notes = Journal(ws, ws / ".grinta").recover()
    assert (ws / ".git" / "HEAD").read_bytes() == head
    assert len(notes) == 1 and "lies in a folder grinta never writes" in notes[0]


def _commit_slowly(ws: Path, flag: Path) -> None:
    def hook(label: str) -> None:
        if label == "decided":  # holding the workspace lock, before any rename
            flag.write_text("decided")
            time.sleep(2)

    writes = [FileWrite("a.py", b"a0\n", b"aA\n"), FileWrite("b.py", b"b0\n", b"bA\n")]
    Journal(ws, ws / ".grinta").commit(writes, "A", hook=hook)


def test_a_lock_file_deleted_while_held_does_not_let_a_second_commit_interleave(tmp_path):
    """Process A has decided and holds the lock; a person deletes .grinta/lock. Process B
    then made and locked a new lock file and committed b.py, reported success, and A's
    rename overwrote it a moment later: B's bytes were lost and its undo record lied."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_bytes(b"a0\n")
    (ws / "b.py").write_bytes(b"b0\n")
    flag = tmp_path / "flag"
    child = multiprocessing.get_context("fork").Process(target=_commit_slowly, args=(ws, flag))
    child.start()
    try:
        deadline = time.monotonic() + 20
        while not flag.exists():
            assert time.monotonic() < deadline and child.is_alive(), "A never decided"
            time.sleep(0.01)
        (ws / ".grinta" / "lock").unlink()
        with pytest.raises(StaleError):  # waited for A, then saw b.py changed
            Journal(ws, ws / ".grinta", lock_wait=8).commit(
                [FileWrite("b.py", b"b0\n", b"bB\n")], "B"
            )
    finally:
        child.join(20)
        if child.is_alive():
            child.kill()
    assert child.exitcode == 0
    assert (ws / "a.py").read_bytes() == b"aA\n" and (ws / "b.py").read_bytes() == b"bA\n"
    assert [record.label for record in Journal(ws, ws / ".grinta").history()] == ["A"]
