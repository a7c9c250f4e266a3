"""Commits under attack: two writers, a live commit in another process, folders
swapped for symlinks, full disks, read-only files and folders, damaged journals.

Every fault is real: real processes racing, a real tmpfs filled up, a real
RLIMIT_FSIZE, a real unprivileged user, real symlinks and FIFOs.
"""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import queue
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime.proposal import Observation
from tests.conftest import snapshot

CHILD = [sys.executable, "-m", "tests.crash_child"]
REPO = Path(__file__).resolve().parent.parent
ROOT_USER = os.geteuid() == 0
NOBODY = 65534
MULTIEDIT_STEPS = 9  # prepared-manifest, staged-0..2, decided, renamed-0..2, done


def edit(rt: Runtime, path: str, old: str, new: str):  # type: ignore[no-untyped-def]
    proposal = rt.propose("replace_string", {"path": path, "old_string": old, "new_string": new})
    assert proposal.ok, proposal.error
    return proposal


def everything(root: Path) -> dict[str, bytes | str]:
    """Every entry under ``root``, grinta's state included: bytes, link targets, kinds."""
    state: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            state[rel] = f"-> {os.readlink(path)}"
        elif path.is_file():
            state[rel] = path.read_bytes()
        else:
            state[rel] = "dir" if path.is_dir() else "other"
    return state


def assert_clean(ws: Path) -> None:
    """No temp file beside any target, no journal left, nothing for the next start to do."""
    assert not [p for p in ws.rglob("*.tmp") if ".grinta" not in p.parts]
    journal = ws / ".grinta" / "journal"
    assert not journal.is_dir() or list(journal.iterdir()) == []
    assert Runtime(ws).recovered == []


def outcome(obs: Observation) -> str:
    return "ok" if obs.ok else obs.error.code  # type: ignore[union-attr]


# -- two writers -------------------------------------------------------------------


@pytest.mark.parametrize("step", ["prepared-manifest", "staged-0", "decided", "renamed-0", "done"])
def test_a_second_runtime_committing_at_any_step_of_the_first_loses_nothing(ws, step):
    first, second = Runtime(ws), Runtime(ws)
    mine = edit(first, "README.md", "demo", "first")
    theirs = edit(second, "README.md", "demo", "second")
    results: dict[str, Observation] = {}
    racer = threading.Thread(target=lambda: results.update(second=second.commit(theirs)))

    def hook(label: str) -> None:
        if label == step:
            racer.start()
            racer.join(0.3)  # let it overtake if it can; inside the critical section it waits

    results["first"] = first.commit(mine, hook=hook)
    racer.join(10)
    assert not racer.is_alive()
    outcomes = sorted(outcome(obs) for obs in results.values())
    assert outcomes == ["STALE_FILE", "ok"], outcomes
    winner = mine if results["first"].ok else theirs
    assert (ws / "README.md").read_bytes() == winner.changes[0].new_bytes
    assert_clean(ws)


def test_a_runtime_committing_inside_another_ones_staging_wins_and_the_other_is_stale(ws):
    first, second = Runtime(ws), Runtime(ws)
    mine = edit(first, "pkg/core.py", "a + b", "a + b + 1")
    theirs = edit(second, "pkg/core.py", "a - b", "a - b - 1")
    seen: list[str] = []

    def hook(label: str) -> None:
        if label == "staged-0":
            seen.append(outcome(second.commit(theirs)))

    assert first.commit(mine, hook=hook).error.code == "STALE_FILE"
    assert seen == ["ok"]
    assert (ws / "pkg/core.py").read_bytes() == theirs.changes[0].new_bytes
    assert_clean(ws)


def _racer(root: Path, k: int, rounds: int, barrier: Any, results: Any) -> None:
    rt = Runtime(root)
    for _ in range(rounds):
        barrier.wait()
        proposal = edit(rt, "v.py", "value = 0", f"value = {k}")
        barrier.wait()
        results.put((k, outcome(rt.commit(proposal))))


def test_two_processes_racing_never_lose_an_update(tmp_path):
    """Both stage against the same base and commit at once: one wins, one is refused."""
    rounds = 30
    root = tmp_path / "ws"
    root.mkdir()
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(3), context.Queue()
    racers = [
        context.Process(target=_racer, args=(root, k, rounds, barrier, results)) for k in (1, 2)
    ]
    for racer in racers:
        racer.start()
    try:
        for _ in range(rounds):
            (root / "v.py").write_text("value = 0\n")
            barrier.wait(30)  # both stage against this base...
            barrier.wait(30)  # ...then commit at once
            got = dict(results.get(timeout=30) for _ in range(2))
            assert sorted(got.values()) == ["STALE_FILE", "ok"], got
            winner = next(k for k, result in got.items() if result == "ok")
            assert (root / "v.py").read_text() == f"value = {winner}\n"
    finally:
        for racer in racers:
            racer.join(30)
            if racer.is_alive():
                racer.kill()
    assert [racer.exitcode for racer in racers] == [0, 0]
    assert_clean(root)


# -- a live commit in another process ---------------------------------------------


def make_files(root: Path) -> None:
    (root / "sub").mkdir(parents=True, exist_ok=True)
    for name in ("a.py", "b.py", "sub/c.py"):
        (root / name).write_text(f"X = '{name}-old'\n")


EDITS = json.dumps(
    [
        {"path": name, "old_string": f"'{name}-old'", "new_string": f"'{name}-new'"}
        for name in ("a.py", "b.py", "sub/c.py")
    ]
)
OLD = {name: f"X = '{name}-old'\n".encode() for name in ("a.py", "b.py", "sub/c.py")}
NEW = {name: f"X = '{name}-new'\n".encode() for name in ("a.py", "b.py", "sub/c.py")}


class PausedChild:
    """A crash_child that stops at every durable step until told to go on."""

    def __init__(self, root: Path, mode: str = "multiedit", *extra: str):
        self.process = subprocess.Popen(
            [*CHILD, str(root), mode, "pause", *extra],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.strip())
        self.lines.put("")

    def step(self) -> str:
        """The step it stopped at, or "" once it has finished."""
        line = self.lines.get(timeout=60)
        return "" if line.startswith("[") else line

    def go_on(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("\n")
        self.process.stdin.flush()

    def finish(self) -> tuple[int, str]:
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        code = self.process.wait(timeout=60)
        return code, self.process.stderr.read()

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=60)


@pytest.mark.parametrize("mode", ["multiedit", "raw"])
def test_opening_a_runtime_while_a_commit_is_paused_touches_nothing(tmp_path, mode):
    root = tmp_path / "ws"
    make_files(root)
    (root / "a.txt").write_text("A1\n")
    (root / "gone.txt").write_text("bye\n")
    child = PausedChild(root, mode, EDITS)
    steps = []
    while label := child.step():
        steps.append(label)
        before = everything(root)
        reader = Runtime(root)  # a second session opening the same folder mid-commit
        assert reader.recovered == [], (label, reader.recovered)
        assert reader.propose("read", {"path": "a.py"}).ok
        assert everything(root) == before, label
        child.go_on()
    assert child.finish()[0] == 0
    assert "decided" in steps and steps[-1] == "done"
    if mode == "multiedit":
        assert snapshot(root) == {**NEW, "a.txt": b"A1\n", "gone.txt": b"bye\n"}
    else:
        assert snapshot(root) == {**OLD, "a.txt": b"A2\n", "created/new.txt": b"brand new\n"}
    assert_clean(root)


def test_a_commit_paused_then_killed_after_a_concurrent_open_is_still_recovered(tmp_path):
    for kill_at in range(1, MULTIEDIT_STEPS + 1):
        root = tmp_path / f"k{kill_at}"
        make_files(root)
        child = PausedChild(root, "multiedit", EDITS)
        steps = [child.step()]
        while len(steps) < kill_at:
            child.go_on()
            steps.append(child.step())
        assert Runtime(root).recovered == []  # the owner is alive: hands off
        child.kill()
        recovered = Runtime(root).recovered
        state = snapshot(root)
        decided = "decided" in steps
        assert state == (NEW if decided else OLD), (steps, state)
        expected = "completed" if decided else "rolled"
        if steps[-1] == "done":  # the journal had already moved to undo/
            assert recovered == []
        else:
            assert [line.split()[0] for line in recovered] == [expected], recovered
        assert_clean(root)


def test_a_commit_made_while_another_process_is_staging_wins_and_refuses_the_other(tmp_path):
    root = tmp_path / "ws"
    make_files(root)
    child = PausedChild(root, "multiedit", EDITS)
    assert child.step() == "prepared-manifest"
    child.go_on()
    assert child.step() == "staged-0"
    here = Runtime(root)
    assert here.commit(edit(here, "b.py", "old", "mine")).ok  # no wait: the child is outside
    mine = (root / "b.py").read_bytes()
    child.go_on()
    while child.step():
        child.go_on()
    code, err = child.finish()
    assert (code, err.strip()) == (3, "STALE_FILE")
    assert snapshot(root) == {**OLD, "b.py": mine}
    assert_clean(root)


def test_a_commit_waits_for_another_process_inside_its_critical_section(tmp_path):
    root = tmp_path / "ws"
    make_files(root)
    here = Runtime(root)
    here.journal.lock_wait = 60  # however slow the machine, it waits for the child
    proposal = edit(here, "b.py", "old", "mine")
    child = PausedChild(root, "multiedit", EDITS)
    while child.step() != "decided":
        child.go_on()
    results: list[Observation] = []
    waiter = threading.Thread(target=lambda: results.append(here.commit(proposal)))
    waiter.start()
    child.go_on()
    while child.step():
        child.go_on()
    assert child.finish()[0] == 0
    waiter.join(60)
    assert results[0].error.code == "STALE_FILE"  # it saw the child's bytes
    assert snapshot(root) == NEW
    assert_clean(root)


# -- folders swapped for symlinks --------------------------------------------------


def swap(ws: Path, folder: str, kind: str, outside: Path) -> None:
    """Replace ``ws/folder`` by a symlink outside, a symlink inside, or a look-alike folder."""
    os.rename(ws / folder, ws / f"{folder}_old")
    if kind == "symlink-outside":
        os.symlink(outside, ws / folder)
    elif kind == "symlink-inside":
        os.symlink("twin", ws / folder)
    else:
        (ws / folder).mkdir()
        shutil.copy2(ws / f"{folder}_old" / "a.py", ws / folder / "a.py")


@pytest.fixture
def swappable(tmp_path: Path) -> tuple[Path, Path]:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    for folder in (ws / "sub", ws / "twin", outside):
        folder.mkdir(parents=True)
        (folder / "a.py").write_text("A = 1\n")  # the same bytes everywhere: a stale check passes
    (ws / "top.py").write_text("T = 1\n")
    return ws, outside


@pytest.mark.parametrize("kind", ["symlink-outside", "symlink-inside", "look-alike"])
@pytest.mark.parametrize("when", ["before", "prepared-manifest", "staged-0", "staged-1"])
def test_a_folder_swapped_between_propose_and_commit_is_never_written_through(
    swappable, kind, when
):
    ws, outside = swappable
    rt = Runtime(ws)
    proposal = rt.propose(
        "multiedit",
        {
            "edits": [
                {"path": "top.py", "old_string": "T = 1", "new_string": "T = 2"},
                {"path": "sub/a.py", "old_string": "A = 1", "new_string": "A = 2"},
            ]
        },
    )
    assert proposal.ok
    if when == "before":
        swap(ws, "sub", kind, outside)
    outside_before, parent_before = everything(outside), everything(ws.parent)

    def hook(label: str) -> None:
        if label == when:
            swap(ws, "sub", kind, outside)

    obs = rt.commit(proposal, hook=hook)
    assert everything(outside) == outside_before
    assert not list(ws.parent.rglob("*.tmp"))  # the temp staged in the old folder is gone too
    assert_clean(ws)
    if kind == "look-alike" and when == "before":  # a real folder, as it was: nothing is stale
        assert obs.ok and (ws / "sub/a.py").read_text() == "A = 2\n"
        return
    assert obs.error.code == "STALE_FILE", obs.output
    if when == "before":
        assert everything(ws.parent) == parent_before
    for path in ("top.py", "sub/a.py", "sub_old/a.py", "twin/a.py"):
        assert (ws / path).read_text() in ("A = 1\n", "T = 1\n")


@pytest.mark.parametrize("what", ["symlink", "fifo", "folder"])
def test_a_target_replaced_by_a_symlink_fifo_or_folder_is_stale_and_never_opened(swappable, what):
    ws, outside = swappable
    rt = Runtime(ws)
    proposal = edit(rt, "sub/a.py", "A = 1", "A = 2")
    (ws / "sub/a.py").unlink()
    if what == "symlink":
        os.symlink(outside / "a.py", ws / "sub/a.py")
    elif what == "fifo":
        os.mkfifo(ws / "sub/a.py")
    else:
        (ws / "sub/a.py").mkdir()
    results: list[Observation] = []
    worker = threading.Thread(target=lambda: results.append(rt.commit(proposal)), daemon=True)
    worker.start()
    worker.join(10)  # a FIFO opened blocking would hang here
    assert results and results[0].error.code == "STALE_FILE"
    assert (outside / "a.py").read_text() == "A = 1\n"
    assert_clean(ws)


def test_a_create_into_a_folder_swapped_for_a_symlink_creates_nothing_outside(swappable):
    ws, outside = swappable
    rt = Runtime(ws)
    proposal = rt.propose("create", {"path": "sub/deeper/new.py", "content": "N = 1\n"})
    assert proposal.ok
    before = everything(outside)
    swap(ws, "sub", "symlink-outside", outside)
    assert rt.commit(proposal).error.code == "STALE_FILE"
    assert everything(outside) == before
    assert not (ws / "sub_old" / "deeper").exists()
    assert_clean(ws)


def test_undo_through_a_folder_swapped_for_a_symlink_restores_nothing_outside(swappable):
    ws, outside = swappable
    rt = Runtime(ws)
    assert rt.commit(edit(rt, "sub/a.py", "A = 1", "A = 2")).ok
    (outside / "a.py").write_text("A = 2\n")  # what the commit wrote, so the check alone passes
    swap(ws, "sub", "symlink-outside", outside)
    assert rt.undo().error.code == "STALE_FILE"
    assert (outside / "a.py").read_text() == "A = 2\n"
    assert (ws / "sub_old/a.py").read_text() == "A = 2\n"
    os.unlink(ws / "sub")
    os.rename(ws / "sub_old", ws / "sub")
    assert rt.undo().ok and (ws / "sub/a.py").read_text() == "A = 1\n"


def test_recovery_through_a_folder_swapped_for_a_symlink_leaves_the_journal(tmp_path):
    root, outside = tmp_path / "ws", tmp_path / "outside"
    make_files(root)
    killed = subprocess.run(
        [*CHILD, str(root), "multiedit", "5", EDITS],  # step 5 is "decided"
        cwd=REPO,
        capture_output=True,
        timeout=60,
    )
    assert killed.returncode == -signal.SIGKILL
    shutil.copytree(root / "sub", outside)  # with the temp file: a tempting target
    os.rename(root / "sub", root / "sub_old")
    os.symlink(outside, root / "sub")
    before = everything(outside)
    recovered = Runtime(root).recovered
    assert len(recovered) == 1 and recovered[0].startswith("left "), recovered
    assert everything(outside) == before
    (journal,) = (root / ".grinta" / "journal").iterdir()
    assert "sub/c.py" in (journal / "note.txt").read_text()
    os.unlink(root / "sub")
    os.rename(root / "sub_old", root / "sub")  # the folder is back: the commit completes
    assert Runtime(root).recovered[0].startswith("completed ")
    assert snapshot(root) == NEW
    assert_clean(root)


# -- faults: a full disk, a size limit, read-only folders, a broken .grinta --------


def in_child(job: Callable[[], Any], *, user: int | None = None) -> Any:
    """Run ``job`` in a forked child (as ``user`` if given); return its JSON-able result."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            os.close(read)
            if user is not None:
                os.setgroups([])
                os.setgid(user)
                os.setuid(user)
            result = {"value": job()}
        except BaseException as exc:
            result = {"error": repr(exc)}
        with os.fdopen(write, "w") as out:
            json.dump(result, out)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as results:
        data = results.read()
    os.waitpid(pid, 0)
    result = json.loads(data)
    assert "error" not in result, result["error"]
    return result["value"]


def failure(obs: Observation) -> dict[str, Any]:
    return {"code": outcome(obs), "message": obs.error.message if obs.error else ""}


def _can_mount_tmpfs() -> bool:
    if not ROOT_USER or not shutil.which("unshare"):
        return False
    with tempfile.TemporaryDirectory() as point:
        probe = ["unshare", "-m", "--propagation", "private", "mount", "-t", "tmpfs", "tmpfs"]
        return subprocess.run([*probe, point], capture_output=True).returncode == 0


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="needs root to mount a small tmpfs")
@pytest.mark.parametrize("spare", [0, 16_384])  # the manifest, or the temp file, hits the wall
def test_a_full_disk_fails_clean_with_no_space(tmp_path, spare):
    disk = tmp_path / "disk"
    disk.mkdir()
    script = 'mount -t tmpfs -o size=1m tmpfs "$0" && exec "$@"'
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, str(disk)]
        + [*CHILD, str(disk), "nospace", "0", str(spare)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["code"] == "NO_SPACE", report
    assert "nothing was written" in report["message"]
    assert report["unchanged"] and report["leftovers"] == [] and report["journal"] == []
    assert report["recovered"] == []  # cleaned at once, not at the next start
    assert report["after_freeing"]


@pytest.mark.parametrize("limit", [200, 40_000])  # the manifest, or the temp file, fails
def test_a_file_size_limit_fails_the_commit_clean(ws, limit):
    (ws / "pkg/big.py").write_text("B = 1\n")
    rt = Runtime(ws)
    proposal = rt.propose(
        "multiedit",
        {
            "edits": [
                {"path": "README.md", "old_string": "demo", "new_string": "demo 2"},
                {
                    "path": "pkg/big.py",
                    "old_string": "B = 1",
                    "new_string": "B = '" + "x" * 80_000 + "'",
                },
            ]
        },
    )
    assert proposal.ok
    before = snapshot(ws)

    def job() -> dict[str, Any]:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of death
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        return failure(rt.commit(proposal))

    result = in_child(job)
    assert result["code"] == "IO_ERROR" and "too large" in result["message"], result
    assert snapshot(ws) == before
    assert_clean(ws)


def test_an_undo_that_hits_a_file_size_limit_restores_nothing_and_stays_available(ws):
    rt = Runtime(ws)
    (ws / "big.txt").write_text("x" * 80_000 + "\n")
    assert rt.call("create", {"path": "new.txt", "content": "new\n"}).ok
    shrink = rt.propose(
        "replace_string", {"path": "big.txt", "old_string": "x" * 80_000, "new_string": "small"}
    )
    assert rt.commit(shrink).ok
    before = snapshot(ws)

    def job() -> dict[str, Any]:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (40_000, 40_000))
        return failure(rt.undo())

    result = in_child(job)
    assert result["code"] == "IO_ERROR" and "nothing was restored" in result["message"], result
    assert snapshot(ws) == before
    assert len(rt.history()) == 2
    assert_clean(ws)
    assert rt.undo().ok and rt.undo().ok
    assert not (ws / "new.txt").exists() and (ws / "big.txt").read_text() == "x" * 80_000 + "\n"


def test_grinta_state_folder_that_is_a_file_fails_the_commit_clean(ws):
    (ws / ".grinta").write_text("not a folder\n")
    rt = Runtime(ws)
    before = snapshot(ws)
    obs = rt.commit(edit(rt, "README.md", "demo", "x"))
    assert obs.error.code == "IO_ERROR" and ".grinta" in obs.error.message
    assert snapshot(ws) == before and (ws / ".grinta").read_text() == "not a folder\n"
    assert rt.undo().error.code == "NOTHING_TO_UNDO"
    assert not list(ws.rglob("*.tmp"))


def test_a_journal_folder_that_is_a_file_fails_the_commit_clean(ws):
    (ws / ".grinta").mkdir()
    (ws / ".grinta" / "journal").write_text("")
    rt = Runtime(ws)
    assert len(rt.recovered) == 1 and "not a folder" in rt.recovered[0]  # said, not raised
    obs = rt.commit(edit(rt, "README.md", "demo", "x"))
    assert obs.error.code == "IO_ERROR"
    assert (ws / "README.md").read_text() == "# demo\n"
    assert not list(ws.rglob("*.tmp"))


@pytest.fixture
def shared_ws() -> Iterator[Path]:
    """A workspace the user nobody can reach (pytest's own tmp_path is root-only)."""
    base = Path(tempfile.mkdtemp(prefix="grinta-faults-"))
    base.chmod(0o755)
    ws = base / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "a.py").write_text("A = 1\n")
    (ws / "top.py").write_text("T = 1\n")
    yield ws
    for folder in [base, *base.rglob("*")]:  # what a test made read-only, for a non-root run
        if folder.is_dir() and not folder.is_symlink():
            folder.chmod(0o755)
    shutil.rmtree(base)


def as_unprivileged(ws: Path, job: Callable[[], Any]) -> Any:
    """Run ``job`` as a user that permissions bind: nobody when we are root, else ourselves."""
    if not ROOT_USER:
        return job()
    for path in [ws, *ws.rglob("*")]:
        os.lchown(path, NOBODY, NOBODY)
    return in_child(job, user=NOBODY)


def test_a_read_only_folder_fails_the_commit_clean_with_permission_denied(shared_ws):
    ws = shared_ws
    rt = Runtime(ws)
    proposal = rt.propose(
        "multiedit",
        {
            "edits": [
                {"path": "top.py", "old_string": "T = 1", "new_string": "T = 2"},
                {"path": "sub/a.py", "old_string": "A = 1", "new_string": "A = 2"},
            ]
        },
    )
    assert proposal.ok
    before = snapshot(ws)
    (ws / "sub").chmod(0o555)
    result = as_unprivileged(ws, lambda: failure(rt.commit(proposal)))
    assert result["code"] == "PERMISSION_DENIED" and "sub/a.py" in result["message"], result
    assert snapshot(ws) == before
    assert_clean(ws)


def test_an_unwritable_state_folder_fails_the_commit_clean_with_permission_denied(shared_ws):
    ws = shared_ws
    rt = Runtime(ws)
    proposal = edit(rt, "top.py", "T = 1", "T = 2")
    (ws / ".grinta").mkdir()
    (ws / ".grinta").chmod(0o555)
    if ROOT_USER:  # the rest is nobody's; .grinta stays root's, so nobody may not write it
        for path in [ws, *ws.rglob("*")]:
            if path.name != ".grinta":
                os.lchown(path, NOBODY, NOBODY)
        result = in_child(lambda: failure(rt.commit(proposal)), user=NOBODY)
    else:
        result = failure(rt.commit(proposal))
    assert result["code"] == "PERMISSION_DENIED" and ".grinta" in result["message"], result
    assert (ws / "top.py").read_text() == "T = 1\n"
    assert list((ws / ".grinta").iterdir()) == []
    assert not list(ws.rglob("*.tmp"))


@pytest.mark.skipif(not ROOT_USER, reason="needs root to make a state folder another user owns")
def test_opening_a_workspace_whose_journal_cannot_be_read_records_it_and_does_not_raise(
    shared_ws,
):
    ws = shared_ws
    (ws / ".grinta" / "journal" / "0001-dead").mkdir(parents=True)
    (ws / ".grinta").chmod(0o700)
    for path in [ws, *ws.iterdir(), ws / "sub" / "a.py"]:
        os.lchown(path, NOBODY, NOBODY)
    os.lchown(ws / ".grinta", 0, 0)

    def job() -> dict[str, Any]:
        rt = Runtime(ws)
        return {"recovered": rt.recovered, "undo": outcome(rt.undo()), "history": rt.history()}

    result = in_child(job, user=NOBODY)
    assert result["recovered"] and "skipped" in result["recovered"][0], result
    assert result["undo"] == "NOTHING_TO_UNDO" and result["history"] == []
    assert (ws / ".grinta" / "journal" / "0001-dead").is_dir()


def test_a_commit_waits_for_the_workspace_lock_only_so_long(ws):
    rt = Runtime(ws)
    rt.journal.lock_wait = 0.2
    proposal = edit(rt, "README.md", "demo", "x")
    (ws / ".grinta").mkdir()
    holder = os.open(ws / ".grinta" / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)  # another process committing, as far as rt can tell
        obs = rt.commit(proposal)
        assert obs.error.code == "IO_ERROR" and "another process" in obs.error.message
        assert (ws / "README.md").read_text() == "# demo\n"
        assert list((ws / ".grinta" / "journal").iterdir()) == []
    finally:
        os.close(holder)
    assert rt.commit(proposal).ok
    assert_clean(ws)


# -- read-only files ---------------------------------------------------------------


def test_a_file_made_read_only_after_propose_is_not_written(ws):
    rt = Runtime(ws)
    proposal = rt.propose(
        "multiedit",
        {
            "edits": [
                {"path": "README.md", "old_string": "demo", "new_string": "x"},
                {"path": "pkg/core.py", "old_string": "a + b", "new_string": "b + a"},
            ]
        },
    )
    assert proposal.ok
    before = snapshot(ws)
    (ws / "pkg/core.py").chmod(0o444)
    obs = rt.commit(proposal)
    assert obs.error.code == "READ_ONLY_FILE" and "pkg/core.py" in obs.error.message
    assert snapshot(ws) == before
    assert stat.S_IMODE((ws / "pkg/core.py").stat().st_mode) == 0o444
    assert_clean(ws)


def test_undo_refuses_a_file_made_read_only_since_the_commit(ws):
    rt = Runtime(ws)
    assert rt.call(
        "replace_string", {"path": "README.md", "old_string": "demo", "new_string": "x"}
    ).ok
    assert rt.call("create", {"path": "made/new.txt", "content": "new\n"}).ok
    for path, restore in (("made/new.txt", None), ("README.md", "# demo\n")):
        (ws / path).chmod(0o444)
        before = snapshot(ws)
        obs = rt.undo()
        assert obs.error.code == "READ_ONLY_FILE" and path in obs.error.message
        assert snapshot(ws) == before
        (ws / path).chmod(0o644)
        assert rt.undo().ok
        assert (ws / path).exists() if restore else not (ws / "made").exists()
    assert (ws / "README.md").read_text() == "# demo\n"


@pytest.mark.skipif(not ROOT_USER or not shutil.which("chattr"), reason="needs root and chattr")
def test_an_immutable_file_is_treated_as_read_only(ws):
    rt = Runtime(ws)
    proposal = edit(rt, "README.md", "demo", "x")
    if subprocess.run(["chattr", "+i", str(ws / "README.md")], capture_output=True).returncode:
        pytest.skip("this file system has no immutable flag")
    try:
        assert rt.commit(proposal).error.code == "READ_ONLY_FILE"
        assert (ws / "README.md").read_text() == "# demo\n"
    finally:
        subprocess.run(["chattr", "-i", str(ws / "README.md")], check=True)
    assert_clean(ws)


# -- grinta's own files are owner-only --------------------------------------------


@pytest.fixture(params=[0o022, 0o000])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    previous = os.umask(request.param)
    yield request.param
    os.umask(previous)


def private_modes(state: Path) -> dict[str, int]:
    """Every entry under ``state`` whose mode is not owner-only (0700 folders, 0600 files)."""
    wrong = {}
    for path in [state, *state.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode != (0o700 if path.is_dir() else 0o600):
            wrong[path.relative_to(state).as_posix()] = mode
    return wrong


def test_everything_under_grinta_is_owner_only_whatever_the_umask(ws, umask):
    script = ws / "run.sh"
    script.write_text("echo hi\n")
    script.chmod(0o755)
    rt = Runtime(ws)
    proposal = rt.propose(
        "multiedit",
        {
            "edits": [
                {"path": "run.sh", "old_string": "hi", "new_string": "bye"},
                {"path": "README.md", "old_string": "demo", "new_string": "x"},
            ]
        },
    )
    seen: dict[str, Any] = {}

    def hook(label: str) -> None:
        if label == "staged-1":
            seen["wrong"] = private_modes(ws / ".grinta")
            seen["files"] = sorted(p.name for p in (ws / ".grinta").rglob("*"))
            (temp,) = [p for p in ws.glob(".run.sh.*.tmp")]
            seen["temp"] = stat.S_IMODE(temp.stat().st_mode)

    assert rt.commit(proposal, hook=hook).ok
    assert seen["wrong"] == {}
    assert {"lock", "manifest.json", "0.old", "1.old"} <= set(seen["files"])
    assert seen["temp"] == 0o755  # temp files beside targets keep the target's mode
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert rt.call("create", {"path": "n/new.txt", "content": "n\n"}).ok
    assert rt.undo().ok
    assert private_modes(ws / ".grinta") == {}


# -- damaged journals: kept with a note, never guessed at --------------------------


def plant(ws: Path, name: str, files: dict[str, bytes]) -> Path:
    folder = ws / ".grinta" / "journal" / name
    folder.mkdir(parents=True)
    for file, data in files.items():
        (folder / file).write_bytes(data)
    return folder


def manifest(state: str, path: str, tmp: str | None = ".x.grinta-1.tmp") -> bytes:
    entry = {"path": path, "old_sha": None, "new_sha": "0" * 64, "backup": None, "tmp": tmp}
    data = {"id": "1", "label": "planted", "state": state, "created": 0.0, "files": [entry]}
    return json.dumps(data).encode()


@pytest.mark.parametrize(
    "files",
    [
        {"manifest.json": b"{not json"},
        {"manifest.json": b"[]"},
        {"manifest.json": manifest("committing", "x.py")},
        {"manifest.json": manifest("commit", "../outside/a.py")},
        {"manifest.json": manifest("commit", "x.py", tmp="../../a.py")},
        {"0.old": b"old bytes, but no manifest"},
    ],
    ids=[
        "bad-json",
        "not-an-object",
        "unknown-state",
        "path-escapes",
        "tmp-escapes",
        "no-manifest",
    ],
)
def test_a_damaged_journal_is_left_in_place_with_a_note(ws, tmp_path, files):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.py").write_text("keep\n")
    folder = plant(ws, "0001-damaged", files)
    rt = Runtime(ws)
    assert len(rt.recovered) == 1 and rt.recovered[0].startswith("left 0001-damaged in place")
    assert (folder / "note.txt").is_file()
    assert all((folder / name).read_bytes() == data for name, data in files.items())
    assert (outside / "a.py").read_text() == "keep\n"
    assert rt.call(
        "replace_string", {"path": "README.md", "old_string": "demo", "new_string": "x"}
    ).ok
    assert folder.is_dir()


def test_an_orphan_that_never_decided_is_rolled_back_and_one_without_manifest_discarded(ws):
    (ws / ".x.grinta-1.tmp").write_text("half staged")
    plant(ws, "0001-prepare", {"manifest.json": manifest("prepare", "x.py"), "lock": b""})
    plant(ws, "0002-early", {"lock": b"", "manifest.tmp": b'{"id": '})
    recovered = Runtime(ws).recovered
    assert recovered == ["rolled back 0001-prepare: x.py as before it", "discarded 0002-early"]
    assert not (ws / ".x.grinta-1.tmp").exists()
    assert_clean(ws)


def test_an_orphan_waits_while_the_workspace_lock_is_held_then_the_next_commit_recovers_it(ws):
    (ws / ".x.grinta-1.tmp").write_text("half staged")
    folder = plant(ws, "0001-prepare", {"manifest.json": manifest("prepare", "x.py")})
    holder = os.open(ws / ".grinta" / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        rt = Runtime(ws)  # does not wait: the lock's holder recovers orphans itself
        assert rt.recovered == [] and folder.is_dir()
    finally:
        os.close(holder)
    assert rt.call(
        "replace_string", {"path": "README.md", "old_string": "demo", "new_string": "x"}
    ).ok
    assert not folder.exists() and not (ws / ".x.grinta-1.tmp").exists()
    assert_clean(ws)


def within(seconds: float, job: Callable[[], Any]) -> Any:
    """``job()``'s result, asserting it returns at all (a FIFO opened blocking never does)."""
    results: list[Any] = []
    worker = threading.Thread(target=lambda: results.append(job()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert results, "it hung"
    return results[0]


def test_fifos_planted_in_the_state_folder_never_hang(ws):
    folder = ws / ".grinta" / "journal" / "0001-fifo"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "manifest.json")
    os.mkfifo(folder / "note.txt")
    os.mkfifo(folder / "lock")
    rt = within(10, lambda: Runtime(ws))
    assert rt.recovered[0].startswith("left 0001-fifo in place"), rt.recovered
    assert rt.call(
        "replace_string", {"path": "README.md", "old_string": "demo", "new_string": "x"}
    ).ok
    backup = rt.journal.history()[-1].folder / "0.old"
    backup.unlink()
    os.mkfifo(backup)
    obs = within(10, rt.undo)
    assert obs.error.code == "IO_ERROR" and "damaged" in obs.error.message
    assert (ws / "README.md").read_text() == "# x\n"


def test_a_file_whose_name_is_as_long_as_the_os_allows_commits_and_undoes(ws):
    name = "n" * 252 + ".py"  # 255 bytes: a temp name built from it would be too long
    (ws / name).write_text("N = 1\n")
    rt = Runtime(ws)
    assert rt.call(
        "replace_string", {"path": name, "old_string": "N = 1", "new_string": "N = 2"}
    ).ok
    assert (ws / name).read_text() == "N = 2\n"
    assert rt.undo().ok and (ws / name).read_text() == "N = 1\n"
    assert_clean(ws)
