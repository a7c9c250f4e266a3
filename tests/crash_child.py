"""Child process for the crash tests: commit, and SIGKILL ourselves at step N.

With ``pause`` instead of N it stops at every step instead: it prints the
step's label and waits for a line on stdin (the test looks at the workspace,
opens other runtimes on it, or kills us there). A refused multiedit commit
prints its error code on stderr and exits with 3.

Mode ``nospace`` commits on a file system it fills first (the test mounts a
small tmpfs at ``root`` in a private mount namespace), leaving ``argv[4]``
bytes free, and prints what it found as JSON.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from grinta_jupyter import Runtime
from grinta_jupyter.runtime.transaction import FileWrite, Journal


def main() -> None:
    root, mode, when = sys.argv[1], sys.argv[2], sys.argv[3]
    steps: list[str] = []

    def hook(label: str) -> None:
        steps.append(label)
        if when == "pause":
            print(label, flush=True)
            sys.stdin.readline()
        elif len(steps) == int(when):
            os.kill(os.getpid(), signal.SIGKILL)

    if mode == "multiedit":
        rt = Runtime(root)
        edits = json.loads(sys.argv[4])
        proposal = rt.propose("multiedit", {"edits": edits})
        assert proposal.ok, proposal.error
        observation = rt.commit(proposal, hook=hook)
        if not observation.ok:
            print(observation.error.code, file=sys.stderr)
            sys.exit(3)
    elif mode == "nospace":
        print(json.dumps(commit_on_a_full_disk(Path(root), int(sys.argv[4]))))
        return
    elif mode == "undo":
        rt = Runtime(root)
        record = rt.journal.history()[-1]
        rt.journal.undo(record, hook=hook)
    else:  # raw journal: create one file, rewrite another, delete a third
        base = Path(root)
        journal = Journal(base, base / ".grinta")
        journal.commit(
            [
                FileWrite("created/new.txt", None, b"brand new\n"),
                FileWrite("a.txt", (base / "a.txt").read_bytes(), b"A2\n"),
                FileWrite("gone.txt", (base / "gone.txt").read_bytes(), None),
            ],
            "raw",
            hook=hook,
        )
    print(json.dumps(steps))


def commit_on_a_full_disk(disk: Path, spare: int) -> dict[str, object]:
    ws = disk / "ws"
    (ws / "sub").mkdir(parents=True)
    before = {"a.py": b"A = 1\n", "sub/b.py": b"B = 1\n"}
    for rel, data in before.items():
        (ws / rel).write_bytes(data)
    rt = Runtime(ws)
    big = "B = [" + "1, " * 100_000 + "]"
    proposal = rt.propose(
        "multiedit",
        {
            "edits": [
                {"path": "a.py", "old_string": "A = 1", "new_string": "A = 2"},
                {"path": "sub/b.py", "old_string": "B = 1", "new_string": big},
            ]
        },
    )
    assert proposal.ok, proposal.error
    filler = disk / "filler"
    with open(filler, "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass
    os.truncate(filler, max(0, filler.stat().st_size - spare))
    observation = rt.commit(proposal)
    report = {
        "ok": observation.ok,
        "code": observation.error.code if observation.error else None,
        "message": observation.error.message if observation.error else None,
        "unchanged": all((ws / rel).read_bytes() == data for rel, data in before.items()),
        "leftovers": [p.name for p in ws.rglob("*.tmp")],
        "journal": os.listdir(ws / ".grinta" / "journal") if (ws / ".grinta").is_dir() else [],
        "recovered": Runtime(ws).recovered,
    }
    filler.unlink()
    report["after_freeing"] = rt.commit(rt.propose("multiedit", proposal.args)).ok
    return report


if __name__ == "__main__":
    main()
