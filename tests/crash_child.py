"""Child process for the crash tests: commit, and SIGKILL ourselves at step N."""

from __future__ import annotations

import json
import os
import signal
import sys

from grinta_jupyter import Runtime
from grinta_jupyter.runtime.transaction import FileWrite, Journal


def main() -> None:
    root, mode, kill_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
    steps: list[str] = []

    def hook(label: str) -> None:
        steps.append(label)
        if len(steps) == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    if mode == "multiedit":
        rt = Runtime(root)
        edits = json.loads(sys.argv[4])
        proposal = rt.propose("multiedit", {"edits": edits})
        assert proposal.ok, proposal.error
        assert rt.commit(proposal, hook=hook).ok
    elif mode == "undo":
        rt = Runtime(root)
        record = rt.journal.history()[-1]
        rt.journal.undo(record, hook=hook)
    else:  # raw journal: create one file, rewrite another, delete a third
        from pathlib import Path

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


if __name__ == "__main__":
    main()
