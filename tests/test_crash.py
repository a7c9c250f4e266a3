"""A process killed (SIGKILL) at any step of a commit leaves every file all-old or all-new."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from grinta_jupyter import Runtime
from tests.conftest import snapshot

CHILD = [sys.executable, "-m", "tests.crash_child"]
REPO = Path(__file__).resolve().parent.parent


def run_child(root: Path, mode: str, kill_at: int, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CHILD, str(root), mode, str(kill_at), *extra],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def make_files(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for name in "abc":
        (root / f"{name}.py").write_text(f"def {name}():\n    return '{name}-old'\n")


EDITS = json.dumps(
    [{"path": f"{n}.py", "old_string": f"'{n}-old'", "new_string": f"'{n}-new'"} for n in "abc"]
)


def test_multiedit_killed_at_every_step(tmp_path):
    reference = tmp_path / "reference"
    make_files(reference)
    done = run_child(reference, "multiedit", 0, EDITS)
    assert done.returncode == 0, done.stderr
    steps = json.loads(done.stdout)
    old = {f"{n}.py": f"def {n}():\n    return '{n}-old'\n".encode() for n in "abc"}
    new = {f"{n}.py": f"def {n}():\n    return '{n}-new'\n".encode() for n in "abc"}
    outcomes = []
    for kill_at in range(1, len(steps) + 1):
        root = tmp_path / f"kill{kill_at}"
        make_files(root)
        killed = run_child(root, "multiedit", kill_at, EDITS)
        assert killed.returncode == -9, (kill_at, killed.stderr)
        Runtime(root)  # opening recovers
        state = snapshot(root)
        assert state in (old, new), (kill_at, steps[kill_at - 1], state)
        outcomes.append("new" if state == new else "old")
        assert not list(root.rglob("*.tmp"))
        assert list((root / ".grinta" / "journal").iterdir()) == []
    # Before the decision point the commit rolls back; after it, forward.
    decided = steps.index("decided")
    assert outcomes == ["old"] * decided + ["new"] * (len(steps) - decided)


def test_raw_journal_with_create_and_delete_killed_at_every_step(tmp_path):
    def setup(root: Path) -> None:
        root.mkdir()
        (root / "a.txt").write_text("A1\n")
        (root / "gone.txt").write_text("bye\n")

    reference = tmp_path / "reference"
    setup(reference)
    steps = json.loads(run_child(reference, "raw", 0).stdout)
    old = {"a.txt": b"A1\n", "gone.txt": b"bye\n"}
    new = {"a.txt": b"A2\n", "created/new.txt": b"brand new\n"}
    for kill_at in range(1, len(steps) + 1):
        root = tmp_path / f"k{kill_at}"
        setup(root)
        assert run_child(root, "raw", kill_at).returncode == -9
        Runtime(root)
        state = snapshot(root)
        assert state in (old, new), (kill_at, steps[kill_at - 1], state)
        if state == old:
            assert not (root / "created").exists()


def test_undo_killed_at_every_step(tmp_path):
    def setup(root: Path) -> None:
        make_files(root)
        assert Runtime(root).call("multiedit", {"edits": json.loads(EDITS)}).ok

    reference = tmp_path / "reference"
    setup(reference)
    steps = json.loads(run_child(reference, "undo", 0).stdout)
    old = {f"{n}.py": f"def {n}():\n    return '{n}-old'\n".encode() for n in "abc"}
    new = {f"{n}.py": f"def {n}():\n    return '{n}-new'\n".encode() for n in "abc"}
    for kill_at in range(1, len(steps) + 1):
        root = tmp_path / f"u{kill_at}"
        setup(root)
        assert run_child(root, "undo", kill_at).returncode == -9
        rt = Runtime(root)
        state = snapshot(root)
        assert state in (old, new)
        if state == new:  # the undo did not happen: it is still available
            assert rt.undo().ok and snapshot(root) == old
        else:  # it happened: the record is consumed
            assert rt.undo().error.code == "NOTHING_TO_UNDO"
