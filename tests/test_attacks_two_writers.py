"""Attacks on commits, undo and rewind by two grinta processes and a person on one folder.

Each test names the attack and the hole it found. Races are driven by a child
process paused at a commit's durable step (it prints the step and waits for a
line), so each runs the same way every time.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from tests.conftest import snapshot

REPO = Path(__file__).resolve().parent.parent
ROOT_USER = os.geteuid() == 0
NOBODY = 65534

# Undo the last commit (``undo``) or the last two (``rewind``, as a session's rewind does),
# pausing at every durable step: print its label, wait for a line. A refusal exits 3.
UNDO_CHILD = """
import sys
from grinta_jupyter import Runtime
from grinta_jupyter.runtime.transaction import StaleError

rt = Runtime(sys.argv[1])
history = rt.journal.history()

def hook(label):
    print(label, flush=True)
    sys.stdin.readline()

try:
    if sys.argv[2] == "undo":
        rt.journal.undo(history[-1], hook=hook)
    else:
        rt.journal.undo_many(history[-2:], "rewind", hook=hook)
except StaleError as exc:
    print("stale", exc.path, flush=True)
    sys.exit(3)
print("done", flush=True)
"""


class Paused:
    """A child process that stops at each durable step until told to go on."""

    def __init__(self, args: list[str]):
        self.process = subprocess.Popen(
            [sys.executable, *args],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def step(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def go_on(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("\n")
        self.process.stdin.flush()

    def finish(self) -> tuple[int, str]:
        """Let it run to its end; its exit code and the rest of what it printed."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("\n" * 50)
        self.process.stdin.close()
        rest = self.process.stdout.read()
        return self.process.wait(timeout=60), rest


def replace(rt: Runtime, path: str, old: str, new: str) -> None:
    done = rt.call("replace_string", {"path": path, "old_string": old, "new_string": new})
    assert done.ok, done.error


@pytest.mark.parametrize("how", ["undo", "rewind"])
def test_an_undo_whose_record_was_undone_meanwhile_never_reverts_the_commit_made_since(
    tmp_path, how
):
    """Attack: one process undoes (or rewinds) while another undoes the same commit and
    commits the same bytes again, all between the first one reading its undo record and
    taking the workspace lock. Bug: the first undo still went through (the files held the
    bytes it expected), so it silently reverted the other process's new commit, and left
    that commit's undo record in the history, which then could never be undone (STALE)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("A = 1\n")
    (ws / "b.py").write_text("B = 1\n")
    rt = Runtime(ws)
    replace(rt, "a.py", "A = 1", "A = 2")
    replace(rt, "b.py", "B = 1", "B = 2")
    child = Paused(["-c", UNDO_CHILD, str(ws), how])
    assert child.step() == "prepared-manifest"  # its record read, the lock not yet taken

    other = Runtime(ws)  # the other process: undo the same commit(s), then redo them
    if how == "undo":
        assert other.undo().ok
    else:
        ids = [record.id for record in other.journal.history()[-2:]]
        assert other.undo_commits(ids).ok
        replace(other, "a.py", "A = 1", "A = 2")
    replace(other, "b.py", "B = 1", "B = 2")
    redone = snapshot(ws)
    assert redone == {"a.py": b"A = 2\n", "b.py": b"B = 2\n"}

    code, rest = child.finish()
    assert code == 3 and rest.splitlines()[-1].startswith("stale"), (code, rest)
    assert snapshot(ws) == redone  # the commits made since are kept
    assert not list((ws / ".grinta" / "journal").iterdir())
    assert other.undo().ok  # and the next undo does what it says
    assert snapshot(ws) == {**redone, "b.py": b"B = 1\n"}


EDITS = json.dumps(
    [{"path": f"{n}.py", "old_string": f"'{n}-old'", "new_string": f"'{n}-new'"} for n in "abc"]
)


@pytest.mark.parametrize(("kill_at", "edited"), [(5, "b.py"), (6, "c.py"), (7, "c.py")])
def test_recovery_never_overwrites_a_file_a_person_wrote_after_the_crash(tmp_path, kill_at, edited):
    """Attack: kill -9 a commit of a.py, b.py, c.py after its decision (step 5, before any
    rename; 6 and 7, after renaming a.py, b.py), then a person saves one of the files not
    yet renamed (same size, mtime set back), then a second process opens the folder. Bug:
    recovery rolled the commit forward and renamed the temp file over the person's save,
    losing it. Now the journal is left in place with a note and no file is touched."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for n in "abc":
        (ws / f"{n}.py").write_text(f"def {n}():\n    return '{n}-old'\n")
    killed = subprocess.run(
        [sys.executable, "-m", "tests.crash_child", str(ws), "multiedit", str(kill_at), EDITS],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert killed.returncode == -9, killed.stderr
    target = ws / edited
    before = target.stat()
    target.write_text(target.read_text().replace("-old", "-own"))  # same size
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    person = snapshot(ws)

    recovered = Runtime(ws).recovered
    assert snapshot(ws) == person
    assert len(recovered) == 1 and f"{edited} changed since" in recovered[0], recovered
    (journal,) = (ws / ".grinta" / "journal").iterdir()
    assert (journal / "note.txt").is_file()
    assert Runtime(ws).call("read", {"path": edited}).ok
    assert snapshot(ws) == person  # and the next opening leaves it too


@pytest.mark.skipif(not ROOT_USER, reason="giving a file to another user needs root")
def test_a_commit_made_as_root_keeps_the_files_owner_group_and_mode(tmp_path):
    """Attack: the kernel runs as root (a container) in a folder of the user's files, one
    set-user-ID and group-writable. Bug: the temp file renamed over the target was
    root's, so every commit and undo handed the user's file to root (the user could no
    longer save it). Now it takes the target's owner and group, and keeps its mode."""
    ws = tmp_path / "ws"
    ws.mkdir()
    target = ws / "tool.py"
    target.write_text("A = 1\n")
    os.chown(target, NOBODY, NOBODY)
    os.chmod(target, 0o4775)
    rt = Runtime(ws)
    replace(rt, "tool.py", "A = 1", "A = 2")
    after = target.stat()
    assert (after.st_uid, after.st_gid, stat.S_IMODE(after.st_mode)) == (NOBODY, NOBODY, 0o4775)
    assert rt.undo().ok
    after = target.stat()
    assert (after.st_uid, after.st_gid, stat.S_IMODE(after.st_mode)) == (NOBODY, NOBODY, 0o4775)
    assert target.read_text() == "A = 1\n"


# Commit, forking a worker while inside the workspace lock (a cell's multiprocessing pool,
# a data loader's workers), then report and wait; the worker lives until stdin closes.
FORK_CHILD = """
import os, sys
from grinta_jupyter import Runtime

rt = Runtime(sys.argv[1])

def hook(label):
    if label in ("decided", "renamed-0") and os.fork() == 0:
        sys.stdin.read()
        os._exit(0)

proposal = rt.propose("replace_string", {"path": "a.py", "old_string": "A = 1", "new_string": "A = 2"})
print(rt.commit(proposal, hook=hook).ok, flush=True)
sys.stdin.read()
"""


def test_a_process_forked_during_a_commit_does_not_keep_the_workspace_locked(tmp_path):
    """Attack: while one process commits, code of the user's in it forks workers (a
    multiprocessing pool, a data loader) that outlive the commit. Bug: a flock belongs to
    the open file, so the forked workers shared the workspace lock and kept it after the
    commit ended: every later commit and undo, in any process, waited and failed ("another
    process has been committing in this workspace"). Now a forked child closes its copies."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("A = 1\n")
    child = Paused(["-c", FORK_CHILD, str(ws)])
    try:
        assert child.step() == "True"
        rt = Runtime(ws)
        rt.journal.lock_wait = 1.0
        done = rt.call(
            "replace_string", {"path": "a.py", "old_string": "A = 2", "new_string": "A = 3"}
        )
        assert done.ok, done.error
        assert rt.undo().ok and (ws / "a.py").read_text() == "A = 2\n"
    finally:
        assert child.finish()[0] == 0


def test_a_commit_made_after_the_clock_was_set_back_is_still_the_last_one(tmp_path, monkeypatch):
    """Attack: the clock steps back an hour (a VM resumed from a snapshot, NTP stepping)
    between two commits. Bug: transaction ids came from the clock alone and order the
    history, so the newer commit was filed before the older one: `undo` restored the
    older commit's file and left the newer commit in place (and pruning would have
    dropped the newest record first)."""
    from grinta_jupyter.runtime import transaction

    (tmp_path / "a.py").write_text("a = 1\n")
    (tmp_path / "b.py").write_text("b = 1\n")
    rt = Runtime(tmp_path)
    assert rt.call("replace_string", {"path": "a.py", "old_string": "1", "new_string": "2"}).ok
    real = time.time_ns
    monkeypatch.setattr(transaction.time, "time_ns", lambda: real() - 3_600 * 10**9)
    assert rt.call("replace_string", {"path": "b.py", "old_string": "1", "new_string": "2"}).ok
    assert rt.undo().ok
    assert (tmp_path / "b.py").read_text() == "b = 1\n"  # the last commit was undone
    assert (tmp_path / "a.py").read_text() == "a = 2\n"
    assert rt.undo().ok
    assert (tmp_path / "a.py").read_text() == "a = 1\n"
